"""Every course page as slides (?slides: marimo's slides layout, one slide per cell's output) on a
1920 × 1080 projector: a slide shows no static-page banner above it (notebooks/course.css), a
slide that holds a precomputed choice's controls also holds what they change (one of the choice's
panels), and a slide whose text points at something "below" holds a figure, a widget or a table
after that text. Each slide is screenshot to /tmp/ui-shots/slides/ for a person to look at.

Before, notebook 3's slide 5 was its three controls alone (the table they change was slide 6),
and its first slide and notebook 1's said "click … below" above nothing: the widget was the next
slide."""

from __future__ import annotations

from pathlib import Path

import pytest
from chromium import browser_page

from lab.teach import course

pytestmark = pytest.mark.browser

SHOTS = Path("/tmp/ui-shots/slides")
PROJECTOR = {"width": 1920, "height": 1080}
PAGES = [file.removesuffix(".py") for file, _, _ in course.NOTEBOOKS]

# Each slide: the precomputed choices whose controls it holds (in a widget's shadow root), the
# choices whose panels it holds, and each sentence of its own text that says "below", with whether
# a figure, a widget or a table comes after it on the same slide.
SLIDES = r"""() => {
  const deep = (root, selector) => [...root.querySelectorAll(selector),
    ...[...root.querySelectorAll("*")].filter((node) => node.shadowRoot).flatMap((node) => deep(node.shadowRoot, selector))];
  // "below" that points at something ("the lab below", "click … below (", "Below, …"), not "falls
  // below 1", "is below its weight error" or "sink below the diagonal"
  const POINTS_DOWN = /\bbelow\b(?!\s+(?:the|its|a|an|zero|one|[−+-]?\d))/i;
  const shown = ["marimo-anywidget", ".vega-embed", "table", "img", "marimo-ui-element"].join(", ");
  return [...document.querySelectorAll(".reveal .slides > section")].map((section, index) => {
    const below = [];
    for (const text of section.querySelectorAll(".markdown.prose :is(p, li, .paragraph)")) {
      if (text.querySelector(".paragraph") || text.closest("[data-lab-choice][hidden]")) continue;
      const sentence = text.textContent.replace(/\s+/g, " ").split(/(?<=[.!?])\s+/).find((part) => POINTS_DOWN.test(part));
      if (!sentence) continue;
      const after = [...section.querySelectorAll(shown)].some(
        (node) => text.compareDocumentPosition(node) & Node.DOCUMENT_POSITION_FOLLOWING);
      below.push({ sentence: sentence.trim().slice(0, 120), after });
    }
    return {
      slide: index + 1,
      controls: deep(section, ".lab-choice").map((choice) => choice.getAttribute("data-lab-group")),
      panels: [...new Set([...section.querySelectorAll("[data-lab-choice]")].map((panel) => panel.getAttribute("data-lab-choice")))],
      below,
    };
  });
}"""


def _slides(server: str, name: str) -> tuple[list[dict], bool]:
    with browser_page() as (page, log):
        page.set_viewport_size(PROJECTOR)
        page.goto(f"{server}/{name}.html?slides")
        page.locator(".reveal .slides > section").first.wait_for(timeout=60_000)
        page.wait_for_load_state("networkidle")
        page.wait_for_timeout(1500)  # every cell's output drawn into its slide
        slides = page.evaluate(SLIDES)
        banner = page.locator(".lab-static-banner")
        banner_shown = banner.count() > 0 and banner.first.is_visible()
        SHOTS.mkdir(parents=True, exist_ok=True)
        for slide in slides:
            page.screenshot(path=str(SHOTS / f"{name}-{slide['slide']:02d}.png"))
            page.keyboard.press("ArrowRight")
            page.wait_for_timeout(400)
        assert log.console_errors == [] and log.blocked == []
    return slides, banner_shown


@pytest.mark.parametrize("name", PAGES)
def test_each_slide_shows_what_its_controls_change_and_what_its_text_points_at(server, name):
    slides, banner_shown = _slides(server, name)
    assert len(slides) > 3, (name, slides)
    assert not banner_shown, f"{name}: the static page's banner shows above the slides"
    for slide in slides:
        missing = sorted(set(slide["controls"]) - set(slide["panels"]))
        assert not missing, (
            f"{name} slide {slide['slide']}: the controls of {missing} are alone, without what they change"
        )
        nothing = [below["sentence"] for below in slide["below"] if not below["after"]]
        assert not nothing, f"{name} slide {slide['slide']} says {nothing} with nothing below it"
