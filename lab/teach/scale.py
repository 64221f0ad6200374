"""The article's scale lab: one positive scale, a row of weights, an input row, and the output error.

Lab convention (the article's, not a vendor recipe): every weight becomes the nearest value
scale * E2M1(code) over all sixteen codes; on an exact tie the lowest unsigned code wins
(so ties go toward zero and zero is stored as +0); weights beyond +-6*scale clip to +-6*scale.
The distances are compared directly, not after dividing by the scale, so a free-entry scale
such as 0.3 ties exactly where the arithmetic says it does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from lab._arrays import as_float_array, as_float_scalar
from lab.codes import e2m1
from lab.errors import NonFiniteError, ShapeError

ARTICLE_W = (-1.0, 0.3, 0.9, 1.7)
ARTICLE_X = (2.0, 1.0, -1.0, 0.5)
#: the powers of two the scale lab offers as scales, 2^-6..2^2 (widgets/scale_lab.js's POWERS),
#: so that notebook 2's chart spans what the widget's buttons and slider reach
SCALE_POWERS = tuple(range(-6, 3))


def _check_scale(scale) -> float:
    value = as_float_scalar(scale, what="scale")
    if not np.isfinite(value) or value <= 0:
        raise NonFiniteError(f"scale must be a positive finite number, got {value!r}")
    return value


def quantize_codes(w: ArrayLike, scale: ArrayLike) -> np.ndarray:
    """E2M1 code of each weight under the lab convention."""
    weights = as_float_array(w, what="weights")
    scale = _check_scale(scale)
    # Near float64's top a scaled value can overflow to inf; it is then never the nearest.
    with np.errstate(over="ignore", invalid="ignore"):
        candidates = scale * e2m1.VALUES.astype(np.float64)
        distance = np.abs(weights[..., None] - candidates)
    top = e2m1.MAX * scale
    # argmin returns the first minimum, which is the lowest unsigned code on an exact tie.
    codes = np.argmin(distance, axis=-1).astype(np.uint8)
    # Far beyond +-6*scale every distance rounds to the same float64 (1e17 - 6 == 1e17 - 0), so
    # argmin's tie rule would pick code 0 and store 0 for a clipped weight. The rule is to
    # saturate: a weight beyond +-6*scale takes code 7 (+6) or 15 (-6), the test `clipped` uses.
    codes[weights > top] = 7
    codes[weights < -top] = 15
    return codes


def reconstruct(w: ArrayLike, scale: ArrayLike) -> np.ndarray:
    """ŵ: each weight replaced by its nearest scaled E2M1 value (lab convention)."""
    scale = _check_scale(scale)
    return scale * e2m1.VALUES.astype(np.float64)[quantize_codes(w, scale)]


@dataclass(frozen=True)
class ScaleLabRow:
    """One row through the scale lab; every field is a plain value a widget can show."""

    w: np.ndarray
    x: np.ndarray
    scale: float
    codes: np.ndarray
    w_hat: np.ndarray
    weight_error: np.ndarray  # ŵ - w, signed
    clipped: np.ndarray  # |w| beyond the largest representable magnitude 6*scale
    y: float
    y_hat: float
    delta_y: float  # ŷ - y, which equals Σ(ŵᵢ - wᵢ)xᵢ

    @property
    def terms(self) -> np.ndarray:
        """(ŵᵢ - wᵢ)·xᵢ, the share of the output error each weight contributes."""
        return self.weight_error * self.x


def analyse(w: ArrayLike, x: ArrayLike, scale: ArrayLike) -> ScaleLabRow:
    weights = as_float_array(w, what="weights")
    inputs = as_float_array(x, what="inputs")
    if weights.ndim != 1 or inputs.shape != weights.shape or weights.size == 0:
        raise ShapeError(
            f"weights and inputs must be non-empty rows of the same length, got shapes {weights.shape} and {inputs.shape}"
        )
    scale = _check_scale(scale)
    codes = quantize_codes(weights, scale)
    w_hat = scale * e2m1.VALUES.astype(np.float64)[codes]
    y = _exact_dot(weights, inputs)
    y_hat = _exact_dot(w_hat, inputs)
    if not (math.isfinite(y) and math.isfinite(y_hat)):
        raise NonFiniteError("y = w · x or ŷ = ŵ · x overflows float64 (beyond about 1.8e308); use smaller numbers")
    return ScaleLabRow(
        w=weights,
        x=inputs,
        scale=scale,
        codes=codes,
        w_hat=w_hat,
        weight_error=w_hat - weights,
        clipped=np.abs(weights) > e2m1.MAX * scale,
        y=y,
        y_hat=y_hat,
        delta_y=y_hat - y,
    )


def _exact_dot(a: np.ndarray, b: np.ndarray) -> float:
    """Σ aᵢbᵢ with fsum, which keeps the sum exact up to one final rounding, so the article's
    numbers come out clean; inf where a product or the sum leaves float64's range."""
    with np.errstate(over="ignore"):
        products = a * b
    if not np.all(np.isfinite(products)):
        return math.inf
    try:
        return math.fsum(products)
    except OverflowError:  # fsum's intermediate sum overflowed
        return math.inf


def output_error(w: ArrayLike, x: ArrayLike, scale: ArrayLike) -> float:
    """Signed output error Δy = Σ(ŵᵢ − wᵢ)xᵢ."""
    return analyse(w, x, scale).delta_y


def representable(scale: ArrayLike) -> np.ndarray:
    """The fifteen distinct values the scaled E2M1 ruler can reach (one zero), ascending."""
    scale = _check_scale(scale)
    return np.unique(scale * e2m1.MAGNITUDES.astype(np.float64) * np.array([[1.0], [-1.0]])) + 0.0
