"""GGUF Q5_0: 32 five-bit codes share one float16 scale d; 5.5 bits per weight.

    weight = d * (code - 16),    code in 0..31, so code - 16 in -16..15

One block is 22 bytes. A code's low four bits sit by halves in qs, as Q4_0's codes do; its fifth
bit sits in qh, one little-endian uint32 that holds the fifth bit of every weight:

    byte  0    1    2    3    4    5    6        7        ...   21
         [ d (fp16, LE) ][ qh (uint32, LE)   ][ c16|c0 ][ c17|c1 ] ... [ c31|c15 ]
                                                hi  lo
    qh    byte 2          byte 3          byte 4          byte 5
          bit 7 ..... 0   bit 7 ..... 0   bit 7 ..... 0   bit 7 ..... 0
          w7  ...... w0   w15 ...... w8   w23 ..... w16   w31 ..... w24

    qh bit j = bit 4 of the code of weight j: byte 2 + j // 8, bit j % 8
    byte 6 + j: low nibble = bits 3..0 of the code of weight j, high nibble = of weight j + 16

The quantizer is ggml's reference (`quantize_row_q5_0_ref`), as gguf-py mirrors it: the weight
of largest magnitude (the first, on a tie) sets d = max / -16 in float32, so it lands on code 0
(-16, the end with the extra step); codes are trunc(w * (1/d) + 16.5) capped at 31, and d is then
stored as float16. A weight on the far side can reach +16 steps, where the cap at +15 costs it up
to one whole step. A block of zeros stores d = 0. gguf-py's `quants.quantize` and ggml's C are
the oracles.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from lab.formats._blocks import float_input, grouped
from lab.formats._ggml import (
    F16_MAX,
    OneScaleTensor,
    fifth_bit_words,
    first_absmax,
    five_bit_fields,
    five_bits,
    reciprocal_or_zero,
    refuse_beyond_reach,
)
from lab.formats._tensor import block_field, block_format, gguf_block
from lab.formats.registry import register

BLOCK = gguf_block("Q5_0", 32, 22)  # d, 32 fifth bits (qh), 16 bytes of low nibbles
BLOCK_WEIGHTS = BLOCK.weights  # 32
BLOCK_BYTES = BLOCK.gguf.bytes  # 22: d, qh, then 16 bytes of low nibbles
BITS_PER_WEIGHT = BLOCK.bits_per_weight  # 5.5
CODE_MAX = 31
CODE_OFFSET = 16


class Q5_0Tensor(OneScaleTensor, block=BLOCK):
    """uint8 codes 0..31 [..., 32k] and one float16 scale d per 32 codes [..., k]."""

    codes: np.ndarray = block_field(dtype=np.uint8, low=0, high=CODE_MAX, gguf=five_bits(at=2))

    @staticmethod
    def levels(codes: np.ndarray) -> np.ndarray:
        return codes.astype(np.float32) - np.float32(CODE_OFFSET)

    def code_fields(self, lane: int, code: int) -> dict:
        return {**five_bit_fields(lane, code, self.gguf_part("qh").at), "value": code - CODE_OFFSET}

    def product_text(self, d_text: str, code: int) -> str:
        return f"{d_text} \u00d7 ({code} \u2212 {CODE_OFFSET})"

    def owner_words(self, explained: dict) -> str:
        return f"{super().owner_words(explained)}; {fifth_bit_words(explained)}"


def quantize(w: ArrayLike) -> Q5_0Tensor:
    """Quantize float weights [..., 32k] as ggml's reference Q5_0 quantizer does, byte for byte."""
    weights, _ = float_input(w, BLOCK_WEIGHTS)
    refuse_beyond_reach(weights, F16_MAX * CODE_OFFSET, "Q5_0")
    blocks = grouped(weights, BLOCK_WEIGHTS)
    _, signed_max = first_absmax(blocks)
    d = signed_max / np.float32(-CODE_OFFSET)
    inverse = reciprocal_or_zero(d)  # a zero block has d = 0 and stores code 16 (zero) throughout
    # C converts with a cast, which truncates: + 16.5 makes that round half up around the offset.
    # w * (1/d) lies within -16..16 but for a few ulps, so only the top needs C's MIN(31, ...)
    codes = np.trunc(blocks * inverse[..., None] + np.float32(CODE_OFFSET + 0.5))
    codes = np.minimum(codes, CODE_MAX).astype(np.uint8)
    d16 = d.astype(np.float16)
    return Q5_0Tensor(codes=codes.reshape(weights.shape), d=d16)


from_gguf = Q5_0Tensor.from_gguf


FORMAT = register(
    block_format(
        BLOCK,
        name="q5_0",
        quantize=quantize,
        family="gguf",
        summary="GGUF's plain 5-bit blocks: 32 codes minus 16, times one float16 scale; the fifth bits in one uint32",
        tensor=Q5_0Tensor,
    )
)
