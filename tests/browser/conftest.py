"""The course's static site, built once for every browser test that reads it: a full build takes
about a minute on two cores, and three files used to make their own."""

from __future__ import annotations

import pytest

from bench.harness.static_server import static_server
from widgets.build import site as sitebuild


@pytest.fixture(scope="session")
def site(tmp_path_factory):
    """The folder of a full `labctl.py site` build: every course page, the index and the explainers."""
    directory = tmp_path_factory.mktemp("site")
    sitebuild.build(directory)
    return directory


@pytest.fixture(scope="session")
def server(site):
    """The built site over HTTP on loopback, as `labctl.py serve` would give it."""
    with static_server(site) as url:
        yield url
