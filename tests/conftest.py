"""Shared fixtures: seeded random data with planted ties, and MLX when it is installed. Also the
test tiers: every test in tests/browser/ is marked `browser`, and the files in SLOW and the tests
that ask for the real model `slow`; `labctl.py test --quick` leaves both out."""

from __future__ import annotations

import os
import platform
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

from lab.codes import e2m1

TESTS = Path(__file__).resolve().parent

# The slowest files outside tests/browser/ (pytest --durations, two cores): the course's notebooks
# run headless (two minutes, most of it notebook 10's model study) and the behaviour study embedding
# sentences in every format (some 25 s). A test elsewhere that asks for the real model itself
# (support.require_real_model) is slow too: loading the model and studying it takes up to 30 s.
# The oracles stay in --quick, the model's against sentence-transformers' pinned embeddings too,
# and the chat model's against llama.cpp's tokens and logits; but not the two files that study the
# chat model in several formats before their first assertion: the comparison with llama.cpp's own
# re-quantizations (a 40 s study) and every Linear through MLX (25 s).
# The full run keeps them all; --quick leaves them out.
SLOW = {
    "apps/test_notebooks.py",
    # every page's bits-per-weight figures, read from the notebooks' headless runs (test_notebooks')
    "apps/test_pages_bits_per_weight.py",
    "apps/test_behaviour.py",
    "oracles/test_chat_requant_oracle.py",
    "apps/test_device_chat.py",
    # mlx-lm on the chat model: four formats built, and a model folder written and loaded in a fresh process
    "oracles/test_mlx_lm_oracle.py",
    # notebook 13's checks on mlx-lm's model in one mode, shared with the notebook through the cache
    "oracles/test_guide_checks.py",
    # mlx-lm's quantized KV cache beside the lab's numpy one: both models built, a few tokens each
    "oracles/test_kv_cache.py",
    "apps/test_mlx_folder.py",
    # the GGUF mutation fuzzer runs for its time budget, 40 s
    "apps/test_gguf_fuzz.py",
    # the server's floods run for their length: 30 s of idle connections, 20 s of trickling
    "apps/test_hostile_server.py",
}


#: the helpers (tests/support.py) a test calls when it needs a real model or model file
REAL_MODEL_HELPERS = {"require_real_model", "require_shipped_gguf"}


def _asks_for_the_real_model(item) -> bool:
    function = getattr(item, "function", None)
    return function is not None and not REAL_MODEL_HELPERS.isdisjoint(function.__code__.co_names)


def pytest_configure(config):
    """Cached study results go to a folder of this run's own, never the user's ~/.cache."""
    if "LAB_CACHE_DIR" not in os.environ:
        os.environ["LAB_CACHE_DIR"] = tempfile.mkdtemp(prefix="four-bit-lab-cache-")
    # notebook 12 studies three formats here (the site build and the live tests run it); the bench
    # runs every format
    os.environ.setdefault("LAB_CHAT_FORMATS", "q8_0,q4_0,q4k")
    # notebook 13 runs one MLX mode, the one tests/oracles/test_guide_checks.py checks, not its three
    os.environ.setdefault("LAB_GUIDE_MODES", "affine4_g64")


# first, so that the markers are there when pytest's own hook deselects by -m
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Marks each test by the folder or file it is in, and by whether it asks for the real model:
    a file added to tests/browser/ needs no marker of its own to be left out of --quick."""
    for item in items:
        path = Path(item.path)
        if not path.is_relative_to(TESTS):
            continue
        where = path.relative_to(TESTS).as_posix()
        if where.startswith("browser/"):
            item.add_marker(pytest.mark.browser)
        if where in SLOW or _asks_for_the_real_model(item):
            item.add_marker(pytest.mark.slow)


def require_mlx():
    """mlx.core. Where MLX publishes wheels (Linux, Apple-silicon macOS) the project installs it, so
    its absence is a broken install and fails; elsewhere (Windows, Intel Mac) the test skips."""
    try:
        import mlx.core as mlx_core
    except ImportError as error:
        expected = sys.platform.startswith("linux") or (sys.platform == "darwin" and platform.machine() == "arm64")
        if expected:
            pytest.fail(f"MLX should be installed on this platform but cannot be imported: {error}")
        pytest.skip("MLX publishes no wheel for this platform")
    return mlx_core


def require_mlx_lm():
    """mlx_lm, installed with MLX where MLX publishes wheels: there its absence fails, elsewhere the test skips."""
    require_mlx()
    try:
        import mlx_lm
    except ImportError as error:
        pytest.fail(f"mlx-lm should be installed with MLX but cannot be imported: {error}")
    return mlx_lm


def require_bundler() -> str:
    """Deno's command, which bundles marimo's front-end for the site (publish/marimo_bundle.py).
    Where Deno publishes wheels (Linux x86-64, macOS, Windows x86-64) the project installs it, so
    its absence is a broken install and fails; elsewhere the test skips."""
    try:
        import deno
    except ImportError as error:
        expected = (sys.platform.startswith("linux") and platform.machine() == "x86_64") or sys.platform in (
            "darwin",
            "win32",
        )
        if expected:
            pytest.fail(f"Deno should be installed on this platform but cannot be imported: {error}")
        pytest.skip("Deno publishes no wheel for this platform")
    return deno.find_deno_bin()


@pytest.fixture
def mx():
    return require_mlx()


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


@pytest.fixture(scope="session")
def pages(tmp_path_factory):
    """A folder holding every standalone explainer page (publish/standalone.py), written once
    per run for the browser tests, which only read it."""
    from publish import standalone

    directory = tmp_path_factory.mktemp("standalone")
    standalone.write_all(directory)
    return directory


@pytest.fixture(scope="session")
def site(tmp_path_factory):
    """The folder of a full `labctl.py site` build (every course page, the index and the
    explainers), built once for every browser test that reads it: a build takes about a minute on
    two cores, and three test files used to make their own."""
    from publish import site as sitebuild

    directory = tmp_path_factory.mktemp("site")
    sitebuild.build(directory)
    return directory


@pytest.fixture(scope="session")
def server(site):
    """The built site over HTTP on loopback, as the static server of the bench sees it."""
    from bench.harness.static_server import static_server

    with static_server(site) as url:
        yield url
