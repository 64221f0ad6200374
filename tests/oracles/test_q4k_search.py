"""Q4_K's quantizer against ggml's C reference, on the inputs where the search's shortcuts matter.

The search (lab/formats/_qkx2.py, as lab/formats/q4k/quantize.py runs it) keeps its buffers
between chunks, clamps codes at 0 only in the subblocks that need it, and runs the search a
second time, keeping the winning codes, only for subblocks whose six-bit scale rounds to 0. The inputs below reach each of those
paths (spies check that they were taken, so a test cannot pass by missing the code it is meant
to check), and the bytes are compared with what ggml's own quantize_row_q4_K_ref wrote for the
same inputs: the build, commit and flags of test_formats_cref.py, fed each input's super-blocks
as one float32 row, its output's SHA-256 pinned here.

Super-blocks holding float32 subnormals are left out of the comparison: there C's nearest_int
meets iscale * (x - min) beyond 2^22 and is undefined (the -O0 build stops on its assertion).
For those the lab's decoded weights are checked to be finite and within the block's range.
"""

from __future__ import annotations

import hashlib
import importlib

import numpy as np
import pytest
from test_quantizer_bytes import varied_weights

from lab.formats import q4k
from lab.formats._qkx2 import Qkx2Search
from lab.formats.q4k.layout import BLOCK_WEIGHTS, SUBBLOCK_WEIGHTS, SUBBLOCKS

search = importlib.import_module("lab.formats.q4k.quantize")


def quantized(w: np.ndarray) -> np.ndarray:
    return np.asarray(q4k.quantize(w).raw)


def defined_blocks(w: np.ndarray) -> np.ndarray:
    """Which super-blocks of w hold no float32 subnormal (C's result is defined there)."""
    magnitude = np.abs(np.asarray(w, np.float32).reshape(-1, BLOCK_WEIGHTS))
    return ~((magnitude > 0) & (magnitude < np.finfo(np.float32).tiny)).any(axis=1)


#: SHA-256 of ggml's quantize_row_q4_K_ref output for each input's defined super-blocks, in order
C_REFERENCE = {
    "gaussian_blocks(1, 549)": "869b4a965f27dd65a880ece1e7cf86fdae4bddba9c2e9225aeab656b1a2fcd8e",
    "varied_weights()": "d28be8db5d2786a6a90626871d45206c23f1e9ed7f3025111d61da6e203b6ad2",
    "mixed_blocks(0, 700)": "095c022a428bbd81d4be8dea2f55cbfb207269b08c3a4357830f58c930ee5576",
    "mixed_blocks(1, 700)": "ff43762adca7658f4346a50440131ff646c1eee093250b702932fc6fabc3482a",
    "mixed_blocks(2, 700)": "36cc4c078f05bd6039c82f46f6bfd0f457a482e78a8f42f468764813a61326f6",
}


def assert_matches_c(w: np.ndarray, name: str) -> np.ndarray:
    """The lab's bytes for w [..., 256k] against the pinned C digest; returns the lab's bytes."""
    ours = quantized(w)
    defined = defined_blocks(w)
    blocks = ours.reshape(-1, 144)
    assert hashlib.sha256(blocks[defined].tobytes()).hexdigest() == C_REFERENCE[name]
    if not defined.all():
        weights = np.asarray(w, np.float32).reshape(-1, BLOCK_WEIGHTS)[~defined]
        decoded = q4k.decode(blocks[~defined].reshape(1, -1)).reshape(weights.shape)
        assert np.isfinite(decoded).all()
        assert (np.abs(decoded - weights).max(axis=1) <= np.abs(weights).max(axis=1) * 2).all()
    return ours


# --------------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------------


def _subblocks(rng: np.random.Generator, kind: str, n: int) -> np.ndarray:
    """n subblocks of 32 float64 weights of one kind."""
    shape = (n, SUBBLOCK_WEIGHTS)
    if kind == "normal":
        return rng.normal(0, 0.02, shape)
    if kind == "constant":
        return np.repeat(rng.normal(0, 1, (n, 1)), SUBBLOCK_WEIGHTS, axis=1)
    if kind == "two levels":  # two values only: many candidates give the same codes (exact ties)
        return rng.choice([-1.0, 0.5], shape) * 10.0 ** rng.uniform(-3, 1, (n, 1))
    if kind == "tiny range":  # a constant plus a few float32 ulps: determinants near zero
        return (1.0 + rng.integers(0, 4, shape) * 2.0**-23) * rng.choice([-1.0, 1.0], (n, 1))
    if kind == "exact":  # dyadic and half-integer values: codes fall on .5 ties
        return rng.integers(-16, 17, shape) / 2.0
    if kind == "positive":  # floor refit through the origin
        return np.abs(rng.normal(0, 1, shape)) + 0.5
    if kind == "negative":
        return -np.abs(rng.normal(0, 1, shape))
    if kind == "zero":
        return np.zeros(shape)
    if kind == "signed zeros":
        return np.where(rng.random(shape) < 0.5, -0.0, 0.0)
    if kind == "sparse":
        return rng.normal(0, 1, shape) * (rng.random(shape) < 0.15)
    if kind == "one outlier":  # the lowest weight far below the rest: the best floor rises above it
        w = rng.normal(0, 0.02, shape)
        w[np.arange(n), rng.integers(0, SUBBLOCK_WEIGHTS, n)] = -0.5
        return w
    if kind == "tiny":
        return rng.normal(0, 1, shape) * 1e-30
    if kind == "subnormal":
        return rng.normal(0, 1, shape) * 1e-40
    raise ValueError(kind)


KINDS = [
    "normal",
    "constant",
    "two levels",
    "tiny range",
    "exact",
    "positive",
    "negative",
    "zero",
    "signed zeros",
    "sparse",
    "one outlier",
    "tiny",
    "subnormal",
]


def mixed_blocks(seed: int, n_blocks: int) -> np.ndarray:
    """float32 [n_blocks, 256]: every subblock of a random kind at a random scale (1e-9 to 1e3), so
    most super-blocks hold subblocks whose six-bit scale or minimum rounds to 0 (subnormal ones rarely)."""
    rng = np.random.default_rng(seed)
    n = n_blocks * SUBBLOCKS
    # subnormal subblocks rarely (C's nearest_int is undefined on what they make), the rest evenly
    odds = np.array([1.0 if kind != "subnormal" else 0.1 for kind in KINDS])
    kinds = rng.choice(len(KINDS), n, p=odds / odds.sum())
    w = np.empty((n, SUBBLOCK_WEIGHTS))
    for k, kind in enumerate(KINDS):
        chosen = kinds == k
        w[chosen] = _subblocks(rng, kind, int(chosen.sum()))
    scale = np.where(
        np.isin(kinds, [KINDS.index("tiny"), KINDS.index("subnormal")]), 1.0, 10.0 ** rng.uniform(-9, 3, n)
    )
    return (w * scale[:, None]).astype(np.float32).reshape(n_blocks, BLOCK_WEIGHTS)


def gaussian_blocks(seed: int, n_blocks: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(0, 0.02, (n_blocks, BLOCK_WEIGHTS)).astype(np.float32)


# --------------------------------------------------------------------------------------------
# Spies on the shortcuts
# --------------------------------------------------------------------------------------------


@pytest.fixture
def taken(monkeypatch):
    """Which of the search's shortcuts and edge paths the quantize calls in a test took."""
    seen = {"clamped a few": 0, "clamped none": 0, "clamped all": 0, "degenerate": 0, "codes kept": 0}
    grid_codes, fit = Qkx2Search._grid_codes, Qkx2Search.fit

    def spy_grid_codes(self, inverse_step, floor, below_top=False):
        if not (np.isfinite(inverse_step) & (inverse_step > 0)).all():
            seen["degenerate"] += 1
        elif not below_top:
            seen["clamped all"] += 1
        elif (inverse_step * (self.x_min - floor)).min() < -0.5:
            seen["clamped a few"] += 1
        else:
            seen["clamped none"] += 1
        return grid_codes(self, inverse_step, floor, below_top)

    def spy_fit(self, rows, keep_codes=False):
        seen["codes kept"] += keep_codes
        return fit(self, rows, keep_codes)

    monkeypatch.setattr(Qkx2Search, "_grid_codes", spy_grid_codes)
    monkeypatch.setattr(Qkx2Search, "fit", spy_fit)
    return seen


# --------------------------------------------------------------------------------------------
# Tests
# --------------------------------------------------------------------------------------------


def test_gaussian_weights_across_chunks(taken):
    """More blocks than one chunk, with a short last chunk; Gaussian subblocks whose best floor
    rises above their lowest weight, so later candidates clamp a few subblocks at 0."""
    assert search._CHUNK_BLOCKS < 549, "the input must span more than one chunk"
    assert_matches_c(gaussian_blocks(1, 549), "gaussian_blocks(1, 549)")
    assert taken["clamped a few"] and taken["clamped none"] and taken["clamped all"]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_mixed_subblocks(taken, seed):
    """Constant, two-level, tiny-range, tied, one-signed, zero, sparse, outlier, tiny and subnormal
    subblocks at scales 1e-9..1e3: degenerate grids, positive floors and zero six-bit scales, whose
    subblocks keep the codes of a second search."""
    assert_matches_c(mixed_blocks(seed, 700), f"mixed_blocks({seed}, 700)")
    assert taken["codes kept"] and taken["degenerate"]


def test_varied_rows_and_shapes():
    """The rows the other quantizers' bytes are pinned on, whole, flat and with a leading axis."""
    w = varied_weights()
    expected = assert_matches_c(w, "varied_weights()")
    assert np.array_equal(quantized(w.reshape(-1)), expected.reshape(-1))
    assert np.array_equal(quantized(w.reshape(2, -1, w.shape[-1])), expected.reshape(2, -1, expected.shape[-1]))


@pytest.mark.parametrize("chunk_blocks", [1, 3, 64])
def test_chunk_size_does_not_matter(monkeypatch, chunk_blocks):
    """Buffers reused from chunk to chunk carry nothing over: any chunk size gives the same bytes."""
    w = np.concatenate([mixed_blocks(5, 96), gaussian_blocks(6, 96)]).reshape(-1, 2 * BLOCK_WEIGHTS)
    expected = quantized(w)
    monkeypatch.setattr(search, "_CHUNK_BLOCKS", chunk_blocks)
    assert np.array_equal(quantized(w), expected)
