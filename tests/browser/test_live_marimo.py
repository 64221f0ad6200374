"""A widget in a live marimo notebook: a click in the browser reaches the kernel, and the kernel's
own cells (computed by the Python `lab`) react. Runs `marimo run` on 127.0.0.1 with Chromium."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from chromium import browser_page
from playwright.sync_api import expect
from support import require_shipped_gguf

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


def test_a_seed_that_is_not_a_whole_number_is_refused_beside_it():
    """Notebook 3's seed field, live: 3.7 or an empty field is refused in the lab's words beside it
    (it used to raise inside the cell, and the block's whole section vanished), and the last valid
    seed's block stays, dimmed under a note; a seed it offers brings the block back."""
    notebook = NOTEBOOKS / "03_mxfp4.py"
    with (
        marimo_server(Path(sys.executable), "run", notebook, quiet=True, start_s=60) as server,
        browser_page() as (page, log),
    ):
        page.goto(server.url())
        amax = page.get_by_text("amax =").locator("visible=true")
        amax.first.wait_for(timeout=60000)
        field = page.get_by_role("textbox", name="random seed")
        wanted = "random seed: type a whole number from 3 to 7"
        for entry, refusal in [("3.7", f"{wanted}, not 3.7."), ("", f"{wanted}; the field is empty.")]:
            field.fill(entry)
            field.press("Enter")
            page.get_by_text(refusal).wait_for(timeout=30000)
            expect(amax).to_have_count(1, timeout=30000)
            kept = page.locator("[data-lab-kept-note]").locator("visible=true").first
            expect(kept).to_contain_text("Showing the last valid input")
        field.fill("4")
        field.press("Enter")
        amax.first.wait_for(timeout=30000)
        expect(page.locator("[data-lab-kept-note]")).to_have_count(0)
        expect(page.get_by_text("type a whole number").locator("visible=true")).to_have_count(0, timeout=30000)
        # the spread's slider shows keyboard focus with a ring (lab.css), not only a paler thumb; the
        # key also moves its value, and the block shown with it
        slider = page.get_by_role("slider", name="log₂ of the block's spread")
        slider.focus()
        page.keyboard.press("ArrowRight")
        expect(slider).to_have_css("outline-style", "solid")
        expect(slider).to_have_css("outline-width", "3px")
        expect(slider).to_have_attribute("aria-valuetext", "2")
        assert log.blocked == [] and log.console_errors == []


@pytest.fixture(scope="module")
def notebook_six():
    # one server for the tests of notebook 6: in the app view each page gets a kernel of its own
    notebook = NOTEBOOKS / "06_files_and_recipes.py"
    with marimo_server(Path(sys.executable), "run", notebook, quiet=True, start_s=90) as server:
        yield server.url()


def test_a_long_typed_path_is_refused_inside_a_phones_width(notebook_six):
    """Notebook 6's path box: 5,000 characters get a FileReadError that names the path cut short
    (it used to raise OSError into the cell), and the refusal wraps inside a 390 px page."""
    with browser_page() as (page, log):
        page.set_viewport_size({"width": 390, "height": 900})
        page.goto(notebook_six)
        page.get_by_text("Open a file").first.wait_for(timeout=60000)
        field = page.get_by_role("textbox", name="or type the path of a GGUF file on this machine")
        field.fill("x" * 5000)
        field.press("Enter")
        refusal = page.get_by_text("FileReadError: cannot open").first
        refusal.wait_for(timeout=30000)
        assert "File name too long" in refusal.inner_text() and len(refusal.inner_text()) < 300
        # the text itself, not its box: an unbroken run of x overflows a box that keeps its width
        text_right = refusal.evaluate(
            "(node) => { const text = document.createRange(); text.selectNodeContents(node); return text.getBoundingClientRect().right; }"
        )
        assert text_right <= 390
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        assert log.blocked == [] and log.console_errors == []


def test_a_new_pick_in_notebook_six_sets_the_explorer_it_already_has(notebook_six):
    """Notebook 6 keeps one explorer of each kind, and a pick sets its inputs (a new widget for each
    pick raced marimo, which drops a widget's script when its cell re-runs, even while the browser
    still loads it). Block 5 of the real file then shows its own bytes, read here with gguf-py."""
    from gguf import GGUFReader

    path = require_shipped_gguf()
    tensor = next(t for t in GGUFReader(path).tensors if t.name == "blk.0.attn_output.weight")
    block = tensor.data.reshape(-1)[5 * 144 : 6 * 144]  # Q4_K: 144 bytes a block
    with browser_page() as (page, log):
        page.set_viewport_size({"width": 1280, "height": 900})
        page.goto(notebook_six)
        expect(page.get_by_role("textbox", name="payload byte 0", exact=True)).to_have_count(1, timeout=90000)
        # marimo puts its label's HTML into aria-label, so the name is matched, not equalled
        field = page.get_by_role("textbox", name=re.compile(r"block \(0 to"))
        field.fill("5")
        field.press("Enter")
        expect(page.get_by_text("Q4_K block 5 of")).to_have_count(1, timeout=30000)
        expect(page.get_by_role("textbox", name="payload byte 0", exact=True)).to_have_value(
            f"0x{block[16]:02X}", timeout=30000
        )
        d_bits = int(block[0]) | int(block[1]) << 8
        expect(page.get_by_text(f"d = 0x{d_bits:04X}")).to_have_count(1, timeout=30000)
        assert log.blocked == [] and log.console_errors == []
