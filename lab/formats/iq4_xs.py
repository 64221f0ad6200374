"""GGUF IQ4_XS: IQ4_NL's codebook in 256-weight super-blocks with 6-bit subblock scales; 4.25 bits per weight.

    weight = d * (s_j - 32) * KVALUES[code],    s_j in 0..63 for subblock j = 0..7 (32 weights each)

KVALUES is IQ4_NL's 16-entry codebook (lab.formats.iq4_nl). One super-block is 136 bytes:

    bytes   0..1    d          float16, little-endian: the super-block scale
    bytes   2..3    scales_h   uint16, little-endian: bits 2j..2j+1 = bits 4..5 of s_j
    bytes   4..7    scales_l   byte b: low nibble = bits 0..3 of s_2b, high nibble = of s_2b+1
    bytes   8..135  qs         subblock j in bytes 8 + 16j .. 8 + 16j + 15, by halves:
                               byte 16j + i: low nibble = index of weight 32j + i,
                                             high nibble = index of weight 32j + 16 + i

The decoder rounds the subblock gain d * (s_j - 32) to float32 before multiplying, as gguf-py.

The quantizer follows llama.cpp's reference (`quantize_row_iq4_xs_ref`), reimplemented from its
description: every 32-weight subblock gets IQ4_NL's fitted float32 scale; the one of largest
magnitude sets d = -scale/32, so it is stored as s = 0 (-32, the end with the extra step); each
subblock's scale becomes nearest(scale / d) clamped to -32..31, and its codes the nearest entries
to x / (d * l) with the float32 d, which is then stored as float16. gguf-py has no IQ4_XS
quantizer; its `quants.dequantize` is the decoder's oracle. With an importance vector,
quantize(w, importance=...) weighs the fit as quantize_iq4_xs(..., quant_weights) does.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from lab.formats._blocks import float_input, grouped
from lab.formats._ggml import (
    F16_MAX,
    first_absmax,
    pack_halves,
    reciprocal_or_zero,
    refuse_beyond_reach,
    unpack_halves,
)
from lab.formats._imatrix import importance_vector, per_weight, sigma_weights
from lab.formats._tensor import GGUFBlockTensor, Lane, Part, block_field, block_format, gguf_block, half, rows, stored
from lab.formats.iq4_nl import KVALUES, KVALUES_F32, codes_for, fit_scales
from lab.formats.registry import register
from lab.numbers import format_number

BLOCK = gguf_block("IQ4_XS", 256, 136)
BLOCK_WEIGHTS = BLOCK.weights  # 256
BLOCK_BYTES = BLOCK.gguf.bytes  # 136
BITS_PER_WEIGHT = BLOCK.bits_per_weight  # 4.25
SUBBLOCKS = 8
SUBBLOCK_WEIGHTS = 32
SCALE_OFFSET = 32
QS_OFFSET = 8


_HIGH_SHIFTS = np.arange(0, 2 * SUBBLOCKS, 2, dtype=np.uint16)  # bits 2j..2j+1 of scales_h hold s_j's top two


def _scale_parts(scales: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """int8 scales -32..31 [..., k, 8] -> scales_h [..., k, 2] (their bits 4..5) and scales_l [..., k, 4] (bits 0..3)."""
    stored_scales = (scales.astype(np.int16) + SCALE_OFFSET).astype(np.uint16)
    high = ((stored_scales >> 4) << _HIGH_SHIFTS).sum(axis=-1, dtype=np.uint16)
    low = (stored_scales & 15).astype(np.uint8)
    return high.astype("<u2")[..., None].view(np.uint8), low[..., 0::2] | (low[..., 1::2] << np.uint8(4))


def _scales(scales_h: np.ndarray, scales_l: np.ndarray) -> np.ndarray:
    """scales_h [..., k, 2] and scales_l [..., k, 4] -> int8 scales -32..31 [..., k, 8]; the inverse of _scale_parts."""
    high = (scales_h.copy().view("<u2").astype(np.uint16) >> _HIGH_SHIFTS) & 3
    low = unpack_halves(scales_l)  # s_0, s_2, s_4, s_6, then s_1, s_3, ...
    low = np.stack([low[..., :4], low[..., 4:]], axis=-1).reshape(*low.shape[:-1], SUBBLOCKS)
    return ((low | (high.astype(np.uint8) << np.uint8(4))).astype(np.int16) - SCALE_OFFSET).astype(np.int8)


def _qs(codes: np.ndarray) -> np.ndarray:
    """Indices [..., 256k] -> qs [..., k, 128]: each subblock's 32 by halves in its own 16 bytes."""
    by_subblock = codes.reshape(*codes.shape[:-1], -1, SUBBLOCKS, SUBBLOCK_WEIGHTS)
    return pack_halves(by_subblock).reshape(*by_subblock.shape[:-2], -1)


def _codes(qs: np.ndarray) -> np.ndarray:
    """qs [..., k, 128] -> the indices [..., 256k] it holds; the inverse of _qs."""
    by_subblock = qs.reshape(*qs.shape[:-1], SUBBLOCKS, 16)
    return rows(unpack_halves(by_subblock).reshape(*qs.shape[:-1], -1))


class IQ4XSTensor(GGUFBlockTensor, block=BLOCK):
    """uint8 codebook indices [..., 256k], float16 d [..., k], int8 subblock scales -32..31 [..., k, 8]."""

    codes: np.ndarray = block_field(
        "indices",
        dtype=np.uint8,
        low=0,
        high=len(KVALUES) - 1,
        gguf=stored(Part("qs", 128, "nibbles", at=QS_OFFSET, trace=True), write=_qs, read=_codes),
    )
    d: np.ndarray = block_field(per_block=(), dtype=np.float16, gguf=half(at=0))
    scales: np.ndarray = block_field(
        "subblock scales",
        per_block=(SUBBLOCKS,),
        dtype=np.int8,
        low=-SCALE_OFFSET,
        high=SCALE_OFFSET - 1,
        gguf=stored(
            Part("scales_h", 2, "scales' high bits", at=2),
            Part("scales_l", 4, "scales' low bits", at=4),
            write=_scale_parts,
            read=_scales,
        ),
    )

    subblock_weights = SUBBLOCK_WEIGHTS

    def gains(self) -> np.ndarray:
        """Each subblock's d * scale, rounded to float32 as the decoder uses it [..., k, 8]."""
        with np.errstate(over="ignore", invalid="ignore"):  # an inf or NaN d decodes as such, as in ggml
            return self.d.astype(np.float32)[..., None] * self.scales.astype(np.float32)

    def dequantize(self) -> np.ndarray:
        values = KVALUES_F32[self.codes].reshape(*self.d.shape, SUBBLOCKS, SUBBLOCK_WEIGHTS)
        with np.errstate(over="ignore", invalid="ignore"):
            weights = self.gains()[..., None] * values
        return weights.reshape(self.shape)

    def explain_lane(self, at: Lane) -> dict:
        subblock, within = divmod(at.lane, SUBBLOCK_WEIGHTS)
        d = float(self.d[at.block_position])
        scale = int(self.scales[(*at.block_position, subblock)])
        gain = float(self.gains()[(*at.block_position, subblock)])
        code = int(self.codes[at.position])
        value = int(KVALUES[code])
        weight = float(np.float32(gain) * np.float32(value))
        return {
            "byte": QS_OFFSET + 16 * subblock + within % 16,
            "nibble": "low" if within < 16 else "high",
            "code": code,
            "value": value,
            "stored_scale": scale + SCALE_OFFSET,
            "scale": scale,
            "d": d,
            "gain": gain,
            "weight": weight,
            "gain_formula": f"{format_number(d)} \u00d7 ({scale + SCALE_OFFSET} \u2212 32) = {format_number(gain)}",
            "formula": f"{format_number(gain)} \u00d7 KVALUES[{code}] = {format_number(gain)} \u00d7 {value} = {format_number(weight)}",
        }

    def owner_words(self, explained: dict) -> str:
        return (
            f"subblock {explained['subblock']}: d \u00d7 ({explained['stored_scale']} \u2212 32), "
            f"gain {format_number(explained['gain'], 6)}"
        )


def quantize(w: ArrayLike, importance: ArrayLike | None = None) -> IQ4XSTensor:
    """Quantize float weights [..., 256k] as ggml's quantize_iq4_xs does, byte for byte.

    `importance` (float32 [256k], one value per column, an imatrix's mean of x^2, as llama-quantize
    --imatrix passes it) weighs each weight's error by importance * sqrt(sigma2 + x^2), sigma2
    twice the super-block's mean square, instead of by x^2; the search is the same.
    """
    weights, _ = float_input(w, BLOCK_WEIGHTS)
    # a weight is d * scale * level: float16 d, scales down to -32, levels down to -127
    refuse_beyond_reach(weights, F16_MAX * SCALE_OFFSET * 127, "IQ4_XS")
    column_importance = None if importance is None else importance_vector(importance, weights.shape[-1], "IQ4_XS")
    subblocks = weights.reshape(*weights.shape[:-1], -1, SUBBLOCKS, SUBBLOCK_WEIGHTS)
    with np.errstate(over="ignore", invalid="ignore"):  # weights near float32's limit overflow the squares
        fit_weights = None
        if column_importance is not None:
            # sigma2 is the super-block's, all 256 weights
            super_blocks = grouped(weights, BLOCK_WEIGHTS)
            fit_weights = sigma_weights(
                super_blocks, grouped(per_weight(column_importance, weights.shape), BLOCK_WEIGHTS)
            )
        fitted = fit_scales(subblocks, fit_weights)
    _, largest = first_absmax(fitted)
    d = -largest / np.float32(SCALE_OFFSET)
    inverse = reciprocal_or_zero(d)  # an all-zero super-block has d = 0 and scale 0 throughout
    scales = np.clip(np.rint(inverse[..., None] * fitted), -SCALE_OFFSET, SCALE_OFFSET - 1)
    # the codes aim at the float32 gain d * l, as the reference does; only d is rounded to float16
    codes = codes_for(subblocks, d[..., None] * scales.astype(np.float32))
    with np.errstate(over="ignore"):  # d above float16's range is stored as inf, as ggml does
        d16 = d.astype(np.float16)
    return IQ4XSTensor(codes=codes.reshape(weights.shape), d=d16, scales=scales.astype(np.int8))


from_gguf = IQ4XSTensor.from_gguf


FORMAT = register(
    block_format(
        BLOCK,
        name="iq4_xs",
        quantize=quantize,
        family="gguf",
        summary="IQ4_NL's codebook in super-blocks of 256: 6-bit scales per 32, one float16 d",
        tensor=IQ4XSTensor,
    )
)
