"""Helpers the test folders share (this folder is on sys.path through conftest.py)."""

from __future__ import annotations

import os

import pytest

from lab.study import real_weights


def require_real_model() -> None:
    """Skip where the real-model packages are missing; in CI that is a failure, not a skip."""
    if real_weights.real_model_available():
        return
    message = f"the real-model packages are not installed ({real_weights.INSTALL_HINT})"
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(message)
    pytest.skip(message)
