"""Every control on every course page works on the static site, with no kernel (issue 25, item 1).

No course page shows a marimo control, which only a kernel could act on (test_site's walk of
every page checks that, with assert_no_control_needs_a_kernel): menus and sliders are
precomputed choices (widgets/choice.py), and what needs the kernel (a file of your own, a typed
prompt) is hidden in favour of a note. Each choice is driven through every option of every
control: exactly the panels computed for the options now chosen show, each option shows its own
outcome, and that outcome agrees with numbers worked out here, by hand or by the lab's Python
for the same input, independently of the page.
"""

from __future__ import annotations

import json
import math
import re

import pytest
from chromium import browser_page
from playwright.sync_api import expect

from lab.numbers import format_number
from lab.teach import course
from publish import site as sitebuild

pytestmark = pytest.mark.browser

COURSE_PAGES = [file.removesuffix(".py") + ".html" for file, _, _ in course.NOTEBOOKS]
# The pages with precomputed choices, and the groups each carries.
CHOICES = {
    "03_mxfp4.html": {"mxfp4-block"},
    "04_nvfp4.html": {"nvfp4-tensor"},
    "07_capacity_and_cost.html": {"capacity"},
    "09_real_weights.html": {"real-weights"},
    "10_what_four_bits_do_to_answers.html": {"answers"},
    "11_formats_side_by_side.html": {"pareto", "byte-trace"},
}

# Every marimo control on the page, and whether a live-only wrapper (hidden there) holds it.
MARIMO_CONTROLS = f"""() => [...document.querySelectorAll({json.dumps(sitebuild.CONTROLS)})]
  .map((control) => ({{ tag: control.tagName, hidden: control.closest(".{course.LIVE_ONLY_CLASS}") !== null
    && getComputedStyle(control.closest(".{course.LIVE_ONLY_CLASS}")).display === "none" }}))"""
LIVE_ONLY_NOTES = f"""() => [...document.querySelectorAll(".{course.LIVE_ONLY_NOTE_CLASS}")]
  .map((note) => ({{ shown: note.checkVisibility(), text: note.innerText }}))"""
# A group's panels: what each was computed for, whether it shows, and its text, its no-break spaces
# (widgets/page_fit.js keeps "= 5" and "2 GB" on one line with them) read as the spaces they show.
PANELS = """(group) => [...document.querySelectorAll("[data-lab-choice]")]
  .filter((panel) => panel.getAttribute("data-lab-choice") === group)
  .map((panel) => {
    const shown = !panel.hidden && panel.checkVisibility();
    return { when: JSON.parse(panel.getAttribute("data-lab-when")), shown,
      text: shown ? panel.innerText.replace(/\\u00a0/g, " ") : "", markup: shown ? panel.innerHTML : "" };
  })"""


def _open(page, server, name):
    page.goto(f"{server}/{name}")
    page.wait_for_selector(".markdown.prose", timeout=30000)
    page.wait_for_load_state("networkidle")


def assert_no_control_needs_a_kernel(page, name: str) -> int:
    """On course page `name`, open in `page`: marimo's controls appear only inside live-only
    wrappers, which the static page hides, and the note shown instead names the live lab. Returns
    how many controls it found hidden (the course has five: notebook 6's file, tensor and block,
    notebook 12's prompt and device run; it had 18 marimo controls in view before)."""
    controls = page.evaluate(MARIMO_CONTROLS)
    assert [c for c in controls if not c["hidden"]] == [], f"{name} shows controls that need a kernel"
    notes = page.evaluate(LIVE_ONLY_NOTES)
    assert all(note["shown"] and "python3 labctl.py open" in note["text"] for note in notes), (name, notes)
    if name.startswith(("06_", "12_")):
        assert notes, f"{name} hides its file and prompt controls without saying so"
    return len(controls)


def _controls(page, group):
    """The controls of the choice for `group`: (name, kind, locator), in the widget's order."""
    widget = page.locator(f'.lab-choice[data-lab-group="{group}"]')
    widget.wait_for(timeout=30000)
    found = []
    for index in range(widget.locator("[data-lab-control]").count()):
        part = widget.locator("[data-lab-control]").nth(index)
        name = part.get_attribute("data-lab-control")
        if part.locator("select").count():
            found.append((name, "select", part.locator("select")))
        elif part.locator('input[type="range"]').count():
            found.append((name, "slider", part.locator('input[type="range"]')))
        else:
            found.append((name, "number", part.locator("input")))
    return found


def _assert_shown_exactly(page, group, values):
    """Only the panels computed for `values` show; returns their text and their markup."""
    panels = page.evaluate(PANELS, group)
    wrong = [p["when"] for p in panels if p["shown"] != all(values.get(k) == v for k, v in p["when"].items())]
    assert wrong == [], (group, values, wrong[:3])
    return "\n".join(p["text"] for p in panels if p["shown"]), "".join(p["markup"] for p in panels if p["shown"])


def _each_option(kind, control, options):
    """Set each option in turn, as a reader would, yielding it once it is set: a menu's options
    picked, a slider stepped from its start with the arrow key, a field typed into."""
    if kind == "slider":
        control.focus()
        control.press("Home")
        for step in range(len(options)):
            if step:
                control.press("ArrowRight")
            yield control.get_attribute("aria-valuetext")
        return
    for option in options:
        if kind == "select":
            control.select_option(option)
        else:
            control.fill(option)
            control.press("Enter")
        yield option


def _set(kind, control, option, options):
    if kind == "slider":
        control.focus()
        control.press("Home")
        for _ in range(options.index(option)):
            control.press("ArrowRight")
    elif kind == "select":
        control.select_option(option)
    else:
        control.fill(option)
        control.press("Enter")


def _drive(page, group):
    """Every option of every control of `group`'s choice, one control at a time from the page's
    own settings; returns ({control: {option: text shown}}, the settings)."""
    panels = page.evaluate(PANELS, group)
    shown_first = [p["when"] for p in panels if p["shown"]]
    assert shown_first, f"{group}: no panel shows before any control is touched"
    # The page's settings, as the panels shown first say (each names the options it is for).
    names = sorted({name for p in panels for name in p["when"]})
    settings = {name: next(w[name] for w in shown_first if name in w) for name in names}
    _assert_shown_exactly(page, group, settings)
    controls = _controls(page, group)
    assert sorted(name for name, _, _ in controls) == names, group
    seen = {}
    for name, kind, control in controls:
        # the options in the panels' order, which is the control's own (widgets/choice.py)
        options = list(dict.fromkeys(p["when"][name] for p in panels if name in p["when"]))
        if kind == "select":
            assert control.evaluate("(node) => [...node.options].map((o) => o.value)") == options, (group, name)
        if kind == "slider":
            assert int(control.get_attribute("max")) == len(options) - 1, (group, name)
        texts, markups = {}, set()
        for option in _each_option(kind, control, options):
            texts[option], markup = _assert_shown_exactly(page, group, settings | {name: option})
            markups.add(markup)
        assert list(texts) == options, (group, name)
        assert len(markups) == len(options), f"{group}/{name}: some options show the same outcome"
        _set(kind, control, settings[name], options)
        seen[name] = texts
    return seen, settings


@pytest.mark.parametrize("name", sorted(CHOICES))
def test_every_option_of_every_choice_shows_its_own_outcome(server, name):
    with browser_page() as (page, log):
        page.set_viewport_size({"width": 1440, "height": 900})
        _open(page, server, name)
        groups = set(page.locator(".lab-choice").evaluate_all("(nodes) => nodes.map((n) => n.dataset.labGroup)"))
        assert groups == CHOICES[name]
        driven = {group: _drive(page, group) for group in sorted(groups)}
        CHECKS[name](driven)
        assert log.blocked == [] and log.console_errors == []


# What each page's outcomes must say, worked out independently of the page.


def _capacity(driven):
    texts, _ = driven["capacity"]
    steps = texts["billions"]
    assert len(steps) == 140 and list(steps)[0] == "0.5" and list(steps)[-1] == "70"
    for step, text in steps.items():
        billions = float(step)
        rows = text + "\n"  # each row ends at a line's end, so "14" is not read out of "140"
        # the payload column is in GB (its header says so), beside the format, where a phone shows it
        assert "payload, GB" in text, step
        # b × 10⁹ weights × 16 bits / 8 / 10⁹ = 2b GB; Q4_K: b × 4.5 / 8 (the payload first, where a
        # phone shows it, then the bits per weight)
        assert f"BF16\t{format_number(2 * billions)}\t16\n" in rows, step
        assert f"Q4_K\t{format_number(round(billions * 4.5 / 8, 6))}\t4.5\n" in rows, step
    assert "NVFP4\t39.375\t4.5\n" in steps["70"] + "\n" and "BF16\t140\t16\n" in steps["70"]  # the article's 70 B


def _mxfp4(driven):
    texts, settings = driven["mxfp4-block"]
    assert settings == {"seed": "7", "spread": "0", "largest": "5 (both rules agree)"}
    assert list(texts["seed"]) == [str(n) for n in range(3, 8)]
    for spread, text in texts["spread"].items():
        power = int(spread.replace("\u2212", "-"))
        # amax is the planted largest element, 5 × 2^spread; floor rule: 127 + ⌊log₂ 5⌋ − 2 + spread;
        # ceil rule: 127 + ⌈log₂(5/6)⌉ + spread: the same byte
        assert f"amax = {format_number(5 * 2.0**power)}" in text, spread
        assert re.search(rf"ocp\s+0x{127 + power:02X}\b", text) and re.search(rf"mlx\s+0x{127 + power:02X}\b", text)
    seven = texts["largest"]["7 (the rules disagree)"]
    # ⌊log₂ 7⌋ − 2 = 0 but ⌈log₂(7/6)⌉ = 1: the rules pick bytes one apart (the Try this)
    assert re.search(r"ocp\s+0x7F\b", seven) and re.search(r"mlx\s+0x80\b", seven)
    assert "amax = 7" in seven


def _nvfp4(driven):
    texts, settings = driven["nvfp4-tensor"]
    assert settings == {"seed": "3", "tensor-scale": "on (MLX convention)"}
    off, on = texts["tensor-scale"]["off"], texts["tensor-scale"]["on (MLX convention)"]
    assert "tensor factor 1." in " ".join(off.split())
    assert "tensor factor 1." not in " ".join(on.split())
    assert "NVFP4" in on and "NVFP4" in off  # each carries its own on-device report


def _real_weights(driven):
    from lab.study import real_weights

    texts, _ = driven["real-weights"]
    report = real_weights.evaluate_model(real_weights.load_weights(), cache=True)  # the build's cache
    records = report.records()
    assert set(texts["format"]) == {row["format"] for row in report.summary_records()}
    for name, text in texts["format"].items():
        measured = [row for row in records if row["format"] == name and not row["skipped"]]
        worst = max(measured, key=lambda row: row["relative_rmse"])
        assert f"{worst['relative_rmse']:.4f}" in text and f"{name}, tensor by tensor" in text, name


def _answers(driven):
    from lab.study import behaviour
    from lab.teach.prepare import COMPARED_FORMATS

    texts, settings = driven["answers"]
    titles = {row["format"]: row["title"] for row in behaviour.retrieval_study(cache=True)}
    assert list(texts["format"]) == [titles[name] for name in COMPARED_FORMATS]
    for name in COMPARED_FORMATS:
        answers = behaviour.retrieval_answers(name, cache=True)
        text = " ".join(texts["format"][titles[name]].split())
        assert f"With {answers.format_title}, {answers.closer} of {len(answers.questions)} questions" in text, name
        spearman = behaviour.layer_study(name, cache=True).spearman
        assert math.isfinite(spearman) and format_number(round(spearman, 2)).lstrip("+") in text, name


def _side_by_side(driven):
    from lab.study import compare

    sources, _ = driven["pareto"]
    assert set(sources["source"]) == set(compare.sources())
    positions, _ = driven["byte-trace"]
    assert list(positions["position"]) == [str(n) for n in range(16)]
    for position, text in positions["position"].items():
        rows = compare.byte_trace(0xA5, int(position))
        assert all(f"{row['title']}\t{row['block_byte']}\t" in text for row in rows), position
    q6k = next(row for row in compare.byte_trace(0xA5, 15) if row["title"] == "Q6_K")
    assert f"Q6_K\t{q6k['block_byte']}\t" in positions["position"]["15"]


CHECKS = {
    "03_mxfp4.html": _mxfp4,
    "04_nvfp4.html": _nvfp4,
    "07_capacity_and_cost.html": _capacity,
    "09_real_weights.html": _real_weights,
    "10_what_four_bits_do_to_answers.html": _answers,
    "11_formats_side_by_side.html": _side_by_side,
}


def test_a_seed_outside_the_list_is_refused_beside_its_field_and_the_last_seeds_outcomes_stay_marked(server):
    with browser_page() as (page, log):
        _open(page, server, "03_mxfp4.html")
        widget = page.locator('.lab-choice[data-lab-group="mxfp4-block"]')
        field = widget.locator('input[inputmode="numeric"]')
        field.wait_for(timeout=30000)
        wanted = "random seed: type a whole number from 3 to 7"
        for typed in ("3.7", "", "2", "8", "-1", "seven", "<b>1</b>"):
            field.fill(typed)
            field.press("Enter")
            refusal = f"{wanted}; the field is empty." if typed == "" else f"{wanted}, not {typed}."
            expect(widget.get_by_role("alert")).to_have_text(refusal)
            expect(field).to_have_attribute("aria-invalid", "true")
            kept = [p for p in page.evaluate(PANELS, "mxfp4-block") if p["shown"]]
            assert kept and all(
                p["when"]["seed"] == "7" and "Showing the last valid input: random seed = 7." in p["text"] for p in kept
            ), typed
        field.fill(" 4 ")
        field.press("Enter")
        expect(page.locator("[data-lab-kept-note]")).to_have_count(0)
        expect(widget.get_by_role("alert")).to_be_hidden()
        shown = [p["when"] for p in page.evaluate(PANELS, "mxfp4-block") if p["shown"]]
        assert shown and all(when["seed"] == "4" for when in shown)
        assert log.console_errors == []
