"""`labctl.py handouts` end to end: the PDFs headless Chromium prints for seeds 1 and 7 (a sheet per
notebook, and a workshop's booklet), read back with pypdf and held against the exercises' generator
run by node straight from the codec (tests/js/exercise_answers.mjs for the answers, the codec's
exerciseInstance and exerciseSolve for the questions and the worked arithmetic), never against
widgets/handout.js, which drew them. A booklet's pages are full: its last line sits near the
bottom margin."""

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
for (let topic = 1; topic <= 12; topic += 1) {
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


# A booklet's questions, from the codec: for [topic, kind's number in its notebook, round], the
# kind, its question, options, answer as the lab prints it and its worked arithmetic.
CODEC_QUESTIONS = """
import { exerciseInstance, exerciseKinds, exerciseSolve, formatLabNumber } from "%s";
const seed = Number(process.argv[1]);
const asked = JSON.parse(process.argv[2]);
console.log(JSON.stringify(asked.map(([topic, number, round]) => {
  const kind = exerciseKinds(topic)[number - 1];
  const instance = exerciseInstance(kind, seed, round);
  const solved = exerciseSolve(kind, instance.params);
  return { kind, prompt: instance.prompt, options: instance.options,
    answer: formatLabNumber(solved.answer).replace("\u2212", "-"), worked: solved.worked };
})));
"""
BOOKLET_SEED = 7
BOOKLET_TOPICS = [1, 3, 9, 12]
# The part of a page the booklet's last line reaches down to, at least: its pages are full but for
# less than one more ruled line (handout.js shares the room left among the page's questions).
FULL_PAGE = 0.85


@pytest.fixture(scope="module")
def booklet(tmp_path_factory):
    """(worksheet, key) of the booklet of notebooks 1, 3, 9 and 12 for seed 7, two pages each."""
    folder = tmp_path_factory.mktemp("booklet")
    assert (
        handouts.main(["--seed", str(BOOKLET_SEED), "--notebooks", "1,3,9,12", "--pages", "2", "-o", str(folder)]) == 0
    )
    return tuple(folder / handouts.booklet_name(BOOKLET_SEED, sheet) for sheet in handouts.SHEETS)


def _asked(pages: list[str]) -> list[list[int]]:
    """Each question of a booklet in order, as [topic, its kind's number, round], read off the page."""
    return [[int(a), int(b), int(c)] for a, b, c in re.findall(r"exercise (\d+)\.(\d+), round (\d+):", " ".join(pages))]


def _runs(page) -> list[tuple[str, float, float]]:
    """Every run of text on a PDF page with its position in points, (text, x, y), y from the bottom."""
    runs = []

    def visit(text, cm, tm, font, size):
        if text.strip():
            runs.append((text, cm[0] * tm[4] + cm[2] * tm[5] + cm[4], cm[1] * tm[4] + cm[3] * tm[5] + cm[5]))

    page.extract_text(visitor_text=visit)
    return runs


def test_the_booklet_has_a_cover_with_the_seed_and_each_notebook_on_pages_of_its_own(booklet):
    worksheet, key = booklet
    pages = _pages(worksheet)
    assert len(pages) == 1 + 2 * len(BOOKLET_TOPICS)
    cover = pages[0]
    assert "The four-bit lab · workshop booklet · worksheet" in cover and f"Seed {BOOKLET_SEED}" in cover
    assert f"Type seed {BOOKLET_SEED} into the seed field there" in cover and "Name" in cover
    asked = _asked(pages)
    for topic in BOOKLET_TOPICS:
        title = handouts.notebook(topic)[1]
        count = sum(1 for each in asked if each[0] == topic)
        assert f"{topic} · {_flat(title)}: {count} questions" in cover, topic
        # two pages, each headed by nothing but its questions, the first by the notebook's title
        first, second = pages[1 + 2 * BOOKLET_TOPICS.index(topic) :][:2]
        assert first.startswith(f"{topic} · {_flat(title)}") and count >= 4
        assert _asked([first]) and _asked([second]) and all(each[0] == topic for each in _asked([first, second]))
    assert {each[0] for each in asked} == set(BOOKLET_TOPICS)
    # the key: its own cover, and the same questions in the same order
    key_pages = _pages(key)
    assert "workshop booklet · answer key" in key_pages[0] and _asked(key_pages) == asked


def test_the_booklets_key_answers_its_questions_and_the_worksheet_gives_nothing_away(booklet):
    worksheet, key = booklet
    asked = _asked(_pages(worksheet))
    index = (ROOT / "widgets" / "codec" / "index.js").as_uri()
    codec = _run_node("--input-type=module", "-e", CODEC_QUESTIONS % index, str(BOOKLET_SEED), json.dumps(asked))
    sheet, answers = " ".join(_pages(worksheet)), " ".join(_pages(key))
    assert "Answer:" not in sheet
    for (topic, number, round_), question in zip(asked, codec, strict=True):
        where = (topic, number, round_, question["kind"])
        assert _flat(question["prompt"]) in sheet and _flat(question["prompt"]) in answers, where
        for option in question["options"]:
            assert _flat(option) in sheet, where
        assert f"Answer: {question['answer']}" in answers, where
        for line in question["worked"]:
            assert _flat(line) in answers and _flat(line) not in sheet, where
    # rounds past 0: the booklet asks more than the first question of each exercise
    assert max(round_ for _, _, round_ in asked) >= 1


def test_every_page_of_the_booklets_worksheet_is_full_and_inside_its_margins(booklet):
    """Each page of questions runs down to the bottom margin but for less than a line or two: the
    last text (an "Answer" line) sits within the bottom 15% of the space inside the margins."""
    worksheet, _ = booklet
    reader = pypdf.PdfReader(worksheet)
    top, bottom = A4[1] - MARGIN_TOP, MARGIN_BOTTOM
    for number, page in enumerate(reader.pages[1:], start=2):
        assert [float(page.mediabox.width), float(page.mediabox.height)] == pytest.approx(A4, abs=1)
        runs = _runs(page)
        assert runs, number
        lowest = min(y for _, _, y in runs)
        assert (top - lowest) / (top - bottom) >= FULL_PAGE, (number, lowest)
        for text, x, y in runs:
            assert MARGIN_X - 1 <= x <= A4[0] - MARGIN_X and bottom - 1 <= y <= top + 1, (number, text, x, y)


def _pages(path: Path) -> list[str]:
    return [_flat(page.extract_text()) for page in pypdf.PdfReader(path).pages]


def test_every_topic_has_a_worksheet_and_a_key_named_by_its_seed(printed):
    for seed, (folder, written) in printed.items():
        names = sorted(path.name for path in folder.iterdir())
        assert names == sorted(path.name for path in written)
        assert len(names) == 2 * len(TOPICS)
        assert f"01_one_nibble-seed{seed}-worksheet.pdf" in names
        assert f"05_q4k-seed{seed}-key.pdf" in names
        assert all(re.fullmatch(rf"(0[1-9]|1[0-2])_[a-z0-9_]+-seed{seed}-(worksheet|key)\.pdf", name) for name in names)


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
