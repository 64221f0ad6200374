"""The teacher's view in Chromium (serve --class): two students on notebook 1's course page, each
with a nickname (one of them HTML) and their own numbers, check answers; the teacher's page, opened
with the token, shows each answer in the grid with the verdict the student's page gave it, the
nickname as the same text, and a CSV of it; a missing or wrong token is refused on the page. A
sealed single-file explainer offers no name field. Every request goes to 127.0.0.1."""

from __future__ import annotations

import csv
import io
import threading
import time

import pytest
from chromium import chromium_path
from playwright.sync_api import expect
from test_exercises_browser import _answer, _codec

from bench.harness.chromium import chromium as launch_chromium
from widgets.build import serve
from widgets.build.classroom import Classroom

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
            assert ada.locator("td").last.inner_text() == "2 of 16"
            teacher.select_option("#teacher-topic", "1")
            assert grace.locator("td").last.inner_text() == "1 of 2"
            assert teacher.locator("tfoot td").all_inner_texts()[:2] == ["2", "1"]
            with teacher.expect_download() as download:
                teacher.get_by_role("button", name="Download CSV").click()
            table = list(csv.reader(io.StringIO(download.value.path().read_text(encoding="utf-8"))))
            assert table[0][:3] == ["nickname", "notebook", "exercise"]
            lines = {(row[0], row[2]): row for row in table[1:]}
            assert lines[(NICKNAMES[1], "1.2")][6:8] == [wrong_code, "wrong"]
            assert lines[(NICKNAMES[0], "1.2")][7] == "right" and lines[(NICKNAMES[0], "1.2")][4] == str(seeds[0])
            assert log.console_errors == [] and log.failed == [] and log.blocked == []


@pytest.mark.parametrize(("fragment", "says"), [("", "need the teacher's token"), ("#wrong", "not this class's token")])
def test_the_teachers_page_refuses_a_missing_or_wrong_token_and_shows_no_answers(class_server, fragment, says):
    url, made = class_server
    made.register.record(
        {"student": "c" * 32, "nickname": "Secret", "kind": "nibble-decode", "seed": 3, "round": 0, "answer": "1"}
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
