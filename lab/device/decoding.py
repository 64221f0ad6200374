"""What MLX's decoder does with the lab's bytes beyond the plain comparison.

The rounding a float32 decoder may add, what leaving out dtype= costs, what each side makes of
a scale byte that encodes NaN, and what forgetting a tensor scale does. Everything here reads
the format from data (the MLX layout, the registry's NaN scale bytes, the tensor's own
global_scale), never from a format's name.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from lab.device.compare import compare_values, one_float32_ulp, product_and_sum_allowance, rounding_allowance
from lab.device.report import Comparison
from lab.formats import mlx_layout


def dequantize_allowance(lab_arrays: list[np.ndarray], bits: int, lab_weights: np.ndarray) -> dict:
    """The rounding a float32 decoder may add to the lab's exactly-rounded weights.

    lab_arrays: the lab's MLX layout as rows (packed, scales[, biases]). Without biases a weight
    is code value times scale: one product, one rounding (NVFP4 with a tensor scale forms the
    combined scale first, so allow one ulp). With biases (affine) it is scale·q + bias.
    """
    if len(lab_arrays) < 3:
        return {"allowed": one_float32_ulp(lab_weights), "rounding": "one float32 rounding"}
    packed, scales = lab_arrays[0], lab_arrays[1]
    codes = mlx_layout.unpack(packed, bits).reshape(packed.shape[0], -1)
    rows = lab_weights.reshape(codes.shape)
    return {
        "allowed": product_and_sum_allowance(scales, codes, rows).reshape(lab_weights.shape),
        "rounding": "float32 rounding of scale·q and of the sum",
    }


def default_dtype_comparison(dtype_name: str, default_values, float32_values, group_size: int) -> Comparison:
    """What leaving out dtype= costs: MLX's default result against MLX's own float32 result."""
    comparison = compare_values(
        f"mx.dequantize default ({dtype_name}) vs dtype=float32",
        float32_values,
        default_values,
        group_size=group_size,
        group_label="scale group",
        allowed=rounding_allowance(float32_values, dtype_name),
        rounding=f"{dtype_name} rounding",
        ulp_dtype=dtype_name if dtype_name in ("float16", "bfloat16") else "float32",
    )
    note = (
        f"Without dtype=, mx.dequantize returned {dtype_name}; pass dtype=mx.float32 to see the exact weights."
        if dtype_name != "float32"
        else "Without dtype=, mx.dequantize returned float32 (it follows the scales' dtype in this mode)."
    )
    return replace(comparison, note=note)


def nan_scale_note(
    nan_bytes: tuple[int, ...], scales: np.ndarray, group_size: int, lab_weights: np.ndarray, mlx_weights: np.ndarray
) -> str:
    """What each side makes of blocks whose scale byte is a NaN encoding, counted from the results.

    nan_bytes: the format's NaN scale bytes (registry); scales: the lab's scales [..., K / group_size].
    """
    if not nan_bytes or scales.dtype != np.uint8:
        return ""
    nan_blocks = np.isin(scales, nan_bytes)
    if not nan_blocks.any():
        return ""
    in_nan_blocks = np.repeat(nan_blocks, group_size, axis=-1)

    def tally(values: np.ndarray) -> str:
        counts = {
            "NaN": int(np.isnan(values).sum()),
            "+inf": int(np.isposinf(values).sum()),
            "−inf": int(np.isneginf(values).sum()),
            "finite": int(np.isfinite(values).sum()),
        }
        return ", ".join(f"{count} {name}" for name, count in counts.items() if count)

    bytes_seen = ", ".join(f"0x{int(b):02X}" for b in np.unique(scales[nan_blocks]))
    return (
        f"{int(nan_blocks.sum())} block(s) have a NaN scale byte ({bytes_seen}): the lab decodes their "
        f"{int(in_nan_blocks.sum())} weights as {tally(lab_weights[in_nan_blocks])}; "
        f"MLX as {tally(mlx_weights[in_nan_blocks])}."
    )


def tensor_scale_range(global_scale: float, tensor_factor: float) -> float:
    """The divisor a tensor scale is taken over (NVFP4: 6 · 448 = 2688), read back from the tensor."""
    return float(np.float32(global_scale) / np.float32(tensor_factor))


def forgotten_global_scale(
    without: np.ndarray, with_scale: np.ndarray, global_scale: float, tensor_factor: float
) -> tuple[float | None, str]:
    """(factor, note): dequantizing without the tensor scale multiplies every weight by one factor."""
    usable = np.isfinite(without) & np.isfinite(with_scale) & (with_scale != 0)
    divisor = tensor_scale_range(global_scale, tensor_factor)
    expected = float(np.float32(divisor) / np.float32(global_scale))
    if not usable.any():
        return None, (
            "Dequantizing without global_scale: no nonzero finite weights to compare "
            f"({divisor:.6g} / global_scale = {expected:.9g})."
        )
    ratios = without[usable].astype(np.float64) / with_scale[usable].astype(np.float64)
    factor = float(np.median(ratios))
    spread = float(ratios.max() / ratios.min() - 1)
    return factor, (
        f"Forgetting global_scale on mx.dequantize multiplies every weight by {factor:.9g} "
        f"(relative spread {spread:.2g} across {int(usable.sum())} weights) = {divisor:.6g} / global_scale "
        f"= {expected:.9g}."
    )
