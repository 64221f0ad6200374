"""The checks both methods make on a Linear's weight and its calibration inputs, in the lab's words."""

from __future__ import annotations

import numpy as np

from lab._arrays import is_integer, to_float32_input
from lab.errors import BitsError, LabError, NonFiniteError, ShapeError
from lab.formats import affine


class CalibrationError(LabError):
    """Calibration inputs that carry no information for the method, such as inputs that are all zero."""


def checked(weight, inputs, *, bits: int, group_size: int, method: str, method_bits=affine.SUPPORTED_BITS):
    """(weight [out, in], inputs [n, in]) as float32 arrays, or a LabError naming what is wrong.

    `method_bits` are the widths the method takes; every one of them is one MLX's affine mode takes,
    whose own checks (and words) then decide the group size.
    """
    if not is_integer(bits) or bits not in method_bits:
        widths = ", ".join(str(b) for b in method_bits)
        raise BitsError(f"{method} quantizes to {widths} bits; {bits!r} bits is not one of them")
    affine.check_bits_and_group(bits, group_size)
    weight, _ = to_float32_input(weight, what="weight")
    inputs, _ = to_float32_input(inputs, what="inputs")
    if weight.ndim != 2 or weight.size == 0:
        raise ShapeError(f"weight must be a non-empty matrix [out, in], got shape {weight.shape}")
    if inputs.ndim != 2 or inputs.shape[0] == 0:
        raise ShapeError(f"inputs must be a non-empty matrix [n, in] of calibration rows, got shape {inputs.shape}")
    if inputs.shape[1] != weight.shape[1]:
        raise ShapeError(
            f"inputs have {inputs.shape[1]} columns but the weight takes {weight.shape[1]} inputs; "
            "each calibration row must be one input to this Linear"
        )
    if weight.shape[1] % group_size:
        raise ShapeError(f"the weight's {weight.shape[1]} input columns do not split into groups of {group_size}")
    return weight, inputs


def output_error(weight: np.ndarray, decoded: np.ndarray, gram: np.ndarray, rows: int) -> float:
    """Mean squared difference of the Linear's outputs x @ weight.T and x @ decoded.T over `rows` inputs,
    the loss mlx-lm's AWQ compares (its `mse(...).sum() / out.size`), from the inputs' Gram matrix
    G = Σ xᵀx: Σ (x Dᵀ)² = Σ (D G) ∘ D for D = weight - decoded, a [in, in] product instead of [n, in]."""
    difference = weight.astype(np.float64) - decoded.astype(np.float64)
    loss = float(np.sum((difference @ gram) * difference)) / (rows * weight.shape[0])
    if not np.isfinite(loss):
        raise NonFiniteError("the output error overflowed float64: the inputs or weights are too large to compare")
    return loss
