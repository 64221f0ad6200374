"""GPTQ: round one column at a time, and push each column's rounding error into the columns not yet rounded.

Round-to-nearest makes each weight as close as it can be. What matters is the Linear's output
x @ W.T on real inputs, and its squared error is the quadratic form (W - Q) H (W - Q).T with the
Hessian H = Σ xᵀx of the calibration inputs. GPTQ rounds column k, then moves the later columns
so that, through H, they cancel as much of column k's error as they can. With U the upper
Cholesky factor of H⁻¹, that move is -e·U[k, k:] for the error e = (w_k - q_k) / U[k, k].

This follows mlx_lm.quant.gptq 0.32.2 step by step:
  1. H = Σ xᵀx over the float inputs; add 1 % of its mean diagonal to the diagonal (damping);
     U = the upper Cholesky factor of H⁻¹.
  2. Per group of `group_size` columns, the scale and bias come from MLX's affine rule
     (lab.formats.affine) applied to the group's weights as the earlier groups left them.
  3. Inside the group, column by column: round with that scale and bias, and update the rest of
     the group at once. After the group, one block update carries the group's errors to every
     later column.
mlx-lm asserts bits in {2, 4, 8}, narrower than the affine mode's widths, and so does the lab.
The work here is float64 (mlx-lm's is float32), so the two can part where a weight sits on a
rounding boundary: on up to 2 codes in a thousand (8 bits), none at all in most settings.

GPTQ is greedy and fits the calibration inputs, so it can lose to round-to-nearest: on new inputs
where the channels are independent (H's off-diagonal is then only the calibration sample's noise),
and at 2 bits even on the calibration inputs, where each group's min/max scale is fixed before the
feedback moves the group's later weights, some of them past its edges, where they clip.
"""

from __future__ import annotations

import numpy as np

from lab.formats import affine
from lab.study.learned._inputs import CalibrationError, checked

#: the widths mlx_lm.quant.gptq accepts
GPTQ_BITS = (2, 4, 8)
#: mlx-lm's damping: this fraction of the Hessian's mean diagonal is added to its diagonal
DAMPING = 1e-2


def inverse_hessian_factor(inputs: np.ndarray) -> np.ndarray:
    """U, the upper Cholesky factor of (H + damping·I)⁻¹, H = Σ xᵀx over the rows of `inputs`."""
    x = inputs.astype(np.float64)
    hessian = x.T @ x
    damping = DAMPING * np.mean(np.diag(hessian))
    if not damping > 0:
        raise CalibrationError("the calibration inputs are all zero, so they say nothing about which errors matter")
    hessian[np.diag_indices_from(hessian)] += damping
    lower = np.linalg.cholesky(hessian)
    lower_inverse = np.linalg.inv(lower)
    # mlx-lm's cholesky_inv: H⁻¹ = L⁻ᵀ L⁻¹, then its Cholesky factor, transposed to the upper one.
    return np.linalg.cholesky(lower_inverse.T @ lower_inverse).T


def gptq_tensor(weight, inputs, *, bits: int, group_size: int) -> affine.AffineTensor:
    """The GPTQ codes, scales and biases of a Linear weight [out, in], calibrated on inputs [n, in]."""
    weight, inputs = checked(weight, inputs, bits=bits, group_size=group_size, method="GPTQ", method_bits=GPTQ_BITS)
    factor = inverse_hessian_factor(inputs)
    work = weight.astype(np.float64)  # updated in place as the error moves right
    n_levels = 2**bits - 1
    codes = np.empty(work.shape, dtype=np.uint8)
    scales, biases = [], []
    for start in range(0, work.shape[1], group_size):
        stop = start + group_size
        group = affine.quantize(work[:, start:stop].astype(np.float32), bits=bits, group_size=group_size)
        scale, bias = group.scales.astype(np.float64), group.biases.astype(np.float64)  # [out, 1]
        errors = np.empty((work.shape[0], group_size))
        for k in range(start, stop):
            code = np.clip(np.rint((work[:, k : k + 1] - bias) / scale), 0, n_levels)
            codes[:, k] = code[:, 0]
            error = (work[:, k : k + 1] - (scale * code + bias)) / factor[k, k]
            work[:, k:stop] -= error * factor[k, k:stop]
            errors[:, k - start] = error[:, 0]
        work[:, stop:] -= errors @ factor[start:stop, stop:]
        scales.append(group.scales)
        biases.append(group.biases)
    return affine.AffineTensor(
        codes=codes,
        scales=np.concatenate(scales, axis=1),
        biases=np.concatenate(biases, axis=1),
        bits=bits,
        group_size=group_size,
    )


def gptq(weight, inputs, *, bits: int, group_size: int) -> np.ndarray:
    """GPTQ's decoded weights, float32 [out, in]: what the quantized Linear multiplies by."""
    return gptq_tensor(weight, inputs, bits=bits, group_size=group_size).dequantize()
