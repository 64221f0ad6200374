"""Tables and numbers on every page of the static site, on a 390 px phone and a 1440 px screen: no
short table cell (a number and its unit, a shape, "s₄ = 33", a type, a tensor's name), in the page
or in a widget, wraps onto a second line; no number of the page's text (marimo's Markdown) is split
from its unit, its "=" or its "× 512"; and a table wider than its box names the columns it hides
and on which side (widgets/page_fit.js, notebooks/course.css). Screenshots of every page go to
/tmp/ui-shots/tables/ for a person to look at.

Before widgets/page_fit.js, notebook 6 wrapped 240 short cells on a phone (its tensors' names at
their dots, "256 × / 512"), notebook 5 110, and on a 1440 px screen notebook 5 split "s₄ =" from
its "33" and its worked arithmetic's "=" from "0.25".

The widgets' own formulas (.lab-formula, in their shadow roots) are their modules' text, not the
page's: this file holds only the page's text to it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from chromium import browser_page

from lab.teach import course

pytestmark = pytest.mark.browser

SHOTS = Path("/tmp/ui-shots/tables")
WIDTHS = {"phone": (390, 844, "dark"), "wide": (1440, 900, "light")}
PAGES = ["index", *(file.removesuffix(".py") for file, _, _ in course.NOTEBOOKS)]
# the longest cell kept on one line: widgets/page_fit.js's own number
PAGE_FIT = (Path(__file__).resolve().parents[2] / "widgets" / "page_fit.js").read_text(encoding="utf-8")
WHOLE_CELL_CHARS = int(re.search(r"export const WHOLE_CELL_CHARS = (\d+);", PAGE_FIT).group(1))

# What the page shows: its tables' cells and its text, in the page and in every widget's shadow
# root, only what is in view (a precomputed choice's other options wait hidden). A cell or a number
# is broken when its text lies on two lines: two of its line boxes, one wholly below the other.
MEASURE = r"""(wholeChars) => {
  const roots = [document];
  for (let i = 0; i < roots.length; i += 1)
    for (const el of roots[i].querySelectorAll("*")) if (el.shadowRoot) roots.push(el.shadowRoot);
  const lines = (range) => {
    const boxes = [...range.getClientRects()].filter((box) => box.width > 0.5 && box.height > 0);
    return boxes.some((a) => boxes.some((b) => b.top >= a.bottom - 1)) ? 2 : boxes.length ? 1 : 0;
  };
  const words = (node) => node.textContent.replace(/\s+/g, " ").trim();
  const wrapped = [];
  for (const root of roots) {
    for (const cell of root.querySelectorAll("table :is(td, th)")) {
      const text = words(cell);
      if (!text || [...text].length > wholeChars || !cell.checkVisibility()) continue;
      const range = document.createRange();
      range.selectNodeContents(cell);
      if (lines(range) > 1) wrapped.push(text);
    }
  }
  // A number with what belongs to it: "256 × 512", "3.71875 GB", "12.5 %", "= 0.25", and any number
  // (a sign only where no name runs into it: "gemma-3-270m" is a name, which breaks at its hyphens).
  const number = String.raw`(?<![\p{L}\d_.,])[−+-]?\d[\d,]*(?:\.\d+)?(?:e[−+-]?\d+)?`;
  const kept = new RegExp(
    [String.raw`${number}(?:\s?×\s?${number})+`, String.raw`${number}\s(?:%|[KMGT]i?B\b|bytes\b)`,
     String.raw`[=≈≤≥<>]\s${number}`, number].join("|"), "gu");
  const broken = [];
  for (const root of [document]) {
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const parent = node.parentElement;
      if (!parent || !/\d/.test(node.data) || parent.closest("svg, script, style, textarea")) continue;
      if (!parent.checkVisibility()) continue;
      for (const match of node.data.matchAll(kept)) {
        if (!/\s/.test(match[0]) && match[0].length < 2) continue;
        const range = document.createRange();
        range.setStart(node, match.index);
        range.setEnd(node, match.index + match[0].length);
        if (lines(range) > 1) {
          const host = root.host ? `${root.host.tagName.toLowerCase()} ` : "";
          const around = node.data.slice(Math.max(0, match.index - 30), match.index + match[0].length + 10);
          broken.push(`${match[0]} (${host}${parent.tagName.toLowerCase()}.${parent.className}: "${around.trim()}")`);
        }
      }
    }
  }
  // Each table that scrolls sideways, and what it says of its columns out of view.
  const scrolling = [...document.querySelectorAll(".markdown.prose table")]
    .filter((table) => table.checkVisibility() && table.scrollWidth > table.clientWidth + 1)
    .map((table) => ({ hidden: table.getAttribute("data-lab-hidden") || "", said: getComputedStyle(table, "::before").content }));
  return { wrapped, broken, scrolling };
}"""


def _open(page, url: str, width: int, height: int, theme: str) -> None:
    page.set_viewport_size({"width": width, "height": height})
    page.emulate_media(color_scheme=theme)
    page.goto(url)
    page.wait_for_load_state("networkidle")
    # the foot's presenter toggle fits the page (widgets/page_fit.js); the index page has none
    if not url.endswith("/index.html"):
        page.get_by_role("button", name="Presenter mode").wait_for(timeout=60_000)
    page.wait_for_timeout(400)  # the fitted tables lay out again


def _measured(server: str, name: str) -> dict[str, dict]:
    measured = {}
    with browser_page() as (page, log):
        for size, (width, height, theme) in WIDTHS.items():
            _open(page, f"{server}/{name}.html", width, height, theme)
            measured[size] = page.evaluate(MEASURE, WHOLE_CELL_CHARS)
            SHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SHOTS / f"{name}-{width}-{theme}.png"), full_page=True)
        assert log.console_errors == [] and log.blocked == []
    return measured


@pytest.mark.parametrize("name", PAGES)
def test_no_short_cell_wraps_and_no_number_breaks_on_a_phone_or_a_wide_screen(server, name):
    measured = _measured(server, name)
    for size, found in measured.items():
        assert found["wrapped"] == [], (
            f"{name} at {size}: {len(found['wrapped'])} short cells wrap: {found['wrapped'][:12]}"
        )
        assert found["broken"] == [], f"{name} at {size}: numbers broken across lines: {found['broken'][:12]}"
        for table in found["scrolling"]:
            # a table that scrolls names what it hides, in a line drawn above it
            assert "column" in table["hidden"] and table["said"] not in ("none", "normal", ""), (name, size, table)
