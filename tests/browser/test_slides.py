"""Each course page as slides (?slides: marimo's slides layout) and the speaker view of serve
--class that follows them from another tab of the same browser, at 1920 x 1080; the notes reach
the teacher's token only, and no page of the site carries a word of them. A page in its own layout
loads none of the slides' front-end. Every request goes to 127.0.0.1."""

from __future__ import annotations

import re
import threading

import pytest
from chromium import chromium_path
from playwright.sync_api import expect

from bench.harness.chromium import chromium as launch_chromium
from classroom import serve
from classroom.teacher_view import Classroom
from lab.teach.speaker_notes import speaker_notes
from publish import site as sitebuild

pytestmark = pytest.mark.browser

TOKEN = "the-speakers-token-for-this-test-0123"
PROJECTOR = {"width": 1920, "height": 1080}


@pytest.fixture(scope="module")
def class_site(site):
    server = serve.site_server(site, ("127.0.0.1", 0), classroom=Classroom(token=TOKEN))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join(timeout=10)


def _forward_to(slides, sections, target: int) -> None:
    """Arrow right to slide `target` (from 0), one slide at a time, each press waiting for the
    slide it moves to: a press that lands while the slides are still moving is not taken (a
    presenter presses again), so a lost one is pressed again."""
    shown = "(all) => all.findIndex((section) => section.classList.contains('present'))"
    for _ in range(3 * target + 3):
        index = sections.evaluate_all(shown)
        if index == target:
            return
        slides.keyboard.press("ArrowRight")
        try:
            expect(sections.nth(index + 1)).to_have_class(re.compile(r"\bpresent\b"), timeout=3000)
        except AssertionError:
            continue
    pytest.fail(f"the slides never reached slide {target + 1}")


def test_no_page_of_the_site_carries_the_speaker_notes(site):
    phrases = [note[:60] for notes in speaker_notes().values() for note in notes.values()]
    for page in site.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        assert not [phrase for phrase in phrases if phrase in text], page.name


def test_a_page_in_its_own_layout_loads_nothing_of_the_slides(class_site):
    with launch_chromium(chromium_path()) as new_page, new_page() as (page, log):
        page.goto(f"{class_site}/03_mxfp4.html")
        page.locator("#root a[href='02_scale_is_a_ruler.html']").first.wait_for(timeout=30000)
        page.wait_for_load_state("networkidle")
        assert page.locator(".reveal").count() == 0
        assert not [
            url
            for url in log.requests
            if f"/{sitebuild.SLIDES_CHUNK}-" in url or "/lab-slides-" in url or ".wasm" in url
        ]
        assert [url for url in log.requests if "/lab-page-" in url]


def test_the_speaker_view_follows_the_slides_in_another_tab(class_site, tmp_path):
    notes = speaker_notes()["03_mxfp4"]
    title = next(iter(notes))
    with launch_chromium(chromium_path()) as new_page, new_page() as (speaker, speaker_log):
        speaker.set_viewport_size(PROJECTOR)
        speaker.goto(f"{class_site}/class/notes#{TOKEN}")
        expect(speaker.locator("[data-notebook='03_mxfp4.html'] a")).to_have_attribute(
            "href", "/03_mxfp4.html?slides&present"
        )
        expect(speaker.get_by_test_id("speaker-slide")).to_have_text("No slides open yet.")
        slides = speaker.context.new_page()  # the projector's tab, in the same browser
        slides.set_viewport_size(PROJECTOR)
        slides.goto(f"{class_site}/03_mxfp4.html?slides")
        sections = slides.locator(".reveal .slides > section")
        expect(sections.first).to_have_class(re.compile(r"\bpresent\b"), timeout=30000)
        count = sections.count()
        assert count >= 8
        # the page as slides runs the slides' bundle of marimo's front-end, not the page's
        loaded = slides.evaluate("() => performance.getEntriesByType('resource').map((entry) => entry.name)")
        assert [url for url in loaded if "/lab-slides-" in url] and not [url for url in loaded if "/lab-page-" in url]
        expect(speaker.get_by_test_id("speaker-slide")).to_have_text(f"Notebook 3 · MXFP4: slide 1 of {count}")
        expect(speaker.get_by_test_id("speaker-heading")).to_have_text(title)
        expect(speaker.get_by_test_id("speaker-note")).to_have_text(notes[title])
        slides.screenshot(path=tmp_path / "slides-1920.png")
        # forward to the slide of "What the block costs", the heading after the title's
        headings = sections.evaluate_all("(all) => all.map((s) => s.querySelector('h1, h2')?.textContent.trim() ?? '')")
        target = headings.index("What the block costs")
        slides.locator(".reveal").focus()
        _forward_to(slides, sections, target)
        expect(speaker.get_by_test_id("speaker-slide")).to_have_text(
            f"Notebook 3 · MXFP4: slide {target + 1} of {count}"
        )
        expect(speaker.get_by_test_id("speaker-note")).to_have_text(notes["What the block costs"])
        expect(speaker.get_by_test_id("speaker-next")).to_have_text("Next: Two rules for choosing the scale")
        # a slide without a heading of its own takes the note of the heading before it
        after = headings.index("Two rules for choosing the scale")
        untitled = next(i for i in range(after + 1, count) if not headings[i])
        _forward_to(slides, sections, untitled)
        expect(speaker.get_by_test_id("speaker-heading")).to_have_text("Two rules for choosing the scale")
        expect(speaker.get_by_test_id("speaker-note")).to_have_text(notes["Two rules for choosing the scale"])
        speaker.screenshot(path=tmp_path / "speaker-1920.png")
        assert speaker_log.console_errors == [] and speaker_log.blocked == [] and speaker_log.failed == []


def test_the_speaker_view_without_the_token_shows_no_note(class_site):
    with launch_chromium(chromium_path()) as new_page, new_page() as (speaker, log):
        speaker.goto(f"{class_site}/class/notes#not-the-token")
        expect(speaker.get_by_test_id("teacher-problem")).to_contain_text("not this class's token")
        assert not [note for note in speaker_notes()["03_mxfp4"].values() if note[:40] in speaker.content()]
