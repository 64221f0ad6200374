"""The four widgets in headless Chromium, from single-file pages opened with file:// and no kernel.

Every non-local request is aborted and counted; the tests require none and no console errors.
"""

from __future__ import annotations

import json

import ml_dtypes
import numpy as np
import pytest
from chromium import browser_page, open_standalone
from playwright.sync_api import expect

pytestmark = pytest.mark.browser


def _text(page, testid):
    return page.get_by_test_id(testid).inner_text()


def test_nibble_decoder_bits_and_keyboard(pages):
    with browser_page() as (page, log):
        open_standalone(page, pages, "nibble-decoder")
        assert _text(page, "e2m1-value") == "3"
        assert _text(page, "uint4-value") == "5"
        page.get_by_role("button", name="bit 3, sign, is 0").click()  # 0101 -> 1101
        assert _text(page, "e2m1-value") == "\u22123" and _text(page, "int4-value") == "\u22123"
        page.get_by_role("button", name="pick code 0111").click()
        assert _text(page, "e2m1-value") == "6"
        # keyboard only: focus bit 0, press Space (toggle) -> 0110, then ArrowUp twice -> 1000
        bit0 = page.get_by_role("button", name="bit 0, fraction bit, is 1")
        bit0.focus()
        page.keyboard.press("Space")
        assert _text(page, "e2m1-value") == "4"
        page.keyboard.press("ArrowUp")
        page.keyboard.press("ArrowUp")
        assert _text(page, "e2m1-value") == "\u22120"
        assert _text(page, "int4-value") == "\u22128"
        assert "2^(1 \u2212 1)" in _text(page, "e2m1-formula")
        assert log.blocked == [] and log.console_errors == []


def test_scale_lab_article_numbers_and_bad_input(pages):
    with browser_page() as (page, log):
        open_standalone(page, pages, "scale-lab")
        assert _text(page, "y") == "\u22121.75" and _text(page, "delta-y") == "\u22120.25"
        page.get_by_role("button", name="2^\u22123").click()
        assert _text(page, "y-hat") == "\u22121.625" and _text(page, "delta-y") == "+0.125"
        for bad in ("abc", "", "1e999", "NaN"):
            field = page.get_by_role("textbox", name="weights w")
            field.fill(bad)
            field.press("Enter")
            assert page.get_by_role("alert").count() >= 1
        page.get_by_role("textbox", name="weights w").fill("-1, 0.3, 0.9, 1.7")
        page.get_by_role("textbox", name="weights w").press("Enter")
        scale_field = page.get_by_role("textbox", name="scale, any positive number")
        for bad in ("-1", "0", "1e-45x"):
            scale_field.fill(bad)
            scale_field.press("Enter")
            assert page.get_by_role("alert").count() >= 1
        scale_field = page.get_by_role("textbox", name="scale, any positive number")
        scale_field.fill("0.5")
        scale_field.press("Enter")
        assert _text(page, "delta-y") == "\u22120.25"
        # rows of different lengths, counted in words a learner reads
        page.get_by_role("textbox", name="weights w").fill("0.3")
        page.get_by_role("textbox", name="weights w").press("Enter")
        assert "the weight row has 1 number and the input row 4 numbers" in page.get_by_role("alert").first.inner_text()
        assert log.blocked == [] and log.console_errors == []


def test_ownership_view_scale_bytes(pages):
    with browser_page() as (page, log):
        open_standalone(page, pages, "ownership")
        assert _text(page, "mx-scale").endswith("= 0.5")
        assert _text(page, "mx-trace") == "element 0: 3 \u00d7 0.5 = 1.5"
        assert _text(page, "nv-trace") == "element 0: 3 \u00d7 0.3125 \u00d7 1 = 0.9375"
        mx_byte = page.get_by_role("textbox", name="E8M0 scale byte")
        mx_byte.fill("0xFF")
        mx_byte.press("Enter")
        assert "NaN" in _text(page, "mx-trace")
        assert _text(page, "nv-trace").endswith("= 0.9375")
        mx_byte = page.get_by_role("textbox", name="E8M0 scale byte")
        mx_byte.fill("126")
        mx_byte.press("Enter")
        assert _text(page, "mx-scale") == "2^(126 \u2212 127) = 0.5"
        mx_byte = page.get_by_role("textbox", name="E8M0 scale byte")
        mx_byte.fill("300")
        mx_byte.press("Enter")
        assert page.get_by_role("alert").count() == 1 and _text(page, "mx-scale").endswith("= 0.5")
        assert log.blocked == [] and log.console_errors == []


def test_q4k_explorer_follows_bytes(pages):
    with browser_page() as (page, log):
        open_standalone(page, pages, "q4k-explorer")
        assert _text(page, "low-weight") == "1" and _text(page, "high-weight") == "3.25"
        page.get_by_role("button", name="payload byte 1 = 0x00").click()
        assert _text(page, "low-weight") == "\u22120.25" and _text(page, "high-weight") == "\u22120.5"
        page.get_by_role("button", name="payload byte 2 = 0xFF").click()
        assert _text(page, "low-weight") == "3.5" and _text(page, "high-weight") == "5.125"
        editor = page.get_by_role("textbox", name="payload byte 2")
        editor.fill("0")
        editor.press("Enter")
        assert _text(page, "low-weight") == "\u22120.25"
        d_field = page.get_by_role("textbox", name="d (fp16)")
        d_field.fill("0.1")
        d_field.press("Enter")  # the nearest float16 to 0.1 is 0x2E66 = 0.0999755859375
        assert "d = 0x2E66 = 0 01011 1001100110 \u2192 0.09997558594" in _text(page, "fp16-stored")
        assert d_field.input_value() == "0.09997558594"
        d_field.fill("1e38")
        d_field.press("Enter")
        assert page.get_by_role("alert").count() == 1
        assert log.blocked == [] and log.console_errors == []


# Each cell of a byte or element grid: whether it is a button, and the cursor it shows.
CELL_CURSORS = """() => [...document.querySelectorAll(".lab-cell")].map((cell) => ({
  label: cell.getAttribute("aria-label") || cell.textContent,
  button: cell.tagName === "BUTTON",
  cursor: getComputedStyle(cell).cursor,
}))"""


@pytest.mark.parametrize("slug", ["q4k-explorer", "ownership"])
def test_only_cells_that_do_something_when_clicked_show_a_pointer(pages, slug):
    """The Q4_K explorer's d, dmin and metadata bytes are read-only cells beside the payload's
    buttons: a pointer over them promised a click that does nothing."""
    with browser_page() as (page, log):
        open_standalone(page, pages, slug)
        cells = page.evaluate(CELL_CURSORS)
        assert any(cell["button"] for cell in cells)
        wrong = [cell for cell in cells if (cell["cursor"] == "pointer") != cell["button"]]
        assert wrong == []
        assert log.blocked == [] and log.console_errors == []


def test_standalone_pages_restore_state_from_the_fragment(pages):
    with browser_page() as (page, log):
        open_standalone(page, pages, "nibble-decoder", {"code": 7})
        assert _text(page, "e2m1-value") == "6"
        page.get_by_role("button", name="pick code 1000").click()
        assert json.loads(__import__("urllib.parse").parse.unquote(page.evaluate("location.hash")[1:])) == {"code": 8}
        open_standalone(page, pages, "ownership", {"mx_scale_byte": 128, "selected": 0})
        assert _text(page, "mx-trace") == "element 0: 3 \u00d7 2 = 6"
        open_standalone(page, pages, "q4k-explorer", {"payload_index": 1})
        assert _text(page, "low-weight") == "\u22120.25"
        open_standalone(page, pages, "scale-lab", {"scale": 0.125, "evil": "alert(1)"})
        assert _text(page, "delta-y") == "+0.125"
        assert "Ignored from the link: evil" in page.locator("#link-note").inner_text()
        assert log.blocked == [] and log.console_errors == []


def test_a_broken_or_out_of_range_link_says_so(pages):
    with browser_page() as (page, log):
        page.goto((pages / "nibble-decoder.html").as_uri() + "#%")
        page.wait_for_selector("body[data-ready='true']")
        assert "could not be read" in page.locator("#link-note").inner_text()
        assert _text(page, "e2m1-value") == "3"  # the defaults
        # a new link on the page already open is applied by its hashchange event, which can come
        # after goto returns
        open_standalone(page, pages, "nibble-decoder", {"code": 99})
        expect(page.get_by_role("alert")).to_contain_text("0..15, got 99")
        open_standalone(page, pages, "ownership", {"selected": 99})
        assert "0..31, got 99" in page.get_by_role("alert").inner_text()
        open_standalone(page, pages, "ownership", {"tensor_scale": 1e306})
        expect(page.get_by_role("alert")).to_contain_text("global_scale")
        assert log.blocked == [] and log.console_errors == []


def test_scale_lab_slider_chart_and_draggable_numbers(pages):
    with browser_page() as (page, log):
        open_standalone(page, pages, "scale-lab")
        chart = page.locator("svg.lab-error-chart")
        assert chart.locator("[data-mark='current']").get_attribute("data-scale") == "0.5"
        clips = chart.locator("[data-mark='clip']").evaluate_all("(marks) => marks.map((m) => Number(m.dataset.scale))")
        assert clips == pytest.approx([1 / 6, 0.3 / 6, 0.9 / 6, 1.7 / 6])
        assert float(chart.locator("[data-mark='best']").get_attribute("data-scale")) == 1.0
        assert "smallest |\u0394y| 0 at scale 1" in _text(page, "chart-caption")
        slider = page.get_by_role("slider", name="scale (log\u2082 steps)")
        slider.fill("-3")  # the power-of-two slider: 2^-3
        assert _text(page, "delta-y") == "+0.125"
        assert chart.locator("[data-mark='current']").get_attribute("data-scale") == "0.125"
        page.get_by_role("button", name="fine steps").click()
        slider.fill("-1.5")
        assert chart.locator("[data-mark='current']").get_attribute("data-scale") == str(2**-1.5)
        # drag w1 = −1 fifty pixels right: 0.01 per pixel
        handle = page.get_by_test_id("drag-w_text-0")
        box = handle.bounding_box()
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        page.mouse.down()
        page.mouse.move(box["x"] + box["width"] / 2 + 50, box["y"] + box["height"] / 2, steps=5)
        page.mouse.up()
        assert page.get_by_test_id("drag-w_text-0").get_attribute("aria-valuenow") == "-0.5"
        assert page.get_by_role("textbox", name="weights w").input_value() == "-0.5, 0.3, 0.9, 1.7"
        assert _text(page, "y") == "\u22120.75"
        page.get_by_test_id("drag-x_text-0").focus()
        page.keyboard.press("ArrowUp")
        assert page.get_by_test_id("drag-x_text-0").get_attribute("aria-valuenow") == "2.1"
        assert page.get_by_role("textbox", name="inputs x").input_value() == "2.1, 1, -1, 0.5"
        assert log.blocked == [] and log.console_errors == []


def test_nibble_decoder_levels_of_every_decoder(pages):
    """The levels figure has one row per 4-bit decoder; each row's highlighted level follows the code."""
    with browser_page() as (page, log):
        open_standalone(page, pages, "nibble-decoder")

        def row(key):
            return page.get_by_test_id(f"levels-{key}")

        # 0101: the article's values, NF4's sixth level and IQ4_NL's sixth codebook entry
        expected = {
            "e2m1": "3",
            "uint4": "5",
            "int4": "5",
            "q4_0": "-3",
            "nf4": "-0.18477343022823334",
            "iq4_nl": "-35",
        }
        assert {key: row(key).get_attribute("data-value") for key in expected} == expected
        assert row("nf4").get_attribute("data-spacing") == "normal quantiles"
        assert row("iq4_nl").locator("line.lab-mark").count() == 15 + 1  # 15 levels and the highlighted one
        assert _text(page, "q4_0-value") == "\u22123" and _text(page, "iq4_nl-value") == "\u221235"
        page.get_by_role("button", name="pick code 1111").click()
        ends = {key: float(row(key).get_attribute("data-normalised")) for key in expected}
        # every row is scaled to its largest magnitude: code 1111 is -1 for INT4, +1 for NF4
        assert ends == pytest.approx(
            {"e2m1": -1.0, "uint4": 1.0, "int4": -1 / 8, "q4_0": 7 / 8, "nf4": 1.0, "iq4_nl": 113 / 127}
        )
        field = page.get_by_role("textbox", name="code (0..15, 0x… or 0b…); ↑ ↓ step it")
        field.fill("0x10")
        field.press("Enter")
        assert page.get_by_role("alert").count() >= 1
        assert row("iq4_nl").get_attribute("data-value") == "113"  # the bad input changed nothing
        assert log.blocked == [] and log.console_errors == []


ML_DTYPES = {"E2M1": ml_dtypes.float4_e2m1fn, "E8M0": ml_dtypes.float8_e8m0fnu, "E4M3": ml_dtypes.float8_e4m3fn}


def _ml_dtypes_code(value: float, target: str) -> int:
    """ml_dtypes' cast of a float32 value to the target format, as its bit pattern."""
    return int(np.array(value, dtype=np.float32).astype(ML_DTYPES[target]).view(np.uint8))


# (format, code, its value): asymmetric picks, normal and subnormal, both signs, ties, the ends.
SWITCH_SOURCES = [
    ("E4M3", 0x2A, 0.3125),
    ("E4M3", 0xB5, -0.8125),
    ("E4M3", 0x01, 2.0**-9),
    ("E4M3", 0x46, 3.5),  # E2M1 tie between 3 and 4: to the even code, 4
    ("E4M3", 0x7E, 448.0),
    ("E2M1", 3, 1.5),  # E8M0 tie between 1 and 2: up, as ml_dtypes
    ("E2M1", 13, -3.0),
    ("E8M0", 125, 0.25),
    ("E8M0", 130, 8.0),
]
# Where the carried code is not ml_dtypes' cast, and why: E2M1 and E8M0 have no NaN or sign, E4M3
# and E2M1 saturate (ml_dtypes' E4M3 cast of 2^127 is NaN), E8M0 has no zero (ml_dtypes gives NaN).
SWITCH_QUIRKS = [
    ("E4M3", 0x7F, "E2M1", 0),  # NaN: E2M1 has none, back to +0
    ("E4M3", 0x7F, "E8M0", 0xFF),
    ("E8M0", 0xFF, "E4M3", 0x7F),
    ("E8M0", 254, "E4M3", 0x7E),  # 2^127 saturates at 448
    ("E8M0", 254, "E2M1", 7),  # and at 6
    ("E2M1", 8, "E4M3", 0x80),  # −0 keeps its sign
    ("E2M1", 8, "E8M0", 0),  # zero: the nearest E8M0 has is 2^−127
    ("E4M3", 0xB5, "E8M0", 0),  # and so for a negative number
]


def _switch(page, pages, source, code, target) -> int:
    """The code the explorer shows after it opens on (source, code) and the target chip is clicked."""
    # afresh: on the explorer already open, the link would be applied by a hashchange event, which
    # can come after goto returns and so after the click
    page.goto("about:blank")
    open_standalone(page, pages, "code-explorer", {"format": source, "code": code})
    page.get_by_role("button", name=target, exact=True).click()
    heading = page.locator("#widget h4").first.inner_text()
    assert heading.startswith(f"{target} code "), heading
    return int(heading.split(" = ")[0].split(" code ")[1], 0)


def test_code_explorer_format_switch_keeps_the_number(pages):
    """Switching format shows the new format's code for the same number, as ml_dtypes casts it
    (E4M3's 0x2A = 0.3125 used to become E2M1's code 15 = −6, a clamp)."""
    for source, code, value in SWITCH_SOURCES:
        assert float(np.array(code, dtype=np.uint8).view(ML_DTYPES[source])) == value, (source, code)
    with browser_page() as (page, log):
        for source, code, value in SWITCH_SOURCES:
            for target in ("E2M1", "E8M0", "E4M3"):
                if target == source or (target == "E8M0" and value <= 0):
                    continue
                assert _switch(page, pages, source, code, target) == _ml_dtypes_code(value, target), (
                    source,
                    code,
                    target,
                )
        for source, code, target, carried in SWITCH_QUIRKS:
            assert _switch(page, pages, source, code, target) == carried, (source, code, target)
        # the chip of the format already shown leaves the code alone (E4M3's negative NaN included)
        assert _switch(page, pages, "E4M3", 0xFF, "E4M3") == 0xFF
        assert log.blocked == [] and log.console_errors == []


# The smallest type on the page, in CSS pixels as drawn (an SVG's labels scaled by its drawing),
# and whether the page scrolls sideways.
TEXT_SIZES = """() => {
  const sizes = [];
  for (const node of document.querySelectorAll("#widget *")) {
    const own = [...node.childNodes].some((child) => child.nodeType === Node.TEXT_NODE && child.textContent.trim());
    if (!own || node.getClientRects().length === 0 || node.closest("[hidden]")) continue;
    let px = parseFloat(getComputedStyle(node).fontSize);
    if (node instanceof SVGElement) {
      const ctm = node.getScreenCTM();
      px *= Math.min(Math.hypot(ctm.a, ctm.b), Math.hypot(ctm.c, ctm.d));
    }
    sizes.push(px);
  }
  return { smallest: Math.min(...sizes), sideways: document.documentElement.scrollWidth > window.innerWidth };
}"""

# The block offsets of the byte map's cells marked as read by the traced weight.
MARKED_BYTES = """() => [...document.querySelectorAll(".lab-block-map .lab-selected")].map(
  (cell) => Number(cell.getAttribute("aria-label").match(/ byte (\\d+) = /)[1]))"""


def _block_explorer_page(directory, monkeypatch, opened_type: str, opened_block: list[int], opened_weight: int):
    """A standalone page of the block explorer opened on `block`. A page's link carries only values
    shaped like its defaults (a block as long as the default Q5_0 one), so the page is made with
    these as its defaults."""
    import traitlets

    from publish import standalone
    from widgets import BlockExplorer

    class Opened(BlockExplorer):
        type_name = traitlets.Unicode(opened_type).tag(sync=True)
        block = traitlets.List(traitlets.Int(), default_value=opened_block).tag(sync=True)
        weight = traitlets.Int(opened_weight).tag(sync=True)

    monkeypatch.setitem(standalone.PAGES, "block-explorer", (Opened, "block_explorer.js", "Inside a GGUF block"))
    path = directory / f"block-explorer-{opened_type}.html"
    path.write_text(standalone.page("block-explorer"), encoding="utf-8")
    return path


# The bytes each type's weight 5 is read from, by the names of Python's explain().
READ_FROM = {
    "Q5_0": lambda e: {0, 1, e["qh_byte"], e["byte"]},
    "Q3_K": lambda e: {e["hmask_byte"], e["qs_byte"], e["scale_low_byte"], e["scale_high_byte"], 108, 109},
    "Q8_0": lambda e: {0, 1, 2 + e["position_in_block"]},
}


@pytest.mark.parametrize("type_name", list(READ_FROM))
def test_block_explorer_traces_a_weight_and_refuses_a_bad_index_beside_the_field(type_name, tmp_path, monkeypatch):
    import re

    from lab.formats import by_gguf_type
    from lab.numbers import format_number

    fmt = by_gguf_type(type_name)
    block = fmt.to_gguf(np.random.default_rng(6).standard_normal(fmt.block_size).astype(np.float32))
    tensor = fmt.from_gguf(block)
    path = _block_explorer_page(tmp_path, monkeypatch, type_name, block.tolist(), 5)
    last = fmt.block_size - 1
    with browser_page() as (page, log):
        page.set_viewport_size({"width": 390, "height": 900})
        page.goto(path.as_uri())
        page.wait_for_selector("body[data-ready='true']")
        explained = tensor.explain(5)
        assert _text(page, "weight-value") == format_number(explained["weight"])
        assert _text(page, "step-weight") == explained["formula"]
        assert set(page.evaluate(MARKED_BYTES)) == READ_FROM[type_name](explained)
        measured = page.evaluate(TEXT_SIZES)
        assert measured["smallest"] >= 16 and not measured["sideways"], measured
        presenter = page.get_by_role("button", name="Presenter view")
        presenter.click()
        assert not page.evaluate(TEXT_SIZES)["sideways"]
        presenter.click()
        field = page.get_by_role("textbox", name=re.compile(r"^weight \(0\.\."))
        for bad, words in (
            ("2.5", "not a whole number"),
            (str(fmt.block_size), f"weights 0 to {last}"),
            ("five", "not a number"),
        ):
            field.fill(bad)
            field.press("Enter")
            note = page.locator(f"#{field.get_attribute('aria-describedby')}")
            expect(note).to_contain_text(words)
            assert note.get_attribute("role") == "alert" and field.get_attribute("aria-invalid") == "true"
            # the controls and the figure stay, showing the weight traced before
            assert field.is_visible() and field.input_value() == bad
            assert _text(page, "weight-value") == format_number(explained["weight"])
        field.fill("7")
        field.press("Enter")
        assert _text(page, "weight-value") == format_number(tensor.explain(7)["weight"])
        assert field.get_attribute("aria-invalid") is None
        lanes = page.get_by_test_id("lanes")
        lanes.focus()
        page.keyboard.press("ArrowRight")
        assert lanes.get_attribute("aria-valuenow") == "8" and field.input_value() == "8"
        page.keyboard.press("End")
        assert _text(page, "weight-value") == format_number(tensor.explain(last)["weight"])
        page.set_viewport_size({"width": 1440, "height": 900})
        measured = page.evaluate(TEXT_SIZES)
        assert measured["smallest"] >= 16 and not measured["sideways"], measured
        assert log.blocked == [] and log.console_errors == []


def test_block_explorer_given_a_weight_outside_its_block_says_so_and_the_field_puts_it_right(tmp_path, monkeypatch):
    from lab.formats import by_gguf_type
    from lab.numbers import format_number

    fmt = by_gguf_type("Q5_0")
    block = fmt.to_gguf(np.random.default_rng(7).standard_normal(32).astype(np.float32))
    path = _block_explorer_page(tmp_path, monkeypatch, "Q5_0", block.tolist(), 99)
    with browser_page() as (page, log):
        page.goto(path.as_uri())
        page.wait_for_selector("body[data-ready='true']")
        expect(page.locator("#widget").get_by_role("alert")).to_contain_text("weights 0..31, got 99")
        assert page.get_by_test_id("weight-value").count() == 0  # no figure for a weight that is not there
        field = page.get_by_role("textbox", name="weight (0..31); ↑ ↓ step it")
        field.fill("3")
        field.press("Enter")
        assert _text(page, "weight-value") == format_number(fmt.from_gguf(block).explain(3)["weight"])
        assert page.locator("#widget").get_by_role("alert").count() == 0
        assert log.blocked == [] and log.console_errors == []
