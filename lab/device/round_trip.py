"""MLX's own round trip for the learner's block, beside the lab's and the original weights.

The other comparisons feed the lab's bytes to MLX; this one lets MLX quantize the learner's
weights itself and decode its own bytes, mx.dequantize(mx.quantize(w)), and sets what comes
back against the lab's dequantize(quantize(w)). Where the two quantizers pick different bytes
(another scale rule, another tie rule) the round trips part, and the report says where and by
how much, next to how far each side lands from w.
"""

from __future__ import annotations

import numpy as np

from lab.device.compare import compare_values
from lab.device.report import RoundTrip

ROUND_TRIP_NAME = "MLX round trip vs lab round trip"


def _max_error(values: np.ndarray, original: np.ndarray) -> float:
    """max |values - original|; a NaN on the returned side counts as infinitely far, as an infinity is."""
    if not values.size:
        return 0.0
    with np.errstate(invalid="ignore", over="ignore"):
        error = np.abs(values.astype(np.float64) - original.astype(np.float64))
    return float(np.where(np.isnan(error), np.inf, error).max())


def round_trip(
    original: np.ndarray, lab: np.ndarray, mlx: np.ndarray, *, group_size: int, allowance: dict
) -> RoundTrip:
    """MLX's round trip against the lab's, per element and per scale group.

    original, lab, mlx: float32 of one shape. allowance: the rounding MLX's decoder may add to
    the lab's weights (`allowed` per element, `rounding` in words); where both quantizers chose
    the same bytes the round trips differ by no more than that.
    """
    comparison = compare_values(
        ROUND_TRIP_NAME, lab, mlx, group_size=group_size, group_label="scale group", **allowance
    )
    return RoundTrip(
        original=original,
        lab=lab,
        mlx=mlx,
        lab_max_error=_max_error(lab, original),
        mlx_max_error=_max_error(mlx, original),
        comparison=comparison,
    )
