"""A widget in a live marimo notebook: a click in the browser reaches the kernel, and the kernel's
own cells (computed by the Python `lab`) react. Runs `marimo run` on 127.0.0.1 with Chromium."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from chromium import browser_page

from labctl import marimo_server

pytestmark = pytest.mark.browser

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


@pytest.fixture
def live_notebook():
    # started as `labctl.py open` starts it: app view, the token through a private file
    with marimo_server(Path(sys.executable), "run", NOTEBOOKS / "01_one_nibble.py", quiet=True, start_s=60) as server:
        yield server.url()


def test_a_click_in_the_widget_reaches_the_kernel(live_notebook):
    with browser_page() as (page, log):
        page.goto(live_notebook)
        page.get_by_role("heading", name="Doing 0101 by hand").wait_for(timeout=60000)
        page.get_by_role("button", name="pick code 0111").click()
        assert page.get_by_test_id("e2m1-value").inner_text() == "6"
        # This markdown is written by a Python cell from decoder.widget.code: the kernel saw the click.
        page.get_by_role("heading", name="Doing 0111 by hand").wait_for(timeout=30000)
        assert page.get_by_text("(+1) \u00d7 2^(3 \u2212 1) \u00d7 (1 + 1/2) = 6").count() >= 1
        assert log.blocked == []
