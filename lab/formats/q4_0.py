"""GGUF Q4_0: 32 four-bit codes share one float16 scale d; 4.5 bits per weight.

    weight = d * (code - 8),    code in 0..15, so code - 8 in -8..7

One block is 18 bytes:

    byte  0    1    2        3        ...   17
         [ d (fp16, LE) ][ c16|c0 ][ c17|c1 ] ... [ c31|c15 ]
                           hi  lo
    byte 2 + j: low nibble = code of weight j, high nibble = code of weight j + 16

The quantizer is ggml's reference (`quantize_row_q4_0_ref`), as gguf-py mirrors it: the weight
of largest magnitude (the first, on a tie) sets d = max / -8 in float32, so it lands on code 0
(-8, the end with the extra step); codes are trunc(w * (1/d) + 8.5) clamped to 15, and d is then
stored as float16. A weight on the far side can reach +8 steps, where the clamp to +7 costs it up
to one whole step. A block of zeros stores d = 0. gguf-py's `quants.quantize` is the oracle.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from lab.formats._blocks import float_input, grouped
from lab.formats._ggml import F16_MAX, HalvesTensor, first_absmax, reciprocal_or_zero, refuse_beyond_reach
from lab.formats._tensor import block_format, gguf_block
from lab.formats.registry import register

BLOCK = gguf_block("Q4_0", 32, 18)
BLOCK_WEIGHTS = BLOCK.weights  # 32
BLOCK_BYTES = BLOCK.gguf.bytes  # 18: d, then 16 bytes of nibbles
BITS_PER_WEIGHT = BLOCK.bits_per_weight  # 4.5
CODE_MAX = 15
CODE_OFFSET = 8


class Q4_0Tensor(HalvesTensor, block=BLOCK):
    """uint8 codes 0..15 [..., 32k] and one float16 scale d per 32 codes [..., k]."""

    @staticmethod
    def levels(codes: np.ndarray) -> np.ndarray:
        return codes.astype(np.float32) - np.float32(CODE_OFFSET)

    def product_text(self, d_text: str, code: int) -> str:
        return f"{d_text} \u00d7 ({code} \u2212 {CODE_OFFSET})"


def quantize(w: ArrayLike) -> Q4_0Tensor:
    """Quantize float weights [..., 32k] as ggml's reference Q4_0 quantizer does, byte for byte."""
    weights, _ = float_input(w, BLOCK_WEIGHTS)
    refuse_beyond_reach(weights, F16_MAX * CODE_OFFSET, "Q4_0")
    blocks = grouped(weights, BLOCK_WEIGHTS)
    _, signed_max = first_absmax(blocks)
    d = signed_max / np.float32(-CODE_OFFSET)
    inverse = reciprocal_or_zero(d)  # a zero block has d = 0 and stores code 8 (zero) throughout
    # C converts with a cast, which truncates: + 8.5 makes that round half up around the offset
    codes = np.trunc(blocks * inverse[..., None] + np.float32(CODE_OFFSET + 0.5))
    codes = np.clip(codes, 0, CODE_MAX).astype(np.uint8)
    d16 = d.astype(np.float16)
    return Q4_0Tensor(codes=codes.reshape(weights.shape), d=d16)


from_gguf = Q4_0Tensor.from_gguf


FORMAT = register(
    block_format(
        BLOCK,
        name="q4_0",
        quantize=quantize,
        family="gguf",
        summary="GGUF's plain 4-bit blocks: 32 codes minus 8, times one float16 scale",
        tensor=Q4_0Tensor,
    )
)
