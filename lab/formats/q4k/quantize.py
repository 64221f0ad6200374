"""Quantizing to Q4_K: llama.cpp's reference search, vectorised over every subblock at once."""

from __future__ import annotations

import numpy as np

from lab._arrays import (
    require_last_multiple,
    to_float32_input,
)
from lab.errors import NonFiniteError
from lab.formats.q4k.layout import _F32, BLOCK_WEIGHTS, CODE_MAX, FIELD_MAX, SUBBLOCK_WEIGHTS, SUBBLOCKS
from lab.formats.q4k.tensor import Q4KTensor, _assemble

# --------------------------------------------------------------------------------------------
# Quantizing (llama.cpp's reference search, vectorised over every subblock at once)
# --------------------------------------------------------------------------------------------

#: candidate grids: iscale = (START + STEP * i + 15) / (max - min), i = 0..20
SEARCH_START = -1.0
SEARCH_STEP = 0.1
SEARCH_STEPS = 21
#: the candidates' numerators START + STEP * i + 15, in float32 as C works them out
_STRETCHES = tuple(
    _F32(SEARCH_START) + _F32(SEARCH_STEP) * _F32(step_number) + _F32(CODE_MAX) for step_number in range(SEARCH_STEPS)
)
#: A grid with a numerator below 15.5 cannot put a code above 15: the largest weight's scaled
#: distance is inverse_step * (top - floor) <= numerator * (1 + 2^-24)^2 < 15.5, and every other
#: weight's is no larger (rounding is monotone). So candidates 0..14 (14.0..15.4) clamp only at 0.
_UNCLIPPED_STRETCH = _F32(15.5)
#: super-blocks quantized per pass: the search's six (32, 8 * 512) float32 arrays are 3 MiB,
#: past one core's L2 but well inside L3. Each candidate grid is some 35 numpy calls, and on the
#: shared bench machine smaller chunks that fit L2 lost more to per-call overhead than they won in
#: cache hits: 4096 x 4096 weights took 0.62 s at 512 blocks, 0.65 at 384 and 768, 0.67 at 256,
#: 0.75 at 192 and 0.87 at 128 (CPU s, best of 4, load ~9).
_CHUNK_BLOCKS = 512


def quantize(w) -> Q4KTensor:
    """Q4_K bytes for weights [..., 256k], with the quality of llama.cpp's quantize_row_q4_K_ref.

    All arithmetic is float32 in the C reference's order, so the bytes match a build of the
    reference that does not fuse multiplies into adds (FMA contraction can move a near-tie).
    """
    # Only read below, so a float32 input is not copied.
    values, _ = to_float32_input(w, what="w", copy=False)
    require_last_multiple(values, BLOCK_WEIGHTS, what="w (256 weights per Q4_K block)")
    lead = values.shape[:-1]
    n_blocks_per_row = values.shape[-1] // BLOCK_WEIGHTS
    x = np.ascontiguousarray(values).reshape(-1, BLOCK_WEIGHTS)

    # Every super-block is quantized on its own, so quantizing a chunk at a time gives the same
    # bytes as one pass over the whole tensor, with temporaries that fit in cache.
    n_blocks = x.shape[0]
    d16 = np.empty(n_blocks, dtype=np.float16)
    dmin16 = np.empty(n_blocks, dtype=np.float16)
    subblock_scale = np.empty((n_blocks, SUBBLOCKS), dtype=np.uint8)
    subblock_min = np.empty((n_blocks, SUBBLOCKS), dtype=np.uint8)
    codes = np.empty((n_blocks, SUBBLOCKS * SUBBLOCK_WEIGHTS), dtype=np.uint8)
    search = None
    for start in range(0, n_blocks, _CHUNK_BLOCKS):
        blocks = slice(start, start + _CHUNK_BLOCKS)
        chunk = x[blocks].reshape(-1, SUBBLOCK_WEIGHTS)
        if search is None or search.columns != chunk.shape[0]:
            search = _Search(chunk.shape[0])
        with np.errstate():  # scopes the buffer size to this chunk (see _Search)
            np.setbufsize(search.buffer_size)
            d16[blocks], dmin16[blocks], subblock_scale[blocks], subblock_min[blocks] = _quantize_blocks(
                chunk, search, codes[blocks].reshape(-1, SUBBLOCK_WEIGHTS)
            )

    raw = _assemble(
        d16.reshape(*lead, n_blocks_per_row),
        dmin16.reshape(*lead, n_blocks_per_row),
        subblock_scale.reshape(*lead, n_blocks_per_row, SUBBLOCKS),
        subblock_min.reshape(*lead, n_blocks_per_row, SUBBLOCKS),
        codes.reshape(*lead, n_blocks_per_row, BLOCK_WEIGHTS),
    )
    return Q4KTensor(raw)


def _quantize_blocks(rows: np.ndarray, search: _Search, codes_out: np.ndarray) -> tuple[np.ndarray, ...]:
    """(d16, dmin16, scales, mins) for the subblocks rows float32 [8b, 32] of b super-blocks;
    their codes go into codes_out uint8 [8b, 32]."""
    subblock_step, subblock_floor = search.fit(rows)
    subblock_step = subblock_step.reshape(-1, SUBBLOCKS)
    subblock_depth = -subblock_floor.reshape(-1, SUBBLOCKS)  # how far below zero: >= 0

    # Six-bit fields relative to the largest subblock value in the super-block.
    max_step = np.maximum(subblock_step.max(axis=1), _F32(0))
    max_depth = np.maximum(subblock_depth.max(axis=1), _F32(0))
    with np.errstate(over="ignore"):  # an overflow to inf is caught just below, with a clearer message
        d16 = (max_step / _F32(FIELD_MAX)).astype(np.float16)
        dmin16 = (max_depth / _F32(FIELD_MAX)).astype(np.float16)
    # Checked before the six-bit fields are worked out: an infinite step would make them NaN.
    if not (np.all(np.isfinite(d16)) and np.all(np.isfinite(dmin16))):
        raise NonFiniteError("w spans too wide a range: Q4_K's float16 d or dmin would overflow (max 65504)")
    subblock_scale = _six_bit_fields(subblock_step, max_step)
    subblock_min = _six_bit_fields(subblock_depth, max_depth)

    # Codes against the stored (rounded) gains and offsets, so decode sees what we aimed at,
    # worked out on the search's position-major copy of the weights.
    gain = (d16.astype(np.float32)[:, None] * subblock_scale.astype(np.float32)).reshape(-1)
    offset = (dmin16.astype(np.float32)[:, None] * subblock_min.astype(np.float32)).reshape(-1)
    has_gain = gain > 0
    safe_gain = np.where(has_gain, gain, _F32(1))
    codes = np.add(search.x, offset, out=search.scratch)
    codes /= safe_gain
    np.rint(codes, out=codes)
    np.clip(codes, 0, CODE_MAX, out=codes)
    # Where the gain is zero the codes cannot change the weights; like the reference, keep the
    # codes the search picked there (a subblock far smaller than its super-block's largest:
    # rare, so the search is run again for just those subblocks, this time keeping its codes).
    if not has_gain.all():
        redo = np.flatnonzero(~has_gain)
        codes[:, redo] = _Search(redo.size).fit(rows[redo], keep_codes=True)[2]
    # Back to one row per subblock: transposing float32 and then casting is a third quicker than
    # one strided cast into uint8.
    by_row = search.spare.reshape(codes_out.shape)
    np.copyto(by_row, codes.T)
    np.copyto(codes_out, by_row, casting="unsafe")
    return d16, dmin16, subblock_scale, subblock_min


def _six_bit_fields(values: np.ndarray, largest: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):  # handled just below
        inverse = np.where(largest > 0, _F32(FIELD_MAX) / np.where(largest > 0, largest, _F32(1)), _F32(0))
        fields = inverse[:, None] * values
    # Below about 1.9e-37, 63 / largest overflows float32 (the C reference then rounds inf and
    # NaN, which is undefined). Such a super-block's fp16 d or dmin is 0 whatever the fields say,
    # so take the ratio the other way round there: same fields, no overflow.
    overflowed = ~np.isfinite(inverse)
    if overflowed.any():
        fields[overflowed] = values[overflowed] / largest[overflowed, None] * _F32(FIELD_MAX)
    # The C reference stores the rounded value straight into a uint8, so a negative one would
    # wrap around; clamping at 0 is the sane reading. (A winning step below zero needs a
    # subblock whose best line slopes the wrong way; it does not arise from real weights.)
    return np.clip(np.rint(fields), 0, FIELD_MAX).astype(np.uint8)


class _Search:
    """llama.cpp's make_qkx2_quants for `columns` subblocks at a time, with buffers kept between chunks.

    The rows are transposed to position-major order (32, n): numpy then reduces over axis 0 one
    position after another, the same left-to-right float32 order as the C loops. That matters
    where two candidates are nearly tied (a constant subblock, for example, has a determinant
    that is zero up to rounding), and it makes the result byte-identical to the C reference
    built without fused multiply-add.

    Where the time goes: per candidate grid the search makes 15 passes over the 32n weights (3
    for the codes, plus a clip for candidates 15..20; 3 products and 3 sums for the fit; 5 and a
    sum for its error), each limited by cache bandwidth at about 0.07-0.1 ns a weight, plus some
    20 calls on n-long rows, limited by numpy's per-call overhead. So every full-size intermediate
    is written in place (out=) into one of six preallocated arrays, and the per-subblock
    arithmetic works on stacked rows (three products and one subtraction give the determinant and
    both numerators). 22 grids x 15 passes over 4096 x 4096 weights are 5.5e9 weight-passes,
    0.36-0.55 s at those rates, so the search alone cannot get much under half a second this way.

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

    def __init__(self, columns: int):
        self.columns = columns
        shape = (SUBBLOCK_WEIGHTS, columns)
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
        # buffer size, a copy that made each (n,)-by-(32, n) operation take 1.6x as long as one
        # on two full arrays; a buffer no longer than a row leaves the rows unbuffered.
        self.buffer_size = max(16, columns // 16 * 16)

    def fit(self, rows: np.ndarray, keep_codes: bool = False):
        """Best (step, floor) per 32-weight row of rows [n, 32], x ~ step * q + floor, q in 0..15,
        floor <= 0; with keep_codes also the winning codes (32, n), float32.

        Errors are weighted by importance av + |x|, where av is the row's root mean square, so
        large weights count for more without the small ones being ignored.

        The winner's codes are not kept unless asked for: the final codes are worked out against
        the stored six-bit gains, and the search's own codes are needed only where that gain is
        zero. Keeping them costs a masked copy of the candidate's inverse step and anchor; the
        codes are then rebuilt once at the end, by the same arithmetic, so they are the same codes.
        """
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            np.setbufsize(self.buffer_size)  # for this errstate block only
            return self._fit(rows, keep_codes)

    def _fit(self, rows, keep_codes):
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
        # subblock's plain grid step (top - floor) / 15 is then far beyond what float16 d and dmin
        # hold, and no candidate with an overflowed error beats it, so quantize reports the block
        # as a NonFiniteError; the infinities here never reach a stored byte.
        rms = np.add.reduce(np.multiply(x, x, out=scratch), axis=0)
        rms /= _F32(SUBBLOCK_WEIGHTS)
        np.sqrt(rms, out=rms)
        np.abs(x, out=importance)
        importance += rms
        sum_w = np.add.reduce(importance, axis=0)
        sum_x = np.add.reduce(np.multiply(importance, x, out=scratch), axis=0)

        # Starting point: the plain min/max grid.
        np.subtract(top, floor, out=span)
        np.divide(_F32(CODE_MAX), span, out=inverse_step)
        np.divide(_F32(1), inverse_step, out=best_step)
        np.copyto(best_floor, floor)
        if keep_codes:
            best_inverse_step, best_anchor = inverse_step.copy(), floor.copy()
        self._grid_codes(inverse_step, floor)
        self._weighted_error(best_step, best_floor, best_error)

        for stretch in _STRETCHES:
            # Stretch the grid from 14/(max-min) to 16/(max-min): 21 candidate code assignments.
            # The reference anchors each new grid at the best floor found so far, not at the
            # original minimum, so the candidates depend on the earlier winners.
            np.subtract(top, best_floor, out=span)
            np.divide(stretch, span, out=inverse_step)
            self._grid_codes(inverse_step, best_floor, stretch < _UNCLIPPED_STRETCH)
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

        # A constant subblock has no step; its value (if negative) is carried entirely by the floor.
        result_step = np.where(flat, _F32(0), best_step)
        result_floor = np.where(flat, floor, best_floor)
        if not keep_codes:
            return result_step, result_floor
        best_codes = self._grid_codes(best_inverse_step, best_anchor)
        best_codes[:, flat] = 0
        return result_step, result_floor, best_codes

    def _grid_codes(self, inverse_step: np.ndarray, floor: np.ndarray, below_top: bool = False) -> np.ndarray:
        """Codes rint(inverse_step * (x - floor)) clamped to 0..15, as float32 in self.codes.

        below_top: the caller knows inverse_step * (top - floor) rounds to at most 15 wherever
        the inverse step is positive and finite (see _UNCLIPPED_STRETCH), so, unless some grid
        is degenerate, only the clamp at 0 can bite.
        """
        out = self.codes
        np.multiply(np.subtract(self.x, floor, out=self.scratch), inverse_step, out=out)
        np.rint(out, out=out)
        # NaN needs a finite, nonzero inverse step to be ruled out (0 * inf, inf * 0); where a
        # subblock's grid is degenerate (a constant subblock's is, every candidate), its NaN codes
        # become 0. Checking the n steps first spares the isnan pass over all 32n codes when, as
        # usual, no grid is degenerate.
        if not (inverse_step.min() > 0 and inverse_step.max() < np.inf):
            degenerate = ~(np.isfinite(inverse_step) & (inverse_step > 0))
            columns = out[:, degenerate]
            columns[np.isnan(columns)] = 0
            out[:, degenerate] = columns
            below_top = False
        if not below_top:
            return np.clip(out, 0, CODE_MAX, out=out)
        # With a positive step, x -> rint(inverse_step * (x - floor)) is monotone, so a subblock's
        # lowest code is its smallest weight's, worked out here by the same two float32 operations.
        # Only subblocks where that one is below -0.5 (rounds below 0) need clamping: under 1% of
        # them, against a clip pass over all 32n codes. Every other code is already in -0..15,
        # which the clip would leave as it is, -0 included.
        lowest = np.multiply(np.subtract(self.x_min, floor, out=self._lowest), inverse_step, out=self._lowest)
        if lowest.min() < -0.5:
            reaching = np.flatnonzero(lowest < -0.5)
            out[:, reaching] = np.clip(out[:, reaching], 0, CODE_MAX)
        return out

    def _weighted_error(self, step: np.ndarray, floor: np.ndarray, out: np.ndarray) -> np.ndarray:
        """Sum over the 32 positions of importance * (step*q + floor - x)^2, left to right."""
        residual = np.multiply(self.codes, step, out=self.scratch)
        residual += floor
        residual -= self.x
        residual *= residual
        residual *= self.importance
        return np.add.reduce(residual, axis=0, out=out)
