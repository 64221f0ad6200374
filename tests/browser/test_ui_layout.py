"""Every standalone page on a 390 px phone, a 1440 px screen and a 1920 px projector, light and dark: no sideways
scroll, nothing reaching past its card, readable type, cell grids that wrap, and a palette that follows the theme.
Screenshots go to /tmp/ui-shots/ for a person to look at."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote

import pytest
from chromium import chromium_path

from bench.harness.chromium import LAUNCH_ARGS
from publish import standalone

pytestmark = pytest.mark.browser

SHOTS = Path("/tmp/ui-shots")
SIZES = {"phone": (390, 844), "screen": (1440, 900), "projector": (1920, 1080)}

MEASURE = """() => {
  const px = (node) => parseFloat(getComputedStyle(node).fontSize);
  const widget = document.querySelector(".four-bit-lab");
  return {
    scrollWidth: document.documentElement.scrollWidth,
    innerWidth: window.innerWidth,
    body: px(document.body),
    widget: px(widget),
    smallestTable: Math.min(99, ...[...document.querySelectorAll(".lab-table td, .lab-table th")].map(px)),
    smallestCell: Math.min(99, ...[...document.querySelectorAll(".lab-cell")].map(px)),
    columns: [...document.querySelectorAll(".lab-cells")].map((grid) => getComputedStyle(grid).gridTemplateColumns.split(" ").length),
    background: getComputedStyle(widget).backgroundColor,
    // Every element that reaches past its card (a .lab-card, else the widget itself): none may.
    // A scroll box's contents may, inside it, and an SVG's shapes are checked as the SVG.
    overflowing: [...widget.querySelectorAll("*")].flatMap((node) => {
      if (node.parentElement.closest(".lab-scroll") || node.parentElement.closest("svg")) return [];
      const edges = node.getBoundingClientRect();
      const card = node.parentElement.closest(".lab-card, .four-bit-lab").getBoundingClientRect();
      if (edges.width === 0 || (edges.left >= card.left - 0.5 && edges.right <= card.right + 0.5)) return [];
      return [`${node.tagName.toLowerCase()}.${node.getAttribute("class")} "${node.textContent.slice(0, 20)}" by ${Math.round(Math.max(card.left - edges.left, edges.right - card.right))} px`];
    }),
    // Big readout numbers split over two lines ("−0.18477 / 343"): none may be.
    brokenNumbers: [...widget.querySelectorAll(".lab-big")].filter((node) => {
      const text = document.createRange();
      text.selectNodeContents(node);
      return !/\\s/.test(node.textContent.trim()) && new Set([...text.getClientRects()].map((rect) => Math.round(rect.top))).size > 1;
    }).map((node) => node.textContent),
  };
}"""


# Resolves once the frame after this one has begun: by then the ResizeObservers that a new type
# size (presenter view) set off have run, and the grids, tables and figures they lay out are in
# place (ui.js watchSize). Measured before that, a page shows the old layout at the new size.
NEXT_FRAME = "() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))"


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium_path(), args=LAUNCH_ARGS)
        yield launched
        launched.close()


def _page(browser, pages, slug, size, scheme):
    width, height = SIZES[size]
    context = browser.new_context(viewport={"width": width, "height": height}, color_scheme=scheme)
    page = context.new_page()
    errors = []
    page.on("console", lambda message: message.type == "error" and errors.append(message.text))
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto((pages / f"{slug}.html").as_uri())
    page.wait_for_selector("body[data-ready='true']")
    return context, page, errors


def _open_link(page, pages, slug, fragment):
    """Open page `slug` with `fragment` as its link state, afresh (about:blank first), so the link
    is read as a learner's opened link is, not applied by a hashchange."""
    page.goto("about:blank")
    page.goto((pages / f"{slug}.html").as_uri() + "#" + quote(json.dumps(fragment)))
    page.wait_for_selector("body[data-ready='true']")


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("size", list(SIZES))
@pytest.mark.parametrize("slug", list(standalone.PAGES))
def test_page_fits_and_reads(browser, pages, slug, size, scheme):
    context, page, errors = _page(browser, pages, slug, size, scheme)
    try:
        measured = page.evaluate(MEASURE)
        assert measured["scrollWidth"] <= measured["innerWidth"], measured
        assert measured["overflowing"] == [] and measured["brokenNumbers"] == [], measured
        assert measured["body"] >= 16 and measured["widget"] >= 16
        assert measured["smallestTable"] >= 15 and measured["smallestCell"] >= 16
        if size == "phone":
            assert all(columns <= 8 for columns in measured["columns"]), measured
        dark = measured["background"] == "rgb(22, 22, 22)"
        assert dark == (scheme == "dark"), measured
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"{slug}-{size}-{scheme}.png"), full_page=True)
        # Presenter view: 1.5 times larger, still no sideways scroll.
        toggle = page.get_by_role("button", name="Presenter view")
        toggle.click()
        assert toggle.get_attribute("aria-pressed") == "true"
        page.evaluate(NEXT_FRAME)
        presented = page.evaluate(MEASURE)
        assert presented["widget"] == 1.5 * measured["widget"]
        assert presented["scrollWidth"] <= presented["innerWidth"], presented
        assert presented["overflowing"] == [] and presented["brokenNumbers"] == [], presented
        if size == "projector":
            page.screenshot(path=str(SHOTS / f"{slug}-{size}-{scheme}-presenter.png"), full_page=True)
        assert errors == []
    finally:
        context.close()


def test_marimo_dark_class_switches_the_palette_live(browser, pages):
    context, page, errors = _page(browser, pages, "nibble-decoder", "projector", "light")
    try:
        background = "getComputedStyle(document.querySelector('.four-bit-lab')).backgroundColor"
        assert page.evaluate(background) == "rgb(255, 255, 255)"
        page.evaluate("document.body.classList.add('dark')")
        page.wait_for_function(f"{background} === 'rgb(22, 22, 22)'")
        page.evaluate("document.body.classList.remove('dark'); document.documentElement.dataset.theme = 'light'")
        page.wait_for_function(f"{background} === 'rgb(255, 255, 255)'")
        assert errors == []
    finally:
        context.close()


# The nibble decoder's table of all sixteen codes: its box, and each code's row and cells.
CODE_TABLE = """() => {
  const table = document.querySelector("table[aria-label='all sixteen codes']");
  const box = table.closest(".lab-scroll");
  const edges = box.getBoundingClientRect();
  const cells = [...table.querySelectorAll("td, th")];
  return {
    boxScrolls: box.scrollWidth > box.clientWidth,
    cellsInside: cells.every((cell) => {
      const r = cell.getBoundingClientRect();
      return r.left >= edges.left - 0.5 && r.right <= edges.right + 0.5;
    }),
    textFits: cells.every((cell) => cell.scrollWidth <= cell.clientWidth),
    smallestText: Math.min(...cells.map((cell) => parseFloat(getComputedStyle(cell).fontSize))),
    codes: table.querySelectorAll("tbody tr").length,
    lines: [...table.querySelectorAll("tr")].map((row) => new Set([...row.children].map((cell) => Math.round(cell.getBoundingClientRect().top))).size),
    picks: table.querySelectorAll("button[aria-label^='pick code']").length,
  };
}"""


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("size", list(SIZES))
def test_nibble_code_table_fits_without_scrolling_sideways(browser, pages, size, scheme):
    context, page, errors = _page(browser, pages, "nibble-decoder", size, scheme)
    try:
        table = page.evaluate(CODE_TABLE)
        assert not table["boxScrolls"] and table["cellsInside"] and table["textFits"], table
        assert table["smallestText"] >= 16 and table["codes"] == 16 and table["picks"] == 16, table
        if size != "phone":
            assert set(table["lines"]) == {1}, table  # room enough: one line per code
        # presenter view: where two lines a code no longer fit (a phone), each code is a block
        page.get_by_role("button", name="Presenter view").click()
        page.evaluate(NEXT_FRAME)
        table = page.evaluate(CODE_TABLE)
        assert not table["boxScrolls"] and table["cellsInside"] and table["textFits"], table
        assert table["smallestText"] >= 16 and table["codes"] == 16 and table["picks"] == 16, table
        assert errors == []
    finally:
        context.close()


# Every line of text in every cell of the cell grids: on one line, inside its cell, at least 16 px.
CELL_TEXT = """() => [...document.querySelectorAll(".lab-cell")].flatMap((cell) => {
  const box = cell.getBoundingClientRect();
  return [...cell.children].map((line) => {
    const text = document.createRange();
    text.selectNodeContents(line);
    const edges = line.getBoundingClientRect();
    return {
      text: line.textContent,
      lines: new Set([...text.getClientRects()].map((rect) => Math.round(rect.top))).size,
      inside: edges.left >= box.left - 0.5 && edges.right <= box.right + 0.5,
      px: parseFloat(getComputedStyle(line).fontSize),
    };
  });
})"""


@pytest.mark.parametrize("presenter", [False, True])
@pytest.mark.parametrize("size", list(SIZES))
@pytest.mark.parametrize("slug", ["ownership", "q4k-explorer"])
def test_a_number_in_a_cell_never_breaks(browser, pages, slug, size, presenter):
    context, page, errors = _page(browser, pages, slug, size, "dark" if size == "phone" else "light")
    try:
        # the default block, then weights with ten significant digits (a tensor scale of 1.234567891e-6)
        fragments = [None, {"tensor_scale": 1.234567891e-6}] if slug == "ownership" else [None]
        for fragment in fragments:
            if fragment is not None:
                _open_link(page, pages, slug, fragment)
                assert "e\u221206" in page.get_by_test_id("nv-trace").inner_text()
            if presenter and page.get_by_role("button", name="Presenter view").get_attribute("aria-pressed") != "true":
                page.get_by_role("button", name="Presenter view").click()
                page.evaluate(NEXT_FRAME)
            lines = page.evaluate(CELL_TEXT)
            assert lines and all(line["lines"] == 1 for line in lines), [line for line in lines if line["lines"] != 1][
                :4
            ]
            assert all(line["inside"] for line in lines), [line for line in lines if not line["inside"]][:4]
            assert min(line["px"] for line in lines) >= 16
            measured = page.evaluate(MEASURE)
            assert measured["scrollWidth"] <= measured["innerWidth"], measured
        assert errors == []
    finally:
        context.close()


# One SVG's texts: each shown text, its size on screen (its computed font size times the scale its
# SVG draws it at, from getScreenCTM), and which texts touch another of the same SVG or reach past
# the SVG's box.
MEASURE_TEXTS = """const measureTexts = (figure) => {
  const box = figure.getBoundingClientRect();
  const texts = [...figure.querySelectorAll("text")]
    .filter((text) => text.textContent.trim() && text.getBoundingClientRect().width > 0 && getComputedStyle(text).visibility !== "hidden")
    .map((text) => {
      const ctm = text.getScreenCTM();
      const scale = Math.min(Math.hypot(ctm.a, ctm.b), Math.hypot(ctm.c, ctm.d));
      return { text: text.textContent, px: parseFloat(getComputedStyle(text).fontSize) * scale, edges: text.getBoundingClientRect() };
    });
  const touching = [];
  texts.forEach((a, i) => texts.slice(i + 1).forEach((b) => {
    const apart = a.edges.right <= b.edges.left || b.edges.right <= a.edges.left || a.edges.bottom <= b.edges.top || b.edges.bottom <= a.edges.top;
    if (!apart) touching.push(`${a.text} / ${b.text}`);
  }));
  return {
    figure: figure.getAttribute("class"),
    labels: texts.map((text) => text.text),
    smallest: Math.min(...texts.map((text) => text.px)),
    small: texts.filter((text) => text.px < 16).map((text) => `${text.text} at ${text.px.toFixed(1)} px`),
    touching,
    outside: texts.filter(({ edges }) => edges.left < box.left - 0.5 || edges.right > box.right + 0.5 || edges.top < box.top - 0.5 || edges.bottom > box.bottom + 0.5).map((text) => text.text),
  };
};"""

# The scale lab's two figures.
FIGURE_LABELS = f"""() => {{ {MEASURE_TEXTS}
  return [...document.querySelectorAll("svg.lab-error-chart, svg.lab-grid")].map(measureTexts); }}"""

# The scale lab's table: does its box scroll sideways, is every cell inside it, and is any cell's
# value split over two lines.
RESULT_TABLE = """() => {
  const table = document.querySelector("table[aria-label='each weight and its reconstruction']");
  const box = table.closest(".lab-scroll").getBoundingClientRect();
  const cells = [...table.querySelectorAll("td")].filter((cell) => cell.textContent);
  const lines = (cell) => {
    const text = document.createRange();
    text.selectNodeContents(cell);  // the value; a stacked cell's column name is generated, not in the range
    return new Set([...text.getClientRects()].map((rect) => Math.round(rect.top))).size;
  };
  const scroller = table.closest(".lab-scroll");
  return {
    scrolls: scroller.scrollWidth > scroller.clientWidth,
    outside: cells.filter((cell) => { const r = cell.getBoundingClientRect(); return r.left < box.left - 0.5 || r.right > box.right + 0.5; }).map((cell) => cell.textContent),
    split: cells.filter((cell) => lines(cell) > 1).map((cell) => cell.textContent),
    smallest: Math.min(...cells.map((cell) => parseFloat(getComputedStyle(cell).fontSize))),
  };
}"""

# Weights whose clipping thresholds crowd together, and long numbers for the table.
CROWDED = {"w_text": "1, 0.98, 0.96, 0.94, -0.5, 0.49, 1.234567891e-05, 123456.789", "x_text": "1, 2, 3, 4, 5, 6, 7, 8"}


@pytest.mark.parametrize("presenter", [False, True])
@pytest.mark.parametrize("size", list(SIZES))
def test_scale_lab_figures_and_table_read_on_any_screen(browser, pages, size, presenter):
    context, page, errors = _page(browser, pages, "scale-lab", size, "dark" if size == "phone" else "light")
    try:
        for fragment in (None, CROWDED):
            if fragment is not None:
                _open_link(page, pages, "scale-lab", fragment)
            if presenter:
                page.get_by_role("button", name="Presenter view").click()
                page.evaluate(NEXT_FRAME)
            for figure in page.evaluate(FIGURE_LABELS):
                assert figure["touching"] == [] and figure["outside"] == [], figure
                assert figure["smallest"] >= 15, figure
                assert any(label.startswith("2^") for label in figure["labels"]) or "lab-grid" in figure["figure"]
            table = page.evaluate(RESULT_TABLE)
            assert not table["scrolls"] and table["outside"] == [] and table["split"] == [], table
            assert table["smallest"] >= 15, table
        assert errors == []
    finally:
        context.close()


# Every SVG of the widget.
SVG_TEXT = f"""() => {{ {MEASURE_TEXTS}
  return [...document.querySelectorAll(".four-bit-lab svg")].map(measureTexts); }}"""

# Links whose labels are longest: a traced byte in chunk 3 (subblocks 6 and 7, whose fields are
# split over two bytes), and the scale lab's crowded thresholds.
LONGEST_LABELS = {"q4k-explorer": [{"payload_index": 100}], "scale-lab": [CROWDED]}


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("size", list(SIZES))
@pytest.mark.parametrize("slug", list(standalone.PAGES))
def test_svg_labels_read_at_16px_and_never_overlap(browser, pages, slug, size, scheme):
    context, page, errors = _page(browser, pages, slug, size, scheme)
    try:
        for fragment in [None, *LONGEST_LABELS.get(slug, [])]:
            if fragment is not None:
                _open_link(page, pages, slug, fragment)
            for presenter in (False, True):
                toggle = page.get_by_role("button", name="Presenter view")
                if (toggle.get_attribute("aria-pressed") == "true") != presenter:
                    toggle.click()
                    page.evaluate(NEXT_FRAME)
                for figure in page.evaluate(SVG_TEXT):
                    assert figure["small"] == [] and figure["touching"] == [] and figure["outside"] == [], (
                        presenter,
                        figure,
                    )
                measured = page.evaluate(MEASURE)
                assert measured["scrollWidth"] <= measured["innerWidth"], measured
        assert errors == []
    finally:
        context.close()


# Links to the longest numbers a big readout shows: E8M0's smallest scale, 2^-127, written with
# ten significant digits (it broke as "5.877471754e−3 / 9" on a phone), and E4M3's smallest
# subnormal.
LONGEST_NUMBERS = [
    ("code-explorer", {"format": "E8M0", "code": 0}),
    ("code-explorer", {"format": "E4M3", "code": 0x81}),
]


@pytest.mark.parametrize("size", list(SIZES))
@pytest.mark.parametrize(("slug", "fragment"), LONGEST_NUMBERS)
def test_the_longest_readout_numbers_stay_on_one_line(browser, pages, slug, fragment, size):
    context, page, errors = _page(browser, pages, slug, size, "dark")
    try:
        _open_link(page, pages, slug, fragment)
        measured = page.evaluate(MEASURE)
        assert measured["brokenNumbers"] == [] and measured["overflowing"] == [], measured
        assert measured["scrollWidth"] <= measured["innerWidth"], measured
        assert errors == []
    finally:
        context.close()
