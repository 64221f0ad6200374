"""GGUF Q5_K: Q4_K's super-block with a fifth bit for every code; 256 weights in 176 bytes, 5.5 bits per weight.

    weight = d * s_j * q  -  dmin * m_j,    q in 0..31, s_j and m_j in 0..63 for subblock j = 0..7
             \\_ gain _/      \\_ offset _/

One super-block is 176 bytes:

    bytes    0..1    d       float16, little-endian: the super-block scale for the gains
    bytes    2..3    dmin    float16, little-endian: the super-block scale for the offsets
    bytes    4..15   B[0..11]  s_0..s_7 and m_0..m_7, six bits each, packed exactly as Q4_K packs them
    bytes   16..47   qh[0..31]   bit 4 (the fifth bit) of every code, eight codes a byte
    bytes   48..175  qs[0..127]  bits 0..3 of every code, two codes a byte, placed as Q4_K's nibbles

Where a code's bits live. Weight 64c + 32h + l (chunk c = 0..3, half h = 0 or 1, position
l = 0..31) is in subblock j = 2c + h, and its code q = 16 * (fifth bit) + (low nibble):

    qs[32c + l]  = block byte 48 + 32c + l:  low nibble if h = 0, high nibble if h = 1  (bits 3..0 of q)
    qh[l]        = block byte 16 + l:        bit j = 2c + h                          (bit 4 of q)

so one qh byte holds the fifth bits of the eight weights 32 apart at its position, one a subblock:

    qh[l] =  b7   b6   b5   b4   b3   b2   b1   b0      bit j: the fifth bit of weight 32j + l
             |                                  |
             weight 224 + l  (subblock 7)       weight l  (subblock 0)

ggml's dequantize_row_q5_K reads it with two masks, u1 = 1 for a chunk's low-nibble half and u2 = 2
for its high-nibble half, both shifted left by 2 from one 64-weight chunk to the next: chunk c reads
bits 2c and 2c + 1.

The twelve bytes B of six-bit fields, written bit 7 first (see lab.formats.q4k for the full story):

    B[0..3]   = hh ssssss    s_0..s_3 in bits 0..5; bits 6..7 are bits 4..5 of s_4..s_7
    B[4..7]   = hh mmmmmm    m_0..m_3 in bits 0..5; bits 6..7 are bits 4..5 of m_4..m_7
    B[8..11]  = mmmm ssss    bits 0..3 of s_4..s_7 (low nibble) and of m_4..m_7 (high nibble)

The decoder rounds the gain d * s_j and the offset dmin * m_j to float32, then gain * q, then
subtracts: ggml's and gguf-py's arithmetic, bit for bit.

The quantizer is ggml's reference (`quantize_row_q5_K_ref`, what llama-quantize writes without an
importance matrix), reimplemented from ggml's C. Per 32-weight subblock, make_qkx2_quants(32, 31,
x, av + |x|, ..., rmin -0.5, rdelta 0.1, nstep 15): errors are weighted by av + |x|, av being the
subblock's root mean square; the search starts from the min/max grid q = nearest(31 (x - floor) /
(max - floor)) (floor = min(min, 0)), then tries 16 stretched grids (30.5 + 0.1 i) / (max - floor),
i = 0..15, each anchored at the best floor found so far (lab.formats._qkx2, the search Q4_K and
Q2_K share). For each grid's codes the weighted
least-squares line x ~ step * q + floor is fitted in closed form (refitted through the origin
where the floor comes out positive), and it replaces the best when its weighted squared error is
lower. Then the largest step and depth (-floor) of the super-block set d = step / 63 and
dmin = depth / 63 in float16, every subblock's step and depth become six-bit fields (as Q4_K's:
the same code, lab.formats.q4k), and the codes are worked out again against the stored gains and
offsets; a subblock whose stored gain is 0 keeps the search's codes. gguf-py decodes Q5_K but has
no Q5_K quantizer: its `quants.dequantize` and ggml's C are the oracles. With an importance vector,
quantize(w, importance=...) follows quantize_row_q5_K_impl instead (lab.formats._imatrix).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from lab.errors import NonFiniteError
from lab.formats._blocks import float_input
from lab.formats._ggml import F16_MAX, refuse_beyond_reach
from lab.formats._imatrix import Q5_K, fit_k_super_blocks, importance_vector, per_weight
from lab.formats._qkx2 import Qkx2Call, nearest_codes, rms_plus_magnitude, search_subblocks
from lab.formats._tensor import GGUFBlockTensor, Lane, Part, block_field, block_format, gguf_block, half, rows, stored
from lab.formats.q4k import FIELD_MAX, METADATA_BYTES, explain_metadata, pack_scale_min, unpack_scale_min
from lab.formats.q4k.quantize import _six_bit_fields
from lab.formats.registry import register
from lab.numbers import format_float32

BLOCK = gguf_block("Q5_K", 256, 176)  # d, dmin, 12 bytes of 6-bit scales and mins, qh, low nibbles
BLOCK_WEIGHTS = BLOCK.weights  # 256
BLOCK_BYTES = BLOCK.gguf.bytes  # 176
BITS_PER_WEIGHT = BLOCK.bits_per_weight  # 5.5
SUBBLOCKS = 8
SUBBLOCK_WEIGHTS = 32
CODE_MAX = 31
SCALES_OFFSET = 4
QH_OFFSET = SCALES_OFFSET + METADATA_BYTES  # 16
QS_OFFSET = QH_OFFSET + BLOCK_WEIGHTS // 8  # 48
#: quantize_row_q5_K_ref's make_qkx2_quants(32, 31, x, av + |x|, L, &min, Laux, -0.5, 0.1, 15, false)
SEARCH = Qkx2Call(
    weights=SUBBLOCK_WEIGHTS,
    code_max=CODE_MAX,
    importance=rms_plus_magnitude,
    rmin=-0.5,
    rdelta=0.1,
    nstep=15,
    use_mad=False,
)

_F32 = np.float32


def _code_parts(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """5-bit codes [..., 256k] -> qh [..., k, 32] (their fifth bits) and qs [..., k, 128] (their low nibbles)."""
    lead = (*codes.shape[:-1], codes.shape[-1] // BLOCK_WEIGHTS)
    # low[..., c, h, l] and fifth[..., j, l]: the code of weight 64c + 32h + l = 32j + l
    low = (codes & np.uint8(15)).reshape(*lead, 4, 2, 32)
    fifth = (codes >> np.uint8(4)).reshape(*lead, SUBBLOCKS, 32)
    qs = (low[..., 0, :] | (low[..., 1, :] << np.uint8(4))).reshape(*lead, 128)
    qh = (fifth << np.arange(SUBBLOCKS, dtype=np.uint8)[:, None]).sum(axis=-2, dtype=np.uint8)
    return qh, qs


def _codes(qh: np.ndarray, qs: np.ndarray) -> np.ndarray:
    """qh [..., k, 32] and qs [..., k, 128] -> the 5-bit codes [..., 256k]; the inverse of _code_parts."""
    lead = qs.shape[:-1]
    low = (qs.reshape(*lead, 4, 1, 32) >> np.array([[0], [4]], dtype=np.uint8)) & np.uint8(15)  # [..., c, h, l]
    fifth = (qh.reshape(*lead, 1, 32) >> np.arange(SUBBLOCKS, dtype=np.uint8)[:, None]) & np.uint8(1)  # [..., j, l]
    return rows(low.reshape(*lead, BLOCK_WEIGHTS) | (fifth.reshape(*lead, BLOCK_WEIGHTS) << np.uint8(4)))


class Q5KTensor(GGUFBlockTensor, block=BLOCK):
    """uint8 codes 0..31 [..., 256k], six-bit scales and minimums [..., k, 8], float16 d and dmin [..., k]."""

    codes: np.ndarray = block_field(
        dtype=np.uint8,
        low=0,
        high=CODE_MAX,
        gguf=stored(
            Part("qh", QS_OFFSET - QH_OFFSET, "fifth bits", at=QH_OFFSET),
            Part("qs", BLOCK_BYTES - QS_OFFSET, "low nibbles", at=QS_OFFSET, trace=True),
            write=_code_parts,
            read=_codes,
        ),
    )
    # the scales and the minimums share Q4_K's twelve bytes of six-bit fields
    scales: np.ndarray = block_field(
        per_block=(SUBBLOCKS,),
        dtype=np.uint8,
        low=0,
        high=FIELD_MAX,
        gguf=stored(
            Part("scales", METADATA_BYTES, "6-bit scales and minimums", at=SCALES_OFFSET),
            write=pack_scale_min,
            read=unpack_scale_min,
            with_fields=("mins",),
        ),
    )
    mins: np.ndarray = block_field(per_block=(SUBBLOCKS,), dtype=np.uint8, low=0, high=FIELD_MAX)
    d: np.ndarray = block_field(per_block=(), dtype=np.float16, gguf=half(at=0))
    dmin: np.ndarray = block_field(per_block=(), dtype=np.float16, gguf=half(at=2))

    subblock_weights = SUBBLOCK_WEIGHTS

    def gains_and_offsets(self) -> tuple[np.ndarray, np.ndarray]:
        """Each subblock's d * s_j and dmin * m_j, rounded to float32 as the decoder uses them [..., k, 8]."""
        with np.errstate(over="ignore", invalid="ignore"):  # an inf or NaN d decodes as such, as in ggml
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
        chunk, rest = divmod(at.lane, 64)
        half_of_chunk, position = divmod(rest, 32)
        subblock = at.lane // SUBBLOCK_WEIGHTS
        where = (*at.block_position, subblock)
        d, dmin = float(self.d[at.block_position]), float(self.dmin[at.block_position])
        scale, minimum = int(self.scales[where]), int(self.mins[where])
        code = int(self.codes[at.position])
        fifth, low = code >> 4, code & 15
        with np.errstate(over="ignore", invalid="ignore"):  # an inf or NaN d explains as it decodes
            gain, offset = _F32(d) * _F32(scale), _F32(dmin) * _F32(minimum)
            weight = float(gain * _F32(code) - offset)
        qh_byte, qs_byte = QH_OFFSET + position, QS_OFFSET + 32 * chunk + position
        nibble = "high" if half_of_chunk else "low"
        gain_text, offset_text = format_float32(gain), format_float32(offset)
        metadata = pack_scale_min(self.scales[at.block_position], self.mins[at.block_position])
        return {
            "qs_byte": qs_byte,
            "qs_nibble": nibble,
            "low_bits": low,
            "qh_byte": qh_byte,
            "qh_bit": subblock,
            "fifth_bit": fifth,
            "code": code,
            "code_bits": f"{fifth:01b} {low:04b}",
            "code_formula": (
                f"16 \u00d7 {fifth} (qh[{position}] = byte {qh_byte}, bit {subblock}) + {low} "
                f"({nibble} nibble of qs[{32 * chunk + position}] = byte {qs_byte}) = {code}"
            ),
            "scale": scale,
            "min": minimum,
            "d": d,
            "dmin": dmin,
            "gain": float(gain),
            "offset": float(offset),
            "weight": weight,
            "gain_formula": f"{format_float32(d)} \u00d7 {scale} = {gain_text}",
            "offset_formula": f"{format_float32(dmin)} \u00d7 {minimum} = {offset_text}",
            "formula": f"{gain_text} \u00d7 {code} \u2212 {offset_text} = {format_float32(weight)}",
            "metadata": explain_metadata(metadata, subblock),
        }

    def owner_words(self, explained: dict) -> str:
        return (
            f"subblock {explained['subblock']}: scale {explained['scale']}, min {explained['min']} "
            f"(12-byte metadata); fifth bit {explained['fifth_bit']} from qh byte {explained['qh_byte']}, "
            f"bit {explained['qh_bit']}"
        )


def quantize(w: ArrayLike, importance: ArrayLike | None = None) -> Q5KTensor:
    """Quantize float weights [..., 256k] as ggml's quantize_q5_K does, byte for byte.

    Without `importance`, the reference quantizer (quantize_row_q5_K_ref). With it (float32
    [256k], one value per column, an imatrix's mean of x^2, as llama-quantize --imatrix passes it),
    quantize_row_q5_K_impl, which weighs each weight's error by it (lab.formats._imatrix).
    All arithmetic is float32 in the C reference's order, so the bytes match a build of the
    reference that does not fuse multiplies into adds (FMA contraction can move a near-tie).
    """
    weights, _ = float_input(w, BLOCK_WEIGHTS)
    # a weight is at most d * 63 * 31 with a float16 d; checking first also keeps the search's
    # squares, which overflow float32 long before that, from ever running on such weights
    refuse_beyond_reach(weights, F16_MAX * FIELD_MAX * CODE_MAX, "Q5_K")
    super_blocks = weights.reshape(-1, BLOCK_WEIGHTS)
    if importance is not None:
        column_importance = importance_vector(importance, weights.shape[-1], "Q5_K")
        weighed = per_weight(column_importance, weights.shape).reshape(-1, BLOCK_WEIGHTS)
        parts = fit_k_super_blocks(super_blocks, weighed, Q5_K)
    else:
        parts = _reference_parts(super_blocks)
    d16, dmin16, scales, mins, codes = parts
    lead = (*weights.shape[:-1], weights.shape[-1] // BLOCK_WEIGHTS)
    return Q5KTensor(
        codes=codes.reshape(weights.shape),
        scales=scales.reshape(*lead, SUBBLOCKS),
        mins=mins.reshape(*lead, SUBBLOCKS),
        d=d16.reshape(lead),
        dmin=dmin16.reshape(lead),
    )


def _reference_parts(weights: np.ndarray) -> tuple[np.ndarray, ...]:
    """quantize_row_q5_K_ref for super-blocks float32 [b, 256]: (d16, dmin16, scales, mins, codes)."""
    step, floor, search_codes = search_subblocks(SEARCH, weights.reshape(-1, SUBBLOCK_WEIGHTS))
    step, depth = step.reshape(-1, SUBBLOCKS), -floor.reshape(-1, SUBBLOCKS)
    # the six-bit fields count in 63rds of the super-block's largest step and depth (C's max starts at 0)
    largest_step = np.maximum(step.max(axis=1), _F32(0))
    largest_depth = np.maximum(depth.max(axis=1), _F32(0))
    with np.errstate(over="ignore"):  # an overflow to inf is reported just below
        d16 = (largest_step / _F32(FIELD_MAX)).astype(np.float16)
        dmin16 = (largest_depth / _F32(FIELD_MAX)).astype(np.float16)
    if not (np.isfinite(d16).all() and np.isfinite(dmin16).all()):
        raise NonFiniteError("w spans too wide a range: Q5_K's float16 d or dmin would overflow (max 65504)")
    scales, mins = _six_bit_fields(step, largest_step), _six_bit_fields(depth, largest_depth)

    # the codes again, against the stored (rounded) gains and offsets, so decode sees what was aimed at
    gain = d16.astype(np.float32)[:, None] * scales.astype(np.float32)
    offset = dmin16.astype(np.float32)[:, None] * mins.astype(np.float32)
    x = weights.reshape(-1, SUBBLOCKS, SUBBLOCK_WEIGHTS)
    with np.errstate(divide="ignore", invalid="ignore"):  # a zero gain keeps the search's codes instead
        aimed = nearest_codes((x + offset[..., None]) / gain[..., None], CODE_MAX)
    codes = np.where(gain[..., None] != 0, aimed, search_codes.reshape(x.shape)).astype(np.uint8)
    return d16, dmin16, scales, mins, codes


from_gguf = Q5KTensor.from_gguf


FORMAT = register(
    block_format(
        BLOCK,
        name="q5_k",
        quantize=quantize,
        family="gguf",
        summary="GGUF super-blocks of 256: 5-bit codes, 6-bit scales and minimums per 32, fp16 d and dmin",
        tensor=Q5KTensor,
    )
)
