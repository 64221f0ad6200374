"""Shared fixtures: seeded random data with planted ties, and MLX when it is installed."""

from __future__ import annotations

import numpy as np
import pytest

from lab import e2m1


@pytest.fixture
def mx():
    """mlx.core, or a skip where MLX has no wheel (Windows, Intel Mac)."""
    return pytest.importorskip("mlx.core")


def planted_weights(rows: int, cols: int, seed: int, group_size: int = 32) -> np.ndarray:
    """Gaussian rows whose scales differ row by row, with exact E2M1 midpoints planted.

    Row 0 holds every midpoint (both signs) of the E2M1 ruler at scale 1 next to a 6.0 that pins
    the block's amax, so the element rounding rule alone decides those codes; other rows get
    midpoints of their own block scale; a few rows are tiny, constant, zero or huge.
    """
    rng = np.random.default_rng(seed)
    magnitudes = rng.uniform(0.01, 50, size=(rows, 1))
    w = (rng.normal(0, 1, (rows, cols)) * magnitudes).astype(np.float32)
    midpoints = (e2m1.MAGNITUDES[:-1] + e2m1.MAGNITUDES[1:]) / 2
    ties = np.concatenate([midpoints, -midpoints, [6.0, -0.0, 0.0, -0.1]])
    w[0, : ties.size] = ties
    if rows > 4:
        w[1, :group_size] = 0.0
        w[2, :group_size] = 3.0
        w[3, :group_size] = rng.normal(0, 1e-30, group_size)
        w[4, :group_size] = rng.normal(0, 1e30, group_size)
    return w


@pytest.fixture
def weights_with_ties():
    return planted_weights(24, 256, seed=20261129)
