"""What the browser tests share: the standalone explainer pages, written once per run."""

from __future__ import annotations

import pytest

from widgets.build import standalone


@pytest.fixture(scope="session")
def pages(tmp_path_factory):
    """A folder holding every standalone page (widgets/build/standalone.py); the tests only read it."""
    directory = tmp_path_factory.mktemp("standalone")
    standalone.write_all(directory)
    return directory
