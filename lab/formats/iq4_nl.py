"""GGUF IQ4_NL: 32 four-bit indices into a fixed non-linear codebook, one float16 scale; 4.5 bits per weight.

    weight = d * KVALUES[code],    code in 0..15

    KVALUES = -127 -104 -83 -65 -49 -35 -22 -10 1 13 25 38 53 69 89 113   (llama.cpp's kvalues_iq4nl)

The codebook is denser near zero, where most weights of a block sit, and wider apart at the
ends; it is lopsided (-127 against 113), so the sign of d picks which end the block's largest
weight lands on. One block is 18 bytes, laid out as Q4_0's:

    byte  0    1    2        3        ...   17
         [ d (fp16, LE) ][ c16|c0 ][ c17|c1 ] ... [ c31|c15 ]
                           hi  lo
    byte 2 + j: low nibble = index of weight j, high nibble = index of weight j + 16

The quantizer follows llama.cpp's `quantize_iq4_nl` (with no importance matrix, below; with one,
see quantize), what
`ggml_quantize_chunk` writes into GGUF files (since ggml f5fc72a1, March 2024,
`quantize_row_iq4_nl_ref` is a different, single-grid search, ntry = -1), byte for byte: per
block, importance x^2 per weight; a first scale d = max/127 with codes by nearest entry (a tie
takes the upper entry) gives a least-squares d = sum(w q x) / sum(w q^2); then 15 candidate
grids with 1/d = (t - 127)/max, t = -7..7, which put the largest weight near the -127 end; a
candidate replaces the best when its fit explains more of the block, sum(w q x)^2 / sum(w q^2).
The final codes are the nearest entries to x / d with the float32 d, which is then stored as
float16. gguf-py has no IQ4_NL quantizer; its `quants.dequantize` is the decoder's oracle.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from lab.formats._blocks import float_input, grouped
from lab.formats._ggml import (
    F16_MAX,
    GROUP_MAX_EPS,
    HalvesTensor,
    half_step_table,
    nearest_index,
    nibble_halves,
    reciprocal_or_zero,
    refuse_beyond_reach,
)
from lab.formats._imatrix import importance_vector, per_weight, sigma_weights
from lab.formats._tensor import block_field, block_format, gguf_block
from lab.formats.registry import register

BLOCK = gguf_block("IQ4_NL", 32, 18)
BLOCK_WEIGHTS = BLOCK.weights  # 32
BLOCK_BYTES = BLOCK.gguf.bytes  # 18: d, then 16 bytes of nibbles
BITS_PER_WEIGHT = BLOCK.bits_per_weight  # 4.5
#: llama.cpp's kvalues_iq4nl, as gguf-py's IQ4_NL.kvalues has them
KVALUES = np.array([-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113], np.int8)
KVALUES_F32 = KVALUES.astype(np.float32)
#: candidate grids 1/d = (t + KVALUES[0]) / max for t = -SEARCH_TRIES..SEARCH_TRIES (the reference's ntry)
SEARCH_TRIES = 7


class IQ4NLTensor(HalvesTensor, block=BLOCK):
    """uint8 codebook indices 0..15 [..., 32k] and one float16 scale d per 32 [..., k]."""

    codes: np.ndarray = block_field("indices", dtype=np.uint8, low=0, high=len(KVALUES) - 1, gguf=nibble_halves(at=2))

    @staticmethod
    def levels(codes: np.ndarray) -> np.ndarray:
        return KVALUES_F32[codes]

    def product_text(self, d_text: str, code: int) -> str:
        return f"{d_text} \u00d7 KVALUES[{code}] = {d_text} \u00d7 {int(KVALUES[code])}"


#: the codebook value nearest to x for each half-step cell of x, from floor(2x) = 2 * KVALUES[0] up
_NEAREST_VALUE = KVALUES_F32[half_step_table(KVALUES_F32)]
_FIRST_CELL = np.float32(2 * int(KVALUES[0]))
#: blocks fitted per pass: the candidate loop's six arrays of 32 x 2048 (the weights, their squares,
#: three float32 buffers and the int32 cells) then take 1.5 MiB and stay in cache through all 16
#: candidates
_CHUNK_BLOCKS = 2048


def nearest_codes(scaled: np.ndarray) -> np.ndarray:
    """Codebook indices nearest to weights already divided by their scale (a tie takes the upper entry)."""
    return nearest_index(scaled, KVALUES_F32)


def fit_scales(blocks: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """The reference's float32 scale d for every 32-weight block [..., 32] -> [...]; 0 for a zero block.

    Each weight's error is weighed by x^2, or by `weights` (blocks' shape) where given: with an
    imatrix, quantize_row_iq4_nl_impl weighs it by importance * sqrt(sigma2 + x^2) (lab.formats._imatrix).
    Each candidate grid sets codes by nearest entry; for fixed codes q the weighted least-squares
    scale is sum(w q x) / sum(w q^2), and its fit explains sum(w q x)^2 / sum(w q^2) of the block.
    The products and sums run in float32 in the reference's order, left to right over the block.
    Every block is fitted on its own, so fitting a chunk of blocks at a time gives the same scales.
    """
    flat = blocks.reshape(-1, BLOCK_WEIGHTS)
    flat_weights = None if weights is None else weights.reshape(flat.shape)
    d = np.empty(flat.shape[0], np.float32)
    for start in range(0, flat.shape[0], _CHUNK_BLOCKS):
        chunk = slice(start, start + _CHUNK_BLOCKS)
        # position-major (32, n): reducing over axis 0 adds one position after another, as C does
        chunk_x = np.ascontiguousarray(flat[chunk].T)
        chunk_weights = chunk_x * chunk_x if flat_weights is None else flat_weights[chunk].T
        d[chunk] = _fit_position_major(chunk_x, chunk_weights)
    return d.reshape(blocks.shape[:-1])


def _fit_position_major(x: np.ndarray, importance: np.ndarray) -> np.ndarray:
    """fit_scales for blocks laid out position-major, x and the weights' importance float32 [32, n] -> d [n].

    The candidates' products go into buffers of x's size, reused; the codes themselves are
    never formed: floor(2 x / d) indexes the nearest codebook value directly (see
    _ggml.nearest_index), with 2/d worked out per block. Doubling is exact, except where x / d
    underflows, and then floor(2 x / d) is -1 or 0, cells that both hold the value nearest 0.
    """
    columns = np.arange(x.shape[1])
    signed_max = x[np.abs(x).argmax(axis=0), columns]  # the first largest, as C's `>` scan keeps
    zero = np.abs(signed_max) < GROUP_MAX_EPS
    signed_max = np.where(zero, np.float32(1), signed_max)  # a zero block's d is set to 0 at the end
    q, weighted, product = (np.empty_like(x) for _ in range(3))
    cells = np.empty(x.shape, np.int32)

    def fit(inverse: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # |x / d| <= 134 for every candidate (|x| <= |max|), so the cells fit in int32; those
        # beyond the codebook's ends take its end values through mode="clip"
        np.multiply(x, inverse * np.float32(2), out=product)
        np.floor(product, out=product)
        np.subtract(product, _FIRST_CELL, out=cells, casting="unsafe")
        np.take(_NEAREST_VALUE, cells, mode="clip", out=q)
        np.multiply(importance, q, out=weighted)
        sum_qx = np.add.reduce(np.multiply(weighted, x, out=product), axis=0)
        sum_q2 = np.add.reduce(np.multiply(weighted, q, out=product), axis=0)
        return sum_qx, sum_q2

    start = -signed_max / KVALUES_F32[0]  # the largest weight at +127, just past the +113 end
    sum_qx, sum_q2 = fit(np.float32(1) / start)
    # C's sumq2 > 0 ? sumqx/sumq2 : 0: a block whose importance is all zero has no fit
    d = np.where(sum_q2 > 0, sum_qx / sum_q2, np.float32(0))
    best = d * sum_qx
    for t in range(-SEARCH_TRIES, SEARCH_TRIES + 1):
        # C adds in int: t + KVALUES[0] with numpy's int8 would wrap below -128 (t < -1) to a
        # positive grid, so the sum is taken as a Python int
        sum_qx, sum_q2 = fit(np.float32(t + int(KVALUES[0])) / signed_max)
        with np.errstate(divide="ignore", invalid="ignore"):  # sum_q2 = 0 is never chosen
            better = (sum_q2 > 0) & (sum_qx * sum_qx > best * sum_q2)
            d = np.where(better, sum_qx / sum_q2, d)
        best = np.where(better, d * sum_qx, best)
    return np.where(zero, np.float32(0), d).astype(np.float32)


def codes_for(blocks: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Nearest indices for blocks [..., g] under float32 scales [...], through 1/scale (0 where the scale is 0).

    A chunk of blocks at a time, so that the temporaries stay in cache.
    """
    flat = blocks.reshape(-1, blocks.shape[-1])
    inverse = reciprocal_or_zero(scale).reshape(-1, 1)
    codes = np.empty(flat.shape, np.uint8)
    for start in range(0, flat.shape[0], _CHUNK_BLOCKS):
        chunk = slice(start, start + _CHUNK_BLOCKS)
        codes[chunk] = nearest_codes(inverse[chunk] * flat[chunk])
    return codes.reshape(blocks.shape)


def quantize(w: ArrayLike, importance: ArrayLike | None = None) -> IQ4NLTensor:
    """Quantize float weights [..., 32k] as ggml's quantize_iq4_nl does, byte for byte.

    `importance` (float32 [32k], one value per column, an imatrix's mean of x^2, as llama-quantize
    --imatrix passes it) weighs each weight's error by importance * sqrt(sigma2 + x^2), sigma2
    twice the block's mean square, instead of by x^2; the search is the same.
    """
    weights, _ = float_input(w, BLOCK_WEIGHTS)
    # a weight is d * level: float16 d, levels down to -127
    refuse_beyond_reach(weights, F16_MAX * 127, "IQ4_NL")
    blocks = grouped(weights, BLOCK_WEIGHTS)
    column_importance = None if importance is None else importance_vector(importance, weights.shape[-1], "IQ4_NL")
    # the fit's float32 sums of w² q x overflow for blocks far from unit scale, as the reference's
    # do, and a block of subnormals divides 0 by 0; the candidates those spoil are never chosen
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        fit_weights = None
        if column_importance is not None:
            fit_weights = sigma_weights(blocks, grouped(per_weight(column_importance, weights.shape), BLOCK_WEIGHTS))
        d = fit_scales(blocks, fit_weights)
    codes = codes_for(blocks, d)
    d16 = d.astype(np.float16)
    return IQ4NLTensor(codes=codes.reshape(weights.shape), d=d16)


from_gguf = IQ4NLTensor.from_gguf


FORMAT = register(
    block_format(
        BLOCK,
        name="iq4_nl",
        quantize=quantize,
        family="gguf",
        summary="GGUF's non-linear 4-bit blocks: 32 indices into a 16-entry codebook, one float16 scale",
        tensor=IQ4NLTensor,
    )
)
