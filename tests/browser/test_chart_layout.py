"""Every Vega chart of the course on a 390 px phone (dark) and a 1440 px screen (light), in the
static site: it stays inside its output, its plot keeps a useful width on the phone and grows on
the wide screen, and its text is readable (15 px or more), inside the chart, not cut short, not
piled on other text and not crossed by a line the chart draws (a traced lane's dashed rule). Its
legends stay inside its output and say things in words (no "true" / "false"), and it has a text
alternative: the aria-label Vega gives it. Screenshots of every chart go to /tmp/ui-shots/charts/
for a person to look at.

The site is built from only the notebooks that draw charts; marimo's export runs each notebook
once, as `marimo run` would, and the exported page draws its charts with the same front-end. The
export bakes in the builder's marimo theme, so the dark pass serves the page with its theme set to
dark, as a reader whose marimo is dark would see it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from chromium import browser_page

from bench.harness.static_server import static_server
from lab.teach import charts, course
from publish import site as sitebuild

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
      // a chart in view: the other options of a precomputed choice wait hidden, each with its own
      if (el.classList.contains("vega-embed") && el.checkVisibility()) embeds.push(el);
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
    chart.legends = [...svg.querySelectorAll("g.role-legend")].map(box);
    chart.legendLabels = [...svg.querySelectorAll(".role-legend-label text")].map((text) => text.textContent);
    // What a screen reader says for the chart: Vega writes the spec's description onto the
    // element it draws the SVG in, which it marks as the graphics document.
    const drawnIn = svg.parentElement;
    chart.label = drawnIn.getAttribute("role") === "graphics-document" ? drawnIn.getAttribute("aria-label") || "" : "";
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


def _gallery_calls() -> list[tuple[str, list]]:
    """Charts whose legends and labels depend on the data, each called with data that makes them
    widest: the course's notebooks draw them with whatever their dropdowns start on (notebook 10:
    MXFP4, where no question is gained), and a reader can pick the rest. Every retrieval outcome at
    once and the longest format name; layers whose rank moves and top channels, named in words."""
    rng = np.random.default_rng(0)
    title = "MLX affine 2-bit g64"
    fp32 = rng.uniform(-0.08, 0.5, 64)
    quantized = fp32 - rng.uniform(-0.05, 0.25, 64)
    fp32[:4], quantized[:4] = [0.3, 0.2, -0.05, -0.04], [0.25, -0.03, 0.04, -0.06]  # one of each outcome
    outcomes = {(True, True): "right in both", (True, False): "lost: now wrong"}
    outcomes |= {(False, True): "gained: now right", (False, False): "wrong in both"}
    margins = [
        {
            "question": f"question {i}",
            "fp32_margin": a,
            "margin": b,
            "outcome": outcomes[a >= 0, b >= 0],
            "picked": "a passage",
        }
        for i, (a, b) in enumerate(zip(fp32.tolist(), quantized.tolist(), strict=True))
    ]
    roles = ["attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"]
    names = [f"encoder.layer.{n}.{role}" for n in range(6) for role in [*roles, "intermediate.dense", "output.dense"]]
    weight_error, output_error = rng.uniform(0.3, 0.45, 36), rng.uniform(0.2, 0.6, 36)
    layers = [
        {
            "layer": name,
            "weight_error": w,
            "output_error": o,
            "weight_rank": 1.0,
            "output_rank": 1.0,
            "peak_to_median": 3.0,
            "disagreeing": i in (5, 11, 17),
        }
        for i, (name, w, o) in enumerate(zip(names, weight_error.tolist(), output_error.tolist(), strict=True))
    ]
    rms = rng.gamma(2.0, 0.2, 384)
    rms[[10, 200, 301]] *= 20
    return [
        ("retrieval_margins_chart", [margins, title]),
        ("layer_errors_chart", [layers, title]),
        ("channel_outliers_chart", [rms.tolist(), [10, 200, 301], "encoder.layer.5.output.dense"]),
    ]


GALLERY_CALLS = _gallery_calls()


def _gallery_notebook() -> str:
    """A marimo notebook that draws each of GALLERY_CALLS in a cell of its own."""
    cells = "".join(
        f"""

@app.cell(hide_code=True)
def _(charts, json):
    charts.{name}(*json.loads({json.dumps(args)!r}))
    return
"""
        for name, args in GALLERY_CALLS
    )
    return f"""import marimo

app = marimo.App(width="medium")


@app.cell(hide_code=True)
def _():
    import json

    from lab.teach import charts

    return charts, json
{cells}

if __name__ == "__main__":
    app.run()
"""


@pytest.fixture(scope="module")
def gallery(tmp_path_factory):
    notebook = tmp_path_factory.mktemp("chart-gallery-notebook") / "chart_gallery.py"
    notebook.write_text(_gallery_notebook())
    directory = tmp_path_factory.mktemp("chart-gallery")
    sitebuild.build(directory, notebooks=[notebook])
    with static_server(directory) as url:
        yield f"{url}/chart_gallery.html"


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
    if not chart["label"].strip():
        found.append(f"{where} has no text alternative (the spec's description, its aria-label)")
    for legend in chart["legends"]:
        if legend["left"] < out["left"] - 0.5 or legend["right"] > out["right"] + 0.5:
            found.append(f"{where}: a legend spans x {legend['left']:.0f}-{legend['right']:.0f}, outside its output")
        if legend["bottom"] > drawn["bottom"] + 0.5:
            found.append(f"{where}: a legend ends at y {legend['bottom']:.0f}, below the chart's {drawn['bottom']:.0f}")
    for label in chart["legendLabels"]:
        if label.strip().lower() in ("true", "false"):
            found.append(f"{where}: a legend entry reads {label!r}, not words")
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


# A precomputed choice's last option in each of its menus and sliders (widgets/choice.js): its charts
# were drawn while hidden, and must lay out again once shown.
LAST_OPTIONS = """() => {
  const hosts = [...document.querySelectorAll("*")].filter((node) => node.shadowRoot);
  let moved = 0;
  for (const root of hosts.map((host) => host.shadowRoot)) {
    for (const select of root.querySelectorAll(".lab-choice select")) {
      select.value = select.options[select.options.length - 1].value;
      select.dispatchEvent(new Event("change"));
      moved += 1;
    }
    for (const slider of root.querySelectorAll('.lab-choice input[type="range"]')) {
      slider.value = slider.max;
      slider.dispatchEvent(new Event("input"));
      moved += 1;
    }
  }
  return moved;
}"""


def _measure(url: str, name: str) -> dict[str, list[dict]]:
    """Every chart on the page at `url`, measured at each of PASSES, with screenshots; a page with
    precomputed choices is measured again with each control on its last option."""
    measured = {}
    with browser_page() as (page, log):
        for size, (width, height, theme) in PASSES.items():
            _open(page, url, width, height, theme)
            measured[size] = page.evaluate(MEASURE)
            if page.evaluate(LAST_OPTIONS):
                page.wait_for_function(DRAWN, timeout=30000)
                page.wait_for_timeout(500)  # the charts shown lay out again on the resize
                measured[f"{size} (last options)"] = page.evaluate(MEASURE)
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
    return measured


def _check(measured: dict[str, list[dict]], name: str) -> None:
    if "phone (last options)" in measured:
        _check(
            {"phone": measured["phone (last options)"], "wide": measured["wide (last options)"]},
            f"{name}, last options",
        )
    phone, wide = measured["phone"], measured["wide"]
    problems = [
        problem
        for size, page_charts in measured.items()
        if size in ("phone", "wide")
        for i, chart in enumerate(page_charts)
        for problem in _problems(chart, name, i, size)
    ]
    assert problems == []
    widths = [(small["plots"], large["plots"]) for small, large in zip(phone, wide, strict=True)]
    for i, (small, large) in enumerate(widths):
        assert small and len(small) == len(large), (name, i, widths)
        assert min(small) >= PHONE_PLOT, f"{name} chart {i}: plot {small} px wide on a phone"
        assert all(b >= 1.5 * a for a, b in zip(small, large, strict=True)), f"{name} chart {i}: {small} -> {large}"


@pytest.mark.parametrize("name", list(NOTEBOOKS))
def test_every_chart_fits_a_phone_and_uses_a_wide_screen(server, name):
    measured = _measure(f"{server}/{name}.html", name)
    phone, wide = measured["phone"], measured["wide"]
    drawn = len(phone)
    expected = sum(2 if call == "similarity_heatmaps_chart" else 1 for call in NOTEBOOKS[name])
    assert drawn >= expected and len(wide) == drawn, (name, NOTEBOOKS[name], drawn, len(wide))
    _check(measured, name)


def test_charts_drawn_with_their_widest_data_fit_a_phone_and_use_a_wide_screen(gallery):
    measured = _measure(gallery, "gallery")
    assert len(measured["phone"]) == len(measured["wide"]) == len(GALLERY_CALLS)
    _check(measured, "gallery")


def test_a_log_axis_writes_its_decades_below_one_as_powers_of_ten(server):
    # notebook 12's first chart: KL divergence on a log axis of whole decades, from 10⁻⁴ or so
    with browser_page() as (page, log):
        _open(page, f"{server}/12_a_chat_models_answers.html", 1440, 900, "light")
        labels = page.evaluate(
            "() => {"
            + FIND_EMBEDS
            + """  const axis = embeds[0].querySelector('[aria-label^="Y-axis"]');
  return [...axis.querySelectorAll(".role-axis-label text")].map((text) => text.textContent);
}"""
        )
        assert log.console_errors == []
    superscripts = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹", "0123456789")
    powers = sorted(
        -int(label.removeprefix("10⁻").translate(superscripts)) if label.startswith("10⁻") else len(label) - 1
        for label in labels
    )
    # one label a decade, every decade, those of 1 and up as numbers ("1", "10"), below 1 as powers
    assert all(re.fullmatch(r"10⁻[¹²³⁴⁵⁶⁷⁸⁹]|10*", label) for label in labels), labels
    assert powers == list(range(powers[0], powers[-1] + 1)) and powers[0] < 0 <= powers[-1], labels
