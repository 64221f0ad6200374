"""The author's kit on an explainer page, from file:// with every other request blocked: Copy link
carries what the page shows, Copy embed code gives an iframe that takes its content's height, and
`labctl.py explainer` writes one page that opens with a given state."""

from __future__ import annotations

import json
import shutil
from urllib.parse import quote

import pytest
from chromium import browser_page, open_standalone
from playwright.sync_api import expect

from bench.harness.static_server import static_server
from publish import standalone
from widgets import Q4KExplorer

pytestmark = pytest.mark.browser


def _shared_text(page, button: str) -> str:
    page.get_by_role("button", name=button).click()
    box = page.get_by_test_id("share-text")
    expect(box).to_be_visible()
    # headless Chromium may refuse the clipboard from file://; the page then says to copy by hand
    expect(page.get_by_test_id("share-status")).to_contain_text(button.removeprefix("Copy "))
    return box.input_value()


def test_copy_link_from_disk_is_relative_to_the_explainers_own_file(pages, tmp_path):
    """Opened from disk, the page's address names a folder of this computer (file:///tmp/…) that no
    one else can open: the link names the explainer's file and the state, and opens that state from
    a copy of the file anywhere."""
    with browser_page() as (page, log):
        open_standalone(page, pages, "nibble-decoder")
        page.get_by_role("button", name="pick code 0111").click()
        assert page.get_by_test_id("e2m1-value").inner_text() == "6"
        link = _shared_text(page, "Copy link")
        assert link == "nibble-decoder.html#" + quote(json.dumps({"code": 7}, separators=(",", ":")), safe="")
        expect(page.get_by_test_id("share-status")).to_contain_text("relative to its file, nibble-decoder.html")
        # the reader's copy of the file, in a folder of their own
        elsewhere = tmp_path / "reader"
        elsewhere.mkdir()
        shutil.copy(pages / "nibble-decoder.html", elsewhere / "nibble-decoder.html")
        fresh = page.context.new_page()
        fresh.goto(elsewhere.as_uri() + "/" + link)
        fresh.wait_for_selector("body[data-ready='true']")
        assert fresh.get_by_test_id("e2m1-value").inner_text() == "6"
        assert log.blocked == [] and log.console_errors == []


def test_copy_link_over_http_is_the_pages_whole_address(pages):
    """Served, the page's address is one others can reach, and the link is all of it."""
    with static_server(pages) as url, browser_page() as (page, log):
        page.goto(f"{url}/nibble-decoder.html")
        page.wait_for_selector("body[data-ready='true']")
        page.get_by_role("button", name="pick code 0111").click()
        link = _shared_text(page, "Copy link")
        assert link == f"{url}/nibble-decoder.html#%7B%22code%22%3A7%7D"
        assert "opened from disk" not in page.get_by_test_id("share-status").inner_text().lower()
        assert log.blocked == [] and log.console_errors == []


def test_a_link_carries_only_the_inputs_that_differ_from_the_defaults(pages):
    """The default Q4_K explorer with another payload byte: the link carries that byte, not the
    block's 144 bytes (some 1.6 KB), and opens the same view; a link that names every input, as
    links did before, still opens; back at the defaults the link says so in four characters."""
    with browser_page() as (page, log):
        open_standalone(page, pages, "q4k-explorer")
        page.get_by_role("button", name="payload byte 17 =", exact=False).first.click()
        expect(page.get_by_role("textbox", name="payload byte 17", exact=True)).to_have_count(1)
        link = _shared_text(page, "Copy link")
        assert link == "q4k-explorer.html#%7B%22payload_index%22%3A17%7D"
        fresh = page.context.new_page()
        fresh.goto(pages.as_uri() + "/" + link)
        fresh.wait_for_selector("body[data-ready='true']")
        expect(fresh.get_by_role("textbox", name="payload byte 17", exact=True)).to_have_count(1)
        assert fresh.locator("#link-note").is_hidden()
        # back to byte 0, the default: nothing differs
        page.get_by_role("button", name="payload byte 0 =", exact=False).first.click()
        assert _shared_text(page, "Copy link") == "q4k-explorer.html#%7B%7D"
        # a link from before, carrying every input
        everything = {"block": Q4KExplorer().block, "payload_index": 17}
        older = page.context.new_page()
        open_standalone(older, pages, "q4k-explorer", everything)
        expect(older.get_by_role("textbox", name="payload byte 17", exact=True)).to_have_count(1)
        assert older.locator("#link-note").is_hidden()
        # and the state the page opens with is the one `labctl.py explainer --state` takes
        assert standalone.read_state("q4k-explorer", link.partition("#")[2]) == {"payload_index": 17}
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
