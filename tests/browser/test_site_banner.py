"""The static site's banner tells the truth for each page, and the site tells a reader who has only
its folder what they can do: a page whose parts all work says so, a page that hides what needs a
kernel says that, a page opened from disk says it cannot run there, and no page or index sends a
reader of a copy of the site to labctl.py, which is not in that folder. Read from the session's
full build (tests/conftest.py): notebook 1, whose every control works, and notebook 6, which hides
the opening of a file of your own."""

from __future__ import annotations

import pytest
from chromium import browser_page
from playwright.sync_api import expect

from bench.harness.static_server import static_server
from publish import site as sitebuild

pytestmark = pytest.mark.browser

ALL_WORK = "01_one_nibble"
SOME_HIDDEN = "06_files_and_recipes"


def _banner(page) -> str:
    banner = page.locator(".lab-static-banner")
    banner.wait_for(timeout=20000)
    return banner.inner_text()


@pytest.mark.parametrize("width", [390, 1440])
def test_served_the_banner_says_what_works_on_each_page(site, width):
    with static_server(site) as url, browser_page() as (page, log):
        page.set_viewport_size({"width": width, "height": 844})
        page.goto(f"{url}/{ALL_WORK}.html")
        page.get_by_role("button", name="pick code 0000").wait_for(timeout=30000)
        text = _banner(page)
        assert ("all controls work" if width == 390 else "every control works in your browser") in text
        assert "hidden" not in text and "disk" not in text and "labctl" not in text
        page.goto(f"{url}/{SOME_HIDDEN}.html")
        page.locator(f".{sitebuild.course.LIVE_ONLY_NOTE_CLASS}").first.wait_for(state="attached", timeout=30000)
        text = _banner(page)
        # this page hides what needs a kernel: it does not claim that every control works
        assert "all controls work" not in text and "every control works" not in text
        assert ("some parts hidden" if width == 390 else "is hidden, with a note in its place") in text
        assert "labctl" not in text
        banner = page.locator(".lab-static-banner")
        assert banner.evaluate("(node) => node.scrollWidth <= node.clientWidth")  # nothing cut off
        assert log.blocked == []


@pytest.mark.parametrize("name", [ALL_WORK, SOME_HIDDEN])
def test_opened_from_disk_the_banner_says_the_page_cannot_run(site, name):
    """From disk the browser refuses marimo's scripts, and the page says it cannot run: the banner
    above the note claims no working control, and the note says how to serve the folder without
    the lab's labctl.py."""
    with browser_page() as (page, log):
        page.goto((site / f"{name}.html").as_uri())
        page.wait_for_load_state("load")
        page.wait_for_timeout(1500)
        expect(page.get_by_role("heading", name="This course page needs a local web server")).to_be_visible()
        text = _banner(page)
        assert "Cannot run from disk" in text
        assert "work" not in text and "Static page" not in text
        body = page.locator("body").inner_text()
        assert "python3 -m http.server --bind 127.0.0.1" in body
        assert "labctl" not in body
        assert log.blocked == []


def test_the_index_of_a_copy_of_the_site_names_no_labctl(site):
    index = (site / "index.html").read_text(encoding="utf-8")
    assert "labctl" not in index
    assert "python3 -m http.server --bind 127.0.0.1" in index
