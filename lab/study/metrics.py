"""How far reconstructed weights land from the originals: the error figures every page reports.

relative error         ||ŵ − w||₂ / ||w||₂ over the whole tensor (Frobenius for a matrix), in float64:
                       relative_error(w, ŵ), the one definition the comparison table and the model
                       study share; error_metrics reports the same number as its relative RMSE
relative RMSE          ||ŵ − w||₂ / ||w||₂ (0 is perfect; it is RMSE divided by the tensor's RMS)
max abs error          max |ŵ − w|
outlier share          share of weights with |w| > 6·rms(w), where rms(w) = sqrt(mean(w²)); a
                       property of the tensor: these are the weights that stretch a block's scale
outlier relative RMSE  the relative RMSE over those outlier weights alone (NaN when there are none)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: a weight is an outlier when |w| exceeds this many times the tensor's RMS
OUTLIER_RMS_MULTIPLE = 6.0


def relative_error(w: np.ndarray, w_hat: np.ndarray) -> float:
    """||ŵ − w|| / ||w|| over the whole tensor, in float64; 0 where both are all zeros."""
    w64 = np.asarray(w, np.float64)
    error = float(np.linalg.norm(np.asarray(w_hat, np.float64) - w64))
    norm = float(np.linalg.norm(w64))
    if norm == 0:
        return 0.0 if error == 0 else float("inf")
    return error / norm


@dataclass(frozen=True)
class OriginalFigures:
    """What the error metrics need from the original tensor alone; the same for every format,
    so evaluate_model works it out once per tensor."""

    squared_norm: float  # ||w||², summed in float64
    outliers: np.ndarray  # bool mask: |w| > 6·rms(w)
    outlier_share: float  # the outliers' share of the weights
    outlier_norm: float  # ||w||² over the outliers

    @classmethod
    def of(cls, w: np.ndarray) -> OriginalFigures:
        original = np.asarray(w)
        squared_norm = float(np.square(original, dtype=np.float64).sum())
        rms = np.sqrt(squared_norm / original.size)
        # A float64 threshold, so that float32 weights are compared in float64 rather than the
        # threshold being rounded to float32.
        outliers = np.abs(original) > np.float64(OUTLIER_RMS_MULTIPLE * rms)
        outlier_norm = float(np.square(original[outliers], dtype=np.float64).sum())
        return cls(squared_norm, outliers, float(outliers.mean()), outlier_norm)


def error_metrics(
    w: np.ndarray, reconstructed: np.ndarray, original: OriginalFigures | None = None, out: np.ndarray | None = None
) -> dict:
    """Relative RMSE, max abs error and outlier figures of `reconstructed` against `w` (see the module docstring).

    `original` is `OriginalFigures.of(w)` when the caller already has it. `out`, a float64 array
    shaped like w, holds the error while it is worked out: a caller that measures one tensor many
    times passes the same one each time, and spares the memory system a fresh 8 bytes per weight
    (on a 12 M-weight tensor, allocating it cost as much as the subtraction itself).
    """
    figures = OriginalFigures.of(w) if original is None else original
    # Every sum is taken over float64 values; the error array is the only full-size float64 copy.
    error = np.subtract(reconstructed, w, dtype=np.float64, out=out)
    outlier_error = float(np.square(error[figures.outliers]).sum())
    np.abs(error, out=error)  # from here on only |error| matters
    max_abs_error = float(error.max())
    squared_error = float(np.square(error, out=error).sum())
    squared_norm, outlier_norm = figures.squared_norm, figures.outlier_norm
    return {
        "relative_rmse": float(np.sqrt(squared_error / squared_norm)) if squared_norm else 0.0,
        "max_abs_error": max_abs_error,
        "outlier_share": figures.outlier_share,
        "outlier_relative_rmse": float(np.sqrt(outlier_error / outlier_norm)) if outlier_norm else float("nan"),
        "squared_error": squared_error,
        "squared_norm": squared_norm,
    }
