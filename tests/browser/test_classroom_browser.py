"""The teacher's view in Chromium (serve --class): two students on notebook 1's course page, each
with a nickname (one of them HTML) and their own numbers, check answers; the teacher's page, opened
with the token, shows each answer in the grid with the verdict the student's page gave it, the
nickname as the same text, and a CSV of it; a missing or wrong token is refused on the page. A
sealed single-file explainer offers no name field. Two students of one nickname are two rows, and
the teacher merges and removes rows with the keyboard. Every request goes to 127.0.0.1."""

from __future__ import annotations

import csv
import io
import json
import threading
import time

import pytest
from chromium import chromium_path
from playwright.sync_api import expect
from serving import make_site
from test_exercises_browser import _answer, _codec

from bench.harness.chromium import chromium as launch_chromium
from classroom import serve
from classroom.teacher_view import POLL_MS, Classroom, read_post

pytestmark = pytest.mark.browser

TOKEN = "the-teachers-token-for-this-test-0123"
NICKNAMES = ["<b>Ada</b>", "Grace"]


@pytest.fixture(scope="module")
def class_server(site):
    """The site every browser test shares, served as a class on loopback: (url, Classroom)."""
    made = Classroom(token=TOKEN)
    server = serve.site_server(site, ("127.0.0.1", 0), classroom=made)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", made
    server.shutdown()
    server.server_close()
    thread.join(timeout=10)


def _until_kept(made, nickname, kinds, timeout_s=10):
    """Wait until the server holds `nickname`'s answers to `kinds`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        kept = {student["nickname"]: student["answers"] for student in made.register.snapshot()["students"]}
        if set(kinds) <= set(kept.get(nickname, {})):
            return
        time.sleep(0.05)
    pytest.fail(f"the server never got {nickname}'s answers to {kinds}")


def _join(page, url, nickname):
    page.goto(f"{url}/01_one_nibble.html")
    seed_field = page.locator("input[data-focus='seed']")
    seed_field.wait_for(timeout=20000)
    name = page.get_by_label("your name on the teacher's screen")
    name.fill(nickname)
    name.press("Enter")
    expect(page.get_by_test_id("class-status")).to_contain_text("go to the teacher's screen as")
    return int(seed_field.input_value())


def test_two_students_answers_reach_the_teachers_grid_as_their_pages_checked_them(class_server):
    url, made = class_server
    with launch_chromium(chromium_path()) as new_page:
        seeds, wrong_code = [], None
        with new_page() as (first, first_log), new_page() as (second, second_log):
            for page, nickname, right in ((first, NICKNAMES[0], True), (second, NICKNAMES[1], False)):
                seed = _join(page, url, nickname)
                seeds.append(seed)
                answers = _codec(seed)["answers"]
                _answer(page, "nibble-decode", answers["nibble-decode"])
                expect(page.get_by_test_id("class-status")).to_have_text(
                    f"Sent to the teacher's screen as “{nickname}”."
                )
                _answer(page, "e2m1-code", "not a number")  # refused beside its field: nothing is sent
                wrong_code = str((int(answers["e2m1-code"]) + 1) % 16)
                _answer(page, "e2m1-code", answers["e2m1-code"] if right else wrong_code)
                expect(page.get_by_test_id("exercise-progress")).to_have_text(f"{2 if right else 1} of 2 correct")
                _until_kept(made, nickname, ["nibble-decode", "e2m1-code"])  # the posts are sent in the background
            assert seeds[0] != seeds[1]
            assert first_log.console_errors == second_log.console_errors == []
            assert first_log.blocked == second_log.blocked == [] and first_log.failed == second_log.failed == []

        kept = {student["nickname"]: student for student in made.register.snapshot()["students"]}
        assert set(kept) == set(NICKNAMES)
        assert {kind: entry["seed"] for kind, entry in kept[NICKNAMES[0]]["answers"].items()} == {
            "nibble-decode": seeds[0],
            "e2m1-code": seeds[0],
        }
        assert kept[NICKNAMES[1]]["answers"]["e2m1-code"]["answer"] == wrong_code

        with new_page() as (teacher, log):
            teacher.goto(f"{url}/class#{TOKEN}")
            rows = teacher.locator("[data-student]")
            expect(rows).to_have_count(2)
            names = teacher.locator("[data-student] th").all_inner_texts()
            assert sorted(names) == sorted(NICKNAMES)  # the HTML nickname is its own text
            assert teacher.locator("[data-student] b").count() == 0
            ada = teacher.locator("tr", has=teacher.locator("th", has_text=NICKNAMES[0]))
            grace = teacher.locator("tr", has=teacher.locator("th", has_text=NICKNAMES[1]))
            verdicts = "(row) => [...row.querySelectorAll('[data-verdict]')].map((cell) => cell.dataset.verdict)"
            assert ada.evaluate(verdicts) == ["right", "right"]
            assert grace.evaluate(verdicts) == ["right", "wrong"]
            assert ada.locator("td").last.inner_text() == "2 of 24"
            teacher.select_option("#teacher-topic", "1")
            assert grace.locator("td").last.inner_text() == "1 of 2"
            assert teacher.locator("tfoot tr").last.locator("td").all_inner_texts()[:2] == ["2", "1"]
            with teacher.expect_download() as download:
                teacher.get_by_role("button", name="Download CSV").click()
            table = list(csv.reader(io.StringIO(download.value.path().read_text(encoding="utf-8"))))
            assert table[0][:3] == ["nickname", "notebook", "exercise"]
            lines = {(row[0], row[2]): row for row in table[1:]}
            assert lines[(NICKNAMES[1], "1.2")][6:12] == [wrong_code, "wrong", "1", "no", wrong_code, "wrong"]
            assert lines[(NICKNAMES[0], "1.2")][11] == "right" and lines[(NICKNAMES[0], "1.2")][4] == str(seeds[0])
            assert log.console_errors == [] and log.failed == [] and log.blocked == []


@pytest.mark.parametrize(("fragment", "says"), [("", "need the teacher's token"), ("#wrong", "not this class's token")])
def test_the_teachers_page_refuses_a_missing_or_wrong_token_and_shows_no_answers(class_server, fragment, says):
    url, made = class_server
    made.register.record(
        {
            "student": "c" * 32,
            "nickname": "Secret",
            "kind": "nibble-decode",
            "seed": 3,
            "round": 0,
            "answer": "1",
            "first": "1",
            "tries": 1,
            "shown": False,
        },
        "192.0.2.1",
    )
    with launch_chromium(chromium_path()) as new_page, new_page() as (teacher, log):
        teacher.goto(f"{url}/class{fragment}")
        expect(teacher.get_by_test_id("teacher-problem")).to_contain_text(says)
        assert teacher.locator("[data-student]").count() == 0
        assert "Secret" not in teacher.content()
        assert log.blocked == []


def test_a_sealed_explainer_on_a_class_server_offers_no_name_field(class_server):
    url, _ = class_server
    with launch_chromium(chromium_path()) as new_page, new_page() as (page, log):
        page.goto(f"{url}/explainers/exercises.html")
        page.wait_for_selector("body[data-ready='true']")
        assert page.locator("input[data-focus='seed']").count() == 1
        assert page.get_by_label("your name on the teacher's screen").count() == 0
        assert log.console_errors == []


@pytest.fixture
def small_class(tmp_path):
    """A class over a site of a few files (the teacher's page needs none of the course): (url, Classroom)."""
    made = Classroom(token=TOKEN)
    server = serve.site_server(make_site(tmp_path), ("127.0.0.1", 0), classroom=made)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", made
    server.shutdown()
    server.server_close()
    thread.join(timeout=10)


def _answer_as(made, key, nickname, kind, answer, at, first=None, tries=1, shown=False):
    fields = {"room": made.room, "student": key * 32, "nickname": nickname, "kind": kind, "seed": 7, "round": 0}
    attempts = {"first": answer if first is None else first, "tries": tries, "shown": shown}
    made.register.record(read_post(json.dumps({**fields, "answer": answer, **attempts}).encode()), "192.0.2.1", at=at)


def _focused(page):
    return page.evaluate("() => document.activeElement.id || document.activeElement.textContent")


def test_the_teacher_tells_two_students_of_one_name_apart_and_merges_and_removes_rows_by_keyboard(small_class):
    url, made = small_class
    _answer_as(made, "a", "Ana", "nibble-decode", "1", at=100.0)
    _answer_as(made, "b", "Ana", "nibble-decode", "2", at=200.0)
    _answer_as(made, "b", "Ana", "e2m1-code", "3", at=210.0)
    _answer_as(made, "c", "Bo", "nibble-decode", "4", at=150.0)
    with launch_chromium(chromium_path()) as new_page, new_page() as (teacher, log):
        teacher.goto(f"{url}/class#{TOKEN}")
        rows = teacher.locator("[data-student]")
        expect(rows).to_have_count(3)
        assert teacher.locator("[data-student] th").all_inner_texts() == ["Ana", "Ana (2)", "Bo"]
        for control in teacher.locator("section button:visible, section select").all():
            box = control.bounding_box()
            assert box["height"] >= 44 and box["width"] >= 44

        # the choice in a picker, and its focus, outlive the grid being read again with a new student
        merge_from = teacher.get_by_label("Merge", exact=True)
        merge_from.select_option("b" * 32)
        merge_from.focus()
        _answer_as(made, "d", "Cy", "nibble-decode", "5", at=300.0)
        expect(rows).to_have_count(4, timeout=POLL_MS * 3)
        assert merge_from.input_value() == "b" * 32 and _focused(teacher) == "teacher-merge-from"
        assert "Ana (2): 2 answers" in merge_from.locator("option:checked").inner_text()

        teacher.get_by_label("into").select_option("a" * 32)
        teacher.keyboard.press("Tab")
        teacher.keyboard.press("Tab")
        assert _focused(teacher) == "Merge"
        teacher.keyboard.press("Enter")
        expect(teacher.get_by_test_id("teacher-change")).to_have_text(
            "Merged Ana (2) into Ana: it keeps the newer answer to each exercise."
        )
        expect(rows).to_have_count(3)
        [merged] = [student for student in made.register.snapshot()["students"] if student["student"] == "a" * 32]
        assert {kind: kept["answer"] for kind, kept in merged["answers"].items()} == {
            "nibble-decode": "2",
            "e2m1-code": "3",
        }
        assert teacher.locator("[data-student] th").all_inner_texts() == ["Ana", "Bo", "Cy"]

        # removing asks first; Escape keeps the student, with the focus back on the button
        remove = teacher.get_by_label("Remove", exact=True)
        remove.select_option("c" * 32)
        remove.focus()
        teacher.keyboard.press("Tab")
        teacher.keyboard.press("Enter")
        question = teacher.get_by_role("group", name="Remove Bo and their 1 answer from the grid?")
        expect(question).to_be_visible()
        assert _focused(teacher) == "Cancel"
        teacher.keyboard.press("Escape")
        expect(question).to_be_hidden()
        assert _focused(teacher) == "Remove…" and rows.count() == 3
        teacher.keyboard.press("Enter")
        teacher.keyboard.press("Shift+Tab")
        assert _focused(teacher) == "Remove Bo"
        teacher.keyboard.press("Enter")
        expect(teacher.get_by_test_id("teacher-change")).to_have_text("Removed Bo.")
        expect(rows).to_have_count(2)
        assert _focused(teacher) == "teacher-remove" and remove.input_value() == ""
        for control in teacher.locator("section button").all():
            box = control.bounding_box()
            assert box is None or (box["height"] >= 44 and box["width"] >= 44)
        assert [student["nickname"] for student in made.register.snapshot()["students"]] == ["Ana", "Cy"]

        assert log.console_errors == [] and log.blocked == [] and log.failed == []

        # a student removed meanwhile (another tab of the teacher's) is refused in words
        remove.select_option("d" * 32)
        teacher.get_by_role("button", name="Remove…").click()
        made.register.remove("d" * 32)
        teacher.get_by_role("button", name="Remove Cy").click()
        expect(teacher.get_by_test_id("teacher-change-problem")).to_have_text(
            "The server refused: no student in this class has that id: removed or merged already?."
        )
        assert log.failed == [f"{url}/class/remove"]  # Chromium logs that 404 itself; the page says nothing more
        assert log.console_errors == ["Failed to load resource: the server responded with a status of 404 (Not Found)"]


def test_the_grid_shows_each_first_answer_and_the_tries_not_only_the_last(small_class):
    """Three students end with the right answer to one exercise: one at the first try, one after a
    wrong first answer and two more tries, one after asking for the working. The grid tells them
    apart, in marks and in words, and counts the first tries apart from the last."""
    url, made = small_class
    kind = "nibble-decode"
    key = _codec(7)
    right = key["answers"][kind]
    wrong = key["wrongs"][kind][0]
    _answer_as(made, "a", "Ana", kind, right, at=100.0)
    _answer_as(made, "b", "Bo", kind, right, at=110.0, first=wrong, tries=3)
    _answer_as(made, "c", "Cy", kind, right, at=120.0, shown=True)
    with launch_chromium(chromium_path()) as new_page, new_page() as (teacher, log):
        teacher.goto(f"{url}/class#{TOKEN}")
        expect(teacher.locator("[data-student]")).to_have_count(3)
        teacher.select_option("#teacher-topic", "1")
        cells = teacher.locator("[data-student] td[data-verdict]")
        assert cells.all_inner_texts() == ["\u2713", "\u2717\u2192\u2713 3", "\u2713 w"]
        assert cells.evaluate_all("(cells) => cells.map((cell) => cell.dataset.firstVerdict)") == [
            "right",
            "wrong",
            "right",
        ]
        assert cells.evaluate_all("(cells) => cells.map((cell) => cell.dataset.verdict)") == ["right"] * 3
        labels = cells.evaluate_all("(cells) => cells.map((cell) => cell.getAttribute('aria-label'))")
        assert labels[1] == f"1.1: first answer not right ({wrong}), last answer right ({right}) after 3 tries"
        assert labels[2] == f"1.1: first answer right ({right}), the working asked for"
        heads = teacher.locator("thead th").all_inner_texts()
        assert heads[-2:] == ["right at the first try", "right at the last"]
        totals = teacher.locator("[data-student]").evaluate_all(
            "(rows) => rows.map((row) => [...row.querySelectorAll('td')].slice(-2).map((cell) => cell.textContent))"
        )
        assert totals == [["1 of 2", "1 of 2"], ["0 of 2", "1 of 2"], ["0 of 2", "1 of 2"]]
        feet = teacher.locator("tfoot tr").evaluate_all(
            "(rows) => rows.map((row) => [...row.cells].slice(0, 2).map((cell) => cell.textContent))"
        )
        assert feet == [["right at the first try", "1"], ["right at the last", "3"]]
        with teacher.expect_download() as download:
            teacher.get_by_role("button", name="Download CSV").click()
        table = list(csv.reader(io.StringIO(download.value.path().read_text(encoding="utf-8"))))
        assert table[0][6:12] == [
            "first answer",
            "first verdict",
            "tries",
            "working shown on request",
            "answer",
            "verdict",
        ]
        assert [row[6:12] for row in table[1:]] == [
            [right, "right", "1", "no", right, "right"],
            [wrong, "wrong", "3", "no", right, "right"],
            [right, "right", "1", "yes", right, "right"],
        ]
        assert log.console_errors == [] and log.blocked == [] and log.failed == []
