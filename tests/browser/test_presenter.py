"""Course-wide presenter mode on the static site (notebooks/course.css, widgets/presenter.js): on a
1920 × 1080 projector the whole page grows by one factor, prose to 27 px or more and tables, chart
labels and widgets with it, in a column nearly the screen's width; on a phone nothing scrolls
sideways. The toggle at each page's foot works by keyboard, and the choice follows to the next page."""

from __future__ import annotations

import pytest
from chromium import browser_page

pytestmark = pytest.mark.browser

# Every element of a kind, in the page and in every shadow root under it (marimo draws its charts
# and the lab's widgets in shadow roots).
DEEP = """
const deep = (root, selector) => [...root.querySelectorAll(selector),
  ...[...root.querySelectorAll("*")].filter((node) => node.shadowRoot).flatMap((node) => deep(node.shadowRoot, selector))];
// the font size a reader sees: the computed size times the zoom of the element's ancestors
const seen = (node) => parseFloat(getComputedStyle(node).fontSize) * node.currentCSSZoom;
"""

MEASURE = (
    """() => {"""
    + DEEP
    + """
  const prose = document.querySelector(".markdown.prose :is(p, .paragraph)");
  const cell = document.querySelector(".markdown.prose table td");
  const label = deep(document, ".vega-embed svg text")[0];
  const widget = deep(document, ".four-bit-lab:not(.lab-presenter-switch)")[0];
  const column = prose.closest(".output-area").getBoundingClientRect();
  return {
    prose: seen(prose),
    table: cell ? seen(cell) : null,
    label: label ? seen(label) : null,
    widget: widget ? seen(widget) : null,
    columnWidth: column.width,
    pageWidth: document.documentElement.scrollWidth,
    viewport: innerWidth,
    on: document.documentElement.classList.contains("lab-course-presenter"),
  };
}"""
)

# The element that has keyboard focus, looking into shadow roots.
FOCUSED = """() => {
  let node = document.activeElement;
  while (node && node.shadowRoot && node.shadowRoot.activeElement) node = node.shadowRoot.activeElement;
  return node ? node.textContent : null;
}"""


def _open(page, url: str, width: int, height: int = 1080) -> None:
    page.set_viewport_size({"width": width, "height": height})
    page.goto(url)
    page.get_by_role("button", name="Presenter mode").wait_for(timeout=60_000)
    page.locator(".four-bit-lab").first.wait_for(timeout=60_000)
    page.wait_for_timeout(500)  # vega lays its chart out once its container has a width


def _press_by_keyboard(page) -> None:
    """Reach the toggle with the keyboard (Tab from the link before it) and press it with Enter."""
    page.get_by_role("link", name="2 · The scale is a ruler").focus()
    page.keyboard.press("Tab")
    assert page.evaluate(FOCUSED) == "Presenter mode"
    page.keyboard.press("Enter")
    page.wait_for_timeout(500)


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_presenter_mode_enlarges_prose_charts_and_widgets_together_on_a_projector(server, theme, tmp_path):
    with browser_page() as (page, log):
        page.emulate_media(color_scheme=theme)
        _open(page, f"{server}/01_one_nibble.html", 1920)
        before = page.evaluate(MEASURE)
        assert not before["on"], "presenter mode is off unless a teacher turns it on"
        assert before["prose"] == pytest.approx(17.78, abs=0.05)

        _press_by_keyboard(page)
        after = page.evaluate(MEASURE)
        toggle = page.get_by_role("button", name="Presenter mode")
        assert after["on"] and toggle.get_attribute("aria-pressed") == "true"
        assert page.evaluate(FOCUSED) == "Presenter mode", "the keyboard stays on the toggle"

        assert after["prose"] >= 27
        factor = after["prose"] / before["prose"]
        assert after["label"] / before["label"] == pytest.approx(factor, rel=0.01)
        assert after["widget"] / before["widget"] == pytest.approx(factor, rel=0.01)
        assert after["widget"] >= 27
        assert after["columnWidth"] >= 0.85 * 1920
        assert after["pageWidth"] <= after["viewport"], "nothing scrolls sideways"
        # every widget's own toggle shows the course-wide mode
        own = page.get_by_role("button", name="Presenter view")
        assert own.count() >= 1
        assert {own.nth(i).get_attribute("aria-pressed") for i in range(own.count())} == {"true"}

        page.screenshot(path=str(tmp_path / f"presenter-1920-{theme}.png"))
        page.keyboard.press("Enter")  # and off again, by the same key
        page.wait_for_timeout(500)
        off = page.evaluate(MEASURE)
        assert not off["on"] and toggle.get_attribute("aria-pressed") == "false"
        assert off["prose"] == pytest.approx(before["prose"], abs=0.05)
        assert {own.nth(i).get_attribute("aria-pressed") for i in range(own.count())} == {"false"}
        assert not log.blocked and not log.console_errors


def test_presenter_mode_scales_a_prose_table_by_the_prose_factor(server):
    with browser_page() as (page, log):
        _open(page, f"{server}/07_capacity_and_cost.html", 1920)
        before = page.evaluate(MEASURE)
        page.get_by_role("button", name="Presenter mode").click()
        page.wait_for_timeout(500)
        after = page.evaluate(MEASURE)
        assert after["table"] >= 27
        assert after["table"] / before["table"] == pytest.approx(after["prose"] / before["prose"], rel=0.01)
        assert after["label"] / before["label"] == pytest.approx(after["prose"] / before["prose"], rel=0.01)
        assert after["pageWidth"] <= after["viewport"]
        assert not log.blocked and not log.console_errors


def test_a_link_opens_presenter_mode_and_the_choice_follows_to_the_next_page(server):
    with browser_page() as (page, log):
        _open(page, f"{server}/01_one_nibble.html?present", 1920)
        assert page.evaluate(MEASURE)["prose"] >= 27
        _open(page, f"{server}/02_scale_is_a_ruler.html", 1920)
        remembered = page.evaluate(MEASURE)
        assert remembered["on"] and remembered["prose"] >= 27
        # a widget's own toggle, pressed while the whole page is enlarged, turns the page back
        page.get_by_role("button", name="Presenter view").first.click()
        page.wait_for_timeout(300)
        assert not page.evaluate(MEASURE)["on"]
        _open(page, f"{server}/01_one_nibble.html?present=off", 1920)
        assert not page.evaluate(MEASURE)["on"]
        assert not log.blocked and not log.console_errors


def test_presenter_mode_on_a_phone_keeps_the_page_within_the_screen(server):
    with browser_page() as (page, log):
        _open(page, f"{server}/01_one_nibble.html?present", 390, 844)
        phone = page.evaluate(MEASURE)
        assert phone["on"]
        assert phone["prose"] >= 16
        assert phone["pageWidth"] <= 390, "nothing scrolls sideways on a phone"
        page.get_by_role("button", name="Presenter mode").scroll_into_view_if_needed()
        assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
        assert not log.blocked and not log.console_errors
