"""NF4: QLoRA's 4-bit NormalFloat, as bitsandbytes stores it; 64 codes per float32 absmax, 4.5 bits per weight.

    weight = LEVELS[code] * absmax,    code in 0..15, absmax = the block's largest |w|

The 16 levels (Dettmers et al. 2023, "QLoRA", arXiv 2305.14314; the float32 constants bitsandbytes
ships) are quantiles of N(0, 1), so that each level is about equally likely for normally
distributed weights. With offset = 0.9677083 (the mean of 1 - 1/(2*15) and 1 - 1/(2*16)):

    8 positive levels  norm.ppf(p) for 8 of 9 points p spaced evenly from offset down to 1/2
    7 negative levels  -norm.ppf(p) for 7 of 8 points p spaced evenly from offset down to 1/2
    plus an exact 0, all divided by the largest, so the ends are -1 and +1

The asymmetry (8 against 7) buys the exact zero. A tensor is cut into blocks of 64 weights; each
stores its absmax as float32 and each weight the level nearest to w / absmax, computed as
w * (1/absmax) in float32 as bitsandbytes does. Rounding takes the midpoints between adjacent
levels as boundaries, as bitsandbytes' decision tree does: a value above a midpoint takes the
upper level, one exactly on it the lower. A block of zeros stores absmax 0 and code 7 (zero).

Codes are packed two per byte as bitsandbytes does: the first of two neighbouring weights in the
high nibble.

    byte i:  bits 7..4 = code of weight 2i     bits 3..0 = code of weight 2i + 1

Double quantization (QLoRA's second trick) stores the absmax values themselves in 8 bits: their
mean is subtracted as a float32 offset, then every 256 absmax values share one float32 scale.
The lab codes them as linear int8, round((absmax - offset) / scale) with scale = max|.| / 127;
bitsandbytes uses its 8-bit dynamic code there instead, with the same storage cost. That lowers
the scale cost from 32/64 = 0.5 to 8/64 + 32/(64 * 256) = 0.127 bits per weight, plus the one
offset per tensor; `bits_per_weight` counts what the tensor holds.

No GGUF type and no MLX mode hold NF4; bitsandbytes is its home.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from lab.formats._blocks import block_amax, float_input, grouped
from lab.formats._tensor import BlockTensor, Lane, block_field, block_format, element_block
from lab.formats.registry import register
from lab.numbers import format_number

BLOCK = element_block("NF4", 64, element_bits=4, scale_bits=32)  # a float32 absmax
BLOCK_WEIGHTS = BLOCK.weights  # 64
BITS_PER_WEIGHT = BLOCK.bits_per_weight  # 4.5: a float32 absmax per 64 four-bit codes
#: NF4's levels, the float32 values bitsandbytes ships (its NF4 table and dDequantizeNF4)
LEVELS = np.array(
    [
        -1.0,
        -0.6961928009986877,
        -0.5250730514526367,
        -0.39491748809814453,
        -0.28444138169288635,
        -0.18477343022823334,
        -0.09105003625154495,
        0.0,
        0.07958029955625534,
        0.16093020141124725,
        0.24611230194568634,
        0.33791524171829224,
        0.44070982933044434,
        0.5626170039176941,
        0.7229568362236023,
        1.0,
    ],
    np.float32,
)
#: the offset of the quantile points (QLoRA's appendix; bitsandbytes' create_normal_map)
QUANTILE_OFFSET = 0.9677083
#: rounding boundaries: midpoints of adjacent levels, worked in float64 and held as float32
MIDPOINTS = ((LEVELS[:-1].astype(np.float64) + LEVELS[1:]) / 2).astype(np.float32)
ZERO_CODE = 7
#: blocks coded per pass: 4096 blocks of 64 weights keep the temporaries (1 MiB each) in cache
_CHUNK_BLOCKS = 4096
#: double quantization: absmax values per 8-bit block, and the largest int8 code
ABSMAX_BLOCK = 256
ABSMAX_CODE_MAX = 127


class NF4Tensor(BlockTensor, block=BLOCK):
    """uint8 codes 0..15 [..., 64k] and one float32 absmax per 64 [..., k].

    With double quantization the absmax values are held as int8 `absmax_codes` (same shape),
    one float32 `absmax_scales` per 256 of them (flattened, in order) and one float32 `absmax_offset`.
    """

    codes: np.ndarray = block_field(dtype=np.uint8, low=0, high=len(LEVELS) - 1)
    absmax: np.ndarray = block_field(per_block=(), dtype=np.float32)
    absmax_codes: np.ndarray | None = None
    absmax_scales: np.ndarray | None = None
    absmax_offset: np.float32 | None = None

    @property
    def double_quantized(self) -> bool:
        return self.absmax_codes is not None

    @property
    def bits_per_weight(self) -> float:
        """Stored bits per weight: 4.5 plain; with double quantization the 8-bit absmax codes, their scales and the offset."""
        if not self.double_quantized:
            return BITS_PER_WEIGHT
        n_absmax = self.absmax.size
        scale_bits = 32 * (-(-n_absmax // ABSMAX_BLOCK)) + 32
        return 4 + (8 * n_absmax + scale_bits) / self.codes.size

    def dequantize(self) -> np.ndarray:
        weights = grouped(LEVELS[self.codes], BLOCK_WEIGHTS) * self.absmax[..., None]
        return weights.reshape(self.shape)

    def explain_lane(self, at: Lane) -> dict:
        absmax = float(self.absmax[at.block_position])
        code = int(self.codes[at.position])
        level = float(LEVELS[code])
        weight = float(LEVELS[code] * np.float32(absmax))
        return {
            "byte": at.lane // 2,
            "nibble": "high" if at.lane % 2 == 0 else "low",
            "code": code,
            "level": level,
            "absmax": absmax,
            "double_quantized": self.double_quantized,
            "weight": weight,
            "formula": f"{format_number(level)} \u00d7 {format_number(absmax)} = {format_number(weight)}",
        }

    def packed(self) -> np.ndarray:
        """The codes as bitsandbytes packs them, two per byte, first weight high: uint8 [..., K/2]."""
        return (self.codes[..., 0::2] << np.uint8(4)) | self.codes[..., 1::2]


#: a two-level search: [-1, 1] cut into cells of 1/32, narrower than the least distance between two
#: midpoints (about 0.08), so that a cell holds at most one; per cell, how many midpoints lie below
#: its left end, and the one inside it (+inf where it holds none); one more cell starts at 1
_CELLS_PER_UNIT = 32
_CELL_EDGES = np.arange(-_CELLS_PER_UNIT, _CELLS_PER_UNIT + 1) / _CELLS_PER_UNIT
_BELOW_CELL = np.searchsorted(MIDPOINTS, _CELL_EDGES, side="left")
_INSIDE_CELL = np.where(
    np.diff(_BELOW_CELL, append=_BELOW_CELL[-1]) > 0,
    MIDPOINTS[np.minimum(_BELOW_CELL, len(MIDPOINTS) - 1)],
    np.inf,
).astype(np.float32)
_BELOW_CELL = _BELOW_CELL.astype(np.uint8)


def nearest_codes(normalised: np.ndarray) -> np.ndarray:
    """The NF4 code of each float32 value in [-1, 1]: how many midpoints lie strictly below it (a tie takes the lower level).

    Values beyond [-1, 1] take the end codes, and NaN code 15, as a binary search over the
    midpoints would place them. Scaling by 32 is exact, so floor(32 x) is x's cell exactly, and
    x is compared in float32 with the one midpoint its cell may hold.
    """
    clamped = np.fmax(np.fmin(normalised, np.float32(1)), np.float32(-1))  # fmin passes a NaN over for 1
    cells = np.multiply(clamped, np.float32(_CELLS_PER_UNIT))
    np.floor(cells, out=cells)
    index = np.subtract(cells, np.float32(-_CELLS_PER_UNIT), out=np.empty(cells.shape, np.int32), casting="unsafe")
    codes = np.take(_BELOW_CELL, index)
    codes += clamped > np.take(_INSIDE_CELL, index)
    return codes


def _double_quantize(absmax: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.float32]:
    """absmax [..., k] -> (decoded absmax, int8 codes, float32 scale per 256, float32 offset)."""
    flat = absmax.reshape(-1)
    offset = np.float32(flat.mean(dtype=np.float64))
    centred = flat - offset
    padded = np.zeros(-(-flat.size // ABSMAX_BLOCK) * ABSMAX_BLOCK, np.float32)  # zeros add nothing to a block's max
    padded[: flat.size] = centred
    blocks = padded.reshape(-1, ABSMAX_BLOCK)
    scales = (block_amax(np.abs(blocks)) / np.float32(ABSMAX_CODE_MAX)).astype(np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):  # a block of equal absmax values has scale 0
        codes = np.where(scales[:, None] > 0, np.rint(blocks / scales[:, None]), 0).astype(np.int8)
    decoded = (codes.astype(np.float32) * scales[:, None]).reshape(-1)[: flat.size] + offset
    return decoded.reshape(absmax.shape), codes.reshape(-1)[: flat.size].reshape(absmax.shape), scales, offset


def _code_blocks(blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(absmax, codes) for float32 blocks [n, 64]."""
    absmax = block_amax(np.abs(blocks))
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        inverse = np.float32(1) / absmax
        scaled = blocks * inverse[:, None]
        # bitsandbytes multiplies by 1/absmax; below 2^-128 that reciprocal overflows, and dividing
        # is the exact alternative; a zero block (0/0) scales to 0 and takes code 7, the zero level.
        # Only those few blocks are worked again.
        overflowed = ~np.isfinite(inverse)
        if overflowed.any():
            scaled[overflowed] = np.nan_to_num(blocks[overflowed] / absmax[overflowed, None], nan=0.0)
    return absmax, nearest_codes(scaled)


def quantize(w: ArrayLike, double_quant: bool = False) -> NF4Tensor:
    """NF4 codes for weights [..., 64k], one float32 absmax per 64; double_quant stores the absmax in 8 bits."""
    weights, _ = float_input(w, BLOCK_WEIGHTS)
    blocks = weights.reshape(-1, BLOCK_WEIGHTS)
    absmax = np.empty(blocks.shape[0], np.float32)
    codes = np.empty(blocks.shape, np.uint8)
    # A chunk of blocks at a time: each block is coded on its own, and the temporaries stay in cache
    for start in range(0, blocks.shape[0], _CHUNK_BLOCKS):
        chunk = slice(start, start + _CHUNK_BLOCKS)
        absmax[chunk], codes[chunk] = _code_blocks(blocks[chunk])
    absmax = absmax.reshape(*weights.shape[:-1], weights.shape[-1] // BLOCK_WEIGHTS)
    parts = {}
    if double_quant:
        # as bitsandbytes: the codes are worked against the exact absmax, which is then stored in 8 bits
        absmax, codes8, scales8, offset = _double_quantize(absmax)
        parts = {"absmax_codes": codes8, "absmax_scales": scales8, "absmax_offset": offset}
    return NF4Tensor(codes=codes.reshape(weights.shape), absmax=absmax, **parts)


FORMAT = register(
    block_format(
        BLOCK,
        name="nf4",
        quantize=quantize,
        family="bitsandbytes",
        summary="QLoRA's NormalFloat: 64 codes for normal-quantile levels, times one float32 absmax",
        tensor=NF4Tensor,
    )
)
