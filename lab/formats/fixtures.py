"""Fixtures the teaching apps share: Q4_K blocks, metadata rows, MXFP4 check weights, input rows.

The data matters as much as the check. A fixture where every subblock shares one scale and
one minimum cannot tell subblock 0's metadata from subblock 1's, so a decoder that reads the
wrong subblock still gets every weight right. The default fixtures are therefore asymmetric:
the article's presentation block plus random blocks whose sixteen 6-bit fields all differ;
`symmetric_blocks()` exists to show what the symmetric kind hides. The decoder zoo and the
on-device pane both draw on these; neither reaches into the other for them.
"""

from __future__ import annotations

import numpy as np

from lab.codes import e2m1
from lab.formats import q4k


def _blocks_from_fields(rng, d, dmin, scales, mins) -> np.ndarray:
    """Q4_K blocks with the given fields and random codes whose two nibbles per byte always differ."""
    count = len(d)
    low = rng.integers(0, 16, size=(count, 4, q4k.SUBBLOCK_WEIGHTS))
    high = (low + rng.integers(1, 16, size=low.shape)) % 16  # never equal to the low nibble
    codes = np.stack([low, high], axis=2).reshape(count, q4k.BLOCK_WEIGHTS).astype(np.uint8)
    # one block per row: from_parts wants per-block fields as [rows, blocks per row, ...]
    return q4k.from_parts(d[:, None], dmin[:, None], scales[:, None], mins[:, None], codes).raw


def _random_super_factors(rng, count: int) -> tuple[np.ndarray, np.ndarray]:
    return (
        rng.uniform(1e-3, 0.1, count).astype(np.float16),
        rng.uniform(1e-3, 0.1, count).astype(np.float16),
    )


def asymmetric_blocks(count: int = 8, seed: int = 2024) -> np.ndarray:
    """[1 + count, 144]: the article's presentation block, then random blocks whose sixteen 6-bit
    fields are all different and all 16 or above, so the top bits stored in B[0..7] always
    matter and no gain is zero (a zero gain would hide a code)."""
    rng = np.random.default_rng(seed)
    d, dmin = _random_super_factors(rng, count)
    # sixteen distinct values from 16..63 per block: a random permutation's first sixteen
    fields = (np.argsort(rng.random((count, 48)), axis=-1)[:, :16] + 16).astype(np.uint8)
    random_blocks = _blocks_from_fields(rng, d, dmin, fields[:, :8], fields[:, 8:])
    return np.concatenate([q4k.presentation_fixture()[None, :], random_blocks])


def symmetric_blocks(count: int = 8, seed: int = 2024, scale: int = 21, minimum: int = 37) -> np.ndarray:
    """[count, 144] blocks in which every subblock has the same scale and the same minimum: the
    kind of fixture that cannot see which subblock's metadata a decoder read."""
    rng = np.random.default_rng(seed)
    d, dmin = _random_super_factors(rng, count)
    scales = np.full((count, q4k.SUBBLOCKS), scale, dtype=np.uint8)
    mins = np.full((count, q4k.SUBBLOCKS), minimum, dtype=np.uint8)
    return _blocks_from_fields(rng, d, dmin, scales, mins)


def metadata_fixture(count: int = 512, seed: int = 7) -> np.ndarray:
    """[2 + count, 12] metadata rows: the presentation block's, one with every top bit set, and random ones."""
    rng = np.random.default_rng(seed)
    presentation = q4k.presentation_fixture()[q4k.METADATA_OFFSET : q4k.PAYLOAD_OFFSET]
    top_bits = np.array([0xC0 | j for j in range(8)] + [0x5A, 0xA5, 0x3C, 0xC3], dtype=np.uint8)
    random_rows = rng.integers(0, 256, size=(count, q4k.METADATA_BYTES), dtype=np.uint8)
    return np.concatenate([presentation[None, :], top_bits[None, :], random_rows])


def mlx_check_weights(seed: int = 6) -> np.ndarray:
    """[16, 64] float32 rows for comparing an MXFP4 quantizer with MLX: scales that vary by row,
    and two groups whose largest magnitude is exactly 6 (scale byte 127 under either rule)
    holding every E2M1 midpoint of both signs, so the element tie rule alone decides them."""
    rng = np.random.default_rng(seed)
    w = (rng.normal(0, 1, (16, 64)) * rng.uniform(0.01, 50, (16, 1))).astype(np.float32)
    midpoints = (e2m1.MAGNITUDES[:-1] + e2m1.MAGNITUDES[1:]) / 2
    ties = np.concatenate([[6.0], midpoints, -midpoints, rng.uniform(-5.9, 5.9, 17)]).astype(np.float32)
    w[0, :32] = ties
    w[1, 32:] = -ties
    return w


def varied_input(length: int, seed: int = 11) -> np.ndarray:
    """An input row with both signs and magnitudes from 0.1 to 10, so errors can cancel or add."""
    rng = np.random.default_rng(seed)
    return rng.choice([-1.0, 1.0], length) * 10.0 ** rng.uniform(-1, 1, length)
