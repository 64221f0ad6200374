"""An author's own two-cell notebook with a lab widget, exported by `publish.export` and
served over loopback: it loads with nothing leaving the machine, no file missing and no console
error, has none of the course's banner or links, and its widget answers a click with no kernel.
Opened from disk it says it needs a server, which is why the export has no single-file form."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from chromium import browser_page
from playwright.sync_api import expect

from bench.harness.static_server import static_server
from publish import export
from tests.apps.test_export_cli import AUTHOR_NOTEBOOK

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def author_page(tmp_path_factory):
    """The folder an author's notebook was exported into, with one file of the author's own."""
    author = tmp_path_factory.mktemp("author")
    notebook = author / "own.py"
    notebook.write_text(AUTHOR_NOTEBOOK, encoding="utf-8")
    out = author / "public"
    out.mkdir()
    (out / "notes.txt").write_text("mine", encoding="utf-8")
    assert export.main([str(notebook), "-o", str(out)]) == 0
    return out


def _text(page, testid: str) -> str:
    locator = page.get_by_test_id(testid)
    locator.wait_for(timeout=20000)
    return locator.inner_text()


@pytest.mark.parametrize("width", [390, 1440])
def test_an_exported_authors_notebook_works_offline_over_http(author_page, width):
    with static_server(author_page) as url, browser_page() as (page, log):
        page.set_viewport_size({"width": width, "height": 900})
        failed = []
        page.on("response", lambda response: response.status >= 400 and failed.append(response.url))
        page.goto(f"{url}/own.html")
        page.get_by_role("button", name="pick code 0000").click()
        assert _text(page, "e2m1-value") == "0"
        page.get_by_role("button", name="bit 2, exponent bit 1, is 0").click()
        page.get_by_role("button", name="bit 0, fraction bit, is 0").click()
        assert _text(page, "uint4-value") == "5"
        assert _text(page, "e2m1-value") == "3"
        page.wait_for_load_state("networkidle")
        assert log.blocked == []
        assert log.console_errors == []
        assert failed == []
        # none of the course around it: no banner, no Contents or notebook links, no from-disk note
        assert page.locator(".lab-static-banner").count() == 0
        assert page.locator('a[href="index.html"], a[href$=".html"], a[href*="?file="]').count() == 0
        assert "Static page" not in page.locator("body").inner_text()
        assert page.get_by_text("This page needs a local web server").count() == 0
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def test_opened_from_disk_the_exported_page_says_it_needs_a_server(author_page):
    """Chromium refuses marimo's module scripts on a file:// page, so the app never mounts and the
    page's own note stays: the reason the export cannot be one file that opens from disk."""
    with browser_page() as (page, log):
        page.goto((author_page / "own.html").as_uri())
        page.wait_for_load_state("load")
        page.wait_for_timeout(1500)
        assert page.get_by_role("heading", name="This page needs a local web server").is_visible()
        assert page.get_by_test_id("e2m1-value").count() == 0
        assert "python3 -m http.server --bind 127.0.0.1" in page.locator("body").inner_text()
        assert log.blocked == []


def _readme_choice_notebook() -> str:
    """The authors' guide's example of a precomputed choice, as the notebook an author would paste it into."""
    readme = (Path(__file__).resolve().parents[2] / "docs" / "authors.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", readme, re.DOTALL)
    example = next(block for block in blocks if "PrecomputedChoice(" in block)
    head = "import marimo\n\napp = marimo.App()\n\n\n@app.cell\ndef _():\n    import marimo as mo\n\n    return (mo,)\n\n\n"
    return head + example


def test_the_readmes_precomputed_choice_works_on_an_exported_page(tmp_path):
    """The authors' guide's example, exported as an author would: its slider switches outcomes with no kernel."""
    notebook = tmp_path / "bits.py"
    notebook.write_text(_readme_choice_notebook(), encoding="utf-8")
    out = tmp_path / "public"
    assert export.main([str(notebook), "-o", str(out)]) == 0
    with static_server(out) as url, browser_page() as (page, log):
        page.goto(f"{url}/bits.html")
        slider = page.get_by_role("slider", name="bits per weight")
        slider.wait_for(timeout=30000)
        expect(page.get_by_text("4 bits: 16 levels")).to_be_visible()
        slider.press("End")
        expect(page.get_by_text("8 bits: 256 levels")).to_be_visible()
        expect(page.get_by_text("4 bits: 16 levels")).to_be_hidden()
        assert log.blocked == [] and log.console_errors == []


MATH_NOTEBOOK = (
    "import marimo\n\napp = marimo.App()\n\n\n@app.cell\ndef _():\n    import marimo as mo\n\n    return (mo,)\n\n\n"
    '@app.cell\ndef _(mo):\n    mo.md(r"A half is $\\frac{1}{2}$.")\n    return\n\n\nif __name__ == "__main__":\n    app.run()\n'
)


def test_a_page_that_shows_math_exports_with_katex_and_renders_it_offline(tmp_path):
    """The export leaves out what a page does not show (tests/apps/test_export_cli.py); a page that
    shows math keeps KaTeX's code and fonts, and draws the formula with nothing missing."""
    notebook = tmp_path / "half.py"
    notebook.write_text(MATH_NOTEBOOK, encoding="utf-8")
    out = tmp_path / "public"
    assert export.main([str(notebook), "-o", str(out)]) == 0
    assert list((out / "assets" / "marimo" / "assets").glob("KaTeX_Main-Regular-*.woff2"))
    with static_server(out) as url, browser_page() as (page, log):
        failed = []
        page.on("response", lambda response: response.status >= 400 and failed.append(response.url))
        page.goto(f"{url}/half.html")
        page.locator(".katex").first.wait_for(timeout=30000)
        expect(page.locator(".katex-html").first).to_contain_text("1")
        page.wait_for_load_state("networkidle")
        assert failed == [] and log.blocked == [] and log.console_errors == []
