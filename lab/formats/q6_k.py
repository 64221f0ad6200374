"""GGUF Q6_K: 256-weight super-blocks of 6-bit codes, an int8 scale per 16 weights, one float16 d; 6.5625 bits per weight.

    weight = d * s_j * (code - 32),    code in 0..63, s_j in -128..127 for subblock j = 0..15

One super-block is 210 bytes:

    bytes    0..127  ql      the low 4 bits of every code
    bytes  128..191  qh      the high 2 bits of every code, four codes per byte
    bytes  192..207  scales  s_0 .. s_15, int8, one per 16 weights
    bytes  208..209  d       float16, little-endian

Code placement. Each half h = 0, 1 of the super-block (weights 128h .. 128h + 127) has 64 ql
bytes and 32 qh bytes. For l = 0..31 the four weights 128h + l + 32k (k = 0..3) share qh byte
32h + l, and pair up in ql:

    ql[64h + l]       low nibble: k = 0    high nibble: k = 2
    ql[64h + 32 + l]  low nibble: k = 1    high nibble: k = 3
    qh[32h + l]       bits 2k+1..2k: bits 5..4 of the code of weight 128h + l + 32k

The decoder rounds the gain d * s_j to float32 before multiplying, as gguf-py.

The quantizer follows llama.cpp's reference (`quantize_row_q6_K_ref`), reimplemented from its
description. Per 16-weight subblock, `make_qx_quants` with nmax 32 and importance x^2: levels
l = nearest(x * iscale) clamped to -32..31 for iscale = -(32 + 0.1 t)/max, t = 0 then -9..9
(the largest weight lands on -32, the end with the extra step); for fixed levels the weighted
least-squares scale is sum(w x l) / sum(w l^2), and a candidate replaces the best when it
explains more, sum(w x l)^2 / sum(w l^2). Then the subblock scale of largest magnitude sets
iscale = -128/scale and d = 1/iscale (stored as float16), every subblock scale becomes
min(127, nearest(iscale * scale)), and every code nearest(x / (d16 * s_j)) clamped to -32..31,
against the stored gain. A subblock whose stored gain is 0 keeps the levels of its own fit.
gguf-py has no Q6_K quantizer; its `quants.dequantize` is the decoder's oracle. With an importance
vector, quantize(w, importance=...) follows quantize_row_q6_K_impl: the same search, weighed by it.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from lab.formats._blocks import float_input
from lab.formats._ggml import F16_MAX, GROUP_MAX_EPS, first_absmax, refuse_beyond_reach
from lab.formats._imatrix import importance_vector, per_weight
from lab.formats._tensor import GGUFBlockTensor, Lane, Part, block_field, block_format, gguf_block, half, rows, stored
from lab.formats.registry import register
from lab.numbers import format_number

BLOCK = gguf_block("Q6_K", 256, 210)
BLOCK_WEIGHTS = BLOCK.weights  # 256
BLOCK_BYTES = BLOCK.gguf.bytes  # 210
BITS_PER_WEIGHT = BLOCK.bits_per_weight  # 6.5625
SUBBLOCKS = 16
SUBBLOCK_WEIGHTS = 16
CODE_OFFSET = 32
QH_OFFSET = 128
SCALES_OFFSET = 192
D_OFFSET = 208
#: make_qx_quants' candidate grids: iscale = -(32 + 0.1 t) / max for t = 0, then t = -9..9 but 0
SEARCH_TRIES = 9
SCALE_STEPS = 128


_SHIFTS = np.arange(0, 8, 2, dtype=np.uint8)[:, None]  # 0, 2, 4, 6 for the four codes of a qh byte


def _code_parts(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """6-bit codes [..., 256k] -> ql [..., k, 128] (their low nibbles) and qh [..., k, 64] (their high bits)."""
    # q[..., h, k, l] is the code of weight 128h + 32k + l
    q = codes.reshape(*codes.shape[:-1], -1, 2, 4, 32)
    lead = q.shape[:-3]
    low, high = q & np.uint8(15), q >> np.uint8(4)
    ql = (low[..., 0:2, :] | (low[..., 2:4, :] << np.uint8(4))).reshape(*lead, 128)
    return ql, (high << _SHIFTS).sum(axis=-2, dtype=np.uint8).reshape(*lead, 64)


def _codes(ql: np.ndarray, qh: np.ndarray) -> np.ndarray:
    """ql [..., k, 128] and qh [..., k, 64] -> the 6-bit codes [..., 256k]; the inverse of _code_parts."""
    lead = ql.shape[:-1]
    by_half = ql.reshape(*lead, 2, 2, 32)
    low = np.concatenate([by_half & np.uint8(15), by_half >> np.uint8(4)], axis=-2)  # k = 0, 1, 2, 3
    high = (qh.reshape(*lead, 2, 1, 32) >> _SHIFTS) & np.uint8(3)
    return rows((low | (high << np.uint8(4))).reshape(*lead, -1))


class Q6KTensor(GGUFBlockTensor, block=BLOCK):
    """uint8 codes 0..63 [..., 256k], int8 subblock scales [..., k, 16], float16 d [..., k]."""

    codes: np.ndarray = block_field(
        dtype=np.uint8,
        low=0,
        high=2 * CODE_OFFSET - 1,
        gguf=stored(
            Part("ql", QH_OFFSET, "low nibbles", at=0, trace=True),
            Part("qh", SCALES_OFFSET - QH_OFFSET, "high bits", at=QH_OFFSET),
            write=_code_parts,
            read=_codes,
        ),
    )
    scales: np.ndarray = block_field(
        per_block=(SUBBLOCKS,),
        dtype=np.int8,
        gguf=stored(
            Part("scales", D_OFFSET - SCALES_OFFSET, "int8 scales", at=SCALES_OFFSET),
            write=lambda scales: scales.view(np.uint8),
            read=lambda part: part.copy().view(np.int8),
        ),
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
        half_block, rest = divmod(at.lane, 128)
        quarter, column = divmod(rest, 32)
        subblock = at.lane // SUBBLOCK_WEIGHTS
        d, scale = float(self.d[at.block_position]), int(self.scales[(*at.block_position, subblock)])
        gain = float(self.gains()[(*at.block_position, subblock)])
        code = int(self.codes[at.position])
        weight = float(np.float32(gain) * np.float32(code - CODE_OFFSET))
        return {
            "ql_byte": 64 * half_block + 32 * (quarter % 2) + column,
            "ql_nibble": "low" if quarter < 2 else "high",
            "qh_byte": QH_OFFSET + 32 * half_block + column,
            "qh_bits": (2 * quarter + 1, 2 * quarter),
            "scale_byte": SCALES_OFFSET + subblock,
            "code": code,
            "code_bits": f"{code >> 4:02b} {code & 15:04b}",
            "value": code - CODE_OFFSET,
            "scale": scale,
            "d": d,
            "gain": gain,
            "weight": weight,
            "gain_formula": f"{format_number(d)} \u00d7 {scale} = {format_number(gain)}",
            "formula": f"{format_number(gain)} \u00d7 ({code} \u2212 32) = {format_number(weight)}",
        }

    def owner_words(self, explained: dict) -> str:
        # the int8 scale's value first, then where it sits: "byte 192 = -96" read as a byte's value
        return (
            f"subblock {explained['subblock']}: int8 scale {format_number(explained['scale'])} at block byte "
            f"{explained['scale_byte']}; code bits 5..4 from qh byte {explained['qh_byte']}"
        )


#: subblocks fitted per pass: the candidate loop's buffers then take 256 KiB each and stay in cache
_CHUNK_SUBBLOCKS = 4096


def _levels(iscale: np.ndarray, x: np.ndarray, nmax: int, out: np.ndarray | None = None) -> np.ndarray:
    """clip(rint(iscale * x), -nmax, nmax - 1) for x position-major [16, n] and iscale [n]."""
    levels = np.multiply(iscale, x, out=out)
    np.rint(levels, out=levels)
    return np.clip(levels, -nmax, nmax - 1, out=levels)


def fit_subblocks(
    x: np.ndarray, importance: np.ndarray | None = None, nmax: int = CODE_OFFSET
) -> tuple[np.ndarray, np.ndarray]:
    """make_qx_quants(16, nmax, x, L, rmse_type 1, qw) for every subblock [..., 16]: (float32 scale, levels -nmax..nmax-1).

    Each weight's error is weighed by x^2 (qw = NULL), or by `importance` (x's shape) where given:
    quantize_row_q6_K_impl passes the imatrix's values as they are, without Q4_K's sigma term
    (quantize_row_q3_K_impl calls it with nmax 4, and again with nmax 32 on the subblock scales).
    A subblock below GROUP_MAX_EPS gets scale 0 and levels -nmax (stored code 0), as the reference.
    Every subblock is fitted on its own, so fitting a chunk at a time gives the same result.
    """
    flat = x.reshape(-1, SUBBLOCK_WEIGHTS)
    flat_importance = None if importance is None else importance.reshape(flat.shape)
    scale = np.empty(flat.shape[0], np.float32)
    levels = np.empty(flat.shape, np.float32)
    for start in range(0, flat.shape[0], _CHUNK_SUBBLOCKS):
        chunk = slice(start, start + _CHUNK_SUBBLOCKS)
        # position-major [16, n]: reducing over axis 0 adds one position after another, as C does
        chunk_x = np.ascontiguousarray(flat[chunk].T)
        chunk_importance = chunk_x * chunk_x if flat_importance is None else flat_importance[chunk].T
        scale[chunk], chunk_levels = _fit_position_major(chunk_x, chunk_importance, nmax)
        levels[chunk] = chunk_levels.T
    return scale.reshape(x.shape[:-1]), levels.reshape(x.shape)


def _fit_position_major(x: np.ndarray, importance: np.ndarray, nmax: int) -> tuple[np.ndarray, np.ndarray]:
    """fit_subblocks for subblocks laid out position-major, x and importance float32 [16, n] -> (scale [n], levels [16, n]).

    The candidates' levels and products go into buffers reused from one candidate to the next.
    The winner's levels are not copied out of each candidate; its grid, iscale, is kept instead,
    and its levels worked out once at the end by the same arithmetic, so they are the same levels.
    """
    weighted_x = importance * x  # the reference's w * x * l, left to right: the same for every candidate
    columns = np.arange(x.shape[1])
    signed_max = x[np.abs(x).argmax(axis=0), columns]  # the first largest, as C's `>` scan keeps
    zero = np.abs(signed_max) < GROUP_MAX_EPS
    signed_max = np.where(zero, np.float32(1), signed_max)
    levels, weighted, product = (np.empty_like(x) for _ in range(3))

    def sums(iscale: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        _levels(iscale, x, nmax, out=levels)
        sum_lx = np.add.reduce(np.multiply(weighted_x, levels, out=product), axis=0)
        np.multiply(importance, levels, out=weighted)
        return sum_lx, np.add.reduce(np.multiply(weighted, levels, out=product), axis=0)

    best_iscale = np.float32(-nmax) / signed_max
    sum_lx, sum_l2 = sums(best_iscale)
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(sum_l2 != 0, sum_lx / sum_l2, np.float32(0)).astype(np.float32)
    best = scale * sum_lx
    for t in range(-SEARCH_TRIES, SEARCH_TRIES + 1):
        if t == 0:
            continue
        stretch = np.float32(nmax) + np.float32(0.1) * np.float32(t)
        iscale = -stretch / signed_max
        sum_lx, sum_l2 = sums(iscale)
        with np.errstate(divide="ignore", invalid="ignore"):  # sum_l2 = 0 is never chosen
            better = (sum_l2 > 0) & (sum_lx * sum_lx > best * sum_l2)
            scale = np.where(better, sum_lx / sum_l2, scale)
        best = np.where(better, scale * sum_lx, best)
        best_iscale = np.where(better, iscale, best_iscale)
    levels = _levels(best_iscale, x, nmax, out=levels)
    levels[:, zero] = -nmax
    return np.where(zero, np.float32(0), scale).astype(np.float32), levels


def quantize(w: ArrayLike, importance: ArrayLike | None = None) -> Q6KTensor:
    """Quantize float weights [..., 256k] as ggml's quantize_q6_K does, byte for byte.

    Without `importance`, the reference quantizer (quantize_row_q6_K_ref). With it (float32
    [256k], one value per column, an imatrix's mean of x^2, as llama-quantize --imatrix passes it),
    quantize_row_q6_K_impl: the same search with each weight's error weighed by its column's
    importance instead of by x^2; the rest is the reference's.
    """
    weights, _ = float_input(w, BLOCK_WEIGHTS)
    # a weight is d * scale * code: float16 d, int8 scales down to -128, codes down to -32
    refuse_beyond_reach(weights, F16_MAX * 128 * CODE_OFFSET, "Q6_K")
    x = weights.reshape(*weights.shape[:-1], -1, SUBBLOCKS, SUBBLOCK_WEIGHTS)
    weighed = None
    if importance is not None:
        weighed = per_weight(importance_vector(importance, weights.shape[-1], "Q6_K"), weights.shape)
    with np.errstate(over="ignore", invalid="ignore"):  # weights near float32's limit overflow the squares
        fitted, levels = fit_subblocks(x, weighed)
    amax, largest = first_absmax(fitted)
    empty = amax < GROUP_MAX_EPS  # the reference stores such a super-block as all-zero bytes
    largest = np.where(empty, np.float32(1), largest)
    iscale = np.float32(-SCALE_STEPS) / largest
    with np.errstate(over="ignore"):  # d above float16's range is stored as inf, as ggml does
        d16 = np.where(empty, np.float32(0), np.float32(1) / iscale).astype(np.float16)
    scales = np.minimum(np.rint(iscale[..., None] * fitted), SCALE_STEPS - 1)
    scales = np.where(empty[..., None], 0, scales).astype(np.int8)
    gain = d16.astype(np.float32)[..., None] * scales.astype(np.float32)
    has_gain = gain != 0
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # zero gains keep the fit's levels
        aimed = np.clip(np.rint(x / gain[..., None]), -CODE_OFFSET, CODE_OFFSET - 1)
    levels = np.where(has_gain[..., None], aimed, levels)
    levels[empty] = -CODE_OFFSET
    codes = (levels + CODE_OFFSET).astype(np.uint8)
    return Q6KTensor(codes=codes.reshape(weights.shape), scales=scales, d=d16)


from_gguf = Q6KTensor.from_gguf


FORMAT = register(
    block_format(
        BLOCK,
        name="q6_k",
        quantize=quantize,
        family="gguf",
        summary="GGUF super-blocks of 256: 6-bit codes, an int8 scale per 16, one float16 d",
        tensor=Q6KTensor,
    )
)
