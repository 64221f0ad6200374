"""GGUF Q8_0: 32 int8 codes share one float16 scale d; 8.5 bits per weight.

    weight = d * code,    code in -127..127 (the quantizer never writes -128; a decoder reads it)

One block is 34 bytes:

    byte  0    1    2    3   ...   33
         [ d (fp16, LE) ][ q0 ][ q1 ] ... [ q31 ]    q_i int8, weight i = d * q_i

The quantizer is ggml's reference (`quantize_row_q8_0_ref`), as gguf-py mirrors it: d = amax/127
in float32, codes round(w / d) half away from zero using the float32 reciprocal 1/d, and d is then
stored as float16. A block of zeros stores d = 0. gguf-py's `quants.quantize` is the oracle.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from lab._arrays import as_byte_array
from lab.errors import DTypeError, ShapeError
from lab.formats._blocks import element_index, float_input, grouped
from lab.formats._ggml import F16_MAX, reciprocal_or_zero, refuse_beyond_reach
from lab.formats.registry import Format, register
from lab.numbers import format_number

BLOCK_WEIGHTS = 32
BLOCK_BYTES = 34
BITS_PER_WEIGHT = BLOCK_BYTES * 8 / BLOCK_WEIGHTS  # 8.5
CODE_MAX = 127


@dataclass(frozen=True, eq=False)
class Q8_0Tensor:
    """int8 codes [..., 32k] and one float16 scale d per 32 codes [..., k]."""

    codes: np.ndarray
    d: np.ndarray

    bits_per_weight = BITS_PER_WEIGHT
    block_size = BLOCK_WEIGHTS

    def __post_init__(self):
        codes, d = np.asarray(self.codes), np.asarray(self.d)
        if codes.dtype != np.int8 or d.dtype != np.float16:
            raise DTypeError(f"Q8_0 holds int8 codes and float16 scales, got {codes.dtype} and {d.dtype}")
        if (
            codes.ndim == 0
            or codes.shape[-1] % BLOCK_WEIGHTS
            or d.shape
            != (
                *codes.shape[:-1],
                codes.shape[-1] // BLOCK_WEIGHTS,
            )
        ):
            raise ShapeError(f"Q8_0 needs codes [..., 32k] and one d per 32 codes, got {codes.shape} and {d.shape}")

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.codes.shape)

    def dequantize(self) -> np.ndarray:
        with np.errstate(over="ignore", invalid="ignore"):  # an inf or NaN d decodes as such, as in ggml
            weights = grouped(self.codes.astype(np.float32), BLOCK_WEIGHTS) * self.d.astype(np.float32)[..., None]
        return weights.reshape(self.shape)

    def explain(self, index) -> dict:
        position = element_index(self.shape, index)
        block = position[-1] // BLOCK_WEIGHTS
        d = float(self.d[(*position[:-1], block)])
        code = int(self.codes[position])
        weight = float(np.float32(d) * np.float32(code))
        return {
            "position": position,
            "block": block,
            "position_in_block": position[-1] % BLOCK_WEIGHTS,
            "code": code,
            "d": d,
            "weight": weight,
            "formula": f"{format_number(d)} \u00d7 {code} = {format_number(weight)}",
        }

    def to_gguf(self) -> np.ndarray:
        """The blocks in GGUF's 34-byte layout, uint8 [..., K/32 * 34]."""
        d_bytes = self.d.astype("<f2")[..., None].view(np.uint8)
        code_bytes = grouped(self.codes, BLOCK_WEIGHTS).view(np.uint8)
        raw = np.concatenate([d_bytes, code_bytes], axis=-1)
        return raw.reshape(*self.shape[:-1], -1)


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


def from_gguf(raw: ArrayLike) -> Q8_0Tensor:
    """GGUF Q8_0 bytes [..., 34k] -> the tensor they hold."""
    data = as_byte_array(raw, what="GGUF Q8_0 bytes")
    if data.ndim == 0 or data.shape[-1] == 0 or data.shape[-1] % BLOCK_BYTES:
        raise ShapeError(
            f"Q8_0 data must be whole {BLOCK_BYTES}-byte blocks (2 bytes of d + 32 code bytes), got shape {data.shape}"
        )
    blocks = np.ascontiguousarray(data).reshape(*data.shape[:-1], -1, BLOCK_BYTES)
    d = blocks[..., :2].copy().view("<f2")[..., 0].astype(np.float16)
    codes = blocks[..., 2:].copy().view(np.int8)
    return Q8_0Tensor(codes=codes.reshape(*data.shape[:-1], -1), d=d)


FORMAT = register(
    Format(
        name="q8_0",
        title="Q8_0",
        block_size=BLOCK_WEIGHTS,
        bits_per_weight=BITS_PER_WEIGHT,
        quantize=quantize,
        family="gguf",
        summary="GGUF's 8-bit blocks: 32 int8 codes times one float16 scale",
        gguf_type="Q8_0",
        from_gguf=from_gguf,
    )
)
