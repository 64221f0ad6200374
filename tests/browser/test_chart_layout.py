"""Every Vega chart of the course on a 390 px phone (dark) and a 1440 px screen (light), in the
static site: it stays inside its output, its plot keeps a useful width on the phone and grows on
the wide screen, and its text is readable (15 px or more), inside the chart, not cut short, not
piled on other text and not crossed by a line the chart draws (a traced lane's dashed rule). Screenshots of every chart go to /tmp/ui-shots/charts/ for a person to
look at.

The site is built from only the notebooks that draw charts; marimo's export runs each notebook
once, as `marimo run` would, and the exported page draws its charts with the same front-end. The
export bakes in the builder's marimo theme, so the dark pass serves the page with its theme set to
dark, as a reader whose marimo is dark would see it."""

from __future__ import annotations

import functools
import http.server
import re
import threading
from pathlib import Path

import pytest
from chromium import browser_page

from lab.teach import charts, course
from widgets.build import site as sitebuild

pytestmark = pytest.mark.browser

SHOTS = Path("/tmp/ui-shots/charts")
PASSES = {"phone": (390, 844, "dark"), "wide": (1440, 900, "light")}
# A phone leaves about 316 px for a chart; the y axis takes the rest of what the plot does not.
# Charts are laid out for a plot of charts.NARROWEST_PLOT; a log axis's "0.002" takes a few px more.
PHONE_PLOT = charts.NARROWEST_PLOT - 10
TEXT_PX = 15

CHART_CALL = re.compile(r"\b(\w+_chart)\(")
CHART_FUNCTIONS = {name for name in dir(charts) if name.endswith("_chart") and callable(getattr(charts, name))}


def chart_notebooks() -> dict[str, set[str]]:
    """The course's notebooks that draw charts, and the chart functions each one calls."""
    found = {}
    for file, _, _ in course.NOTEBOOKS:
        calls = set(CHART_CALL.findall((sitebuild.NOTEBOOKS / file).read_text())) & CHART_FUNCTIONS
        if calls:
            found[file.removesuffix(".py")] = calls
    return found


NOTEBOOKS = chart_notebooks()

# Every vega-embed on the page, inside marimo's shadow roots too, into `embeds` (a JS prelude).
FIND_EMBEDS = """  const embeds = [];
  const walk = (root) => {
    for (const el of root.querySelectorAll("*")) {
      if (el.shadowRoot) walk(el.shadowRoot);
      if (el.classList.contains("vega-embed")) embeds.push(el);
    }
  };
  walk(document);
"""

# Every chart on the page: where it is drawn, its plot area(s), every piece of text it shows, and
# the rules it draws as marks (not axis ticks or grid lines).
MEASURE = (
    """() => {
"""
    + FIND_EMBEDS
    + """  const up = (el) => el.parentElement || (el.getRootNode() instanceof ShadowRoot ? el.getRootNode().host : null);
  const box = (el) => { const r = el.getBoundingClientRect(); return {left: r.left, right: r.right, top: r.top, bottom: r.bottom}; };
  const shown = (text) => {
    for (let el = text; el && el.tagName !== "svg"; el = el.parentElement) {
      const style = getComputedStyle(el);
      if (style.display === "none" || style.visibility === "hidden" || style.opacity === "0" || style.fillOpacity === "0") return false;
    }
    return text.textContent.trim() !== "";
  };
  return embeds.map((embed) => {
    let area = embed;
    while (area && !area.classList.contains("output-area")) area = up(area);
    const svg = embed.querySelector("svg.marks");
    const chart = {output: box(area), drawn: box(svg || embed.querySelector("canvas") || embed), svg: !!svg};
    if (!svg) return chart;
    // The plot is the view's own background rect: the root group's for one view (layers share
    // it), each sub-view's for a concatenation.
    const background = (group) => group.querySelector(":scope > g > path.background");
    const root = svg.querySelector("g.mark-group.role-frame.root");
    const views = background(root).getBoundingClientRect().width > 2
      ? [root]
      : [...root.querySelectorAll(":scope > g > g > g.mark-group.role-scope")];
    chart.plots = views.map((view) => background(view).getBoundingClientRect().width - 1);
    chart.rules = [...svg.querySelectorAll("g.mark-rule.role-mark line")].map(box);
    chart.texts = [...svg.querySelectorAll("text")].filter(shown).map((text) => ({
      text: text.textContent,
      px: parseFloat(getComputedStyle(text).fontSize),
      mark: !!text.closest(".role-mark"),
      title: !!text.closest(".role-title"),
      ...box(text),
    }));
    return chart;
  });
}"""
)

# marimo draws an output when it comes into view: bring each one into view, then wait for every
# chart to be drawn.
DRAWN = (
    """() => {
"""
    + FIND_EMBEDS
    + """  return embeds.length > 0 && embeds.every((embed) => embed.querySelector("svg.marks path.background, canvas"));
}"""
)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    directory = tmp_path_factory.mktemp("chart-site")
    sitebuild.build(directory, notebooks=[sitebuild.NOTEBOOKS / f"{name}.py" for name in NOTEBOOKS])

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(directory)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def _open(page, url: str, width: int, height: int, theme: str):
    page.set_viewport_size({"width": width, "height": height})
    # The course follows the reader's system theme (pyproject's [tool.marimo.display]), and
    # marimo's charts follow the course.
    page.emulate_media(color_scheme=theme)
    page.goto(url)
    page.wait_for_load_state("networkidle")
    outputs = page.locator(".output-area")
    for i in range(outputs.count()):
        outputs.nth(i).scroll_into_view_if_needed()
    page.wait_for_function(DRAWN, timeout=30000)
    page.wait_for_timeout(500)  # container-width charts settle after their first layout


def _problems(chart: dict, name: str, i: int, size: str) -> list[str]:
    where = f"{name} chart {i} ({size})"
    if not chart["svg"]:
        return [f"{where} is not drawn as SVG (charts.EMBED_OPTIONS)"]
    found = []
    out, drawn = chart["output"], chart["drawn"]
    if drawn["left"] < out["left"] - 0.5 or drawn["right"] > out["right"] + 0.5:
        found.append(
            f"{where} spans x {drawn['left']:.0f}-{drawn['right']:.0f} outside its output {out['left']:.0f}-{out['right']:.0f}"
        )
    for text in chart["texts"]:
        if text["px"] < TEXT_PX:
            found.append(f"{where}: {text['text']!r} is {text['px']} px")
        if text["left"] < drawn["left"] - 1 or text["right"] > drawn["right"] + 1:
            found.append(f"{where}: {text['text']!r} runs out of the chart")
        if text["title"] and text["text"].endswith("\u2026"):
            found.append(f"{where}: the title line {text['text']!r} is cut short")
    marks = [t for t in chart["texts"] if t["mark"]]
    for a in marks:
        for b in chart["texts"]:
            if a is b:
                continue
            wide = min(a["right"], b["right"]) - max(a["left"], b["left"])
            high = min(a["bottom"], b["bottom"]) - max(a["top"], b["top"])
            if wide > 2 and high > 2:
                found.append(f"{where}: {a['text']!r} covers {b['text']!r}")
        for rule in chart["rules"]:
            if _crosses(rule, a):
                found.append(f"{where}: a rule runs through {a['text']!r}")
    return found


def _crosses(rule: dict, text: dict, margin: float = 1.0) -> bool:
    """Whether an upright or level rule runs through a text's box, not just along its edge (a
    slanting rule's box says too little, so it is never counted)."""
    inside_x = text["left"] + margin < rule["left"] and rule["right"] < text["right"] - margin
    inside_y = text["top"] + margin < rule["top"] and rule["bottom"] < text["bottom"] - margin
    overlap_x = min(rule["right"], text["right"]) - max(rule["left"], text["left"])
    overlap_y = min(rule["bottom"], text["bottom"]) - max(rule["top"], text["top"])
    upright = rule["right"] - rule["left"] < 4
    level = rule["bottom"] - rule["top"] < 4
    return (upright and inside_x and overlap_y > 2) or (level and inside_y and overlap_x > 2)


@pytest.mark.parametrize("name", list(NOTEBOOKS))
def test_every_chart_fits_a_phone_and_uses_a_wide_screen(server, name):
    measured = {}
    with browser_page() as (page, log):
        for size, (width, height, theme) in PASSES.items():
            _open(page, f"{server}/{name}.html", width, height, theme)
            measured[size] = page.evaluate(MEASURE)
            SHOTS.mkdir(parents=True, exist_ok=True)
            # A screenshot shows only what the page's scrolling area shows: make it tall enough
            # for the tallest chart (the widths measured above do not depend on the height).
            page.set_viewport_size({"width": width, "height": 2400})
            page.add_style_tag(content=".lab-static-banner { display: none !important; }")
            page.wait_for_timeout(300)
            charted = page.locator(".output-area:has(.vega-embed)")
            for i in range(charted.count()):
                charted.nth(i).screenshot(path=str(SHOTS / f"{name}-{i}-{width}-{theme}.png"))
        assert log.console_errors == [] and log.blocked == []
    phone, wide = measured["phone"], measured["wide"]
    drawn = len(phone)
    expected = sum(2 if call == "similarity_heatmaps_chart" else 1 for call in NOTEBOOKS[name])
    assert drawn >= expected and len(wide) == drawn, (name, NOTEBOOKS[name], drawn, len(wide))
    problems = [
        problem
        for size, page_charts in measured.items()
        for i, chart in enumerate(page_charts)
        for problem in _problems(chart, name, i, size)
    ]
    assert problems == []
    widths = [(small["plots"], large["plots"]) for small, large in zip(phone, wide, strict=True)]
    for i, (small, large) in enumerate(widths):
        assert small and len(small) == len(large), (name, i, widths)
        assert min(small) >= PHONE_PLOT, f"{name} chart {i}: plot {small} px wide on a phone"
        assert all(b >= 1.5 * a for a, b in zip(small, large, strict=True)), f"{name} chart {i}: {small} -> {large}"
