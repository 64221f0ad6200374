"""What ggml's importance-aware quantizers share: the importance vector, the weights ggml makes of it,
and the search for the super-block scales (make_qp_quants).

llama-quantize --imatrix passes each weight tensor's importance to quantize_q4_K(src, dst, nrows,
n_per_row, quant_weights) and its siblings: `quant_weights`, one float per input column (the
imatrix's mean of x^2 over the calibration tokens), the same for every row. Without it those
functions are the reference quantizers the lab already matches; with it they run a second code
path (quantize_row_q4_K_impl, ...), and the lab's quantize(w, importance=...) mirrors that path.

Most of them do not weigh a weight's error by its column's importance alone but by

    weight = importance * sqrt(sigma2 + x^2),    sigma2 = 2 * sum(x^2) / n over the super-block of n

so that, within a column's importance, larger weights still count for more, and a weight near zero
is not ignored (sigma2 is twice the block's mean square; Q2_K's is the mean square itself). Q6_K
alone passes the importance as it is.

All arithmetic is float32 in the C code's order (its sums left to right), so the bytes match ggml
built without fused multiply-add.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lab._arrays import as_array
from lab.errors import DTypeError, ImportanceError, NonFiniteError, ShapeError
from lab.formats._ggml import GROUP_MAX_EPS
from lab.formats._qkx2 import Qkx2Call, nearest_codes, search_subblocks

_F32 = np.float32
#: make_qp_quants' candidate grids: iscale = (nmax + 0.1 t) / max for t = -4..4 but 0
_QP_TRIES = 4
#: make_qp_quants' passes of moving one level at a time; it stops early when a pass moves none
_QP_PASSES = 5


def importance_vector(importance, columns: int, title: str) -> np.ndarray:
    """The importance as float32 [columns], one value per column of the weights, checked.

    ShapeError for another length, DTypeError for what is not numbers, NonFiniteError for NaN or
    infinity, ImportanceError for a negative value: ggml would weigh an error negatively there,
    and its search would then prefer codes that fit worse. Zeros are allowed (a column no token
    reached); llama-quantize passes them on.
    """
    values = as_array(importance, what="importance")
    if values.ndim != 1 or values.shape[0] != columns:
        raise ShapeError(
            f"{title}'s importance is one value per column of the weights ({columns}), got shape {values.shape}"
        )
    if values.dtype == np.bool_ or not np.issubdtype(values.dtype, np.number):
        raise DTypeError(f"{title}'s importance must be numbers, got dtype {values.dtype}")
    with np.errstate(over="ignore"):  # a float64 beyond float32's range becomes inf, refused below
        values = values.astype(np.float32)
    if not np.isfinite(values).all():
        raise NonFiniteError(
            f"{title}'s importance holds NaN or infinity (first at column {_first(~np.isfinite(values))})"
        )
    if (values < 0).any():
        raise ImportanceError(
            f"{title}'s importance cannot be negative (column {_first(values < 0)} is {values[values < 0][0]:g}): "
            "it is a mean of squares, and ggml would weigh that column's error negatively"
        )
    return values


def _first(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def per_weight(importance: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """The column importance [n] repeated for every row of weights of `shape` [..., n], as float32 [..., n]."""
    return np.ascontiguousarray(np.broadcast_to(importance, shape))


def left_to_right_sum(values: np.ndarray) -> np.ndarray:
    """Sum over the last axis in C's order, one element after another, in float32.

    numpy's add.reduce along a contiguous axis adds pairwise, which rounds differently; cumsum is
    an accumulation, left to right by definition.
    """
    return np.cumsum(values, axis=-1, dtype=np.float32)[..., -1]


def sigma_weights(x: np.ndarray, importance: np.ndarray, spread: int = 2) -> np.ndarray:
    """importance * sqrt(sigma2 + x^2) for super-blocks x [..., n] and their importance [..., n].

    sigma2 = spread * sum(x^2) / n, as quantize_row_q4_K_impl, quantize_row_q5_K_impl,
    quantize_row_q3_K_impl and quantize_row_iq4_nl_impl work it out with spread 2 (the last as
    sum * (2 / n): the same number, n being a power of two), quantize_row_q2_K_impl with 1.
    """
    squares = x * x
    sigma2 = left_to_right_sum(squares) * _F32(spread) / _F32(x.shape[-1])
    return importance * np.sqrt(sigma2[..., None] + squares)


def nearest_int(values: np.ndarray) -> np.ndarray:
    """ggml's nearest_int, as whole float32 numbers: adds 1.5 * 2^23 and reads the integer from the
    mantissa bits (round half to even below 2^22 in magnitude, which C's debug build asserts).

    Float32, not int32, because C then uses the level in float arithmetic, and numpy would take a
    float32 times an int32 in float64.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        bits = (np.asarray(values, np.float32) + _F32(12582912)).view(np.int32)
    return ((bits & 0x7FFFFF) - 0x400000).astype(np.float32)


def fit_super_scales(values: np.ndarray, weights: np.ndarray, nmax: int) -> tuple[np.ndarray, np.ndarray]:
    """make_qp_quants(n, nmax, values, L, weights) for every super-block: (scale float32 [b], levels uint8 [b, n]).

    values [b, n] are the super-block's non-negative subblock scales (or minimums), weights [b, n]
    their importance (the sum of each subblock's weights). values ~ scale * L, L in 0..nmax:

      1. iscale = nmax / max, then 8 stretched grids (nmax + 0.1 t) / max, t = -4..4 but 0; the
         grid with the lowest weighted squared error wins (the first of equals);
      2. its levels' least-squares scale, sum(w x L) / sum(w L^2);
      3. up to five passes over the n levels, one at a time: move a level to the one its value
         asks for given the others, nearest(x * S_L2 / S_xL) without it, when that explains more,
         S_xL^2 / S_L2 rising. A pass that moves nothing ends the search (a later one would too).

    A super-block whose largest value is below GROUP_MAX_EPS gets scale 0 and levels 0.
    """
    largest = np.maximum(values.max(axis=-1), _F32(0))  # C's max starts at 0
    empty = largest < GROUP_MAX_EPS
    largest = np.where(empty, _F32(1), largest)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # empty super-blocks are set at the end
        iscale = _F32(nmax) / largest
        levels = nearest_int(iscale[:, None] * values)  # the plain grid is not clamped in C
        best_error = _grid_error(values, weights, levels, _F32(1) / iscale)
        for t in range(-_QP_TRIES, _QP_TRIES + 1):
            if t == 0:
                continue
            trial_iscale = (_F32(0.1) * _F32(t) + _F32(nmax)) / largest
            trial_levels = np.minimum(nearest_int(trial_iscale[:, None] * values), _F32(nmax))
            error = _grid_error(values, weights, trial_levels, _F32(1) / trial_iscale)
            better = error < best_error
            best_error = np.where(better, error, best_error)
            iscale = np.where(better, trial_iscale, iscale)
        levels = np.minimum(nearest_int(iscale[:, None] * values), _F32(nmax))
        weighted_x = weights * values
        sum_lx = left_to_right_sum(weighted_x * levels)
        sum_l2 = left_to_right_sum(weights * levels * levels)
        for _ in range(_QP_PASSES):
            moved = np.zeros(values.shape[0], bool)
            for i in range(values.shape[1]):
                level = levels[:, i]
                others_lx = sum_lx - weighted_x[:, i] * level
                others_l2 = sum_l2 - weights[:, i] * level * level
                may_move = (others_lx > 0) & (others_l2 > 0)
                asked = np.minimum(nearest_int(values[:, i] * others_l2 / others_lx), _F32(nmax))
                trial_lx = others_lx + weighted_x[:, i] * asked
                trial_l2 = others_l2 + weights[:, i] * asked * asked
                move = may_move & (asked != level) & (trial_lx * trial_lx * sum_l2 > sum_lx * sum_lx * trial_l2)
                levels[:, i] = np.where(move, asked, level)
                sum_lx = np.where(move, trial_lx, sum_lx)
                sum_l2 = np.where(move, trial_l2, sum_l2)
                moved |= move
            if not moved.any():
                break
        scale = np.where(sum_l2 > 0, sum_lx / sum_l2, _F32(0))
    levels[empty] = 0
    # the values are non-negative, so the levels are 0..nmax: C's uint8 L
    return np.where(empty, _F32(0), scale).astype(np.float32), levels.astype(np.uint8)


def _grid_error(values: np.ndarray, weights: np.ndarray, levels: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """sum(w * diff * diff), diff = x - scale * L, left to right."""
    diff = values - scale[:, None] * levels
    return left_to_right_sum(weights * diff * diff)


@dataclass(frozen=True)
class KQuant:
    """What quantize_row_q4_K_impl, quantize_row_q5_K_impl and quantize_row_q2_K_impl differ in."""

    title: str
    #: weights per subblock, each with its own step and floor
    subblock_weights: int
    #: the largest code, and the largest subblock scale or minimum field
    code_max: int
    field_max: int
    #: sigma2's factor in sigma_weights
    spread: int


Q4_K = KQuant("Q4_K", subblock_weights=32, code_max=15, field_max=63, spread=2)
Q5_K = KQuant("Q5_K", subblock_weights=32, code_max=31, field_max=63, spread=2)
Q2_K = KQuant("Q2_K", subblock_weights=16, code_max=3, field_max=15, spread=1)


def fit_k_super_blocks(x: np.ndarray, importance: np.ndarray, kind: KQuant) -> tuple[np.ndarray, ...]:
    """quantize_row_q4_K_impl, quantize_row_q5_K_impl or quantize_row_q2_K_impl with quant_weights,
    for super-blocks x float32 [b, 256] and each weight's importance [b, 256]:
    (d16 [b], dmin16 [b], scales uint8 [b, s], mins uint8 [b, s], codes uint8 [b, 256]), s subblocks.

    Per subblock, make_qkx3_quants(n, nmax, x, weights, ..., -0.9, 0.05, 36): the reference's
    line search (lab.formats._qkx2) on 37 finer grids, each weight weighed by sigma_weights. Then
    the steps and the depths (-floor) each get their own make_qp_quants (fit_super_scales,
    weighted by each subblock's total weight) instead of the reference's "largest / field_max":
    d and dmin, stored as float16, and the subblock fields. The codes are worked out again
    against the stored gains and offsets; a subblock whose gain is 0 keeps the search's codes.
    """
    weights = sigma_weights(x, importance, kind.spread).reshape(-1, kind.subblock_weights)
    code_max = kind.code_max
    call = Qkx2Call(
        weights=kind.subblock_weights,
        code_max=code_max,
        importance=None,
        rmin=-0.9,
        rdelta=0.05,
        nstep=36,
        use_mad=False,
    )
    step, floor, search_codes = search_subblocks(call, x.reshape(-1, kind.subblock_weights), weights)
    subblocks = x.shape[-1] // kind.subblock_weights
    subblock_weight = left_to_right_sum(weights).reshape(-1, subblocks)
    d, scales = fit_super_scales(step.reshape(-1, subblocks), subblock_weight, kind.field_max)
    dmin, mins = fit_super_scales(-floor.reshape(-1, subblocks), subblock_weight, kind.field_max)
    with np.errstate(over="ignore"):  # an overflow to inf is refused just below
        d16, dmin16 = d.astype(np.float16), dmin.astype(np.float16)
    if not (np.isfinite(d16).all() and np.isfinite(dmin16).all()):
        raise NonFiniteError(f"w spans too wide a range: {kind.title}'s float16 d or dmin would overflow (max 65504)")

    gain = d16.astype(np.float32)[:, None] * scales.astype(np.float32)
    offset = dmin16.astype(np.float32)[:, None] * mins.astype(np.float32)
    blocks = x.reshape(-1, subblocks, kind.subblock_weights)
    with np.errstate(divide="ignore", invalid="ignore"):  # a zero gain keeps the search's codes instead
        aimed = nearest_codes((blocks + offset[..., None]) / gain[..., None], code_max)
    codes = np.where(gain[..., None] != 0, aimed, search_codes.reshape(blocks.shape)).astype(np.uint8)
    return d16, dmin16, scales, mins, codes.reshape(x.shape)
