"""AWQ: scale the input channels that carry large activations up before rounding, and back down after.

A weight multiplied by a large activation matters more than one multiplied by a small one, but
round-to-nearest spends the same resolution on both. AWQ multiplies input column j of the weight by
s_j and divides the input x_j by s_j, which leaves the Linear's output unchanged:
    y = x @ W.T = (x / s) @ (W · diag(s)).T
Quantizing W · diag(s) instead of W gives the columns with large s more of each group's codes,
so their rounding error, divided by s_j on the way out, shrinks. The decoded weight the Linear
multiplies by is Q(W · diag(s)) · diag(1/s).

This follows mlx_lm.quant.awq 0.32.2 for one Linear:
  1. Scale search: for each ratio r in 0, 1/20, ..., 19/20, s = max(mean|x|^r, 1e-4), divided by
     √(max(s)·min(s)); keep the s whose Q(W · diag(s)) · diag(1/s) gives the smallest output error
     on the calibration inputs. r = 0 is plain round-to-nearest.
  2. Clip search, on W · diag(s) and up to 512 of the inputs (x / s): per group, clip the weights to
     p times the group's largest magnitude, p in 1, 0.95, ..., 0.55 (max_shrink 0.5), and keep the p
     whose rounded group gives the smallest output error of that group's share of the output.
  3. Fall back: if the result has a larger output error than round-to-nearest, use round-to-nearest.
mlx-lm folds 1/s into the operation before the Linear (a norm or the previous Linear); for one
Linear the lab folds it into the decoded weights, which gives the same outputs.

The scales, the scaled weights and the clip values are float32, computed as mlx-lm computes them,
and that matters: a clipped group is symmetric (its min is minus its max), so MLX's snapping of
the edge to a code (lab.formats.affine) divides the edge by (max - min) / (2^b - 1) and lands
exactly halfway between two codes; the last bit of the clip value decides which grid the group
gets. The errors compared are float64.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lab.formats import affine
from lab.study.learned._inputs import checked, output_error

#: mlx-lm's --n-grid: the number of ratios tried, and the step of the clip search
GRID = 20
#: the smallest clip tried is 1 - MAX_SHRINK of a group's largest magnitude (mlx-lm's max_shrink)
MAX_SHRINK = 0.5
#: the clip search looks at about this many calibration rows (mlx-lm's n_frames)
CLIP_ROWS = 512
#: no channel's scale goes below this before the normalisation
SCALE_FLOOR = 1e-4


@dataclass(frozen=True)
class AWQResult:
    """What the search tried and what it kept, for one Linear."""

    ratios: np.ndarray  #: [GRID] the exponents tried
    ratio_errors: np.ndarray  #: [GRID] the output error of scaling alone, per ratio (inf: overflows float32)
    ratio: float  #: the exponent kept
    scales: np.ndarray  #: [in] the per-input-channel scales s kept
    clip: np.ndarray  #: [out, in / group_size] the magnitude each group of W · diag(s) is clipped to
    rtn_error: float  #: round-to-nearest's output error on the calibration inputs
    awq_error: float  #: scaling and clipping's output error on the calibration inputs
    fell_back: bool  #: True when AWQ did not beat round-to-nearest and its weights are round-to-nearest's
    weights: np.ndarray  #: [out, in] float32, the decoded weights the Linear multiplies by


def _round_to_nearest(weight: np.ndarray, bits: int, group_size: int) -> np.ndarray:
    """MLX affine's quantize-then-dequantize of float32 weights, as float64."""
    tensor = affine.quantize(weight, bits=bits, group_size=group_size)
    return tensor.dequantize().astype(np.float64)


def channel_scales(inputs: np.ndarray, ratio: float) -> np.ndarray:
    """mlx-lm's s for one ratio, float32 as MLX computes it: max(mean|x|^ratio, 1e-4) over each input
    channel, normalised by √(max·min)."""
    with np.errstate(over="ignore", invalid="ignore"):
        magnitude = np.mean(np.abs(inputs), axis=0, dtype=np.float32)
        scales = np.maximum(magnitude ** np.float32(ratio), np.float32(SCALE_FLOOR))
        return (scales / np.sqrt(scales.max() * scales.min())).astype(np.float32)


def _search_clip(scaled: np.ndarray, inputs: np.ndarray, bits: int, group_size: int) -> np.ndarray:
    """Per group of the scaled float32 weight [out, in], the float32 magnitude to clip it to (mlx-lm's
    search_best_clip)."""
    stride = -(-inputs.shape[0] // CLIP_ROWS)
    n_groups = scaled.shape[1] // group_size
    rows = inputs[::stride].astype(np.float64).reshape(-1, n_groups, group_size).transpose(1, 0, 2)  # [groups, b, g]
    groups = scaled.reshape(scaled.shape[0], n_groups, group_size)  # [out, groups, g]
    largest = np.abs(groups).max(axis=-1)  # [out, groups]
    best_error = np.full(largest.shape, np.inf)
    best_clip = np.zeros_like(largest)
    for step in range(int(MAX_SHRINK * GRID)):
        clip = np.float32(1 - step / GRID) * largest  # a float32 product, as mlx-lm's
        clipped = np.clip(groups, -clip[..., None], clip[..., None]).reshape(scaled.shape)
        change = groups - _round_to_nearest(clipped, bits, group_size).reshape(groups.shape)
        # each group's share of the output error [groups, b, out], squared and averaged over the rows
        error = np.mean(np.matmul(rows, change.transpose(1, 2, 0)) ** 2, axis=1).T
        better = error < best_error
        best_error = np.where(better, error, best_error)
        best_clip = np.where(better, clip, best_clip)
    return best_clip


def awq_search(weight, inputs, *, bits: int, group_size: int) -> AWQResult:
    """AWQ's scale search, clip search and fall back for a Linear weight [out, in], inputs [n, in]."""
    weight, inputs = checked(weight, inputs, bits=bits, group_size=group_size, method="AWQ")
    gram = inputs.T.astype(np.float64) @ inputs.astype(np.float64)

    def error(decoded):
        return output_error(weight, decoded, gram, inputs.shape[0])

    def scaled_and_rounded(scaled, scales):
        return _round_to_nearest(scaled, bits, group_size) / scales

    def ratio_error(scales):
        with np.errstate(over="ignore", invalid="ignore"):
            scaled = weight * scales
        if not np.all(np.isfinite(scaled) & (scales > 0)):
            # scales or scaled weights beyond float32 give mlx-lm a NaN loss, which is never the smallest
            return np.inf
        return error(scaled_and_rounded(scaled, scales))

    ratios = np.arange(GRID) / GRID
    ratio_errors = np.array([ratio_error(channel_scales(inputs, ratio)) for ratio in ratios])
    best = int(np.argmin(ratio_errors))  # the first of equal errors, as mlx-lm's strict < keeps
    scales = channel_scales(inputs, ratios[best])
    scaled = weight * scales
    clip = _search_clip(scaled, inputs / scales, bits, group_size)
    grouped = scaled.reshape(clip.shape + (group_size,))
    awq_weights = scaled_and_rounded(np.clip(grouped, -clip[..., None], clip[..., None]).reshape(weight.shape), scales)
    rtn_weights = _round_to_nearest(weight, bits, group_size)
    rtn_error = error(rtn_weights)
    awq_error = error(awq_weights)
    fell_back = awq_error > rtn_error
    return AWQResult(
        ratios=ratios,
        ratio_errors=ratio_errors,
        ratio=float(ratios[best]),
        scales=scales,
        clip=clip,
        rtn_error=rtn_error,
        awq_error=awq_error,
        fell_back=bool(fell_back),
        weights=(rtn_weights if fell_back else awq_weights).astype(np.float32),
    )


def awq(weight, inputs, *, bits: int, group_size: int) -> np.ndarray:
    """AWQ's decoded weights, float32 [out, in]: Q(W · diag(s)) · diag(1/s) with the searched s and clip,
    or round-to-nearest's where that is better on the calibration inputs."""
    return awq_search(weight, inputs, bits=bits, group_size=group_size).weights
