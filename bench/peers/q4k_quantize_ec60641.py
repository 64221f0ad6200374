"""The Q4_K quantizer as it was at commit ec60641, before issue 13's speed work: the bench's peer.

Issue 13 asks for Q4_K quantize at least 3x faster than "the previous commit's figure, in the same
run". A recorded figure cannot be timed in the same run, so the code that produced it is kept here
unchanged (the llama.cpp reference search, vectorised over 8192 subblocks per pass) and the bench
times it next to today's quantizer in one process. tests/apps/test_speed_bench.py checks that it
still writes the same bytes as the lab's quantizer, so the two rows time the same answer.
"""

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
#: subblocks fitted per pass; keeps the temporaries a few MiB so they stay in cache
_FIT_CHUNK = 1 << 13


def quantize(w) -> Q4KTensor:
    """Q4_K bytes for weights [..., 256k], with the quality of llama.cpp's quantize_row_q4_K_ref.

    All arithmetic is float32 in the C reference's order, so the bytes match a build of the
    reference that does not fuse multiplies into adds (FMA contraction can move a near-tie).
    """
    values, _ = to_float32_input(w, what="w")
    require_last_multiple(values, BLOCK_WEIGHTS, what="w (256 weights per Q4_K block)")
    lead = values.shape[:-1]
    n_blocks_per_row = values.shape[-1] // BLOCK_WEIGHTS
    x = np.ascontiguousarray(values).reshape(-1, SUBBLOCKS, SUBBLOCK_WEIGHTS)

    flat_x = x.reshape(-1, SUBBLOCK_WEIGHTS)
    subblock_step = np.empty(flat_x.shape[0], dtype=np.float32)
    subblock_floor = np.empty(flat_x.shape[0], dtype=np.float32)
    search_codes = np.empty(flat_x.shape, dtype=np.uint8)
    for start in range(0, flat_x.shape[0], _FIT_CHUNK):
        stop = start + _FIT_CHUNK
        subblock_step[start:stop], subblock_floor[start:stop], search_codes[start:stop] = _fit_subblocks(
            flat_x[start:stop]
        )
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

    # Codes against the stored (rounded) gains and offsets, so decode sees what we aimed at.
    gain = d16.astype(np.float32)[:, None] * subblock_scale.astype(np.float32)
    offset = dmin16.astype(np.float32)[:, None] * subblock_min.astype(np.float32)
    has_gain = gain > 0
    safe_gain = np.where(has_gain, gain, _F32(1))
    codes = np.rint((x + offset[..., None]) / safe_gain[..., None])
    np.clip(codes, 0, CODE_MAX, out=codes)
    # Where the gain is zero the codes cannot change the weights; like the reference, keep the
    # codes the search picked there.
    codes = np.where(has_gain[..., None], codes, search_codes.reshape(x.shape)).astype(np.uint8)

    raw = _assemble(
        d16.reshape(*lead, n_blocks_per_row),
        dmin16.reshape(*lead, n_blocks_per_row),
        subblock_scale.reshape(*lead, n_blocks_per_row, SUBBLOCKS),
        subblock_min.reshape(*lead, n_blocks_per_row, SUBBLOCKS),
        codes.reshape(*lead, n_blocks_per_row, BLOCK_WEIGHTS),
    )
    return Q4KTensor(raw)


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


def _fit_subblocks(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Best (step, floor, codes) per 32-weight row of x, x ~ step * q + floor, q in 0..15, floor <= 0.

    Errors are weighted by importance av + |x|, where av is the row's root mean square, so large
    weights count for more without the small ones being ignored.

    The rows are transposed to position-major order (32, n): numpy then reduces over axis 0 one
    position after another, the same left-to-right float32 order as the C loops. That matters
    where two candidates are nearly tied (a constant subblock, for example, has a determinant
    that is zero up to rounding), and it makes the result byte-identical to the C reference
    built without fused multiply-add.
    """
    by_position = np.ascontiguousarray(x.T)  # (32, n)
    # The grid always includes zero: a subblock of positive weights still starts at 0.
    floor = np.minimum(by_position.min(axis=0), _F32(0))
    top = by_position.max(axis=0)
    flat = top == floor

    # Weights beyond about 3e18 overflow float32 in the squares and products below. Such a
    # subblock's plain grid step (top - floor) / 15 is then far beyond what float16 d and dmin
    # hold, and no candidate with an overflowed error beats it, so quantize reports the block
    # as a NonFiniteError; the infinities here never reach a stored byte.
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        rms = np.sqrt(np.sum(by_position * by_position, axis=0) / _F32(SUBBLOCK_WEIGHTS))
        importance = rms + np.abs(by_position)
        sum_w = importance.sum(axis=0)
        sum_x = (importance * by_position).sum(axis=0)

        # Starting point: the plain min/max grid.
        inverse_step = _F32(CODE_MAX) / (top - floor)
        best_step = _F32(1) / inverse_step
        best_floor = floor.copy()
        best_codes = _grid_codes(inverse_step, by_position - floor)
        best_error = _weighted_error(best_step, best_floor, best_codes, by_position, importance)

        for step_number in range(SEARCH_STEPS):
            # Stretch the grid from 14/(max-min) to 16/(max-min): 21 candidate code assignments.
            # The reference anchors each new grid at the best floor found so far, not at the
            # original minimum, so the candidates depend on the earlier winners.
            stretch = _F32(SEARCH_START) + _F32(SEARCH_STEP) * _F32(step_number) + _F32(CODE_MAX)
            codes = _grid_codes(stretch / (top - best_floor), by_position - best_floor)
            weighted_codes = importance * codes
            sum_l = weighted_codes.sum(axis=0)
            sum_l2 = (weighted_codes * codes).sum(axis=0)
            sum_xl = (weighted_codes * by_position).sum(axis=0)
            # For fixed codes, the weighted least-squares line x ~ step*q + floor in closed form.
            determinant = sum_w * sum_l2 - sum_l * sum_l
            step = (sum_w * sum_xl - sum_x * sum_l) / determinant
            line_floor = (sum_l2 * sum_x - sum_l * sum_xl) / determinant
            # A positive floor is not allowed (the offset is subtracted as dmin*m, m >= 0):
            # refit through the origin instead.
            positive = line_floor > 0
            step = np.where(positive, sum_xl / sum_l2, step)
            line_floor = np.where(positive, _F32(0), line_floor)
            error = _weighted_error(step, line_floor, codes, by_position, importance)
            better = (determinant > 0) & (error < best_error)
            best_error = np.where(better, error, best_error)
            best_step = np.where(better, step, best_step)
            best_floor = np.where(better, line_floor, best_floor)
            # The codes only survive where the final gain is zero (see quantize), but the
            # reference stores them there, so keep them for byte-identical output.
            np.copyto(best_codes, codes, where=better)

    # A constant subblock has no step; its value (if negative) is carried entirely by the floor.
    best_step = np.where(flat, _F32(0), best_step)
    best_floor = np.where(flat, floor, best_floor)
    best_codes[:, flat] = 0
    return best_step.astype(np.float32), best_floor.astype(np.float32), best_codes.T.astype(np.uint8)


def _grid_codes(inverse_step: np.ndarray, shifted: np.ndarray) -> np.ndarray:
    """Codes rint(inverse_step * shifted) clamped to 0..15, as float32 (position-major arrays)."""
    codes = inverse_step * shifted
    np.rint(codes, out=codes)
    # NaN (a degenerate grid) compares false everywhere and so contributes nothing; make it 0.
    codes[np.isnan(codes)] = 0
    return np.clip(codes, 0, CODE_MAX, out=codes)


def _weighted_error(step, floor, codes, x, importance) -> np.ndarray:
    """Sum over the 32 positions of importance * (step*q + floor - x)^2, left to right."""
    residual = step * codes
    residual += floor
    residual -= x
    residual *= residual
    residual *= importance
    return residual.sum(axis=0)
