"""GGUF Q8_0: 32 int8 codes share one float16 scale d; 8.5 bits per weight.

    weight = d * code,    code in -127..127 (the quantizer never writes -128; a decoder reads it)

One block is 34 bytes:

    byte  0    1    2    3   ...   33
         [ d (fp16, LE) ][ q0 ][ q1 ] ... [ q31 ]    q_i int8, weight i = d * q_i

The quantizer is ggml's reference (`quantize_row_q8_0_ref`), as gguf-py mirrors it: d = amax/127
in float32, codes round(w / d) half away from zero using the float32 reciprocal 1/d, and d is then
stored as float16. A block of zeros stores d = 0. gguf-py's `quants.quantize` is the oracle.

Decoding computes what gguf-py's `quants.dequantize` does, float32(d) * float32(code), a few
thousand blocks at a time straight into the float32 output, so no full-size intermediate is ever
made. `dequantize_gguf` reads d and the codes as strided views of the GGUF bytes themselves (a
memory-mapped file's included), so decoding a file's tensor allocates the output and little more.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from lab.formats._blocks import float_input, grouped
from lab.formats._ggml import F16_MAX, OneScaleTensor, reciprocal_or_zero, refuse_beyond_reach
from lab.formats._tensor import Part, block_field, block_format, gguf_block, rows, stored
from lab.formats.registry import register

BLOCK = gguf_block("Q8_0", 32, 34)
BLOCK_WEIGHTS = BLOCK.weights  # 32
BLOCK_BYTES = BLOCK.gguf.bytes  # 34: d, then 32 code bytes
BITS_PER_WEIGHT = BLOCK.bits_per_weight  # 8.5
CODE_MAX = 127
#: blocks one multiply decodes: 2048 blocks are 256 KB of float32, small enough that the cast codes
#: and scales stay in a core's cache until the product is stored, large enough that numpy's
#: per-call cost stays small beside the work
DECODE_CHUNK_BLOCKS = 2048


def _decode_blocks(codes: np.ndarray, d: np.ndarray) -> np.ndarray:
    """int8 codes [n, 32] times their float16 scales d [n] -> float32 weights [n, 32].

    The product is gguf-py's, float32(d) * float32(code), so the bits are the same. Each chunk's
    scales are widened on their own (a few KB) and the int8 codes are cast inside the multiply,
    which writes into the one preallocated output.
    """
    weights = np.empty(codes.shape, np.float32)
    with np.errstate(invalid="ignore"):  # an infinite d times code 0 is NaN, as in ggml
        for start in range(0, len(d), DECODE_CHUNK_BLOCKS):
            chunk = slice(start, start + DECODE_CHUNK_BLOCKS)
            np.multiply(codes[chunk], d[chunk, None].astype(np.float32), out=weights[chunk])
    return weights


class Q8_0Tensor(OneScaleTensor, block=BLOCK):
    """int8 codes [..., 32k] and one float16 scale d per 32 codes [..., k]."""

    codes: np.ndarray = block_field(
        dtype=np.int8,
        gguf=stored(
            Part("qs", 32, "codes", at=2),
            write=lambda codes: grouped(codes, BLOCK_WEIGHTS).view(np.uint8),
            read=lambda qs: rows(qs.copy().view(np.int8)),  # a copy: the tensor must not alias the file
        ),
    )

    @staticmethod
    def levels(codes: np.ndarray) -> np.ndarray:
        return codes.astype(np.float32)

    def dequantize(self) -> np.ndarray:
        return _decode_blocks(self.codes.reshape(-1, BLOCK_WEIGHTS), self.d.reshape(-1)).reshape(self.shape)

    def code_fields(self, lane: int, code: int) -> dict:
        return {"code": code}

    def product_text(self, d_text: str, code: int) -> str:
        return f"{d_text} \u00d7 {code}"


def _round_half_away(values: np.ndarray) -> np.ndarray:
    """C's roundf: halves go away from zero (numpy's own rounding sends them to even).

    The fraction x - trunc(x) is exact in float32; floor(|x| + 0.5) is not, as the sum rounds:
    0.49999997 + 0.5 is 1.0 in float32, and roundf(0.49999997) is 0.
    """
    whole = np.trunc(values)
    return whole + np.where(np.abs(values - whole) >= np.float32(0.5), np.sign(values), np.float32(0))


def quantize(w: ArrayLike) -> Q8_0Tensor:
    """Quantize float weights [..., 32k] as ggml's reference Q8_0 quantizer does."""
    weights, _ = float_input(w, BLOCK_WEIGHTS)
    refuse_beyond_reach(weights, F16_MAX * CODE_MAX, "Q8_0")
    blocks = grouped(weights, BLOCK_WEIGHTS)
    d = np.abs(blocks).max(axis=-1) / np.float32(CODE_MAX)
    inverse = reciprocal_or_zero(d)  # a zero block has d = 0 and stores zero codes
    codes = _round_half_away(blocks * inverse[..., None])
    d16 = d.astype(np.float16)
    return Q8_0Tensor(codes=codes.astype(np.int8).reshape(weights.shape), d=d16)


from_gguf = Q8_0Tensor.from_gguf


def dequantize_gguf(raw: ArrayLike, decoder: str = "ocp") -> np.ndarray:
    """GGUF Q8_0 bytes [..., k * 34] -> float32 weights [..., k * 32], the same as
    from_gguf(raw).dequantize() without the tensor's copy of the codes: d and the codes are read
    as strided views of the bytes. Q8_0 has no scale codes that ggml and the OCP specs read
    differently, so both decoders give this one reading."""
    blocks = Q8_0Tensor.split_gguf(raw)
    flat = blocks.reshape(-1, BLOCK_BYTES)
    d = flat[:, :2].view("<f2")[:, 0]
    codes = flat[:, 2:].view(np.int8)
    return _decode_blocks(codes, d).reshape(*blocks.shape[:-2], -1)


FORMAT = register(
    block_format(
        BLOCK,
        name="q8_0",
        quantize=quantize,
        family="gguf",
        summary="GGUF's 8-bit blocks: 32 int8 codes times one float16 scale",
        tensor=Q8_0Tensor,
        dequantize_gguf=dequantize_gguf,
    )
)
