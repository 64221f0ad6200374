"""GGUF Q5_1: 32 five-bit codes share a float16 scale d and a float16 minimum m; 6 bits per weight.

    weight = d * code + m,    code in 0..31

One block is 24 bytes. A code's low four bits sit by halves in qs, as Q4_1's codes do; its fifth
bit sits in qh, one little-endian uint32 that holds the fifth bit of every weight:

    byte  0    1    2    3    4    5    6    7    8        9        ...   23
         [ d (fp16, LE) ][ m (fp16, LE) ][ qh (uint32, LE)   ][ c16|c0 ][ c17|c1 ] ... [ c31|c15 ]
                                                                hi  lo
    qh    byte 4          byte 5          byte 6          byte 7
          bit 7 ..... 0   bit 7 ..... 0   bit 7 ..... 0   bit 7 ..... 0
          w7  ...... w0   w15 ...... w8   w23 ..... w16   w31 ..... w24

    qh bit j = bit 4 of the code of weight j: byte 4 + j // 8, bit j % 8
    byte 8 + j: low nibble = bits 3..0 of the code of weight j, high nibble = of weight j + 16

The quantizer is ggml's reference (`quantize_row_q5_1_ref`), as gguf-py mirrors it: m is the
block's minimum and d = (max - min) / 31 in float32, codes are trunc((w - min) * (1/d) + 0.5)
(round half up); d and m are then stored as float16. The decoder rounds d * code to float32
before adding m, as ggml does. gguf-py's `quants.quantize` and ggml's C are the oracles.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from lab.errors import NonFiniteError
from lab.formats._blocks import float_input, grouped
from lab.formats._ggml import F16_MAX, fifth_bit_words, five_bit_fields, five_bits, reciprocal_or_zero, scales_words
from lab.formats._tensor import GGUFBlockTensor, Lane, block_field, block_format, gguf_block, half
from lab.formats.registry import register
from lab.numbers import format_number

BLOCK = gguf_block("Q5_1", 32, 24)  # d, m, qh, 16 bytes of low nibbles
BLOCK_WEIGHTS = BLOCK.weights  # 32
BLOCK_BYTES = BLOCK.gguf.bytes  # 24: d, m, qh, then 16 bytes of low nibbles
BITS_PER_WEIGHT = BLOCK.bits_per_weight  # 6.0
CODE_MAX = 31


class Q5_1Tensor(GGUFBlockTensor, block=BLOCK):
    """uint8 codes 0..31 [..., 32k], and per 32 codes a float16 scale d and minimum m [..., k]."""

    codes: np.ndarray = block_field(dtype=np.uint8, low=0, high=CODE_MAX, gguf=five_bits(at=4))
    d: np.ndarray = block_field(per_block=(), dtype=np.float16, gguf=half(at=0))
    m: np.ndarray = block_field(per_block=(), dtype=np.float16, gguf=half(at=2))

    def dequantize(self) -> np.ndarray:
        codes = grouped(self.codes.astype(np.float32), BLOCK_WEIGHTS)
        with np.errstate(over="ignore", invalid="ignore"):  # an inf or NaN d or m decodes as such, as in ggml
            # two roundings, as ggml: d * code to float32, then + m
            weights = self.d.astype(np.float32)[..., None] * codes + self.m.astype(np.float32)[..., None]
        return weights.reshape(self.shape)

    def explain_lane(self, at: Lane) -> dict:
        d, m = float(self.d[at.block_position]), float(self.m[at.block_position])
        code = int(self.codes[at.position])
        weight = float(np.float32(np.float32(d) * np.float32(code)) + np.float32(m))
        return {
            **five_bit_fields(at.lane, code, self.gguf_part("qh").at),
            "d": d,
            "m": m,
            "weight": weight,
            "formula": f"{format_number(d)} \u00d7 {code} + {format_number(m)} = {format_number(weight)}",
        }

    def owner_words(self, explained: dict) -> str:
        return f"{scales_words(self, explained, 'd', 'm')}; {fifth_bit_words(explained)}"


def quantize(w: ArrayLike) -> Q5_1Tensor:
    """Quantize float weights [..., 32k] as ggml's reference Q5_1 quantizer does, byte for byte."""
    weights, _ = float_input(w, BLOCK_WEIGHTS)
    blocks = grouped(weights, BLOCK_WEIGHTS)
    # C keeps the first of equal extremes (strict < and >), which decides between -0 and +0;
    # numpy's min and max may return either zero
    low = np.take_along_axis(blocks, blocks.argmin(axis=-1)[..., None], axis=-1)[..., 0]
    high = np.take_along_axis(blocks, blocks.argmax(axis=-1)[..., None], axis=-1)[..., 0]
    # m holds the block's minimum and d its span / 31, both in float16: each must stay within 65504
    if (np.abs(low) > F16_MAX).any() or ((high.astype(np.float64) - low) / CODE_MAX > F16_MAX).any():
        raise NonFiniteError("w spans too wide a range: Q5_1's float16 minimum m or step d would overflow (max 65504)")
    d = (high - low) / np.float32(CODE_MAX)
    inverse = reciprocal_or_zero(d)  # a constant block has d = 0 and stores code 0 throughout
    # C converts with a cast, which truncates: + 0.5 makes that round half up. C caps nothing:
    # the block's maximum lands on 31 but for a few ulps, which the truncation takes back to 31
    codes = np.trunc((blocks - low[..., None]) * inverse[..., None] + np.float32(0.5)).astype(np.uint8)
    d16, m16 = d.astype(np.float16), low.astype(np.float16)
    return Q5_1Tensor(codes=codes.reshape(weights.shape), d=d16, m=m16)


from_gguf = Q5_1Tensor.from_gguf


FORMAT = register(
    block_format(
        BLOCK,
        name="q5_1",
        quantize=quantize,
        family="gguf",
        summary="GGUF's 5-bit blocks with an offset: 32 codes times a float16 scale, plus a float16 minimum",
        tensor=Q5_1Tensor,
    )
)
