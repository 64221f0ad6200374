"""The exercises and the code explorer in headless Chromium, from their standalone pages (file://,
no kernel): every exercise kind answered wrong, with a hint and no answer, wrong again, with the
worked arithmetic, and then right; the working shown on request; the progress count, New instance, and the seed kept in the link. Each student's own
numbers: a seed per browser, kept with the progress across reloads (on a course page too), New
numbers, and a progress link that counts only the answers it carries."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from urllib.parse import unquote

import pytest
from chromium import COUNT_CREATED, browser_page, chromium_path, open_standalone
from playwright.sync_api import expect

from bench.harness.chromium import chromium as launch_chromium

pytestmark = pytest.mark.browser

# Every exercise kind, notebooks 1..12 (widgets/codec/teach/exercises.js): the "exercises" page shows them all.
EXERCISE_COUNT = 24


def _answer(page, kind, text, press_enter=True):
    section = page.locator(f"[data-exercise='{kind}']")
    field = section.locator("input")
    field.fill(text)
    if press_enter:
        field.press("Enter")
    else:
        section.get_by_role("button", name="Check").click()
    return section


def _fragment(page):
    """The state the page's link holds; none before anything was set."""
    link = page.evaluate("location.hash")[1:]
    return json.loads(unquote(link)) if link else {}


def _codec(seed, rounds=None, given=None):
    """Each kind's answer at `seed` (and `rounds`), and the verdicts on `given` there: tests/js/exercise_answers.mjs"""
    node = shutil.which("node")
    if node is None:  # .ci/run installs node, so CI must have it
        (pytest.fail if os.environ.get("CI", "").lower() in ("1", "true", "yes") else pytest.skip)("node is missing")
    script = Path(__file__).resolve().parents[1] / "js" / "exercise_answers.mjs"
    state = json.dumps({"seed": seed, "rounds": rounds or {}, "given": given or {}})
    ran = subprocess.run([node, str(script), state], capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr
    return json.loads(ran.stdout)


def _numbers(page):
    """The seed the page draws its exercises from (its link carries it), and their prompts."""
    return _fragment(page)["seed"], page.locator(".lab-exercise-prompt").all_inner_texts()


def _results(page):
    return page.locator("[data-exercise-result]").evaluate_all("(nodes) => nodes.map((n) => n.dataset.exerciseResult)")


def _stage(section):
    return section.locator("[data-exercise-result]").get_attribute("data-exercise-stage")


def test_every_exercise_kind_wrong_then_right(pages):
    key = _codec(1)
    with browser_page() as (page, log):
        open_standalone(page, pages, "exercises", {"seed": 1})  # seed 1: INT4, whose refusal of 200 names a range
        kinds = page.locator("[data-exercise]").evaluate_all("(nodes) => nodes.map((n) => n.dataset.exercise)")
        assert len(kinds) == EXERCISE_COUNT
        progress = page.get_by_test_id("exercise-progress")
        assert progress.inner_text() == f"0 of {EXERCISE_COUNT} correct"
        correct = 0
        for kind in kinds:
            right = key["answers"][kind]
            section = _answer(page, kind, "abc")
            assert section.get_by_role("alert").inner_text().strip(), kind  # refused beside the field
            assert section.locator("input").get_attribute("aria-invalid") == "true"
            first = "200"
            section = _answer(page, kind, first, press_enter=False)
            if section.locator("input").get_attribute("aria-invalid") == "true":
                # 200 is none of this exercise's choices: refused, not graded; 1 is one of them
                assert "a whole number from" in section.get_by_role("alert").inner_text(), kind
                assert section.locator("[data-exercise-result]").get_attribute("data-exercise-result") == "none"
                first = "1"
                section = _answer(page, kind, first, press_enter=False)
            feedback = section.locator("[data-exercise-result]")
            verdict = feedback.locator(".lab-exercise-verdict")
            result = feedback.get_attribute("data-exercise-result")
            assert result in ("correct", "wrong"), kind
            if result == "wrong":
                # the first miss: a hint and a second try, no answer and no working
                assert _stage(section) == "hint", kind
                assert section.locator(".lab-exercise-worked").count() == 0, kind
                assert verdict.inner_text().startswith("Not yet: ") and " Hint: " in verdict.inner_text(), kind
                assert "codec computes" not in verdict.inner_text(), kind
                assert section.get_by_role("button", name="Show the working").is_visible(), kind
                assert progress.inner_text() == f"{correct} of {EXERCISE_COUNT} correct"
                # the same answer again is no second try
                section = _answer(page, kind, first)
                assert _stage(section) == "hint", kind
                # the second miss: the answer and its working
                second = next(text for text in key["wrongs"][kind] if text != first)
                section = _answer(page, kind, second)
                assert _stage(section) == "worked", kind
                assert section.locator(".lab-exercise-worked").count() >= 1, kind
                revealed = re.search(r"the codec computes (\S+)\. Here is its working\.$", verdict.inner_text())
                assert revealed.group(1).replace("\u2212", "-") == right, kind
                assert not section.get_by_role("button", name="Show the working").is_visible(), kind
                section = _answer(page, kind, right)
                assert feedback.get_attribute("data-exercise-result") == "correct", kind
                assert verdict.inner_text() == "Correct, at try 3.", kind
                assert _fragment(page)["attempts"][kind] == {"first": first, "tries": 3, "shown": False}
            else:
                assert verdict.inner_text() == "Correct, at the first try.", kind
            assert section.locator(".lab-exercise-worked").count() >= 1
            correct += 1
            assert progress.inner_text() == f"{correct} of {EXERCISE_COUNT} correct"
        worked = page.locator("[data-exercise='nibble-decode'] .lab-exercise-worked").inner_text()
        assert re.search(r"[01]{4}", worked)
        assert "2^(" in page.locator("[data-exercise='e8m0-rule'] .lab-exercise-worked").all_inner_texts()[-1]
        assert "blocks of" in page.locator("[data-exercise='gguf-bytes'] .lab-exercise-worked").inner_text()
        assert "ln(" in page.locator("[data-exercise='kl-divergence'] .lab-exercise-worked").all_inner_texts()[0]
        # a wrong answer after a right one takes the count back down
        _answer(page, "capacity-affine", "1e39")
        result = page.locator("[data-exercise='capacity-affine'] [data-exercise-result]")
        assert result.get_attribute("data-exercise-result") == "wrong"
        assert progress.inner_text() == f"{EXERCISE_COUNT - 1} of {EXERCISE_COUNT} correct"
        assert log.blocked == [] and log.console_errors == []


def test_show_the_working_before_any_answer_and_the_answer_after_it_is_marked(pages):
    kind = "mxfp4-decode"  # three worked lines
    right = _codec(5)["answers"][kind]
    with browser_page() as (page, log):
        open_standalone(page, pages, "exercises", {"seed": 5, "topic": 3})
        section = page.locator(f"[data-exercise='{kind}']")
        button = section.get_by_role("button", name="Show the working")
        button.focus()
        page.keyboard.press("Enter")
        assert _stage(section) == "shown"
        verdict = section.locator(".lab-exercise-verdict")
        assert verdict.inner_text().startswith("The working, as you asked: the codec computes ")
        assert section.locator(".lab-exercise-worked").count() == 3
        assert not button.is_visible()
        # the focus stays in the exercise, on its answer field
        assert page.evaluate("document.activeElement.dataset.focus") == f"answer-{kind}"
        assert page.get_by_test_id("exercise-progress").inner_text() == "0 of 2 correct"
        assert _fragment(page)["attempts"] == {kind: {"first": "", "tries": 0, "shown": True}}
        section = _answer(page, kind, right)
        assert verdict.inner_text() == "Correct, after the working was shown."
        assert _fragment(page)["attempts"] == {kind: {"first": right, "tries": 1, "shown": True}}
        # a link keeps it: the same verdict after a reload
        page.reload()
        page.wait_for_selector("body[data-ready='true']")
        section = page.locator(f"[data-exercise='{kind}']")
        assert section.locator(".lab-exercise-verdict").inner_text() == "Correct, after the working was shown."
        # New instance: a new question, with the button back
        section.get_by_role("button", name="New instance").click()
        assert _stage(section) == "none" and section.get_by_role("button", name="Show the working").is_visible()
        assert kind not in _fragment(page).get("attempts", {})
        assert log.blocked == [] and log.console_errors == []


def test_a_link_from_before_the_attempts_were_kept_reads_its_answer_as_a_first_try(pages):
    kind = "mxfp4-decode"
    with browser_page() as (page, log):
        open_standalone(page, pages, "exercises", {"seed": 5, "topic": 3, "answers": {kind: "7"}})
        section = page.locator(f"[data-exercise='{kind}']")
        assert _stage(section) == "hint" and section.locator(".lab-exercise-worked").count() == 0
        # the next different answer is the second try: the working comes with it
        section = _answer(page, kind, "9")
        assert _stage(section) == "worked"
        assert _fragment(page)["attempts"] == {kind: {"first": "7", "tries": 2, "shown": False}}
        assert log.blocked == [] and log.console_errors == []


# Answers outside an exercise's fixed set of choices, and the words its refusal uses.
OUTSIDE_THE_CHOICES = {
    "zoo-check": (["0", "7", "2.5", "-1"], "type a whole number from 1 to 6"),
    "e2m1-code": (["16", "0x1F", "-1", "2.5"], "type a whole number from 0 to 15"),
    "q4k-metadata": (["64", "255"], "type a whole number from 0 to 63"),
}
# A nibble read three ways: what each reading can never be, and the words.
OUTSIDE_THE_READING = {
    "UINT4": (["16", "-1", "2.5"], "type a whole number from 0 to 15"),
    "INT4": (["8", "-9", "0.5"], "type a whole number from \u22128 to 7"),
    "E2M1": (["2.5", "5", "7"], "type one of"),
}


def test_an_answer_outside_the_choices_is_refused_not_graded(pages):
    with browser_page() as (page, log):
        # seed 1: no choice tried below is right there (on the student's own seed "1" might be)
        open_standalone(page, pages, "exercises", {"seed": 1})
        reading = re.search(r"read as (\w+)\?", page.get_by_test_id("prompt-nibble-decode").inner_text()).group(1)
        cases = {**OUTSIDE_THE_CHOICES, "nibble-decode": OUTSIDE_THE_READING[reading]}
        for kind, (entries, words) in cases.items():
            for entry in entries:
                section = _answer(page, kind, entry)
                refusal = section.get_by_role("alert").inner_text()
                assert words in refusal, (kind, entry, refusal)
                assert section.locator("input").get_attribute("aria-invalid") == "true"
                assert section.locator("input").input_value() == entry
                assert section.locator("[data-exercise-result]").get_attribute("data-exercise-result") == "none"
                assert page.get_by_test_id("exercise-progress").inner_text() == f"0 of {EXERCISE_COUNT} correct"
                assert kind not in _fragment(page).get("answers", {}), (kind, entry)
            # one of the choices is graded
            section = _answer(page, kind, "0" if kind == "nibble-decode" else "1")
            assert section.locator("[data-exercise-result]").get_attribute("data-exercise-result") in (
                "correct",
                "wrong",
            )
            assert section.locator("input").get_attribute("aria-invalid") is None
        assert log.blocked == [] and log.console_errors == []


def test_the_checks_on_offer_show_their_numbers_and_take_their_names(pages):
    with browser_page() as (page, log):
        open_standalone(page, pages, "exercises", {"seed": 1, "topic": 8})
        # a host that resets list styles (marimo does) must not take the numbers away
        page.add_style_tag(content="ol, ul { list-style: none !important; padding: 0 !important; }")
        section = page.locator("[data-exercise='zoo-check']")
        assert "Which check (1..6, or its name)" in section.get_by_test_id("prompt-zoo-check").inner_text()
        options = section.locator("li").all_inner_texts()
        assert [option.split(". ", 1)[0] for option in options] == ["1", "2", "3", "4", "5", "6"], options
        # the number each option shows is the number that answers it (the working names it)
        section.get_by_role("button", name="Show the working").click()
        worked = section.locator(".lab-exercise-worked").inner_text()
        number, name = re.search(r"check (\d) \(([^)]+)\)", worked).groups()
        assert f"{number}. {name}" in options
        section = _answer(page, "zoo-check", f"  {name.upper()} ")
        assert section.locator("[data-exercise-result]").get_attribute("data-exercise-result") == "correct"
        assert page.get_by_test_id("exercise-progress").inner_text() == "1 of 2 correct"
        section = _answer(page, "zoo-check", "lane")  # part of a name is no name
        assert "neither a number nor a name on the list" in section.get_by_role("alert").inner_text()
        assert log.blocked == [] and log.console_errors == []


# Records what is written into each exercise's feedback (text or nodes, not removals) from now on;
# window.feedbackWrites() returns it.
WATCH_FEEDBACK = """() => {
  const writes = [];
  const note = (records) => {
    for (const record of records) {
      if (record.type === "characterData" || record.addedNodes.length) writes.push(record.target.textContent);
    }
  };
  const watch = new MutationObserver(note);
  for (const node of document.querySelectorAll("#widget [data-exercise-result]")) {
    watch.observe(node, { childList: true, characterData: true, subtree: true });
  }
  window.feedbackWrites = () => {
    note(watch.takeRecords());
    return writes;
  };
}"""


def _working(section):
    return section.locator(".lab-exercise-verdict, .lab-exercise-worked").all_inner_texts()


def test_new_instance_takes_the_old_working_away_and_the_next_check_works_the_new_one(pages):
    kind = "mxfp4-decode"  # three worked lines
    with browser_page() as (page, log):
        open_standalone(page, pages, "exercises", {"seed": 5, "topic": 3})
        section = _answer(page, kind, "7")
        assert len(_working(section)) == 1  # a first miss: the verdict with its hint, no working
        section.get_by_role("button", name="Show the working").click()
        old = _working(section)
        assert len(old) == 4  # the verdict and three lines
        page.evaluate(WATCH_FEEDBACK)
        page.evaluate(COUNT_CREATED)
        section.get_by_role("button", name="New instance").click()
        # the old instance's working is gone, and nothing was written for the new one meanwhile
        assert (
            _working(section) == []
            and section.locator("[data-exercise-result]").get_attribute("data-exercise-result") == "none"
        )
        assert page.evaluate("window.feedbackWrites()") == []
        section = _answer(page, kind, "7")
        section.get_by_role("button", name="Show the working").click()
        new = _working(section)
        assert len(new) == 4 and new != old
        assert page.evaluate("window.created") == 0  # the lines were kept, not drawn again
        # the same state opened from its link shows the same working, once
        page.reload()
        page.wait_for_selector("body[data-ready='true']")
        assert _working(page.locator(f"[data-exercise='{kind}']")) == new
        # and a second new instance, checked, replaces it again without a stale line
        section = page.locator(f"[data-exercise='{kind}']")
        section.get_by_role("button", name="New instance").click()
        section = _answer(page, kind, "7")
        section.get_by_role("button", name="Show the working").click()
        third = _working(section)
        assert len(third) == 4 and third != new
        assert log.blocked == [] and log.console_errors == []


def test_new_instance_and_the_seed_in_the_link(pages):
    with browser_page() as (page, log):
        open_standalone(page, pages, "exercises", {"seed": 5, "topic": 3})
        prompts = page.locator(".lab-exercise-prompt").all_inner_texts()
        assert len(prompts) == 2 and page.get_by_test_id("exercise-progress").inner_text() == "0 of 2 correct"
        # each new link is applied by its hashchange event, which can come after goto returns
        open_standalone(page, pages, "exercises", {"seed": 6, "topic": 3})
        expect(page.locator(".lab-exercise-prompt")).not_to_have_text(prompts, use_inner_text=True)
        open_standalone(page, pages, "exercises", {"seed": 5, "topic": 3})
        expect(page.locator(".lab-exercise-prompt")).to_have_text(prompts, use_inner_text=True)
        section = _answer(page, "mxfp4-decode", "7")
        assert section.locator("[data-exercise-result]").count() == 1
        section.get_by_role("button", name="New instance").click()
        assert page.locator("[data-exercise='mxfp4-decode'] [data-exercise-result='none']").count() == 1
        assert page.locator("[data-exercise='mxfp4-decode'] input").input_value() == ""
        state = _fragment(page)
        assert state["seed"] == 5 and state["rounds"] == {"mxfp4-decode": 1}
        assert "mxfp4-decode" not in state.get("answers", {})
        fresh = page.locator(".lab-exercise-prompt").all_inner_texts()
        page.reload()
        page.wait_for_selector("body[data-ready='true']")
        assert page.locator(".lab-exercise-prompt").all_inner_texts() == fresh
        assert log.blocked == [] and log.console_errors == []


def test_two_students_get_their_own_numbers_and_each_ones_answers_check(pages):
    with launch_chromium(chromium_path()) as new_page, new_page() as (first, first_log), new_page() as (second, log):
        numbers = []
        for page in (first, second):  # two browsers, each with storage of its own
            open_standalone(page, pages, "exercises")
            seed, prompts = _numbers(page)
            assert f"Seed {seed}, this browser's own" in page.get_by_test_id("exercise-seed-note").inner_text()
            for kind, typed in _codec(seed)["answers"].items():
                _answer(page, kind, typed)
            assert _results(page) == ["correct"] * EXERCISE_COUNT, seed
            assert (
                page.get_by_test_id("exercise-progress").inner_text() == f"{EXERCISE_COUNT} of {EXERCISE_COUNT} correct"
            )
            numbers.append((seed, prompts))
        assert numbers[0][0] != numbers[1][0] and numbers[0][1] != numbers[1][1]
        assert first_log.console_errors == log.console_errors == [] and first_log.blocked == log.blocked == []


def test_a_reload_keeps_the_seed_and_the_progress(pages):
    with browser_page() as (page, log):
        open_standalone(page, pages, "exercises", {"topic": 3})  # no seed: the student's own
        seed, _ = _numbers(page)
        page.locator("[data-exercise='mxfp4-decode']").get_by_role("button", name="New instance").click()
        answers = _codec(seed, {"mxfp4-decode": 1})["answers"]
        kept = {kind: answers[kind] for kind in ("e8m0-rule", "mxfp4-decode")}
        for kind, typed in kept.items():
            _answer(page, kind, typed)
        shown = _numbers(page)

        def still_shown(how):
            assert _numbers(page) == shown, how
            assert page.get_by_test_id("exercise-progress").inner_text() == "2 of 2 correct", how
            assert _results(page) == ["correct", "correct"], how
            typed = [page.locator(f"[data-exercise='{kind}'] input").input_value() for kind in kept]
            assert typed == list(kept.values()), how

        page.reload()  # the link carries it all
        page.wait_for_selector("body[data-ready='true']")
        still_shown("reload")
        page.goto("about:blank")  # opened afresh, as a course page is: only this browser's store carries it
        open_standalone(page, pages, "exercises", {"topic": 3})
        still_shown("afresh")
        # what is kept: the seed, and this topic's rounds and answers (no verdict: it is checked again)
        stored = json.loads(page.evaluate("localStorage.getItem('four-bit-lab:exercises')"))  # exercises.js
        attempts = {kind: {"first": typed, "tries": 1, "shown": False} for kind, typed in kept.items()}
        record = {"rounds": {"mxfp4-decode": 1}, "answers": kept, "attempts": attempts}
        assert stored == {"seed": seed, "records": {f"3:{seed}": record}}
        assert log.blocked == [] and log.console_errors == []


def test_a_progress_link_counts_only_the_answers_it_carries(pages):
    seed, rounds = 4242, {"q4k-lane": 3}
    answers = _codec(seed, rounds)["answers"]
    claimed = dict.fromkeys(answers, "correct")
    with browser_page() as (page, log):
        # a forged link: every exercise claimed correct, with no answers, counts nothing
        open_standalone(page, pages, "exercises", {"seed": seed, "rounds": rounds, "progress": claimed})
        progress = page.get_by_test_id("exercise-progress")
        assert progress.inner_text() == f"0 of {EXERCISE_COUNT} correct" and _results(page) == ["none"] * EXERCISE_COUNT
        assert _fragment(page).get("progress", {}) == {}  # written over: progress is the widget's output
        # with some answers, the claim still counts for nothing: the answers count as they check
        given = {kind: answers[kind] for kind in ("nibble-decode", "e2m1-code")} | {"capacity-affine": "1e39"}
        open_standalone(page, pages, "exercises", {"seed": seed, "answers": given, "progress": claimed})
        expect(progress).to_have_text(f"2 of {EXERCISE_COUNT} correct")
        assert _fragment(page)["progress"] == dict.fromkeys(list(given)[:2], "correct") | {"capacity-affine": "wrong"}
        # the answers for its seed and rounds, all counted
        open_standalone(page, pages, "exercises", {"seed": seed, "rounds": rounds, "answers": answers})
        expect(progress).to_have_text(f"{EXERCISE_COUNT} of {EXERCISE_COUNT} correct")
        assert _results(page) == ["correct"] * EXERCISE_COUNT and _fragment(page)["progress"] == claimed
        assert "set for this page" in page.get_by_test_id("exercise-seed-note").inner_text()
        # another seed's right answers count only where they answer this seed's numbers too
        other = sum(verdict == "correct" for verdict in _codec(seed + 1, given=answers)["verdicts"].values())
        open_standalone(page, pages, "exercises", {"seed": seed + 1, "answers": answers, "progress": claimed})
        expect(progress).to_have_text(f"{other} of {EXERCISE_COUNT} correct")
        assert other < EXERCISE_COUNT
        assert log.blocked == [] and log.console_errors == []


def test_new_numbers_draws_a_new_seed_and_the_seed_field_goes_back(pages):
    with browser_page() as (page, log):
        open_standalone(page, pages, "exercises")
        seed, prompts = _numbers(page)
        _answer(page, "capacity-gb", _codec(seed)["answers"]["capacity-gb"])
        progress = page.get_by_test_id("exercise-progress")
        assert progress.inner_text() == f"1 of {EXERCISE_COUNT} correct"
        page.get_by_role("button", name="New numbers").click()
        fresh, fresh_prompts = _numbers(page)
        assert fresh != seed and fresh_prompts != prompts and progress.inner_text() == f"0 of {EXERCISE_COUNT} correct"
        assert page.locator("[data-exercise='capacity-gb'] input").input_value() == ""
        assert [_fragment(page).get(name, {}) for name in ("rounds", "answers", "attempts", "progress")] == [{}] * 4
        assert f"Seed {fresh}, this browser's own" in page.get_by_test_id("exercise-seed-note").inner_text()
        # a seed typed in: refused beside the field unless it is one, else its numbers and kept answers
        field = page.locator("#widget input[data-focus='seed']")
        for entry in ("abc", "0", "2.5", "4294967296"):  # "abc" is not a seed; "0 is no seed here"...
            field.fill(entry)
            field.press("Enter")
            assert re.match(f"\u201c?{re.escape(entry)}\u201d? is (not a|no) seed", _refusal(page, "seed")), entry
            assert "type a whole number from 1 to 4294967295" in _refusal(page, "seed"), entry
            assert _fragment(page)["seed"] == fresh and field.input_value() == entry
        field.fill(str(seed))
        field.press("Enter")
        assert _refusal(page, "seed") == "" and _numbers(page) == (seed, prompts)
        assert progress.inner_text() == f"1 of {EXERCISE_COUNT} correct"
        assert log.blocked == [] and log.console_errors == []


def test_a_hostile_store_is_set_aside_and_shows_only_as_text(pages):
    payload = "<img src=x onerror=window.__ran=1>"
    with browser_page() as (page, log):
        open_standalone(page, pages, "exercises", {"topic": 1})
        seed = _fragment(page)["seed"]
        # a record to take, its answer a payload, and one naming no exercise (tests/js/ tries the rest)
        records = {f"1:{seed}": {"rounds": {}, "answers": {"nibble-decode": payload}}, "1:5": {"rounds": {"x": 1}}}
        stored = json.dumps({"seed": seed, "records": records})
        page.evaluate("(text) => localStorage.setItem('four-bit-lab:exercises', text)", stored)
        page.goto("about:blank")
        open_standalone(page, pages, "exercises", {"topic": 1})
        assert "could not all be read" in page.get_by_test_id("exercise-seed-note").inner_text()
        assert page.locator("[data-exercise='nibble-decode'] input").input_value() == payload  # as text, unchecked
        assert _numbers(page)[0] == seed and _results(page) == ["none", "none"]
        assert page.evaluate("window.__ran") is None and page.locator("#widget img").count() == 0
        assert log.blocked == [] and log.console_errors == []


@pytest.fixture
def course(server):
    """Notebook 1's course page on the site every browser test shares (tests/conftest.py)."""
    return f"{server}/01_one_nibble.html"


def test_a_course_page_keeps_the_students_numbers_and_progress_across_a_reload(course):
    with browser_page() as (page, log):
        page.goto(course)
        seed_field = page.locator("input[data-focus='seed']")
        seed_field.wait_for(timeout=20000)
        seed = int(seed_field.input_value())
        for kind in page.locator("[data-exercise]").evaluate_all("(nodes) => nodes.map((n) => n.dataset.exercise)"):
            _answer(page, kind, _codec(seed)["answers"][kind])
        expect(page.get_by_test_id("exercise-progress")).to_have_text("2 of 2 correct")
        page.reload()  # a course page has no link: this browser's store keeps the numbers and progress
        seed_field.wait_for(timeout=20000)
        assert int(seed_field.input_value()) == seed and _results(page) == ["correct", "correct"]
        expect(page.get_by_test_id("exercise-progress")).to_have_text("2 of 2 correct")
        assert f"Seed {seed}, this browser's own" in page.get_by_test_id("exercise-seed-note").inner_text()
        assert log.blocked == [] and log.console_errors == []


def test_code_explorer_bits_and_value_box(pages):
    with browser_page() as (page, log):
        open_standalone(page, pages, "code-explorer")
        assert page.get_by_test_id("code-value").inner_text() == "0.3125"
        assert (
            page.get_by_test_id("code-formula").inner_text() == "(+1) \u00d7 2^(5 \u2212 7) \u00d7 (1 + 2/8) = 0.3125"
        )
        assert page.get_by_test_id("encoded-value").all_inner_texts() == ["0.3125"]
        assert "between 0.28125 and 0.3125" in page.get_by_test_id("bracket").inner_text()
        page.get_by_role("button", name="bit 7, sign, is 0").click()
        assert page.get_by_test_id("code-value").inner_text() == "\u22120.3125"
        page.get_by_role("button", name="E8M0").click()
        value = page.get_by_role("textbox", name="a real number to encode")
        value.fill("3")
        value.press("Enter")
        assert page.get_by_test_id("encoded-value").all_inner_texts() == ["2", "4", "4"]
        page.get_by_role("button", name="show code 0x80").click()
        assert page.get_by_test_id("code-value").inner_text() == "2"
        assert page.get_by_test_id("code-formula").inner_text().startswith("2^(128 \u2212 127)")
        value.fill("-1")
        value.press("Enter")
        assert "no sign and no zero" in page.get_by_test_id("encode-note").inner_text()
        page.get_by_role("button", name="E2M1").click()
        value.fill("2.5")
        value.press("Enter")
        # two rules, round half to even and the lab's convention: both send this tie to 2 (code 0100)
        assert page.get_by_test_id("encoded-value").all_inner_texts() == ["2", "2"]
        value.fill("0.75")
        value.press("Enter")
        assert page.get_by_test_id("encoded-value").all_inner_texts() == ["1", "0.5"]  # even code, lower code
        code = page.get_by_role("textbox", name="code (decimal, 0x\u2026 or 0b\u2026)")
        code.fill("0b0111")
        code.press("Enter")
        assert page.get_by_test_id("code-value").inner_text() == "6"
        code.fill("16")
        code.press("Enter")
        # an E2M1 code is four bits: the refusal names that range, 0 to 15
        assert "16 does not fit in 4 bits. Type 0 to 15 or 0x0 to 0xF." in page.get_by_role("alert").inner_text()
        assert log.blocked == [] and log.console_errors == []


def test_code_explorer_keeps_the_sign_of_zero_when_rounding_to_even(pages):
    with browser_page() as (page, log):
        open_standalone(page, pages, "code-explorer", {"format": "E2M1", "code": 5, "value_text": "2.5"})
        value = page.get_by_role("textbox", name="a real number to encode")
        rules = page.locator("[data-rule]")
        for typed, bracket in (("-0", "\u22120 is exactly an E2M1 value."), ("-1e-9", "lies between \u22120.5 and 0")):
            value.fill(typed)
            value.press("Enter")
            assert bracket in page.get_by_test_id("bracket").inner_text(), typed
            # ml_dtypes' float4_e2m1fn cast and lab.codes.e2m1.encode(x, "rne") both give 1000 (-0)
            rne = rules.filter(has_text="ties to even")
            assert rne.get_by_role("button").inner_text() == "8 = 1000", typed
            assert rne.get_by_test_id("encoded-value").inner_text() == "\u22120", typed
            # the lab's convention (MLX's rule) stores every zero as +0, and says so
            lab = rules.filter(has_text="zero as +0")
            assert lab.get_by_role("button").inner_text() == "0 = 0000", typed
            # the rule's code is one click away, and the decoded card follows
            rne.get_by_role("button").click()
            assert page.get_by_test_id("code-value").inner_text() == "\u22120", typed
            assert page.locator("#widget input[data-focus='code']").input_value() == "8"
        assert log.blocked == [] and log.console_errors == []


def test_a_refused_entry_marks_the_old_verdict_and_leaves_the_count(pages):
    kind = "scale-delta-y"  # any number is an answer to it, so 1e39 is graded, wrong
    with browser_page() as (page, log):
        open_standalone(page, pages, "exercises", {"seed": 1, "topic": 2})
        rule = page.get_by_test_id("exercise-count-rule").inner_text()
        assert "last checked answer" in rule and "no answer" in rule and "changes nothing" in rule
        right = _codec(1)["answers"][kind]
        # a first miss, then a refused entry: the mark does not give the answer away either
        section = _answer(page, kind, "1e38")
        feedback = section.locator("[data-exercise-result]")
        verdict = section.locator(".lab-exercise-verdict")
        assert feedback.get_attribute("data-exercise-stage") == "hint"
        _answer(page, kind, "abc")
        assert verdict.inner_text().startswith("Your last checked answer, 1e+38, was not right. What the field holds")
        assert "codec computes" not in verdict.inner_text()
        section = _answer(page, kind, right)
        progress = page.get_by_test_id("exercise-progress")
        assert verdict.inner_text() == "Correct, at try 2." and progress.inner_text() == "1 of 2 correct"
        field = section.locator("input")
        # unreadable text: refused beside the field; the verdict says it is the last answer's, the count stays
        section = _answer(page, kind, "abc")
        assert section.get_by_role("alert").inner_text().strip() and field.input_value() == "abc"
        assert feedback.get_attribute("data-exercise-result") == "correct"
        assert feedback.get_attribute("data-exercise-stale") == "true"
        assert "lab-exercise-stale" in feedback.get_attribute("class")
        assert verdict.inner_text().startswith("Your last checked answer, ") and "was correct" in verdict.inner_text()
        assert "not checked" in verdict.inner_text() and progress.inner_text() == "1 of 2 correct"
        assert page.evaluate("document.activeElement.dataset.focus") == f"answer-{kind}"
        # a wrong answer after it: checked, and the count goes back down
        section = _answer(page, kind, "1e39")
        assert feedback.get_attribute("data-exercise-stale") is None
        assert feedback.get_attribute("data-exercise-result") == "wrong" and progress.inner_text() == "0 of 2 correct"
        assert verdict.inner_text().startswith("Not yet: you typed 1e+39")
        section = _answer(page, kind, "")  # no answer either: still marked, count still 0
        assert feedback.get_attribute("data-exercise-stale") == "true" and "was not right" in verdict.inner_text()
        assert progress.inner_text() == "0 of 2 correct"
        # the link keeps the checked answer, never the refused text: a reload shows it unmarked
        page.reload()
        page.wait_for_selector("body[data-ready='true']")
        section = page.locator(f"[data-exercise='{kind}']")
        assert section.locator("input").input_value() == "1e39"
        assert section.locator("[data-exercise-result]").get_attribute("data-exercise-stale") is None
        assert section.locator(".lab-exercise-verdict").inner_text().startswith("Not yet")
        # the right answer again, then New instance: no verdict, nothing marked
        section = _answer(page, kind, right)
        _answer(page, kind, "abc")
        section.get_by_role("button", name="New instance").click()
        result = section.locator("[data-exercise-result]")
        assert (
            result.get_attribute("data-exercise-result") == "none"
            and result.get_attribute("data-exercise-stale") is None
        )
        assert log.blocked == [] and log.console_errors == []


# The answers the traits keep are at most 200 characters (exercises.js LONGEST_ANSWER). 300 nines
# read as 1e+300, which any exercise taking a real number grades; 300 zeros and a 1 read as 1, which
# every exercise takes (1 is one of each fixed set of choices).
NINES = "9" * 300
PADDED_ONE = "0" * 300 + "1"
CONTROLS = "#widget input, #widget button"


def _enter_by_paste(page, kind, text):
    """Put `text` into the answer field as a paste does (one input event, no keystrokes), then Enter."""
    section = page.locator(f"[data-exercise='{kind}']")
    field = section.locator("input")
    field.fill("")
    field.focus()
    page.keyboard.insert_text(text)
    field.press("Enter")
    return section


@pytest.mark.parametrize("how", ["typed, Check", "typed, Enter", "pasted, Enter"])
def test_an_over_long_answer_is_refused_beside_its_field_and_the_exercises_stay(pages, how):
    kind = "nvfp4-decode"  # notebook 4's: any real number answers it
    with browser_page() as (page, log):
        open_standalone(page, pages, "exercises", {"seed": 1, "topic": 4})
        controls = page.locator(CONTROLS).count()
        section = _answer(page, kind, "0")  # a checked answer, whose verdict and count must stay
        feedback = section.locator("[data-exercise-result]")
        verdict = feedback.get_attribute("data-exercise-result")
        progress = page.get_by_test_id("exercise-progress").inner_text()
        link = _fragment(page)
        if how == "pasted, Enter":
            section = _enter_by_paste(page, kind, NINES)
        else:
            section = _answer(page, kind, NINES, press_enter=how == "typed, Enter")
        # every control and both exercises stay, and the traits have no problem to show
        assert page.locator(CONTROLS).count() == controls and page.locator("[data-exercise]").count() == 2
        assert page.locator("#widget [role='alert']:not([hidden])").count() == 1
        field = section.locator("input")
        alert = section.get_by_role("alert")
        refusal = alert.inner_text()
        # refused in the lab's words, beside the field, by the answer box's own limit before it is read
        assert "300 characters long" in refusal and "at most 200" in refusal, refusal
        assert alert.get_attribute("id") == field.get_attribute("aria-describedby")
        assert field.get_attribute("aria-invalid") == "true" and field.input_value() == NINES
        # the last verdict and the count stay, marked as the last checked answer's
        assert feedback.get_attribute("data-exercise-result") == verdict
        assert feedback.get_attribute("data-exercise-stale") == "true"
        assert page.get_by_test_id("exercise-progress").inner_text() == progress
        assert _fragment(page) == link  # nothing reached the traits
        focused = f"check-{kind}" if how == "typed, Check" else f"answer-{kind}"
        assert page.evaluate("document.activeElement.dataset.focus") == focused
        # the refusal's suggestion is taken, and graded
        section = _answer(page, kind, "1e+300", press_enter=how != "typed, Check")
        assert field.get_attribute("aria-invalid") is None
        assert feedback.get_attribute("data-exercise-result") == "wrong"
        assert feedback.get_attribute("data-exercise-stale") is None
        assert _fragment(page)["answers"][kind] == "1e+300"
        assert log.blocked == [] and log.console_errors == []


def test_no_exercise_takes_an_over_long_answer(pages):
    with browser_page() as (page, log):
        open_standalone(page, pages, "exercises")
        controls = page.locator(CONTROLS).count()
        kinds = page.locator("[data-exercise]").evaluate_all("(nodes) => nodes.map((n) => n.dataset.exercise)")
        assert len(kinds) == EXERCISE_COUNT
        for kind in kinds:
            for entry in (PADDED_ONE, NINES):
                section = _answer(page, kind, entry, press_enter=entry == NINES)
                assert page.locator(CONTROLS).count() == controls, (kind, entry[-3:])
                assert page.locator("[data-exercise]").count() == EXERCISE_COUNT, (kind, entry[-3:])
                refusal = section.get_by_role("alert").inner_text()
                # too long for any exercise, refused by the answer box's limit before it is read
                length = len(entry)
                assert f"{length} characters long" in refusal and "at most 200" in refusal, (kind, refusal)
                assert section.locator("input").get_attribute("aria-invalid") == "true", (kind, entry[-3:])
                assert kind not in _fragment(page).get("answers", {}), (kind, entry[-3:])
        assert page.get_by_test_id("exercise-progress").inner_text() == f"0 of {EXERCISE_COUNT} correct"
        assert log.blocked == [] and log.console_errors == []


def test_a_link_with_an_over_long_answer_says_so_and_falls_back(pages):
    with browser_page() as (page, log):
        open_standalone(page, pages, "exercises", {"seed": 1, "topic": 4, "answers": {"nvfp4-decode": NINES}})
        note = page.locator("#link-note").inner_text()
        assert "the answer to nvfp4-decode is 300 characters long; an answer is at most 200" in note, note
        assert "defaults are shown" in note and "do not know" not in note
        # the defaults: every exercise, none answered, every control there
        assert page.locator("[data-exercise]").count() == EXERCISE_COUNT
        assert page.get_by_test_id("exercise-progress").inner_text() == f"0 of {EXERCISE_COUNT} correct"
        assert page.locator("[data-exercise='nvfp4-decode'] input").input_value() == ""
        # what is wrong with another record's entry for a known exercise is said as plainly (each
        # link on the open page is applied by its hashchange event, which can come after goto)
        link_note = page.locator("#link-note")
        open_standalone(page, pages, "exercises", {"progress": {"nvfp4-decode": "maybe"}})
        expect(link_note).to_contain_text('progress: nvfp4-decode must be "correct" or "wrong", got "maybe"')
        open_standalone(page, pages, "exercises", {"rounds": {"nvfp4-decode": -1}})
        expect(link_note).to_contain_text("rounds: the round of nvfp4-decode must be a whole number")
        # an entry naming no exercise is still called one the exercises do not know
        open_standalone(page, pages, "exercises", {"answers": {"no-such-kind": "1"}})
        expect(link_note).to_contain_text('answers has an entry the exercises do not know: "no-such-kind"')
        assert log.blocked == [] and log.console_errors == []


def _refusal(page, key):
    """The refusal beside a field (its aria-describedby note, role=alert), or "" when it has none."""
    field = page.locator(f"#widget input[data-focus='{key}']")
    note = page.locator(f"#{field.get_attribute('aria-describedby')}")
    if not note.is_visible():
        return ""
    assert note.get_attribute("role") == "alert" and field.get_attribute("aria-invalid") == "true"
    return note.inner_text()


def test_a_kept_code_refusal_is_read_again_for_the_format_now_shown(pages):
    with browser_page() as (page, log):
        # code 0 is +0 in E2M1, and carries over as E8M0's code 0 (E8M0 has no zero): the code field
        # keeps its value through the switch, so its refusal stays
        open_standalone(page, pages, "code-explorer", {"format": "E2M1", "code": 0, "value_text": "0.3"})
        code = page.locator("#widget input[data-focus='code']")
        code.fill("abc")
        code.press("Enter")
        assert "\u201cabc\u201d is not a 4-bit code. Type something like 5, 0x5 or 0b0101." in _refusal(page, "code")
        page.get_by_role("button", name="E8M0").click()
        assert code.input_value() == "abc"  # what the learner typed is kept
        # read against E8M0, whose codes are bytes: the message and its suggestion are a byte's
        refusal = _refusal(page, "code")
        assert "\u201cabc\u201d is not a byte. Type something like 126, 0x7E or 0b01111110." in refusal, refusal
        assert "4-bit" not in refusal and "0b0101" not in refusal
        assert page.evaluate("document.activeElement.dataset.focus") == "format-E8M0"
        # and back again: a 4-bit code's words
        page.get_by_role("button", name="E2M1").click()
        assert "is not a 4-bit code" in _refusal(page, "code")
        # text that is no E2M1 code but is an E8M0 code: kept, not shown, and it says why and how
        code.fill("200")
        code.press("Enter")
        assert "200 does not fit in 4 bits" in _refusal(page, "code")
        page.get_by_role("button", name="E8M0").click()
        refusal = _refusal(page, "code")
        assert "does not fit" not in refusal and "0xC8" in refusal and "press Enter" in refusal, refusal
        # the switch carried E2M1's +0 over as E8M0's code 0, 2^-127; the typed code waits for Enter
        assert code.input_value() == "200"
        assert page.get_by_test_id("code-formula").inner_text().startswith("2^(0 \u2212 127)")
        code.press("Enter")  # taken now: the code shown is 200 = 0xC8 = 2^73
        assert _refusal(page, "code") == "" and code.input_value() == "200"
        assert page.get_by_test_id("code-formula").inner_text().startswith("2^(200 \u2212 127)")
        assert log.blocked == [] and log.console_errors == []


def test_the_rule_cards_say_when_they_are_for_the_last_number_taken(pages):
    with browser_page() as (page, log):
        open_standalone(page, pages, "code-explorer")  # E4M3, 0.3
        value = page.locator("#widget input[data-focus='value']")
        cue = page.get_by_test_id("value-stale")
        cards = page.get_by_test_id("encoded-value").all_inner_texts()
        assert not cue.is_visible()
        value.fill("abc")
        value.press("Enter")
        assert _refusal(page, "value")
        # the cards still show 0.3's rounding, and a line above them says so
        assert page.get_by_test_id("encoded-value").all_inner_texts() == cards
        assert cue.is_visible() and "last number taken, 0.3" in cue.inner_text() and "refused" in cue.inner_text()
        assert page.locator("#widget .lab-value-box.lab-value-old").count() == 1  # the cards' dashed edge
        assert page.evaluate("document.activeElement.dataset.focus") == "value"
        # another format: still the last number taken, now E8M0's three rules for it
        page.get_by_role("button", name="E8M0").click()
        assert value.input_value() == "abc" and cue.is_visible() and "0.3" in cue.inner_text()
        assert len(page.get_by_test_id("encoded-value").all_inner_texts()) == 3
        # a number taken: no cue
        value.fill("-1")
        value.press("Enter")
        assert not cue.is_visible() and "no sign and no zero" in page.get_by_test_id("encode-note").inner_text()
        # where the note stands in for the cards, the cue speaks of the note
        value.fill("1, 2")
        value.press("Enter")
        assert cue.is_visible() and "\u22121" in cue.inner_text() and "note" in cue.inner_text()
        value.fill("3")
        value.press("Enter")
        assert not cue.is_visible() and page.get_by_test_id("encoded-value").all_inner_texts() == ["2", "4", "4"]
        assert page.locator("#widget .lab-value-old").count() == 0
        assert log.blocked == [] and log.console_errors == []
