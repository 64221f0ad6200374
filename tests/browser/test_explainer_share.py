"""The author's kit on an explainer page, from file:// with every other request blocked: Copy link
carries what the page shows, Copy embed code gives an iframe that takes its content's height, and
`labctl.py explainer` writes one page that opens with a given state."""

from __future__ import annotations

import shutil

import pytest
from chromium import browser_page, open_standalone
from playwright.sync_api import expect

from publish import standalone

pytestmark = pytest.mark.browser


def _shared_text(page, button: str) -> str:
    page.get_by_role("button", name=button).click()
    box = page.get_by_test_id("share-text")
    expect(box).to_be_visible()
    # headless Chromium may refuse the clipboard from file://; the page then says to copy by hand
    expect(page.get_by_test_id("share-status")).to_contain_text(button.removeprefix("Copy "))
    return box.input_value()


def test_copy_link_opens_what_the_page_showed(pages):
    with browser_page() as (page, log):
        open_standalone(page, pages, "nibble-decoder")
        page.get_by_role("button", name="pick code 0111").click()
        assert page.get_by_test_id("e2m1-value").inner_text() == "6"
        link = _shared_text(page, "Copy link")
        assert link.startswith((pages / "nibble-decoder.html").as_uri() + "#")
        fresh = page.context.new_page()
        fresh.goto(link)
        fresh.wait_for_selector("body[data-ready='true']")
        assert fresh.get_by_test_id("e2m1-value").inner_text() == "6"
        assert log.blocked == [] and log.console_errors == []


def test_the_embed_code_sizes_its_iframe_to_the_explainer(pages, tmp_path):
    with browser_page() as (page, log):
        open_standalone(page, pages, "q4k-explorer", {"payload_index": 17})
        code = _shared_text(page, "Copy embed code")
        assert code.startswith('<iframe src="q4k-explorer.html#')
        # an author's page: some prose, then the pasted code, beside the explainer's file
        shutil.copy(pages / "q4k-explorer.html", tmp_path / "q4k-explorer.html")
        (tmp_path / "article.html").write_text(
            f"<!doctype html><meta charset='utf-8'><title>article</title><p>Before.</p>\n{code}\n<p>After.</p>",
            encoding="utf-8",
        )
        page.goto((tmp_path / "article.html").as_uri())
        frame_element = page.locator("iframe[data-four-bit-lab]")
        frame = page.frame_locator("iframe[data-four-bit-lab]")
        expect(frame.get_by_role("textbox", name="payload byte 17", exact=True)).to_have_count(1)
        inner = page.frames[1]
        # the iframe takes the height of all it shows (the 600 px placeholder cut the Q4_K map)
        expect(frame_element).not_to_have_css("height", "600px")
        content = inner.evaluate("document.documentElement.scrollHeight")
        assert content > 600
        assert abs(frame_element.bounding_box()["height"] - content) <= 1
        # and nothing inside it scrolls: every byte of the map is on the author's page
        assert inner.evaluate("document.documentElement.scrollHeight <= innerHeight")
        assert log.blocked == [] and log.console_errors == []


def test_labctl_explainer_writes_one_page_that_opens_with_the_state(tmp_path, capsys):
    target = tmp_path / "mine.html"
    assert standalone.main(["nibble-decoder", "--state", "#%7B%22code%22%3A8%7D", "-o", str(target)]) == 0
    assert "opening with the given state" in capsys.readouterr().out
    with browser_page() as (page, log):
        page.goto(target.as_uri())
        page.wait_for_selector("body[data-ready='true']")
        # 1000 in E2M1 is negative zero
        assert page.get_by_test_id("e2m1-value").inner_text() == "\u22120"
        assert page.locator("#link-note").is_hidden()
        # a link the reader follows still wins over the state the file was written with
        page.goto(target.as_uri() + "#%7B%22code%22%3A3%7D")
        page.reload()
        page.wait_for_selector("body[data-ready='true']")
        assert page.get_by_test_id("e2m1-value").inner_text() == "1.5"
        assert log.blocked == [] and log.console_errors == []


def test_a_written_state_the_widget_refuses_opens_the_defaults_and_says_why(tmp_path):
    """The Python check takes the state's names and shapes; the widget's own check (here: an answer
    to an exercise that does not exist) runs in the page, which then shows the defaults."""
    target = tmp_path / "exercises.html"
    assert (
        standalone.main(["exercises", "--state", '{"seed": 9, "answers": {"no-such-kind": "1"}}', "-o", str(target)])
        == 0
    )
    with browser_page() as (page, log):
        page.goto(target.as_uri())
        page.wait_for_selector("body[data-ready='true']")
        note = page.locator("#link-note")
        expect(note).to_contain_text("The state this page was written with does not work")
        expect(note).to_contain_text("no-such-kind")
        assert log.blocked == []
