"""Helpers the test folders share (this folder is on sys.path through conftest.py)."""

from __future__ import annotations

import os

import pytest

from lab.study import real_weights, shipped_gguf


def _missing(message: str) -> None:
    """Skip; in CI, where every package is installed, a missing one is a failure, not a skip."""
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(message)
    pytest.skip(message)


def require_real_model() -> None:
    """Skip where the real-model packages are missing; in CI that is a failure, not a skip."""
    if not real_weights.real_model_available():
        _missing(f"the real-model packages are not installed ({real_weights.INSTALL_HINT})")


def require_shipped_gguf():
    """The path of the real GGUF file (Gemma 3 270M, Q4_K_M); skip where its package is missing,
    fail in CI."""
    try:
        return shipped_gguf.model_file()
    except shipped_gguf.RealFileUnavailableError as error:
        _missing(str(error))


#: what each notebook run headless with its own cells (no stand-ins) showed: every cell output's
#: HTML, by file name. tests/apps/test_notebooks.py fills it as it runs them, and the bits-per-weight
#: reading of every page (test_pages_bits_per_weight.py, collected after it) reads it back rather
#: than running every notebook a second time.
RENDERED: dict[str, list[str]] = {}


def rendered_texts(outputs) -> list[str]:
    """The HTML of each cell output that has some."""
    return [output.text for output in outputs if isinstance(getattr(output, "text", None), str)]
