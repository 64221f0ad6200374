"""A widget in a live marimo notebook: a click in the browser reaches the kernel, and the kernel's
own cells (computed by the Python `lab`) react. Runs `marimo run` on 127.0.0.1 with Chromium."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from chromium import browser_page

pytestmark = pytest.mark.browser

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


@pytest.fixture
def live_notebook():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "marimo",
            "run",
            str(NOTEBOOKS / "01_one_nibble.py"),
            "--headless",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--no-token",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with socket.socket() as client:
                if client.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.2)
        else:
            pytest.fail("marimo run did not start within 60 s")
        yield f"http://127.0.0.1:{port}/"
    finally:
        server.terminate()
        server.wait(timeout=20)


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
