"""GGUF Q2_K: 256-weight super-blocks of 2-bit codes, a 4-bit scale and a 4-bit minimum per 16; 2.625 bits a weight.

    weight = d * s_j * code - dmin * m_j,    code in 0..3, s_j and m_j in 0..15 for subblock j = 0..15

One super-block is 84 bytes:

    bytes   0..15   scales  one byte per subblock j: bits 7..4 = m_j, bits 3..0 = s_j
    bytes  16..79   qs      the 2-bit codes, four a byte
    bytes  80..81   d       float16, little-endian: the super-block scale of the s_j
    bytes  82..83   dmin    float16, little-endian: the super-block scale of the m_j

Where a code lives: weight 128c + 32s + l (chunk c = 0, 1; s = 0..3; l = 0..31) has its code at
bits 2s + 1..2s of qs byte 32c + l, as lab.formats._kquant draws it (Q3_K's low bits too):

    qs byte 16 + 32c + l:   bits 7..6        bits 5..4        bits 3..2        bits 1..0
                            w 128c+l+96      w 128c+l+64      w 128c+l+32      w 128c+l

Where a subblock's scale and minimum live: both in scales byte j, a nibble each,

    scales byte j:   bits 7..4 = m_j (the minimum)    bits 3..0 = s_j (the scale)

The minimum is subtracted: m_j counts how far below zero the subblock reaches, as in Q4_K. The
decoder rounds d * s_j and dmin * m_j to float32, then d * s_j * code, then subtracts, as ggml
and gguf-py do.

The quantizer follows ggml's reference (`quantize_row_q2_K_ref`, which llama-quantize runs
without an importance matrix), reimplemented from its description. Per 16-weight subblock,
`make_qkx2_quants(16, 3, x, |x|, ..., rmin -0.5, rdelta 0.1, nstep 15, use_mad)`: a grid from
min(x, 0) to max(x) cut in 3 steps, then 16 stretched grids iscale = (2.5 + 0.1 t) / (max - floor),
t = 0..15, each anchored at the best floor so far; for each grid's codes, the least-squares line
x ~ scale * code + floor with importance |x| (refitted through 0 if its floor comes out above 0),
kept when it lowers the importance-weighted absolute error (lab.formats._qkx2, the search Q4_K
and Q5_K share). Then d = max scale / 15 and dmin =
max minimum / 15 (float16), s_j = nearest(15 * scale_j / max scale), m_j = nearest(15 * min_j /
max minimum), and every code nearest((x + dmin16 * m_j) / (d16 * s_j)) clamped to 0..3, against
the stored gain and offset. Where a stored gain is 0 a subblock keeps its fitted codes. gguf-py
has no Q2_K quantizer; its `quants.dequantize` is the decoder's oracle, and ggml's C code the
quantizer's (tests/oracles/test_formats_q3_k_q2_k.py). With an importance vector,
quantize(w, importance=...) follows quantize_row_q2_K_impl instead (lab.formats._imatrix).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from lab.errors import NonFiniteError
from lab.formats._blocks import float_input
from lab.formats._ggml import F16_MAX, refuse_beyond_reach
from lab.formats._imatrix import Q2_K, fit_k_super_blocks, importance_vector, per_weight
from lab.formats._kquant import QS_BYTES, crumb_place, pack_crumbs, unpack_crumbs
from lab.formats._qkx2 import Qkx2Call, magnitude, search_subblocks
from lab.formats._tensor import GGUFBlockTensor, Lane, Part, block_field, block_format, gguf_block, half, rows, stored
from lab.formats.registry import register
from lab.numbers import format_number

BLOCK = gguf_block("Q2_K", 256, 84)  # 4-bit scales and mins, 2-bit codes, d, dmin
BLOCK_WEIGHTS = BLOCK.weights  # 256
BLOCK_BYTES = BLOCK.gguf.bytes  # 84
BITS_PER_WEIGHT = BLOCK.bits_per_weight  # 2.625
SUBBLOCKS = 16
SUBBLOCK_WEIGHTS = 16
QS_OFFSET = SUBBLOCKS  # 16
D_OFFSET = QS_OFFSET + QS_BYTES  # 80
DMIN_OFFSET = D_OFFSET + 2  # 82
CODE_MAX = 3
#: the largest 4-bit scale or minimum
FIELD_MAX = 15
#: quantize_row_q2_K_ref's make_qkx2_quants(16, 3, x, |x|, L, &min, Laux, -0.5, 0.1, 15, true)
SEARCH = Qkx2Call(
    weights=SUBBLOCK_WEIGHTS,
    code_max=CODE_MAX,
    importance=magnitude,
    rmin=-0.5,
    rdelta=0.1,
    nstep=15,
    use_mad=True,
)


class Q2KTensor(GGUFBlockTensor, block=BLOCK):
    """uint8 codes 0..3 [..., 256k], uint8 scales and mins 0..15 [..., k, 16], float16 d and dmin [..., k]."""

    codes: np.ndarray = block_field(
        dtype=np.uint8,
        low=0,
        high=CODE_MAX,
        gguf=stored(
            Part("qs", QS_BYTES, "2-bit codes", at=QS_OFFSET),
            write=lambda codes: pack_crumbs(codes).reshape(*codes.shape[:-1], -1, QS_BYTES),
            read=lambda qs: rows(unpack_crumbs(qs)),
        ),
    )
    # subblock j's scale and minimum share byte j: the scale in its low nibble, the minimum in its high
    scales: np.ndarray = block_field(
        per_block=(SUBBLOCKS,),
        dtype=np.uint8,
        low=0,
        high=FIELD_MAX,
        gguf=stored(
            Part("scales", SUBBLOCKS, "4-bit scales and mins", at=0),
            write=lambda scales, mins: scales | (mins << np.uint8(4)),
            read=lambda packed: (packed & np.uint8(FIELD_MAX), packed >> np.uint8(4)),
            with_fields=("mins",),
        ),
    )
    mins: np.ndarray = block_field(per_block=(SUBBLOCKS,), dtype=np.uint8, low=0, high=FIELD_MAX)
    d: np.ndarray = block_field(per_block=(), dtype=np.float16, gguf=half(at=D_OFFSET))
    dmin: np.ndarray = block_field(per_block=(), dtype=np.float16, gguf=half(at=DMIN_OFFSET))

    subblock_weights = SUBBLOCK_WEIGHTS

    def gains_and_offsets(self) -> tuple[np.ndarray, np.ndarray]:
        """Each subblock's d * s_j and dmin * m_j, rounded to float32 as the decoder uses them [..., k, 16]."""
        with np.errstate(over="ignore", invalid="ignore"):  # an inf or NaN d or dmin decodes as such, as in ggml
            gain = self.d.astype(np.float32)[..., None] * self.scales.astype(np.float32)
            offset = self.dmin.astype(np.float32)[..., None] * self.mins.astype(np.float32)
        return gain, offset

    def dequantize(self) -> np.ndarray:
        gain, offset = self.gains_and_offsets()
        codes = self.codes.astype(np.float32).reshape(*self.d.shape, SUBBLOCKS, SUBBLOCK_WEIGHTS)
        with np.errstate(over="ignore", invalid="ignore"):
            weights = gain[..., None] * codes - offset[..., None]
        return weights.reshape(self.shape)

    def explain_lane(self, at: Lane) -> dict:
        subblock = at.lane // SUBBLOCK_WEIGHTS
        qs_byte, shift = crumb_place(at.lane)
        where = (*at.block_position, subblock)
        d, dmin = float(self.d[at.block_position]), float(self.dmin[at.block_position])
        scale, minimum = int(self.scales[where]), int(self.mins[where])
        gain, offset = (float(part[where]) for part in self.gains_and_offsets())
        code = int(self.codes[at.position])
        weight = float(np.float32(np.float32(gain) * np.float32(code)) - np.float32(offset))
        return {
            "qs_byte": QS_OFFSET + qs_byte,
            "qs_shift": shift,
            "code": code,
            "code_bits": f"{code:02b}",
            "scale_byte": subblock,
            "scale_nibble": "low",
            "min_nibble": "high",
            "scale": scale,
            "min": minimum,
            "d": d,
            "dmin": dmin,
            "gain": gain,
            "offset": offset,
            "weight": weight,
            "gain_formula": f"{format_number(d)} \u00d7 {scale} = {format_number(gain)}",
            "offset_formula": f"{format_number(dmin)} \u00d7 {minimum} = {format_number(offset)}",
            "formula": f"{format_number(gain)} \u00d7 {code} \u2212 {format_number(offset)} = {format_number(weight)}",
        }


def _four_bit_fields(values: np.ndarray, largest: np.ndarray) -> np.ndarray:
    """nearest(15 / largest * values) per super-block [..., k, 16] as uint8, and 0 where largest is 0.

    The fit's steps and minimums are not negative for real weights (its codes rise with x, so its
    least-squares step does too, and its floor is at most 0). C stores the int straight into the
    byte, where a negative one would wrap; the lab clamps at 0, as Q4_K does.
    """
    largest = np.where(largest > 0, largest, np.float32(1))[..., None]  # where it is 0, values clamp to 0
    with np.errstate(over="ignore"):
        inverse = np.float32(FIELD_MAX) / largest
    # below about 4e-38, 15 / largest overflows (C then rounds inf and NaN, which asserts); such a
    # super-block's float16 d or dmin is 0 whatever the fields say, so take the ratio the other way round
    overflowed = np.isinf(inverse)
    fields = np.where(overflowed, 0, inverse) * values
    if overflowed.any():
        fields = np.where(overflowed, values / largest * np.float32(FIELD_MAX), fields)
    return np.clip(np.rint(fields), 0, FIELD_MAX).astype(np.uint8)


def quantize(w: ArrayLike, importance: ArrayLike | None = None) -> Q2KTensor:
    """Quantize float weights [..., 256k] as ggml's quantize_q2_K does, byte for byte.

    Without `importance`, the reference quantizer (quantize_row_q2_K_ref). With it (float32
    [256k], one value per column, an imatrix's mean of x^2, as llama-quantize --imatrix passes it),
    quantize_row_q2_K_impl, which weighs each weight's error by it (lab.formats._imatrix).
    """
    weights, _ = float_input(w, BLOCK_WEIGHTS)
    # a weight is at most d * 15 * 3 above zero: float16 d, 4-bit scales, 2-bit codes
    refuse_beyond_reach(weights, F16_MAX * FIELD_MAX * CODE_MAX, "Q2_K")
    if importance is not None:
        weighed = per_weight(importance_vector(importance, weights.shape[-1], "Q2_K"), weights.shape)
        parts = fit_k_super_blocks(weights.reshape(-1, BLOCK_WEIGHTS), weighed.reshape(-1, BLOCK_WEIGHTS), Q2_K)
        lead = (*weights.shape[:-1], weights.shape[-1] // BLOCK_WEIGHTS)
        d16, dmin16 = (part.reshape(lead) for part in parts[:2])
        scales, mins = (part.reshape(*lead, SUBBLOCKS) for part in parts[2:4])
        return Q2KTensor(codes=parts[4].reshape(weights.shape), scales=scales, mins=mins, d=d16, dmin=dmin16)
    x = weights.reshape(*weights.shape[:-1], -1, SUBBLOCKS, SUBBLOCK_WEIGHTS)
    step, floor, search_codes = search_subblocks(SEARCH, x.reshape(-1, SUBBLOCK_WEIGHTS))
    fitted_scale, fitted_min = step.reshape(x.shape[:-1]), -floor.reshape(x.shape[:-1])
    fitted_codes = search_codes.reshape(x.shape)
    max_scale = np.maximum(fitted_scale.max(axis=-1), np.float32(0))
    max_min = np.maximum(fitted_min.max(axis=-1), np.float32(0))
    with np.errstate(over="ignore"):  # reported just below
        d16 = (max_scale / np.float32(FIELD_MAX)).astype(np.float16)
        dmin16 = (max_min / np.float32(FIELD_MAX)).astype(np.float16)
    if not (np.isfinite(d16).all() and np.isfinite(dmin16).all()):
        raise NonFiniteError("w spans too wide a range: Q2_K's float16 d or dmin would overflow (max 65504)")
    scales = _four_bit_fields(fitted_scale, max_scale)
    mins = _four_bit_fields(fitted_min, max_min)
    gain = d16.astype(np.float32)[..., None] * scales.astype(np.float32)
    offset = dmin16.astype(np.float32)[..., None] * mins.astype(np.float32)
    has_gain = gain != 0
    with np.errstate(divide="ignore", invalid="ignore"):  # zero gains keep the fit's codes
        aimed = np.clip(np.rint((x + offset[..., None]) / gain[..., None]), 0, CODE_MAX)
    codes = np.where(has_gain[..., None], aimed, fitted_codes).astype(np.uint8)
    return Q2KTensor(codes=codes.reshape(weights.shape), scales=scales, mins=mins, d=d16, dmin=dmin16)


from_gguf = Q2KTensor.from_gguf


FORMAT = register(
    block_format(
        BLOCK,
        name="q2_k",
        quantize=quantize,
        family="gguf",
        summary="GGUF super-blocks of 256: 2-bit codes, a 4-bit scale and a 4-bit minimum per 16",
        tensor=Q2KTensor,
    )
)
