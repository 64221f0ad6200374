"""`labctl.py handouts` end to end: the PDFs headless Chromium prints for seeds 1 and 7, read back
with pypdf and held against the exercises' generator run by node straight from the codec
(tests/js/exercise_answers.mjs for the answers, the codec's exerciseInstance and exerciseSolve
for the questions and the worked arithmetic), never against widgets/handout.js, which drew them."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pypdf
import pytest
from chromium import browser_page

from publish import handouts

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
SEEDS = (1, 7)
TOPICS = tuple(handouts.TOPICS)
# A4 in PDF points, and the sheet's @page margins (18mm 17mm 20mm) in points
A4 = (595.28, 841.89)
MARGIN_X, MARGIN_TOP, MARGIN_BOTTOM = (mm * 72 / 25.4 for mm in (17, 18, 20))
SMALLEST_BODY_PT = 11

# Each topic's kinds at round 0 of a seed, from the codec itself: title, question, options, and
# the worked arithmetic the widget shows after an answer.
CODEC_SHEETS = """
import { exerciseInstance, exerciseKinds, exerciseSolve } from "%s";
const seed = Number(process.argv[1]);
const topics = {};
for (let topic = 1; topic <= 8; topic += 1) {
  topics[topic] = exerciseKinds(topic).map((kind) => {
    const instance = exerciseInstance(kind, seed, 0);
    return { kind, title: instance.title, prompt: instance.prompt, options: instance.options,
      worked: exerciseSolve(kind, instance.params).worked };
  });
}
console.log(JSON.stringify(topics));
"""


def _node() -> str:
    node = shutil.which("node")
    if node is None:  # .ci/run installs node, so CI must have it
        (pytest.fail if os.environ.get("CI", "").lower() in ("1", "true", "yes") else pytest.skip)("node is missing")
    return node


def _run_node(*command: str) -> dict:
    ran = subprocess.run([_node(), *command], capture_output=True, text=True, cwd=ROOT)
    assert ran.returncode == 0, ran.stderr
    return json.loads(ran.stdout)


def _codec(seed: int) -> tuple[dict, dict]:
    """(each kind's answer as exercise_answers.mjs prints it, each topic's exercises from the codec)"""
    answers = _run_node(str(ROOT / "tests" / "js" / "exercise_answers.mjs"), json.dumps({"seed": seed}))["answers"]
    index = (ROOT / "widgets" / "codec" / "index.js").as_uri()
    sheets = _run_node("--input-type=module", "-e", CODEC_SHEETS % index, str(seed))
    return answers, {int(topic): exercises for topic, exercises in sheets.items()}


def _flat(text: str) -> str:
    """Text as compared here: the minus sign as "-" (as exercise_answers.mjs writes it), and every
    run of white space, a line break where the sheet wrapped included, as one space."""
    return re.sub(r"\s+", " ", text.replace("\u2212", "-")).strip()


@pytest.fixture(scope="module")
def printed(tmp_path_factory):
    """{seed: (folder, paths written)}: every sheet of seeds 1 and 7, printed once for this file."""
    made = {}
    for seed in SEEDS:
        folder = tmp_path_factory.mktemp(f"handouts-seed{seed}")
        made[seed] = (folder, handouts.write_handouts(folder, seed))
    return made


def _pages(path: Path) -> list[str]:
    return [_flat(page.extract_text()) for page in pypdf.PdfReader(path).pages]


def test_every_topic_has_a_worksheet_and_a_key_named_by_its_seed(printed):
    for seed, (folder, written) in printed.items():
        names = sorted(path.name for path in folder.iterdir())
        assert names == sorted(path.name for path in written)
        assert len(names) == 2 * len(TOPICS)
        assert f"01_one_nibble-seed{seed}-worksheet.pdf" in names
        assert f"05_q4k-seed{seed}-key.pdf" in names
        assert all(re.fullmatch(rf"0[1-8]_[a-z0-9_]+-seed{seed}-(worksheet|key)\.pdf", name) for name in names)


@pytest.mark.parametrize("seed", SEEDS)
def test_the_key_holds_the_codecs_answers_and_arithmetic(printed, seed):
    answers, sheets = _codec(seed)
    folder = printed[seed][0]
    for topic in TOPICS:
        text = " ".join(_pages(folder / handouts.file_name(topic, seed, "key")))
        assert f"seed {seed}: the numbers a student gets by typing seed {seed} into the exercises" in text
        assert sheets[topic], topic
        for exercise in sheets[topic]:
            assert _flat(exercise["prompt"]) in text, (topic, exercise["kind"])
            assert f"Answer: {answers[exercise['kind']]}" in text, (topic, exercise["kind"], answers[exercise["kind"]])
            for line in exercise["worked"]:
                assert _flat(line) in text, (topic, exercise["kind"], line)


@pytest.mark.parametrize("seed", SEEDS)
def test_the_worksheet_asks_every_question_and_gives_nothing_away(printed, seed):
    answers, sheets = _codec(seed)
    folder = printed[seed][0]
    for topic in TOPICS:
        text = " ".join(_pages(folder / handouts.file_name(topic, seed, "worksheet")))
        assert f"seed {seed}: the numbers a student gets by typing seed {seed} into the exercises" in text
        for number, exercise in enumerate(sheets[topic], start=1):
            assert f"{number}. {exercise['title']}" in text
            assert _flat(exercise["prompt"]) in text, (topic, exercise["kind"])
            for option in exercise["options"]:
                assert _flat(option) in text
            assert f"Answer: {answers[exercise['kind']]}" not in text
            for line in exercise["worked"]:
                assert _flat(line) not in text, (topic, exercise["kind"], line)


def test_different_seeds_give_different_worksheets(printed):
    _, first = _codec(SEEDS[0])
    _, second = _codec(SEEDS[1])
    differ = 0
    for topic in TOPICS:
        one, other = (_pages(printed[seed][0] / handouts.file_name(topic, seed, "worksheet")) for seed in SEEDS)
        questions_differ = [e["prompt"] for e in first[topic]] != [e["prompt"] for e in second[topic]]
        # the same sheet but for the seed it names, exactly when the codec asks the same questions
        assert (one != [page.replace(f"seed {SEEDS[1]}", f"seed {SEEDS[0]}") for page in other]) == questions_differ
        differ += questions_differ
    assert differ >= len(TOPICS) // 2


def test_each_sheet_is_one_a4_page_with_its_text_inside_the_margins(printed):
    """Two exercises fit one page, so each sheet is one page (no blank page after), A4, every run of
    text starting inside the margins and set at 11 pt or more."""
    for _, written in printed.values():
        for path in written:
            reader = pypdf.PdfReader(path)
            assert len(reader.pages) == 1, path.name
            page = reader.pages[0]
            assert [float(page.mediabox.width), float(page.mediabox.height)] == pytest.approx(A4, abs=1), path.name
            runs = []

            def visit(text, cm, tm, font, size, runs=runs):
                if text.strip():
                    x = cm[0] * tm[4] + cm[2] * tm[5] + cm[4]
                    y = cm[1] * tm[4] + cm[3] * tm[5] + cm[5]
                    runs.append((text, x, y, size * abs(cm[0] * tm[0])))

            page.extract_text(visitor_text=visit)
            assert runs, path.name
            for text, x, y, points in runs:
                assert MARGIN_X - 1 <= x <= A4[0] - MARGIN_X, (path.name, text, x)
                assert MARGIN_BOTTOM - 1 <= y <= A4[1] - MARGIN_TOP + 1, (path.name, text, y)
                assert points >= SMALLEST_BODY_PT - 0.01, (path.name, text, points)


def test_no_sheet_is_wider_than_the_page_or_has_a_control(tmp_path):
    """Laid out at A4's width inside the margins (176 mm), nothing on any sheet reaches past the
    right margin, nothing is a control, and the text is black on white."""
    width_px = round((210 - 2 * 17) / 25.4 * 96)
    with browser_page() as (page, traffic):
        page.emulate_media(media="print", color_scheme="dark")  # a reader's dark setting changes nothing
        page.set_viewport_size({"width": width_px, "height": 1000})
        for topic in TOPICS:
            for sheet in handouts.SHEETS:
                html_file = tmp_path / f"{topic}-{sheet}.html"
                html_file.write_text(handouts.page(topic, 7, sheet), encoding="utf-8")
                page.goto(html_file.as_uri())
                page.wait_for_selector("body[data-ready='true']", state="attached")
                found = page.evaluate(
                    """() => ({
                      wide: [...document.querySelectorAll("body *")].filter((n) => n.getBoundingClientRect().right > innerWidth + 0.5).map((n) => n.className),
                      scroll: document.documentElement.scrollWidth,
                      controls: document.querySelectorAll("button, input, select, textarea, a").length,
                      colours: [...new Set([...document.querySelectorAll("body *")].map((n) => getComputedStyle(n).color))],
                      paper: getComputedStyle(document.documentElement).backgroundColor,
                      exercises: document.querySelectorAll(".handout-exercise").length,
                      unbroken: [...document.querySelectorAll(".handout-exercise")].every((n) => getComputedStyle(n).breakInside === "avoid"),
                    })"""
                )
                assert found["wide"] == [] and found["scroll"] <= width_px, (topic, sheet, found)
                assert found["controls"] == 0
                assert found["colours"] == ["rgb(0, 0, 0)"] and found["paper"] == "rgb(255, 255, 255)"
                assert found["exercises"] == 2 and found["unbroken"]
        assert traffic.blocked == [] and traffic.console_errors == []


@pytest.mark.parametrize("slug", ["nibble-decoder", "exercises"])
def test_an_explainer_prints_black_on_white_without_its_controls(pages, slug):
    """widgets/lab.css's print block, on a standalone page in a dark browser: white paper, the light
    palette's ink, no chips, fields or sliders, and the figure's own buttons (the bits) kept."""
    with browser_page() as (page, traffic):
        page.emulate_media(media="print", color_scheme="dark")
        page.goto((pages / f"{slug}.html").as_uri())
        page.wait_for_selector("body[data-ready='true']", state="attached")
        found = page.evaluate(
            """() => {
              const shown = (nodes) => [...nodes].filter((n) => getComputedStyle(n).display !== "none" && n.getClientRects().length).length;
              const lab = document.querySelector(".four-bit-lab");
              return {
                paper: getComputedStyle(document.body).backgroundColor, ink: getComputedStyle(lab).color, labPaper: getComputedStyle(lab).backgroundColor,
                controls: shown(document.querySelectorAll(".lab-chip, .lab-field, input, select, textarea, .lab-toolbar")),
                bits: shown(document.querySelectorAll(".lab-bit")),
                wide: document.documentElement.scrollWidth <= innerWidth,
              };
            }"""
        )
        assert found["paper"] == found["labPaper"] == "rgb(255, 255, 255)"
        assert found["ink"] == "rgb(26, 26, 26)"  # --lab-ink of the light palette
        assert found["controls"] == 0
        assert found["bits"] == (4 if slug == "nibble-decoder" else 0)
        assert found["wide"]
        assert traffic.console_errors == []
