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

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from lab.errors import DTypeError, ShapeError
from lab.formats._blocks import element_index, float_input, grouped
from lab.formats._ggml import (
    F16_MAX,
    first_absmax,
    fp16_bytes,
    fp16_field,
    pack_halves,
    reciprocal_or_zero,
    refuse_beyond_reach,
    split_blocks,
    unpack_halves,
)
from lab.formats.registry import Format, register
from lab.numbers import format_number

BLOCK_WEIGHTS = 32
BLOCK_BYTES = 18
BITS_PER_WEIGHT = BLOCK_BYTES * 8 / BLOCK_WEIGHTS  # 4.5
CODE_MAX = 15
CODE_OFFSET = 8


@dataclass(frozen=True, eq=False)
class Q4_0Tensor:
    """uint8 codes 0..15 [..., 32k] and one float16 scale d per 32 codes [..., k]."""

    codes: np.ndarray
    d: np.ndarray

    bits_per_weight = BITS_PER_WEIGHT
    block_size = BLOCK_WEIGHTS

    def __post_init__(self):
        codes, d = np.asarray(self.codes), np.asarray(self.d)
        if codes.dtype != np.uint8 or d.dtype != np.float16:
            raise DTypeError(f"Q4_0 holds uint8 codes and float16 scales, got {codes.dtype} and {d.dtype}")
        if codes.ndim == 0 or codes.shape[-1] % BLOCK_WEIGHTS or d.shape != (*codes.shape[:-1], codes.shape[-1] // 32):
            raise ShapeError(f"Q4_0 needs codes [..., 32k] and one d per 32 codes, got {codes.shape} and {d.shape}")
        if codes.size and codes.max() > CODE_MAX:
            raise DTypeError(f"Q4_0 codes are 4-bit, 0..15; got {int(codes.max())}")

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.codes.shape)

    def dequantize(self) -> np.ndarray:
        signed = grouped(self.codes.astype(np.float32) - np.float32(CODE_OFFSET), BLOCK_WEIGHTS)
        with np.errstate(over="ignore", invalid="ignore"):  # an inf or NaN d decodes as such, as in ggml
            weights = self.d.astype(np.float32)[..., None] * signed
        return weights.reshape(self.shape)

    def explain(self, index) -> dict:
        position = element_index(self.shape, index)
        block, lane = divmod(position[-1], BLOCK_WEIGHTS)
        d = float(self.d[(*position[:-1], block)])
        code = int(self.codes[position])
        weight = float(np.float32(d) * np.float32(code - CODE_OFFSET))
        return {
            "position": position,
            "block": block,
            "position_in_block": lane,
            "byte": 2 + lane % 16,
            "nibble": "low" if lane < 16 else "high",
            "code": code,
            "value": code - CODE_OFFSET,
            "d": d,
            "weight": weight,
            "formula": f"{format_number(d)} \u00d7 ({code} \u2212 8) = {format_number(weight)}",
        }

    def to_gguf(self) -> np.ndarray:
        """The blocks in GGUF's 18-byte layout, uint8 [..., K/32 * 18]."""
        raw = np.concatenate([fp16_bytes(self.d), pack_halves(grouped(self.codes, BLOCK_WEIGHTS))], axis=-1)
        return raw.reshape(*self.shape[:-1], -1)


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


def from_gguf(raw: ArrayLike) -> Q4_0Tensor:
    """GGUF Q4_0 bytes [..., 18k] -> the tensor they hold."""
    blocks = split_blocks(raw, BLOCK_BYTES, "Q4_0", "2 bytes of d + 16 bytes of nibbles")
    codes = unpack_halves(blocks[..., 2:])
    return Q4_0Tensor(codes=codes.reshape(*blocks.shape[:-2], -1), d=fp16_field(blocks, 0))


FORMAT = register(
    Format(
        name="q4_0",
        title="Q4_0",
        block_size=BLOCK_WEIGHTS,
        bits_per_weight=BITS_PER_WEIGHT,
        quantize=quantize,
        family="gguf",
        summary="GGUF's plain 4-bit blocks: 32 codes minus 8, times one float16 scale",
        gguf_type="Q4_0",
        from_gguf=from_gguf,
    )
)
