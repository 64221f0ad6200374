"""The static site: offline pages, interactive widgets with no kernel, deterministic output, and a
build that refuses external URLs. Pages load in headless Chromium with every non-local request
aborted and counted."""

from __future__ import annotations

import json
import re
from urllib.parse import quote

import pytest
from chromium import browser_page
from playwright.sync_api import expect

from publish import marimo_bundle
from publish import site as sitebuild
from tests.browser.test_static_controls import assert_no_control_needs_a_kernel

pytestmark = pytest.mark.browser


def test_every_page_loads_offline_with_no_errors_and_links_its_neighbours(site, server):
    """Every page once, on a 1440 px screen in a light theme (the phone and dark case is the test
    below): no request leaves the machine, no file is missing, nothing shows as raw Markdown; each
    course page links the pages before and after it, follows the reader's theme, keeps its prose
    and marimo's controls at 16 px or more and never scrolls sideways."""
    from lab.teach import course

    pages = sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html") if "assets/" not in p.as_posix())
    assert "index.html" in pages and "01_one_nibble.html" in pages and "explainers/q4k-explorer.html" in pages
    in_order = [file.removesuffix(".py") + ".html" for file, _, _ in course.NOTEBOOKS]
    assert set(in_order) <= set(pages)
    with browser_page() as (page, log):
        page.set_viewport_size({"width": 1440, "height": 900})
        page.emulate_media(color_scheme="light")
        # The build copies only the part of marimo's front-end a page can load; a file it left out
        # shows up as a 404.
        failed = []
        page.on("response", lambda response: response.status >= 400 and failed.append(response.url))
        controls_seen = hidden_controls = 0
        for name in pages:
            page.goto(f"{server}/{name}")
            page.wait_for_load_state("networkidle")
            # Scroll to the end, so that outputs drawn only when they come into view (charts) load
            # their code too.
            page.mouse.move(550, 450)
            for _ in range(40):
                page.mouse.wheel(0, 900)
            page.wait_for_timeout(300)
            page.wait_for_load_state("networkidle")
            assert log.blocked == [], f"{name} tried to reach {log.blocked}"
            assert log.console_errors == [], f"{name}: {log.console_errors}"
            assert failed == [], f"{name}: {failed}"
            # Markdown that reached the page unrendered (an indented table in a dedented f-string
            # becomes a code block) shows its syntax: a table rule, or the lab's escapes as text
            text = page.locator("body").inner_text()
            unrendered = re.findall(r"\|:?-{3}:?\||&#\d+;", text)
            assert unrendered == [], f"{name} shows Markdown as text: {unrendered[:5]}"
            if name not in in_order:
                continue
            position = in_order.index(name)
            previous = in_order[position - 1] if position else "index.html"
            # Inside #root: the banner's own link to index.html does not count.
            page.locator(f'#root a[href="{previous}"]').first.wait_for(timeout=20000)
            if position + 1 < len(in_order):
                assert page.locator(f'#root a[href="{in_order[position + 1]}"]').count() >= 1, name
            assert page.locator('a[href^="?file="]').count() == 0, name
            controls_seen += _check_theme_and_sizes(page, name, "light")
            hidden_controls += assert_no_control_needs_a_kernel(page, name)
        assert controls_seen > 10  # the seeds, sliders and menus of notebooks 3-11
        assert hidden_controls >= 5  # notebook 6's file, tensor and block; notebook 12's prompt and device run


def test_site_copies_only_the_front_end_its_pages_can_load(site):
    copied = {p.relative_to(site / sitebuild.ASSET_DIR).as_posix() for p in (site / sitebuild.ASSET_DIR).rglob("*")}
    named = set()
    for page in site.glob("*.html"):
        named |= sitebuild.page_assets(page.read_text(encoding="utf-8"))
    assert named and named <= copied
    # Every page starts marimo's front-end from one of its two bundles (publish/marimo_bundle.py);
    # the only other modules copied are its web workers and what they import, which run on their own.
    bundles = {name for name in named if marimo_bundle.BUNDLE_NAME.match(name.rsplit("/", 1)[-1])}
    assert sorted(name.rsplit("/", 1)[-1].split("-")[1] for name in bundles) == ["page", "slides"]
    workers = {name for name in copied if re.match(r"assets/(save-)?worker-", name)}
    assert workers and {name for name in copied if name.endswith(".js")} - bundles == sitebuild.asset_closure(workers)
    # What a page loads in its own layout (its bundle and the files that bundle and the page name)
    # stays under half of what marimo ships; a page as slides (?slides) loads the slides' bundle
    # and the files of marimo's reveal.js component (a CRDT's wasm most of them) instead.
    shipped = sum(p.stat().st_size for p in sitebuild.MARIMO_STATIC.rglob("*") if p.is_file())
    by_layout = {}
    for bundle_name in bundles:
        body = (site / sitebuild.ASSET_DIR / bundle_name).read_bytes()
        files = sitebuild.asset_closure(
            (named - bundles) | sitebuild.bundle_assets({bundle_name.rsplit("/", 1)[-1]: body})
        )
        by_layout[bundle_name.rsplit("/", 1)[-1].split("-")[1]] = (
            files,
            len(body) + sum((sitebuild.MARIMO_STATIC / name).stat().st_size for name in files),
        )
    (page_files, page_bytes), (slides_files, _) = by_layout["page"], by_layout["slides"]
    assert page_bytes < shipped / 2, (page_bytes, shipped)
    assert page_files < slides_files
    assert any(name.endswith(".wasm") for name in slides_files - page_files)
    # the page's bundle leaves the reveal.js chunk out, as a dynamic import it never makes; the slides' holds it
    texts = {name.rsplit("/", 1)[-1].split("-")[1]: (site / sitebuild.ASSET_DIR / name).read_text() for name in bundles}
    reveal = re.compile(rf"""import\(["'`]\./{sitebuild.SLIDES_CHUNK}-[\w-]{{8}}\.js["'`]\)""")
    assert reveal.search(texts["page"]) and not reveal.search(texts["slides"])


def test_a_course_page_asks_for_marimos_front_end_in_one_file(server):
    """marimo's 300-odd modules come as one bundle: the first course page is usable in a handful of
    requests (the stylesheets, the fonts its text uses), which is what a slow classroom link needs."""
    with browser_page() as (page, log):
        page.goto(f"{server}/01_one_nibble.html")
        page.locator(".four-bit-lab button").first.wait_for(timeout=30000)
        page.wait_for_load_state("networkidle")
        assert log.console_errors == [] and log.blocked == []
    paths = [url.split("/", 3)[-1] for url in log.requests]
    modules = [path for path in paths if path.endswith(".js")]
    # marimo's one bundle, and the widgets' own modules (which marimo's export would inline)
    assert [path for path in modules if path.startswith(sitebuild.ASSET_DIR)] == [
        next(
            path for path in modules if re.fullmatch(rf"{sitebuild.ASSET_DIR}/assets/lab-page-[0-9a-f]{{8}}\.js", path)
        )
    ]
    widgets = [path for path in modules if not path.startswith(sitebuild.ASSET_DIR)]
    assert widgets and all(
        re.fullmatch(rf"{sitebuild.WIDGET_DIR}/lab-widget-[0-9a-f]{{8}}\.js", path) for path in widgets
    )
    assert len(paths) <= 25, paths


def test_the_site_has_the_icon_browsers_ask_for(site):
    assert (site / "favicon.ico").read_bytes() == (sitebuild.MARIMO_STATIC / "favicon.ico").read_bytes()
    assert '<link rel="icon" href="favicon.ico">' in (site / "index.html").read_text(encoding="utf-8")


def test_index_links_every_notebook(site):
    index = (site / "index.html").read_text()
    for notebook in sorted(site.glob("[0-9][0-9]_*.html")):
        assert f'href="{notebook.name}"' in index


def _widget_text(page, testid):
    locator = page.get_by_test_id(testid)
    locator.wait_for(timeout=20000)
    return locator.inner_text()


def test_exported_nibble_widget_responds_without_a_kernel(server):
    with browser_page() as (page, log):
        page.goto(f"{server}/01_one_nibble.html")
        page.get_by_role("button", name="pick code 0000").click()
        assert _widget_text(page, "e2m1-value") == "0"
        page.get_by_role("button", name="bit 2, exponent bit 1, is 0").click()
        page.get_by_role("button", name="bit 0, fraction bit, is 0").click()
        assert _widget_text(page, "uint4-value") == "5"
        assert _widget_text(page, "e2m1-value") == "3"
        assert log.blocked == []


def test_exported_ownership_widget_reads_0x7e_as_half(server):
    with browser_page() as (page, log):
        page.goto(f"{server}/03_mxfp4.html")
        field = page.get_by_role("textbox", name="E8M0 scale byte")
        field.fill("0x80")
        field.press("Enter")
        assert _widget_text(page, "mx-scale").endswith("= 2")
        field = page.get_by_role("textbox", name="E8M0 scale byte")
        field.fill("0x7E")
        field.press("Enter")
        assert _widget_text(page, "mx-scale") == "2^(126 \u2212 127) = 0.5"
        assert log.blocked == []


def test_exported_q4k_widget_follows_the_zero_byte(server):
    with browser_page() as (page, log):
        page.goto(f"{server}/05_q4k.html")
        page.get_by_role("button", name="payload byte 1 = 0x00").click()
        assert _widget_text(page, "low-weight") == "\u22120.25"
        assert _widget_text(page, "high-weight") == "\u22120.5"
        assert log.blocked == []


def test_standalone_explainers_open_from_disk_and_restore_the_link(site):
    with browser_page() as (page, log):
        for slug, fragment, testid, expected in [
            ("nibble-decoder", {"code": 8}, "e2m1-value", "\u22120"),
            ("ownership", {"mx_scale_byte": 126}, "mx-trace", "element 0: 3 \u00d7 0.5 = 1.5"),
            ("q4k-explorer", {"payload_index": 2}, "high-weight", "5.125"),
            ("scale-lab", {"scale": 0.125}, "delta-y", "+0.125"),
        ]:
            page.goto((site / "explainers" / f"{slug}.html").as_uri() + "#" + quote(json.dumps(fragment)))
            assert _widget_text(page, testid) == expected
        assert log.blocked == [] and log.console_errors == []


def test_build_is_deterministic(site, tmp_path):
    """A second full build on the same machine gives the same bytes for every page."""
    again = tmp_path / "again"
    sitebuild.build(again)
    pages = sorted(p.relative_to(site) for p in site.rglob("*.html") if "assets/" not in p.as_posix())
    assert pages == sorted(p.relative_to(again) for p in again.rglob("*.html") if "assets/" not in p.as_posix())
    for page in pages:
        assert (site / page).read_bytes() == (again / page).read_bytes(), f"{page} differs between builds"


def test_build_fails_on_a_planted_external_url(tmp_path):
    planted = tmp_path / "99_planted.py"
    planted.write_text(
        "import marimo\napp = marimo.App()\n\n@app.cell\ndef _():\n    import marimo as mo\n"
        "    mo.md('<img src=\"https://example.com/tracker.png\">')\n    return\n"
    )
    with pytest.raises(sitebuild.SiteBuildError, match="example.com"):
        sitebuild.build(tmp_path / "site", notebooks=[planted])


def test_build_fails_loudly_if_the_export_format_changes():
    with pytest.raises(sitebuild.SiteBuildError, match="export format has changed"):
        sitebuild.localise_frontend("<html><script src='/static/app.js'></script></html>", "changed")


def test_static_course_page_is_honest_about_what_moves(server):
    """No marimo control is left to do nothing: notebook 3's block settings are the lab's own choice,
    which works here, and nothing on that page waits for a kernel; notebook 5's worked byte and
    metadata say which block they are, and its MLX run, which follows the explorer through the
    kernel, is labelled as build-time; the banner says every control works, and the from-disk
    fallback is gone once the app has mounted."""
    with browser_page() as (page, log):
        page.goto(f"{server}/03_mxfp4.html")
        page.get_by_role("textbox", name="E8M0 scale byte").wait_for(timeout=20000)
        banner = page.locator(".lab-static-banner")
        assert banner.is_visible() and "every control works in your browser" in banner.inner_text()
        assert page.locator(".lab-fallback").count() == 0
        assert page.evaluate(f"() => document.querySelectorAll({json.dumps(sitebuild.CONTROLS)}).length") == 0
        choice = page.locator('.lab-choice[data-lab-group="mxfp4-block"]')
        for label in ("random seed", "log₂ of the block's spread", "largest element (× the spread)"):
            control = choice.get_by_label(label)
            expect(control).to_be_enabled()
            assert control.evaluate("(node) => !node.closest('[inert]')"), label
        # nothing here waits for a kernel: the page has no build-time readout left
        assert page.locator(".lab-readout").count() == 0
        # The lab's own widget stays live beside the choice.
        field = page.get_by_role("textbox", name="E8M0 scale byte")
        field.fill("0x80")
        field.press("Enter")
        assert _widget_text(page, "mx-scale").endswith("= 2")
        # Notebook 5: the byte worked by hand, its lanes and the metadata table are the block the
        # explorer opens with, and say so (the explorer traces any other byte itself); its one
        # readout, the MLX run, follows the explorer through the kernel, and says that.
        page.goto(f"{server}/05_q4k.html")
        page.locator(".lab-readout").first.wait_for(timeout=20000)
        labels = page.evaluate(
            "() => [...document.querySelectorAll('.lab-readout')].map(e => getComputedStyle(e, '::before').content)"
        )
        assert len(labels) == 1 and "Computed at build time for the settings shown" in labels[0]
        assert "On device" in page.locator(".lab-readout").inner_text()
        expect(page.get_by_text("Here is the first payload byte of the block it opens with")).to_have_count(1)
        expect(page.get_by_text("here is the block it opens with, field by field")).to_have_count(1)
        assert log.blocked == [] and log.console_errors == []


@pytest.mark.parametrize("width", [390, 1440])
def test_the_banner_is_one_line_on_a_phone_and_says_what_works_on_a_computer(server, width):
    """A student on a phone has no terminal: the banner is one line for them; a wider screen says
    more. Neither names labctl.py, which a reader of a copy of the site does not have."""
    with browser_page() as (page, log):
        page.set_viewport_size({"width": width, "height": 844})
        page.goto(f"{server}/01_one_nibble.html")
        banner = page.locator(".lab-static-banner")
        banner.wait_for(timeout=20000)
        text = banner.inner_text()
        line = float(banner.evaluate("(node) => parseFloat(getComputedStyle(node).lineHeight)"))
        if width == 390:
            assert "all controls work" in text and "Contents" in text
            assert banner.bounding_box()["height"] <= line + 16  # one line and its padding
            assert banner.evaluate("(node) => node.scrollWidth <= node.clientWidth")  # nothing cut off
        else:
            assert "every control works in your browser" in text
        assert "labctl" not in text
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        assert log.blocked == []


def test_course_page_opened_from_disk_says_to_serve_it(site):
    with browser_page() as (page, _log):
        page.goto((site / "05_q4k.html").as_uri())
        page.wait_for_timeout(1500)
        fallback = page.locator(".lab-fallback")
        assert fallback.is_visible()
        assert "python3 -m http.server --bind 127.0.0.1" in fallback.inner_text()
        assert "labctl" not in page.locator("body").inner_text()


def test_index_says_how_course_pages_open(site):
    index = (site / "index.html").read_text()
    assert "python3 -m http.server --bind 127.0.0.1" in index and "open straight from disk" in index
    assert "labctl" not in index


def test_exported_scale_slider_and_chart_move_without_a_kernel(server):
    """Notebook 2's scale lab on the static page: the slider, the readout and the live chart all move."""
    with browser_page() as (page, log):
        page.goto(f"{server}/02_scale_is_a_ruler.html")
        # the article's row at scale 0.5: ŷ = −2, Δy = −0.25
        assert _widget_text(page, "y-hat").endswith("\u22122")
        assert _widget_text(page, "delta-y").endswith("\u22120.25")
        slider = page.get_by_role("slider", name="scale (log₂ steps)")
        slider.focus()
        slider.press("ArrowRight")  # one power of two up: scale 1, where Δy is 0 for this row
        page.wait_for_function("document.activeElement !== document.body")
        assert _widget_text(page, "delta-y").endswith("0")
        assert "now 0 at 1" in _widget_text(page, "chart-caption")
        assert log.blocked == []


def test_exported_exercise_checks_an_answer_without_a_kernel(server):
    """Notebook 1's exercises on the static page: an answer no reading of a nibble gives, refused;
    a wrong answer, the worked arithmetic, then the right one."""
    with browser_page() as (page, log):
        page.goto(f"{server}/01_one_nibble.html")
        section = page.locator("[data-exercise]").first
        section.wait_for(timeout=20000)
        # the page draws this browser's own seed at random; seed 1's first exercise is the one below
        seed = page.get_by_role("textbox", name="seed (your numbers)")
        seed.fill("1")
        seed.press("Enter")
        expect(page.get_by_test_id("exercise-seed-note")).to_contain_text("Seed 1,")
        field = section.locator("input")
        field.fill("200")
        field.press("Enter")
        feedback = section.locator("[data-exercise-result]")
        assert "a whole number from" in section.get_by_role("alert").inner_text()
        assert feedback.get_attribute("data-exercise-result") == "none"
        field.fill("1")
        field.press("Enter")
        assert feedback.get_attribute("data-exercise-result") == "wrong"
        # a first miss gets a hint only; the working comes on request
        section.get_by_role("button", name="Show the working").click()
        assert section.locator(".lab-exercise-worked").count() >= 1
        revealed = re.search(
            r"the codec computes (\S+)\. Here is its working\.$", feedback.locator(".lab-exercise-verdict").inner_text()
        )
        field.fill(revealed.group(1).replace("\u2212", "-"))
        field.press("Enter")
        assert section.locator("[data-exercise-result]").get_attribute("data-exercise-result") == "correct"
        assert re.match(r"1 of \d+ correct", page.get_by_test_id("exercise-progress").inner_text())
        assert log.blocked == []


PROSE_SIZES = """() => {
  const text = [...document.querySelectorAll(
    ".markdown.prose :is(.paragraph, li, td, th, code, pre)")].filter((e) => e.innerText.trim());
  return {
    count: text.length,
    smallest: Math.min(...text.map((e) => parseFloat(getComputedStyle(e).fontSize))),
    theme: document.body.classList.contains("dark") ? "dark" : document.body.classList.contains("light") ? "light" : "none",
    sideways: document.documentElement.scrollWidth > innerWidth,
  };
}"""


# The labels, fields and values of the page's controls: the lab's precomputed choices and any of
# marimo's own left visible, each inside its widget's or control's shadow root.
CONTROL_SIZES = """() => {
  const hosts = [...document.querySelectorAll("*")].filter((node) => node.shadowRoot);
  return hosts.flatMap((host) => [...host.shadowRoot.querySelectorAll(
      ".lab-choice :is(label, label > span, select, input, output), .mo-label :is(label, input, select, .text-xs)")])
    .filter((element) => element.checkVisibility())
    .map((element) => ({ text: (element.value ?? element.textContent).slice(0, 40), px: parseFloat(getComputedStyle(element).fontSize) }));
}"""


def _check_theme_and_sizes(page, name: str, scheme: str) -> int:
    """Asserts that course page `name`, open in `page`, follows `scheme` with its prose and marimo's
    controls at 16 px or more and no sideways scroll; returns how many controls it measured."""
    page.wait_for_selector(".markdown.prose", timeout=20000)
    measured = page.evaluate(PROSE_SIZES)
    assert measured["count"] > 3 and measured["smallest"] >= 16, (name, measured)
    assert measured["theme"] == scheme and not measured["sideways"], (name, measured)
    controls = page.evaluate(CONTROL_SIZES)
    assert [control for control in controls if control["px"] < 16] == [], name
    return len(controls)


def test_course_pages_follow_a_dark_theme_on_a_phone_with_prose_at_16_px(server):
    """The other end from the first test's 1440 px light screen: a 390 px phone in dark mode."""
    from lab.teach import course

    with browser_page() as (page, log):
        page.set_viewport_size({"width": 390, "height": 900})
        page.emulate_media(color_scheme="dark")
        controls_seen = 0
        for file, _, _ in course.NOTEBOOKS:
            name = file.removesuffix(".py") + ".html"
            page.goto(f"{server}/{name}")
            controls_seen += _check_theme_and_sizes(page, name, "dark")
        assert controls_seen > 10  # the seeds, sliders and menus of notebooks 3-11
        assert log.blocked == [] and log.console_errors == []


def test_a_charts_menu_offers_downloads_and_nothing_online(server):
    with browser_page() as (page, log):
        page.goto(f"{server}/10_what_four_bits_do_to_answers.html")
        chart = page.locator(".vega-embed").first
        chart.locator("details summary").wait_for(timeout=30000)
        chart.locator("details summary").click()
        actions = chart.locator(".vega-actions a")
        names = [actions.nth(i).inner_text() for i in range(actions.count())]
        # vega-embed's full menu adds View Source, View Compiled Vega and Open in Vega Editor
        assert names == ["Save as SVG", "Save as PNG"], names
        assert log.blocked == [] and log.console_errors == []


# The tables in view (a precomputed choice's other options wait hidden, each with its own).
TABLE_FADES = """() => [...document.querySelectorAll(".markdown.prose table")].filter((t) => t.checkVisibility()).map((table) => {
  const style = getComputedStyle(table);
  return {
    scrolls: table.scrollWidth > table.clientWidth,
    start: parseFloat(style.getPropertyValue("--lab-table-fade-start")),
    end: parseFloat(style.getPropertyValue("--lab-table-fade-end")),
  };
})"""


def test_a_wide_table_on_a_phone_fades_where_it_scrolls(server):
    """A table wider than a phone fades at the edge it can scroll towards, and a table that fits
    does not fade at all (notebook 3's MLX comparison tables: some 530 px of columns in 354)."""
    with browser_page() as (page, log):
        page.set_viewport_size({"width": 390, "height": 900})
        page.goto(f"{server}/03_mxfp4.html")
        page.wait_for_selector(".markdown.prose table:visible", timeout=20000)
        tables = page.evaluate(TABLE_FADES)
        wide = [index for index, table in enumerate(tables) if table["scrolls"]]
        assert len(wide) >= 2, tables
        for table in tables:
            assert table["start"] == 0 and (table["end"] > 20 if table["scrolls"] else table["end"] == 0), tables
        table = page.locator(".markdown.prose table:visible").nth(wide[0])
        table.evaluate("(table) => { table.scrollLeft = (table.scrollWidth - table.clientWidth) / 2 }")
        page.wait_for_timeout(200)
        middle = page.evaluate(TABLE_FADES)[wide[0]]
        assert middle["start"] > 20 and middle["end"] > 20, middle
        table.evaluate("(table) => { table.scrollLeft = table.scrollWidth }")
        page.wait_for_timeout(200)
        assert page.evaluate(TABLE_FADES)[wide[0]] == {"scrolls": True, "start": 0, "end": 0}
        page.set_viewport_size({"width": 1440, "height": 900})
        page.reload()
        page.wait_for_selector(".markdown.prose table:visible", timeout=20000)
        assert page.evaluate(TABLE_FADES) == [{"scrolls": False, "start": 0, "end": 0}] * len(tables)
        assert log.blocked == [] and log.console_errors == []
