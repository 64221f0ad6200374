"""A typo keeps the output (issue 37, item 6): while a field holds an entry the lab refuses, what it
drove stays on screen, dimmed under a note naming the last valid input, and the refusal stays
beside the field; the page never shrinks; a valid entry brings the output back to following it.

Notebook 2 with inputs `2, 1, -1, 0.5, 3` used to lose its readouts, Δy chart, ruler and table
(the page shrank from about 4,300 to 3,200 px), notebook 3 with seed 99 its table, both grids and
its MLX report, and notebook 1 its working by hand on a refused code.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from chromium import browser_page, open_standalone
from playwright.sync_api import expect

from labctl import marimo_server

pytestmark = pytest.mark.browser

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"

# The height of what scrolls: marimo's app scrolls inside its own box, a standalone page itself.
PAGE_HEIGHT = "() => Math.max(...[...document.querySelectorAll('*')].map((node) => node.scrollHeight))"


def _note(name_and_text: str, fields: str = "the field is") -> str:
    return f"Showing the last valid input: {name_and_text}. What is shown here follows again once {fields} valid."


# A widget's kept figure: the note before it, and every part of it dimmed (greyed and faded).
KEPT_FIGURE = """(root) => {
  const note = root.querySelector("[data-lab-kept-note]");
  const kept = [...root.querySelectorAll("[data-lab-kept='stale']")];
  return {
    note: note && note.checkVisibility() ? note.textContent : null,
    role: note?.getAttribute("role") ?? null,
    parts: kept.length,
    dimmed: kept.every((node) => getComputedStyle(node).filter === "grayscale(1)" && getComputedStyle(node).opacity === "0.85"),
    // every part that is not hidden of itself (the code explorer's own cue is, until its field refuses)
    visible: kept.length > 0 && kept.filter((node) => !node.hidden).every((node) => node.checkVisibility()),
    noteFirst: kept.length > 0 && note !== null && !!(note.compareDocumentPosition(kept[0]) & Node.DOCUMENT_POSITION_FOLLOWING),
  };
}"""


def _kept(page, root_selector):
    return page.locator(root_selector).first.evaluate(KEPT_FIGURE)


@pytest.fixture
def notebook_server(request):
    with marimo_server(Path(sys.executable), "run", NOTEBOOKS / request.param, quiet=True, start_s=90) as server:
        yield server.url()


@pytest.mark.parametrize("notebook_server", ["02_scale_is_a_ruler.py"], indirect=True)
def test_notebook_two_keeps_its_output_through_a_typo_and_follows_again_once_fixed(notebook_server):
    with browser_page() as (page, log):
        page.set_viewport_size({"width": 1440, "height": 900})
        page.goto(notebook_server)
        page.get_by_role("heading", name="Output error depends on the input").wait_for(timeout=90000)
        widget = page.locator(".lab-scale")
        expect(page.get_by_test_id("delta-y")).to_have_text("\u22120.25", timeout=30000)
        page.wait_for_timeout(1000)  # the charts settle
        before = page.evaluate(PAGE_HEIGHT)
        rows = widget.locator("table.lab-table tbody tr")
        table_before = rows.all_inner_texts()
        assert len(table_before) == 4

        inputs = page.get_by_role("textbox", name="inputs x")
        inputs.fill("2, 1, -1, 0.5, 3")
        inputs.press("Enter")
        # the refusal beside the field, in the lab's words
        refusal = page.locator(f"#{inputs.get_attribute('aria-describedby')}")
        expect(refusal).to_have_text("the weight row has 4 numbers and the input row 5 numbers; they must match")
        assert refusal.get_attribute("role") == "alert" and inputs.get_attribute("aria-invalid") == "true"
        # the readouts, the Δy chart, the ruler and the table all stay, showing the last valid input
        kept = _kept(page, ".lab-scale")
        assert kept["note"] == _note("inputs x = 2, 1, -1, 0.5") and kept["role"] == "status", kept
        assert kept["parts"] == 6 and kept["dimmed"] and kept["visible"] and kept["noteFirst"], kept
        assert page.get_by_test_id("delta-y").inner_text() == "\u22120.25"
        assert widget.locator("svg.lab-error-chart").is_visible() and widget.locator("svg.lab-grid").is_visible()
        assert rows.all_inner_texts() == table_before
        # the page does not shrink on a typo (it lost about 1,100 px)
        assert page.evaluate(PAGE_HEIGHT) >= before

        # a row that does not parse is refused at the field; the figure stays kept, naming both
        weights = page.get_by_role("textbox", name="weights w")
        weights.fill("1, two")
        weights.press("Enter")
        expect(page.locator(f"#{weights.get_attribute('aria-describedby')}")).to_contain_text("two")
        kept = _kept(page, ".lab-scale")
        assert kept["note"] == _note("weights w = -1, 0.3, 0.9, 1.7; inputs x = 2, 1, -1, 0.5", "the fields are")
        assert page.evaluate(PAGE_HEIGHT) >= before

        # fixed: the figure follows again, undimmed, with the new rows
        weights.fill("-1, 0.3, 0.9, 1.7")
        weights.press("Enter")
        inputs.fill("2, 1, -1, 3")
        inputs.press("Enter")
        expect(page.get_by_test_id("delta-y")).to_have_text("\u22120.75")  # (0.25−0.3)·1 + (1−0.9)·(−1) + (1.5−1.7)·3
        kept = _kept(page, ".lab-scale")
        assert kept["note"] is None and kept["parts"] == 0, kept
        assert refusal.is_hidden() and inputs.get_attribute("aria-invalid") is None
        assert rows.nth(3).locator("td").nth(4).inner_text() == "3"
        assert log.blocked == [] and log.console_errors == []


@pytest.mark.parametrize("notebook_server", ["01_one_nibble.py"], indirect=True)
def test_notebook_one_keeps_its_working_by_hand_through_a_refused_code(notebook_server):
    """The working by hand is prose the notebook computed for each code (an outcome panel): a
    refused code keeps the last code's working, dimmed under the note, beside the page's prose."""
    with browser_page() as (page, log):
        page.goto(notebook_server)
        heading = page.get_by_role("heading", name="Doing 0101 by hand")
        heading.wait_for(timeout=90000)
        code = page.get_by_role("textbox", name="code (0..15, 0x\u2026 or 0b\u2026); \u2191 \u2193 step it")
        code.fill("16")
        code.press("Enter")
        expect(page.locator(f"#{code.get_attribute('aria-describedby')}")).to_be_visible()
        panel = page.locator('.lab-outcome[data-lab-choice="nibble-by-hand"]:not([hidden])')
        expect(panel).to_have_count(1)
        expect(panel.locator("[data-lab-kept-note]")).to_have_text(_note("code = 5"))
        assert heading.is_visible()
        assert panel.locator("[data-lab-kept='stale']").count() >= 1
        # the figure too
        assert _kept(page, ".four-bit-lab:has([data-focus='code'])")["note"] == _note("code = 5")
        # a code it takes: that code's working, following
        code.fill("7")
        code.press("Enter")
        page.get_by_role("heading", name="Doing 0111 by hand").wait_for(timeout=30000)
        expect(page.locator("[data-lab-kept-note]")).to_have_count(0)
        expect(page.locator("[data-lab-kept]")).to_have_count(0)
        assert log.blocked == [] and log.console_errors == []


@pytest.mark.parametrize("notebook_server", ["03_mxfp4.py"], indirect=True)
def test_notebook_three_keeps_its_table_grids_and_mlx_report_through_seed_99(notebook_server):
    with browser_page() as (page, log):
        page.set_viewport_size({"width": 1440, "height": 900})
        page.goto(notebook_server)
        amax = page.get_by_text("amax =").locator("visible=true")
        amax.first.wait_for(timeout=90000)
        page.wait_for_timeout(1000)
        before = page.evaluate(PAGE_HEIGHT)
        field = page.get_by_role("textbox", name="random seed")
        field.fill("99")
        field.press("Enter")
        expect(page.get_by_text("random seed: type a whole number from 3 to 7, not 99.")).to_be_visible()
        # the table, both grids and the MLX report: seed 7's panels stay, each under its note
        shown = page.locator('.lab-outcome[data-lab-choice="mxfp4-block"]:not([hidden])')
        expect(shown).to_have_count(3)
        for index in range(3):
            expect(shown.nth(index).locator("[data-lab-kept-note]")).to_have_text(_note("random seed = 7"))
        expect(amax).to_have_count(1)
        assert page.evaluate(PAGE_HEIGHT) >= before
        field.fill("4")
        field.press("Enter")
        expect(page.locator("[data-lab-kept-note]")).to_have_count(0)
        expect(shown).to_have_count(3)
        assert all('"seed": "4"' in shown.nth(i).get_attribute("data-lab-when") for i in range(3))
        assert log.blocked == [] and log.console_errors == []


@pytest.mark.parametrize("notebook_server", ["05_q4k.py"], indirect=True)
def test_notebook_five_keeps_its_mlx_run_through_a_refused_byte(notebook_server):
    """The MLX run is a cell the explorer's block drives: while one of the explorer's fields holds
    an entry it refuses, the run shown is the last valid block's, and says so."""
    with browser_page() as (page, log):
        page.goto(notebook_server)
        run = page.locator('.lab-outcome[data-lab-choice="q4k-on-device"]')
        run.wait_for(timeout=90000)
        field = page.get_by_role("textbox", name="d (fp16)")
        kept_text = field.input_value()
        field.fill("abc")
        field.press("Enter")
        expect(run.locator("[data-lab-kept-note]")).to_have_text(_note(f"d (fp16) = {kept_text}"))
        assert run.is_visible() and run.locator("[data-lab-kept='stale']").count() >= 1
        assert page.get_by_role("heading", name="On device: this block through MLX").is_visible()
        field.fill("0.5")
        field.press("Enter")
        expect(page.locator("[data-lab-kept-note]")).to_have_count(0)
        assert run.is_visible()
        assert log.blocked == [] and log.console_errors == []


# Each widget's field, an entry it refuses, what the note calls the field, a readout that must keep
# its value, and an entry it takes.
FIELDS = {
    "scale-lab": ("w", "1, two", "weights w", "delta-y", "0.35, 1.7, 0.9, 1.7"),
    "nibble-decoder": ("code", "16", "code", "e2m1-value", "7"),
    "ownership": ("mx-byte", "0x1FF", "E8M0 scale byte", "mx-trace", "0x80"),
    "q4k-explorer": ("edit-d", "abc", "d (fp16)", "low-weight", "0.5"),
    "code-explorer": ("code", "abc", "code", "code-value", "3"),
}


@pytest.mark.parametrize("width", [390, 1440])
@pytest.mark.parametrize("slug", list(FIELDS))
def test_every_widget_keeps_its_figure_through_a_refused_entry(pages, slug, width):
    key, bad, name, readout, good = FIELDS[slug]
    with browser_page() as (page, log):
        page.set_viewport_size({"width": width, "height": 900})
        open_standalone(page, pages, slug)
        field = page.locator(f"#widget input[data-focus='{key}']")
        kept_text = field.input_value()
        value = page.get_by_test_id(readout).inner_text()
        before = page.evaluate(PAGE_HEIGHT)
        field.fill(bad)
        field.press("Enter")
        assert field.get_attribute("aria-invalid") == "true"
        kept = _kept(page, "#widget")
        assert kept["note"] == _note(f"{name} = {kept_text}"), kept
        assert kept["parts"] >= 2 and kept["dimmed"] and kept["visible"] and kept["noteFirst"], kept
        assert page.get_by_test_id(readout).inner_text() == value
        assert page.evaluate(PAGE_HEIGHT) >= before
        assert page.evaluate("document.documentElement.scrollWidth") <= width  # the note wraps
        field.fill(good)
        field.press("Enter")
        kept = _kept(page, "#widget")
        assert kept["note"] is None and kept["parts"] == 0 and field.get_attribute("aria-invalid") is None
        assert log.blocked == [] and log.console_errors == []


def test_rows_of_different_lengths_keep_the_scale_lab_figure_on_a_phone(pages):
    """The traits themselves have a problem (a row committed with one number more): the figure is
    kept as for a refused entry, the problem beside the field, and the page stays a phone's width."""
    with browser_page() as (page, log):
        page.set_viewport_size({"width": 390, "height": 900})
        open_standalone(page, pages, "scale-lab")
        before = page.evaluate(PAGE_HEIGHT)
        inputs = page.get_by_role("textbox", name="inputs x")
        inputs.fill("2, 1, -1, 0.5, 3")
        inputs.press("Enter")
        expect(page.locator(f"#{inputs.get_attribute('aria-describedby')}")).to_have_text(
            "the weight row has 4 numbers and the input row 5 numbers; they must match"
        )
        kept = _kept(page, "#widget")
        assert kept["note"] == _note("inputs x = 2, 1, -1, 0.5") and kept["parts"] == 6 and kept["dimmed"], kept
        assert page.get_by_test_id("delta-y").inner_text() == "\u22120.25"
        assert page.evaluate(PAGE_HEIGHT) >= before
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        # the weights follow suit: the rows match again, and the figure follows them
        weights = page.get_by_role("textbox", name="weights w")
        weights.fill("-1, 0.3, 0.9, 1.7, 1")
        weights.press("Enter")
        expect(page.get_by_test_id("delta-y")).to_have_text("\u22120.25")  # 1 is on the ruler at 0.5
        assert _kept(page, "#widget")["parts"] == 0
        assert page.locator("#widget table.lab-table tbody tr").count() == 5
        assert log.blocked == [] and log.console_errors == []
