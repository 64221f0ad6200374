"""GGUF Q3_K: 256-weight super-blocks of 3-bit codes, a 6-bit scale per 16 weights, a float16 d; 3.4375 bits a weight.

    weight = d * s_j * (code - 4),    code in 0..7, s_j in -32..31 for subblock j = 0..15 (weights 16j .. 16j + 15)

One super-block is 110 bytes:

    bytes    0..31   hmask   bit 2 of every code, one bit a weight
    bytes   32..95   qs      bits 1..0 of every code, four codes a byte
    bytes   96..107  scales  the sixteen s_j, six bits each, stored as u_j = s_j + 32 (0..63)
    bytes  108..109  d       float16, little-endian

Where a code's third bit lives. Bit b of hmask byte l is bit 2 of the code of weight 32b + l:

    hmask byte l:   bit 7     bit 6     bit 5     bit 4     bit 3    bit 2    bit 1    bit 0
                    w 224+l   w 192+l   w 160+l   w 128+l   w 96+l   w 64+l   w 32+l   w l

A set bit makes the code low + 4, whose level is low itself (0..3); a clear bit leaves the code
low, whose level is low - 4 (-4..-1). So ggml's decoder puts it the other way round from how it
reads: it subtracts 4 where the bit is clear (gguf-py: "strangely, the offset is zero when the
bitmask is 1").

Where the two low bits live: weight 128c + 32s + l (chunk c = 0, 1; s = 0..3; l = 0..31) has
them at bits 2s + 1..2s of qs byte 32c + l, as lab.formats._kquant draws it (Q2_K's layout too).

Where a scale's six bits live. Sixteen 6-bit u_j make 96 bits, twelve bytes: the low four bits
of u_j in a nibble of bytes 0..7, the top two in a 2-bit field of bytes 8..11:

    scales byte   bits 7..6    bits 5..4    bits 3..2    bits 1..0
         0        u_8  bits 3..0              |  u_0  bits 3..0
         1        u_9  bits 3..0              |  u_1  bits 3..0
        ...                                 ...
         7        u_15 bits 3..0              |  u_7  bits 3..0
         8        u_12 5..4    u_8  5..4    u_4  5..4    u_0  5..4
         9        u_13 5..4    u_9  5..4    u_5  5..4    u_1  5..4
        10        u_14 5..4    u_10 5..4    u_6  5..4    u_2  5..4
        11        u_15 5..4    u_11 5..4    u_7  5..4    u_3  5..4

so u_j's low nibble is the low (j < 8) or high (j >= 8) nibble of byte j % 8, and its top two
bits are bits 2(j // 4) + 1..2(j // 4) of byte 8 + j % 4 (ggml unpacks them with kmask1 =
0x03030303 and kmask2 = 0x0f0f0f0f, four at a time). The decoder rounds the gain d * s_j to
float32 before multiplying, as ggml and gguf-py do.

The quantizer follows ggml's reference (`quantize_row_q3_K_ref`, which llama-quantize runs
without an importance matrix), reimplemented from its description. Per 16-weight subblock,
`make_q3_quants` with nmax 4: levels l = nearest(x * -4 / max) clamped to -4..3, where max is
the first weight of largest magnitude; then up to five passes over the weights, each weight in
turn moved to the level nearest x * S_l2 / S_lx (the sums over the other weights, importance
x^2), kept when it explains more, S_lx^2 / S_l2. The subblock's scale is S_lx / S_l2. Then the
scale of largest magnitude sets iscale = -32 / scale and d = 1 / iscale (float16), each s_j =
nearest(iscale * scale_j) clamped to -32..31, and every code nearest(x / (d16 * s_j)) clamped
to -4..3, plus 4, against the stored gain. Where a stored gain is 0 a subblock keeps its fitted levels.
gguf-py has no Q3_K quantizer; its `quants.dequantize` is the decoder's oracle, and ggml's C
code the quantizer's (tests/oracles/test_formats_q3_k_q2_k.py). With an importance vector,
quantize(w, importance=...) follows quantize_row_q3_K_impl instead (tests/oracles/test_imatrix_quantizers.py).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from lab.errors import NonFiniteError
from lab.formats._blocks import float_input
from lab.formats._ggml import F16_MAX, GROUP_MAX_EPS, first_absmax, refuse_beyond_reach
from lab.formats._imatrix import importance_vector, left_to_right_sum, per_weight, sigma_weights
from lab.formats._kquant import QS_BYTES, crumb_place, pack_crumbs, unpack_crumbs
from lab.formats._tensor import GGUFBlockTensor, Lane, Part, block_field, block_format, gguf_block, half, rows, stored
from lab.formats.q6_k import fit_subblocks as fit_q6_k_subblocks
from lab.formats.registry import register
from lab.numbers import format_number

BLOCK = gguf_block("Q3_K", 256, 110)  # hmask, low 2-bit codes, 12 bytes of 6-bit scales, d
BLOCK_WEIGHTS = BLOCK.weights  # 256
BLOCK_BYTES = BLOCK.gguf.bytes  # 110
BITS_PER_WEIGHT = BLOCK.bits_per_weight  # 3.4375
SUBBLOCKS = 16
SUBBLOCK_WEIGHTS = 16
HMASK_BYTES = 32
QS_OFFSET = HMASK_BYTES  # 32
SCALES_OFFSET = QS_OFFSET + QS_BYTES  # 96
SCALES_BYTES = 12
D_OFFSET = SCALES_OFFSET + SCALES_BYTES  # 108
#: a code's level is code - 4: -4..3
CODE_OFFSET = 4
#: a subblock scale is u - 32: -32..31
SCALE_OFFSET = 32
#: make_q3_quants' passes over the weights, each moving one weight at a time
REFINE_PASSES = 5


_BITS = np.arange(8, dtype=np.uint8)[:, None]  # bit b of an hmask byte: the code of weight 32b + l
_TOP_SHIFTS = (2 * np.arange(4, dtype=np.uint8))[:, None]  # bits 2k..2k+1 of scale byte 8 + i: u_{4k + i}'s top


def _code_parts(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """3-bit codes [..., 256k] -> hmask [..., k, 32] (their bit 2) and qs [..., k, 64] (their bits 0..1)."""
    lead = (*codes.shape[:-1], codes.shape[-1] // BLOCK_WEIGHTS)
    # high[..., b, l] is bit 2 of the code of weight 32b + l, which goes to bit b of hmask byte l
    high = (codes >> np.uint8(2)).reshape(*lead, 8, HMASK_BYTES)
    return np.bitwise_or.reduce(high << _BITS, axis=-2), pack_crumbs(codes & np.uint8(3)).reshape(*lead, QS_BYTES)


def _codes(hmask: np.ndarray, qs: np.ndarray) -> np.ndarray:
    """hmask [..., k, 32] and qs [..., k, 64] -> the 3-bit codes [..., 256k]; the inverse of _code_parts."""
    high = (hmask[..., None, :] >> _BITS) & np.uint8(1)
    return rows(unpack_crumbs(qs) | (high.reshape(*hmask.shape[:-1], BLOCK_WEIGHTS) << np.uint8(2)))


def _scale_bytes(scales: np.ndarray) -> np.ndarray:
    """int8 scales -32..31 [..., k, 16] -> their twelve bytes [..., k, 12]: low nibbles, then top bits."""
    stored_scales = (scales.astype(np.int16) + SCALE_OFFSET).astype(np.uint8)
    low = stored_scales & np.uint8(15)
    nibbles = low[..., :8] | (low[..., 8:] << np.uint8(4))
    # tops[..., k, i] is u_{4k + i}'s top two bits, bits 2k + 1..2k of byte 8 + i
    tops = (stored_scales >> np.uint8(4)).reshape(*scales.shape[:-1], 4, 4)
    return np.concatenate([nibbles, np.bitwise_or.reduce(tops << _TOP_SHIFTS, axis=-2)], axis=-1)


def _scales(packed: np.ndarray) -> np.ndarray:
    """Twelve scale bytes [..., k, 12] -> int8 scales -32..31 [..., k, 16]; the inverse of _scale_bytes."""
    nibbles = np.concatenate([packed[..., :8] & np.uint8(15), packed[..., :8] >> np.uint8(4)], axis=-1)
    tops = (packed[..., None, 8:] >> _TOP_SHIFTS) & np.uint8(3)
    stored_scales = nibbles | (tops.reshape(*packed.shape[:-1], SUBBLOCKS) << np.uint8(4))
    return (stored_scales.astype(np.int16) - SCALE_OFFSET).astype(np.int8)


class Q3KTensor(GGUFBlockTensor, block=BLOCK):
    """uint8 codes 0..7 [..., 256k], int8 subblock scales -32..31 [..., k, 16], float16 d [..., k]."""

    codes: np.ndarray = block_field(
        dtype=np.uint8,
        low=0,
        high=2 * CODE_OFFSET - 1,
        gguf=stored(
            Part("hmask", HMASK_BYTES, "high bits", at=0),
            Part("qs", QS_BYTES, "2-bit low codes", at=QS_OFFSET),
            write=_code_parts,
            read=_codes,
        ),
    )
    scales: np.ndarray = block_field(
        per_block=(SUBBLOCKS,),
        dtype=np.int8,
        low=-SCALE_OFFSET,
        high=SCALE_OFFSET - 1,
        gguf=stored(Part("scales", SCALES_BYTES, "6-bit scales", at=SCALES_OFFSET), write=_scale_bytes, read=_scales),
    )
    d: np.ndarray = block_field(per_block=(), dtype=np.float16, gguf=half(at=D_OFFSET))

    subblock_weights = SUBBLOCK_WEIGHTS

    def gains(self) -> np.ndarray:
        """Each subblock's d * s_j, rounded to float32 as the decoder uses it [..., k, 16]."""
        with np.errstate(over="ignore", invalid="ignore"):  # an inf or NaN d decodes as such, as in ggml
            return self.d.astype(np.float32)[..., None] * self.scales.astype(np.float32)

    def dequantize(self) -> np.ndarray:
        levels = self.codes.astype(np.float32) - np.float32(CODE_OFFSET)
        levels = levels.reshape(*self.d.shape, SUBBLOCKS, SUBBLOCK_WEIGHTS)
        with np.errstate(over="ignore", invalid="ignore"):
            weights = self.gains()[..., None] * levels
        return weights.reshape(self.shape)

    def explain_lane(self, at: Lane) -> dict:
        subblock = at.lane // SUBBLOCK_WEIGHTS
        qs_byte, shift = crumb_place(at.lane)
        hmask_byte, hmask_bit = at.lane % HMASK_BYTES, at.lane // HMASK_BYTES
        d, scale = float(self.d[at.block_position]), int(self.scales[(*at.block_position, subblock)])
        stored = scale + SCALE_OFFSET
        gain = float(self.gains()[(*at.block_position, subblock)])
        code = int(self.codes[at.position])
        high_bit = code >> 2
        value, subtracted = code - CODE_OFFSET, 0 if high_bit else CODE_OFFSET
        weight = float(np.float32(gain) * np.float32(value))
        return {
            "qs_byte": QS_OFFSET + qs_byte,
            "qs_shift": shift,
            "low_bits": code & 3,
            "hmask_byte": hmask_byte,
            "hmask_bit": hmask_bit,
            "high_bit": high_bit,
            "code": code,
            "code_bits": f"{high_bit:01b} {code & 3:02b}",
            "value": value,
            "scale_low_byte": SCALES_OFFSET + subblock % 8,
            "scale_low_nibble": "low" if subblock < 8 else "high",
            "scale_high_byte": SCALES_OFFSET + 8 + subblock % 4,
            "scale_high_bits": (2 * (subblock // 4) + 1, 2 * (subblock // 4)),
            "stored_scale": stored,
            "stored_scale_bits": f"{stored >> 4:02b} {stored & 15:04b}",
            "scale": scale,
            "d": d,
            "gain": gain,
            "weight": weight,
            "value_formula": f"{code & 3} \u2212 {subtracted} = {format_number(value)} (hmask bit {high_bit})",
            "scale_formula": f"{stored} \u2212 32 = {format_number(scale)}",
            "gain_formula": f"{format_number(d)} \u00d7 {format_number(scale)} = {format_number(gain)}",
            "formula": f"{format_number(gain)} \u00d7 ({code} \u2212 4) = {format_number(weight)}",
        }


#: subblocks fitted per pass: the refinement's twenty-odd buffers of this many float32 stay in cache
_CHUNK_SUBBLOCKS = 8192


def fit_subblocks(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """make_q3_quants(16, 4, x, L, do_rmse) for every subblock [..., 16]: (float32 scale, codes 0..7).

    A subblock below GROUP_MAX_EPS gets scale 0 and codes 0, as the reference. Every subblock is
    fitted on its own, so fitting a chunk at a time gives the same result.
    """
    flat = x.reshape(-1, SUBBLOCK_WEIGHTS)
    scale = np.empty(flat.shape[0], np.float32)
    codes = np.empty(flat.shape, np.uint8)
    for start in range(0, flat.shape[0], _CHUNK_SUBBLOCKS):
        chunk = slice(start, start + _CHUNK_SUBBLOCKS)
        # position-major [16, n]: reducing over axis 0 adds one position after another, as C does
        scale[chunk], chunk_levels = _fit_position_major(np.ascontiguousarray(flat[chunk].T))
        codes[chunk] = (chunk_levels + CODE_OFFSET).T
    return scale.reshape(x.shape[:-1]), codes.reshape(x.shape)


def _fit_position_major(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """fit_subblocks for subblocks laid out position-major, x float32 [16, n] -> (scale [n], levels -4..3 [16, n]).

    The passes move one weight after another, each move seeing the sums the moves before it
    left, so they run as a loop over the 16 positions, every subblock at once. A pass that moves
    no weight of a subblock leaves its state as it found it, and so would every later pass:
    running all five for every subblock gives what C's early exit gives.
    """
    importance = x * x
    weighted_x = importance * x  # C's w * x[i], the factor of every S_lx term
    columns = np.arange(x.shape[1])
    signed_max = x[np.abs(x).argmax(axis=0), columns]  # the first largest, as C's `>` scan keeps
    zero = np.abs(signed_max) < GROUP_MAX_EPS
    iscale = np.float32(-CODE_OFFSET) / np.where(zero, np.float32(1), signed_max)
    levels = np.clip(np.rint(iscale * x), -CODE_OFFSET, CODE_OFFSET - 1)
    sum_lx = np.add.reduce(weighted_x * levels, axis=0)
    sum_l2 = np.add.reduce(importance * levels * levels, axis=0)
    for _ in range(REFINE_PASSES):
        moved = False
        for i in range(SUBBLOCK_WEIGHTS):
            level = levels[i]
            # the sums over the other fifteen weights, and the level that fits this one best against them
            others_lx = sum_lx - weighted_x[i] * level
            others_l2 = sum_l2 - importance[i] * level * level
            trial = np.clip(np.rint(x[i] * others_l2 / others_lx), -CODE_OFFSET, CODE_OFFSET - 1)
            trial_lx = others_lx + weighted_x[i] * trial
            trial_l2 = others_l2 + importance[i] * trial * trial
            better = (
                (others_lx > 0)
                & (trial != level)
                & (trial_l2 > 0)
                & (trial_lx * trial_lx * sum_l2 > sum_lx * sum_lx * trial_l2)
            )
            if better.any():
                moved = True
                levels[i] = np.where(better, trial, level)
                sum_lx = np.where(better, trial_lx, sum_lx)
                sum_l2 = np.where(better, trial_l2, sum_l2)
        if not moved:
            break
    scale = np.where(sum_l2 > 0, sum_lx / np.where(sum_l2 > 0, sum_l2, np.float32(1)), np.float32(0))
    # C returns early for such a subblock with L = 0, which is code 0, level -4
    levels[:, zero] = -CODE_OFFSET
    return np.where(zero, np.float32(0), scale).astype(np.float32), levels


def quantize(w: ArrayLike, importance: ArrayLike | None = None) -> Q3KTensor:
    """Quantize float weights [..., 256k] as ggml's quantize_q3_K does, byte for byte.

    Without `importance`, the reference quantizer (quantize_row_q3_K_ref). With it (float32
    [256k], one value per column, an imatrix's mean of x^2, as llama-quantize --imatrix passes it),
    quantize_row_q3_K_impl (see _weighted_quantize).
    """
    weights, _ = float_input(w, BLOCK_WEIGHTS)
    # a weight is d * scale * level: float16 d, scales down to -32, levels down to -4
    refuse_beyond_reach(weights, F16_MAX * SCALE_OFFSET * CODE_OFFSET, "Q3_K")
    x = weights.reshape(*weights.shape[:-1], -1, SUBBLOCKS, SUBBLOCK_WEIGHTS)
    if importance is not None:
        weighed = per_weight(importance_vector(importance, weights.shape[-1], "Q3_K"), weights.shape)
        return _weighted_quantize(weights, weighed)
    # the refinement's S_lx^2 * S_l2 overflows (or underflows) float32 for weights far from 1,
    # as it does in C, which compares the same infinities and zeros
    with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
        fitted, fitted_codes = fit_subblocks(x)
    _, largest = first_absmax(fitted)
    empty = largest == 0  # the reference then stores all-zero scale bytes and d = 0
    iscale = np.float32(-SCALE_OFFSET) / np.where(empty, np.float32(1), largest)
    with np.errstate(over="ignore"):  # reported just below
        d16 = np.where(empty, np.float32(0), np.float32(1) / iscale).astype(np.float16)
    if not np.isfinite(d16).all():
        raise NonFiniteError("w spans too wide a range: Q3_K's float16 d would overflow (max 65504)")
    rounded = np.clip(np.rint(iscale[..., None] * fitted), -SCALE_OFFSET, SCALE_OFFSET - 1)
    scales = np.where(empty[..., None], -SCALE_OFFSET, rounded).astype(np.int8)
    gain = d16.astype(np.float32)[..., None] * scales.astype(np.float32)
    has_gain = gain != 0
    with np.errstate(divide="ignore", invalid="ignore"):  # zero gains keep the fit's codes
        aimed = np.clip(np.rint(x / gain[..., None]), -CODE_OFFSET, CODE_OFFSET - 1) + CODE_OFFSET
    codes = np.where(has_gain[..., None], aimed, fitted_codes).astype(np.uint8)
    return Q3KTensor(codes=codes.reshape(weights.shape), scales=scales, d=d16)


def _weighted_quantize(weights: np.ndarray, importance: np.ndarray) -> Q3KTensor:
    """quantize_row_q3_K_impl for weights float32 [..., 256k] and each weight's importance (the same shape).

    Not the reference's make_q3_quants: each 16-weight subblock gets make_qx_quants(16, 4, x, L,
    1, weights), Q6_K's search with levels -4..3, weighed by importance * sqrt(sigma2 + x^2)
    (lab.formats._imatrix); then the sixteen subblock scales get make_qx_quants(16, 32, scales,
    Ls, 1, sw) themselves, weighed by each subblock's total weight: d and six-bit levels -32..31
    in one fit, instead of the reference's "largest / -32". The codes are worked out again
    against the stored gains; a subblock whose gain is 0 keeps its fit's levels.
    """
    super_blocks = weights.reshape(-1, BLOCK_WEIGHTS)
    x = super_blocks.reshape(-1, SUBBLOCKS, SUBBLOCK_WEIGHTS)
    with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
        fit_weights = sigma_weights(super_blocks, importance.reshape(super_blocks.shape)).reshape(x.shape)
        fitted, fitted_levels = fit_q6_k_subblocks(x, fit_weights, CODE_OFFSET)
        d, scales = fit_q6_k_subblocks(fitted, left_to_right_sum(fit_weights), SCALE_OFFSET)
    with np.errstate(over="ignore"):  # reported just below
        d16 = d.astype(np.float16)
    if not np.isfinite(d16).all():
        raise NonFiniteError("w spans too wide a range: Q3_K's float16 d would overflow (max 65504)")
    gain = d16.astype(np.float32)[..., None] * scales
    with np.errstate(divide="ignore", invalid="ignore"):  # zero gains keep the fit's levels
        aimed = np.clip(np.rint(x / gain[..., None]), -CODE_OFFSET, CODE_OFFSET - 1)
    levels = np.where(gain[..., None] != 0, aimed, fitted_levels)
    lead = (*weights.shape[:-1], weights.shape[-1] // BLOCK_WEIGHTS)
    return Q3KTensor(
        codes=(levels + CODE_OFFSET).astype(np.uint8).reshape(weights.shape),
        scales=scales.astype(np.int8).reshape(*lead, SUBBLOCKS),
        d=d16.reshape(lead),
    )


from_gguf = Q3KTensor.from_gguf


FORMAT = register(
    block_format(
        BLOCK,
        name="q3_k",
        quantize=quantize,
        family="gguf",
        summary="GGUF super-blocks of 256: 3-bit codes split into 2 low bits and a high-bit mask, a 6-bit scale per 16",
        tensor=Q3KTensor,
    )
)
