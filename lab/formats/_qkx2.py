"""ggml's make_qkx2_quants, vectorised over thousands of subblocks at once: the search Q4_K, Q5_K and Q2_K share.

For one subblock of n weights x with importance weights w, make_qkx2_quants(n, nmax, x, w, L,
&the_min, Laux, rmin, rdelta, nstep, use_mad) fits x ~ step * q + floor, codes q in 0..nmax,
floor <= 0 (the_min = -floor is subtracted on decode):

  1. floor = min(min(x), 0), so that the grid always reaches zero, and top = max(x). A flat
     subblock (top == floor) gets step 0 and codes 0 at once, its value (if negative) all floor.
  2. The plain grid: codes q = nearest_int(nmax / (top - floor) * (x - floor)) clamped to 0..nmax,
     step (top - floor) / nmax, is the first best. Its error is the sum of w * (step q + floor - x)^2,
     or of w * |step q + floor - x| with use_mad.
  3. Then nstep + 1 stretched grids, iscale = (rmin + rdelta * i + nmax) / (top - best floor),
     i = 0..nstep (none when nstep < 1), each anchored at the best floor found so far, not at the
     minimum, so each candidate depends on the earlier winners. For each grid's codes the weighted
     least-squares line, in closed form (refitted through the origin where its floor comes out
     positive), replaces the best when its determinant is positive and its error lower.

The lab's three callers:

    Q4_K   make_qkx2_quants(32, 15, x, av + |x|, L, &min, Laux, -1.0, 0.1, 20, false)
    Q5_K   make_qkx2_quants(32, 31, x, av + |x|, L, &min, Laux, -0.5, 0.1, 15, false)
    Q2_K   make_qkx2_quants(16,  3, x, |x|,      L, &min, Laux, -0.5, 0.1, 15, true)

where av is the subblock's root mean square. With an importance matrix, Q4_K and Q5_K call
make_qkx3_quants(32, nmax, x, weights, L, &min, Laux, -0.9, 0.05, 36, false) instead: the same search
given its weights by the caller (lab.formats._imatrix), so Qkx2Call.importance is None there and
the weights come with the rows. All arithmetic is float32 in C's order, so the
results are byte-identical to ggml's C reference built without fused multiply-add.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import numpy as np

_F32 = np.float32
#: 1.5 * 2^23: added to a float32 below 2^22 in magnitude, it leaves the nearest integer in the mantissa
_ROUNDING_MAGIC = _F32(12582912)
#: np.rint and nearest_int agree on [-2^22, 2^22) (C's debug build asserts |v| <= 2^22 - 1)
_RINT_AGREES_BELOW = 2.0**22
#: float32's unit roundoff: every float32 operation is exact to within a factor 1 +- 2^-24
_UNIT_ROUNDOFF = 2.0**-24
#: subblock weights searched per pass: each of the search's six buffers then takes 512 KiB
_CHUNK_WEIGHTS = 2**17


def nearest_codes(values: np.ndarray, code_max: int) -> np.ndarray:
    """ggml's nearest_int of float32 values, clamped to 0..code_max as C's MAX(0, MIN(nmax, l)), as float32 codes.

    nearest_int adds 1.5 * 2^23, where float32's spacing is 1, and reads the integer back from
    the mantissa bits: round half to even for |v| < 2^22, as np.rint, but 0 for NaN and infinity
    (which a degenerate grid makes), and whatever the bits say beyond 2^22, where C's debug build
    stops on its assertion and its release build reads the bits so. `values` is overwritten.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        values += _ROUNDING_MAGIC
    levels = values.view(np.int32)
    levels &= 0x7FFFFF
    levels -= 0x400000
    np.clip(levels, 0, code_max, out=levels)
    return levels.astype(np.float32)


def rms_plus_magnitude(x: np.ndarray, out: np.ndarray, scratch: np.ndarray) -> None:
    """av + |x| into out, av the root mean square of each subblock of x [n, m]: Q4_K's and Q5_K's importance.

    Large weights count for more without the small ones being ignored.
    """
    rms = np.add.reduce(np.multiply(x, x, out=scratch), axis=0)
    rms /= _F32(x.shape[0])
    np.sqrt(rms, out=rms)
    np.abs(x, out=out)
    out += rms


def magnitude(x: np.ndarray, out: np.ndarray, scratch: np.ndarray) -> None:
    """|x| into out: Q2_K's importance (`scratch` is not needed)."""
    np.abs(x, out=out)


@dataclass(frozen=True)
class Qkx2Call:
    """What one quantizer passes make_qkx2_quants besides the subblock and the outputs."""

    #: n, the weights in a subblock
    weights: int
    #: nmax, the largest code
    code_max: int
    #: fills out [n, m] with the importance of the weights x [n, m] (position-major, so that its
    #: reductions over axis 0 add in C's order); scratch [n, m] is free to overwrite. None for a
    #: call whose caller passes the importance with the rows (make_qkx3_quants with an imatrix)
    importance: Callable[[np.ndarray, np.ndarray, np.ndarray], None] | None
    rmin: float
    rdelta: float
    nstep: int
    #: weigh the absolute error rather than the squared one
    use_mad: bool

    @cached_property
    def grids(self) -> tuple[tuple[np.float32, bool], ...]:
        """Each stretched grid's numerator rmin + rdelta * i + nmax, in float32 as C works it out, and
        whether the grid cannot put a code above nmax.

        The largest weight's scaled distance is inverse_step * (top - anchor) <= numerator *
        (1 + 2^-24)^2 (two roundings), every other weight's is no larger (rounding is monotone),
        and one below nmax + 0.5 rounds to at most nmax: such a grid clamps only at 0.
        """
        # C returns after the plain grid when nstep < 1, and otherwise tries nstep + 1 grids
        numerators = (
            _F32(self.rmin) + _F32(self.rdelta) * _F32(step) + _F32(self.code_max)
            for step in range(self.nstep + 1 if self.nstep >= 1 else 0)
        )
        bound = (1 + _UNIT_ROUNDOFF) ** 2
        return tuple((numerator, float(numerator) * bound < self.code_max + 0.5) for numerator in numerators)


def search_subblocks(
    call: Qkx2Call, rows: np.ndarray, importance: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """make_qkx2_quants for every subblock of rows float32 [m, n]: (step [m], floor [m], codes uint8 [m, n]).

    importance: float32 [m, n], each weight's importance, for a call without a rule of its own.

    Every subblock is searched on its own, so searching a chunk at a time gives the same result.
    """
    step = np.empty(rows.shape[0], np.float32)
    floor = np.empty(rows.shape[0], np.float32)
    codes = np.empty(rows.shape, np.uint8)
    chunk_columns = _CHUNK_WEIGHTS // call.weights
    search = None
    for start in range(0, rows.shape[0], chunk_columns):
        chunk = slice(start, start + chunk_columns)
        chunk_rows = rows[chunk]
        if search is None or search.columns != chunk_rows.shape[0]:
            search = Qkx2Search(call, chunk_rows.shape[0])
        chunk_importance = None if importance is None else importance[chunk]
        step[chunk], floor[chunk], chunk_codes = search.fit(chunk_rows, keep_codes=True, importance=chunk_importance)
        np.copyto(codes[chunk], chunk_codes.T, casting="unsafe")
    return step, floor, codes


class Qkx2Search:
    """make_qkx2_quants for `columns` subblocks at a time, with buffers kept between chunks.

    The rows are transposed to position-major order (n, columns): numpy then reduces over axis 0
    one position after another, the same left-to-right float32 order as the C loops. That matters
    where two candidates are nearly tied (a constant subblock, for example, has a determinant
    that is zero up to rounding), and it makes the result byte-identical to the C reference
    built without fused multiply-add.

    Where the time goes (measured on Q4_K: 32 weights, 22 grids): per candidate grid the search
    makes 15 passes over the 32m weights (3 for the codes, plus a clip for grids that can reach
    above nmax; 3 products and 3 sums for the fit; 5 and a sum for its error), each limited by
    cache bandwidth at about 0.07-0.1 ns a weight, plus some 20 calls on m-long rows, limited by
    numpy's per-call overhead. So every full-size intermediate is written in place (out=) into
    one of six preallocated arrays, and the per-subblock arithmetic works on stacked rows (three
    products and one subtraction give the determinant and both numerators). 22 grids x 15 passes
    over 4096 x 4096 weights are 5.5e9 weight-passes, 0.36-0.55 s at those rates, so the search
    alone cannot get much under half a second this way.

    Measured and dropped: predicting a candidate's error from the three sums
    (E = s^2 S_l2 + 2 s m S_l - 2 s S_xl + m^2 S_w - 2 m S_x + S_xx) to skip the error passes.
    The terms cancel about 5000-fold on Gaussian weights, so the rounding of C's float32 sums
    leaves E uncertain by about 1% (a rigorous bound), and for a fifth of the subblock-candidates
    (up to 43% for some candidates; a tenth are exact ties, identical codes) that does not decide
    the comparison; working out the exact error for just those, gathered, costs more than the
    passes saved. Also dropped: keeping x - anchor between candidates, which changes for the
    5-40% of subblocks whose best grid moved; patching those (masked or fancy indexing) costs
    more than recomputing it.
    """

    def __init__(self, call: Qkx2Call, columns: int):
        self.call = call
        self.columns = columns
        shape = (call.weights, columns)
        # codes and weights side by side, so one multiply gives both w*l*l and w*l*x
        self._codes_and_x = np.empty((2, *shape), dtype=np.float32)
        self.codes, self.x = self._codes_and_x
        self.importance = np.empty(shape, dtype=np.float32)
        # w*l, w*l*l, w*l*x: one reduction gives the three sums; rows 1 and 2 double as scratch
        self._products = np.empty((3, *shape), dtype=np.float32)
        self.scratch, self.spare = self._products[1:]
        self._sums = np.empty((3, columns), dtype=np.float32)  # sum_l, sum_l2, sum_xl
        self._left = np.empty((3, columns), dtype=np.float32)
        self._right = np.empty((3, columns), dtype=np.float32)
        self._candidate = np.empty((3, columns), dtype=np.float32)  # error, step, floor
        self._best = np.empty((3, columns), dtype=np.float32)
        self._span = np.empty(columns, dtype=np.float32)
        self._inverse_step = np.empty(columns, dtype=np.float32)
        self._lowest = np.empty(columns, dtype=np.float32)
        self._better = np.empty(columns, dtype=bool)
        self._better_rows = np.empty((3, columns), dtype=bool)
        self._mask = np.empty(columns, dtype=bool)
        # numpy (2.3+) buffers an operand broadcast along the first axis into blocks of its
        # buffer size, a copy that made each (m,)-by-(32, m) operation take 1.6x as long as one
        # on two full arrays; a buffer no longer than a row leaves the rows unbuffered.
        self.buffer_size = max(16, columns // 16 * 16)

    def fit(self, rows: np.ndarray, keep_codes: bool = False, importance: np.ndarray | None = None):
        """Best (step, floor) per n-weight row of rows [m, n], x ~ step * q + floor, q in 0..nmax,
        floor <= 0; with keep_codes also the winning codes (n, m), float32 (in self.codes).
        importance [m, n] is the weights' importance where the call has no rule of its own.

        The winner's codes are not kept unless asked for, since a caller that works its codes
        out again against stored scales may need only a few subblocks' search codes. Keeping them
        costs a masked copy of the candidate's inverse step and anchor; the codes are then
        rebuilt once at the end, by the same arithmetic, so they are the same codes.
        """
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            np.setbufsize(self.buffer_size)  # for this errstate block only
            return self._fit(rows, keep_codes, importance)

    def _fit(self, rows, keep_codes, given_importance):
        x, importance, codes, scratch = self.x, self.importance, self.codes, self.scratch
        products, sums, left, right = self._products, self._sums, self._left, self._right
        candidate, best, span, inverse_step = self._candidate, self._best, self._span, self._inverse_step
        better, mask = self._better, self._mask
        sum_l, sum_l2, sum_xl = sums
        best_error, best_step, best_floor = best
        error, step, line_floor = candidate

        np.copyto(x, rows.T)
        # The grid always includes zero: a subblock of positive weights still starts at 0.
        self.x_min = x.min(axis=0)
        floor = np.minimum(self.x_min, _F32(0))
        top = x.max(axis=0)
        flat = top == floor

        # Weights beyond about 3e18 overflow float32 in the squares and products below. Such a
        # subblock's plain grid step (top - floor) / nmax is then far beyond what a float16 scale
        # holds, and no candidate with an overflowed error beats it, so the callers refuse the
        # block; the infinities here never reach a stored byte.
        if given_importance is None:
            self.call.importance(x, importance, scratch)
        else:
            np.copyto(importance, given_importance.T)
        sum_w = np.add.reduce(importance, axis=0)
        sum_x = np.add.reduce(np.multiply(importance, x, out=scratch), axis=0)

        # Starting point: the plain min/max grid.
        np.subtract(top, floor, out=span)
        np.divide(_F32(self.call.code_max), span, out=inverse_step)
        np.divide(_F32(1), inverse_step, out=best_step)
        np.copyto(best_floor, floor)
        if keep_codes:
            best_inverse_step, best_anchor = inverse_step.copy(), floor.copy()
        self._grid_codes(inverse_step, floor)
        self._weighted_error(best_step, best_floor, best_error)

        for stretch, below_top in self.call.grids:
            # Each grid is anchored at the best floor so far, not at the minimum (C's `min` moves).
            np.subtract(top, best_floor, out=span)
            np.divide(stretch, span, out=inverse_step)
            self._grid_codes(inverse_step, best_floor, below_top)
            np.multiply(importance, codes, out=products[0])
            np.multiply(products[0], self._codes_and_x, out=products[1:])
            np.add.reduce(products, axis=1, out=sums)
            # For fixed codes, the weighted least-squares line x ~ step*q + floor in closed form:
            # determinant = sum_w*sum_l2 - sum_l*sum_l, step = (sum_w*sum_xl - sum_x*sum_l) / it,
            # floor = (sum_l2*sum_x - sum_l*sum_xl) / it, each product rounded as in C.
            np.multiply(sum_w, sums[1:], out=left[:2])  # sum_w*sum_l2, sum_w*sum_xl
            np.multiply(sum_l2, sum_x, out=left[2])
            np.multiply(sum_l, sums[::2], out=right[::2])  # sum_l*sum_l, sum_l*sum_xl
            np.multiply(sum_x, sum_l, out=right[1])
            determinant = np.subtract(left, right, out=left)[0]
            np.divide(left[1:], determinant, out=candidate[1:])
            # A positive floor is not allowed (the offset is subtracted as dmin*m, m >= 0):
            # refit through the origin instead.
            # (fmax skips NaN floors, which stay as they are; one call where greater+any are two)
            if np.fmax.reduce(line_floor) > 0:
                np.greater(line_floor, _F32(0), out=mask)
                np.divide(sum_xl, sum_l2, out=step, where=mask)
                np.copyto(line_floor, _F32(0), where=mask)
            self._weighted_error(step, line_floor, error)
            np.less(error, best_error, out=better)
            better &= np.greater(determinant, _F32(0), out=mask)
            if keep_codes:
                np.copyto(best_inverse_step, inverse_step, where=better)
                np.copyto(best_anchor, best_floor, where=better)
            # putmask with a full-size mask takes two thirds of the time of copyto(where=better)
            np.copyto(self._better_rows, better)
            np.putmask(best, self._better_rows, candidate)

        # A flat subblock has no step; its value (if negative) is carried entirely by the floor.
        result_step = np.where(flat, _F32(0), best_step)
        result_floor = np.where(flat, floor, best_floor)
        if not keep_codes:
            return result_step, result_floor
        best_codes = self._grid_codes(best_inverse_step, best_anchor)
        best_codes[:, flat] = 0
        return result_step, result_floor, best_codes

    def _grid_codes(self, inverse_step: np.ndarray, anchor: np.ndarray, below_top: bool = False) -> np.ndarray:
        """Codes nearest_int(inverse_step * (x - anchor)) clamped to 0..nmax, as float32 in self.codes.

        np.rint rounds as nearest_int does wherever the scaled distance is finite and within
        [-2^22, 2^22). With a positive, finite inverse step the distance rises with x, so the
        smallest weight's tells whether a subblock's are (the largest weight's is about the grid's
        numerator, see Qkx2Call.grids). A subblock failing that has a degenerate grid (a constant
        subblock's is, every candidate; so is one whose span is below about nmax / 3.4e38, which
        overflows the inverse step), and its codes are read from the bits as nearest_int reads
        them, NaN and infinity giving 0. Checking the m-long rows first spares passes over all
        nm codes when, as usual, no grid is degenerate.

        below_top: the caller knows no code rounds above nmax wherever the inverse step is positive
        and finite (see Qkx2Call.grids), so only the clamp at 0 can bite.
        """
        out = self.codes
        lowest = np.multiply(np.subtract(self.x_min, anchor, out=self._lowest), inverse_step, out=self._lowest)
        np.multiply(np.subtract(self.x, anchor, out=self.scratch), inverse_step, out=out)
        regular = inverse_step.min() > 0 and inverse_step.max() < np.inf and lowest.min() >= -_RINT_AGREES_BELOW
        if not regular:
            degenerate = ~(np.isfinite(inverse_step) & (inverse_step > 0)) | (lowest < -_RINT_AGREES_BELOW)
            degenerate_codes = nearest_codes(out[:, degenerate], self.call.code_max)
        np.rint(out, out=out)
        if regular and below_top:
            # Only subblocks whose lowest distance is below -0.5 (rounds below 0) need clamping:
            # under 1% of them, against a clip pass over all nm codes. Every other code is already
            # in -0..nmax, which the clip would leave as it is, -0 included.
            if lowest.min() < -0.5:
                reaching = np.flatnonzero(lowest < -0.5)
                out[:, reaching] = np.clip(out[:, reaching], 0, self.call.code_max)
        else:
            np.clip(out, 0, self.call.code_max, out=out)
        if not regular:
            out[:, degenerate] = degenerate_codes
        return out

    def _weighted_error(self, step: np.ndarray, floor: np.ndarray, out: np.ndarray) -> np.ndarray:
        """Sum over the n positions of importance * (step*q + floor - x)^2, or of importance *
        |step*q + floor - x| with use_mad, left to right."""
        residual = np.multiply(self.codes, step, out=self.scratch)
        residual += floor
        residual -= self.x
        if self.call.use_mad:
            np.abs(residual, out=residual)
        else:
            residual *= residual
        residual *= self.importance
        return np.add.reduce(residual, axis=0, out=out)
