"""Quantizing to Q4_K: llama.cpp's reference search, vectorised over every subblock at once."""

from __future__ import annotations

import numpy as np

from lab._arrays import (
    require_last_multiple,
    to_float32_input,
)
from lab.errors import NonFiniteError
from lab.formats._imatrix import Q4_K, fit_k_super_blocks, importance_vector, per_weight
from lab.formats._qkx2 import Qkx2Call, Qkx2Search, rms_plus_magnitude
from lab.formats.q4k.layout import _F32, BLOCK_WEIGHTS, CODE_MAX, FIELD_MAX, SUBBLOCK_WEIGHTS, SUBBLOCKS
from lab.formats.q4k.tensor import Q4KTensor, _assemble

# --------------------------------------------------------------------------------------------
# Quantizing (llama.cpp's reference search, vectorised over every subblock at once)
# --------------------------------------------------------------------------------------------

#: candidate grids: iscale = (START + STEP * i + 15) / (max - min), i = 0..20
SEARCH_START = -1.0
SEARCH_STEP = 0.1
SEARCH_STEPS = 21
#: quantize_row_q4_K_ref's make_qkx2_quants(32, 15, x, av + |x|, L, &min, Laux, -1, 0.1, 20, false)
SEARCH = Qkx2Call(
    weights=SUBBLOCK_WEIGHTS,
    code_max=CODE_MAX,
    importance=rms_plus_magnitude,
    rmin=SEARCH_START,
    rdelta=SEARCH_STEP,
    nstep=SEARCH_STEPS - 1,
    use_mad=False,
)
#: super-blocks quantized per pass: the search's six (32, 8 * 512) float32 arrays are 3 MiB,
#: past one core's L2 but well inside L3. Each candidate grid is some 35 numpy calls, and on the
#: shared bench machine smaller chunks that fit L2 lost more to per-call overhead than they won in
#: cache hits: 4096 x 4096 weights took 0.62 s at 512 blocks, 0.65 at 384 and 768, 0.67 at 256,
#: 0.75 at 192 and 0.87 at 128 (CPU s, best of 4, load ~9).
_CHUNK_BLOCKS = 512


def quantize(w, importance=None) -> Q4KTensor:
    """Q4_K bytes for weights [..., 256k], as ggml's quantize_q4_K writes them.

    Without `importance`, quantize_row_q4_K_ref's search. With it (float32 [256k], one value per
    column, an imatrix's mean of x^2, as llama-quantize --imatrix passes it), the search of
    quantize_row_q4_K_impl, which weighs each weight's error by it (lab.formats._imatrix).
    All arithmetic is float32 in the C reference's order, so the bytes match a build of the
    reference that does not fuse multiplies into adds (FMA contraction can move a near-tie).
    """
    # Only read below, so a float32 input is not copied.
    values, _ = to_float32_input(w, what="w", copy=False)
    require_last_multiple(values, BLOCK_WEIGHTS, what="w (256 weights per Q4_K block)")
    lead = values.shape[:-1]
    n_blocks_per_row = values.shape[-1] // BLOCK_WEIGHTS
    x = np.ascontiguousarray(values).reshape(-1, BLOCK_WEIGHTS)
    if importance is not None:
        column_importance = importance_vector(importance, values.shape[-1], "Q4_K")
        weighed = per_weight(column_importance, values.shape).reshape(-1, BLOCK_WEIGHTS)
        parts = fit_k_super_blocks(x, weighed, Q4_K)
    else:
        parts = _reference_parts(x)
    d16, dmin16, subblock_scale, subblock_min, codes = parts
    raw = _assemble(
        d16.reshape(*lead, n_blocks_per_row),
        dmin16.reshape(*lead, n_blocks_per_row),
        subblock_scale.reshape(*lead, n_blocks_per_row, SUBBLOCKS),
        subblock_min.reshape(*lead, n_blocks_per_row, SUBBLOCKS),
        codes.reshape(*lead, n_blocks_per_row, BLOCK_WEIGHTS),
    )
    return Q4KTensor(raw)


def _reference_parts(x: np.ndarray) -> tuple[np.ndarray, ...]:
    """quantize_row_q4_K_ref for super-blocks x float32 [b, 256]: (d16, dmin16, scales, mins, codes)."""
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
            search = Qkx2Search(SEARCH, chunk.shape[0])
        with np.errstate():  # scopes the buffer size to this chunk (see Qkx2Search)
            np.setbufsize(search.buffer_size)
            d16[blocks], dmin16[blocks], subblock_scale[blocks], subblock_min[blocks] = _quantize_blocks(
                chunk, search, codes[blocks].reshape(-1, SUBBLOCK_WEIGHTS)
            )
    return d16, dmin16, subblock_scale, subblock_min, codes


def _quantize_blocks(rows: np.ndarray, search: Qkx2Search, codes_out: np.ndarray) -> tuple[np.ndarray, ...]:
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
        codes[:, redo] = Qkx2Search(SEARCH, redo.size).fit(rows[redo], keep_codes=True)[2]
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
