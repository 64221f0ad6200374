"""Bits per weight and model capacity: storage arithmetic, not a speed prediction.

Bits per weight counts a format's element and scale storage only: no padding, no file overhead,
no runtime memory. Capacities use decimal gigabytes (1 GB = 10^9 bytes), as the article does.
"""

from __future__ import annotations

from fractions import Fraction

from lab.formats import FORMATS, affine
from lab.formats.affine import SUPPORTED_BITS, SUPPORTED_GROUP_SIZES
from lab.study import accounting

#: bits per weight in a bfloat16 checkpoint, the usual one (MLX affine's scale and bias are then
#: bfloat16; every other format fixes its scales' type): two reference points, then every
#: registered block format by its title, from lab.study.accounting (element codes plus scales;
#: NVFP4 adds 32/N with an FP32 tensor scale)
FORMAT_BITS_PER_WEIGHT: dict[str, float] = {
    "BF16": 16.0,
    "ideal 4-bit": 4.0,
    **{fmt.title: accounting.bits_per_weight(name, accounting.BFLOAT16) for name, fmt in FORMATS.items()},
}

SEVEN_BILLION = 7_000_000_000


def nvfp4_bits_per_weight(n_weights: int | None = None) -> float:
    """4.5 for codes and E4M3 block scales, plus 32/N for one FP32 tensor scale over N weights."""
    if n_weights is None:
        return FORMAT_BITS_PER_WEIGHT["NVFP4"]
    if n_weights <= 0:
        raise ValueError(f"a tensor has a positive number of weights, got {n_weights}")
    return FORMAT_BITS_PER_WEIGHT["NVFP4"] + 32 / n_weights


def affine_grid(parameter_bits: int = 16) -> dict[tuple[int, int], float]:
    """Bits per weight for every (bits, group_size) MLX's affine mode accepts."""
    return {
        (bits, group): affine.bits_per_weight(bits, group, parameter_bits)
        for bits in SUPPORTED_BITS
        for group in SUPPORTED_GROUP_SIZES
    }


def payload_gigabytes(n_weights: int, bits_per_weight: float) -> float:
    """Payload size in decimal GB: weights × bits / 8 / 10^9."""
    return float(Fraction(n_weights) * Fraction(bits_per_weight) / 8 / 10**9)


def seven_billion_table() -> dict[str, float]:
    """The article's capacity arithmetic for a dense 7 B-weight model."""
    return {
        "BF16": payload_gigabytes(SEVEN_BILLION, 16),
        "ideal 4-bit": payload_gigabytes(SEVEN_BILLION, 4),
        "Q4_K": payload_gigabytes(SEVEN_BILLION, FORMAT_BITS_PER_WEIGHT["Q4_K"]),
        "MXFP4": payload_gigabytes(SEVEN_BILLION, FORMAT_BITS_PER_WEIGHT["MXFP4"]),
        "NVFP4": payload_gigabytes(SEVEN_BILLION, FORMAT_BITS_PER_WEIGHT["NVFP4"]),
    }
