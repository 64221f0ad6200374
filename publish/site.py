"""Build the static, offline site: every notebook exported to HTML, marimo's front-end served from
a local copy, the standalone explainers, and an index page.

    python3 labctl.py site       # builds into site/
    python3 labctl.py serve      # serves site/ on 127.0.0.1 only (classroom/serve.py)
    python3 labctl.py serve --lan  # for a workshop: this machine's addresses, a QR code, a room page

`marimo export html` points its pages at marimo's front-end on a CDN, so an exported page is blank
offline. The marimo wheel ships the same files; the build copies them into site/assets/marimo/
and rewrites the CDN prefix to that relative path. The prefix is detected from each page (it
names the marimo version) and checked against the installed copy, so a marimo upgrade either
keeps working or fails here, loudly, instead of producing a blank page.

marimo's modules reach a page as two bundles, one for the page and one for the page as slides
(publish/marimo_bundle.py): one request where there were some 300. Dynamic imports that start
features an exported course page never shows (the editor, SQL, mermaid: UNUSED_FEATURES) stay out
of them. Of the rest of the front-end only what a built page can load is copied: the files the
pages and the bundles name, and everything those reach through module imports, dynamic imports,
worker URLs, CSS url()s and named stylesheets, fonts and images, to a fixed point. The browser
tests load every page and fail on any request that 404s. The widgets' modules, which marimo's
export writes into each page, become files of their own (widget_files).

Output is deterministic: the ids marimo draws at random for each export (widget model ids and
UI-element random ids) are replaced by ids derived from the page name and their order, so two
builds of one commit are byte-identical and site/ diffs stay reviewable.
"""

from __future__ import annotations

import base64
import hashlib
import html
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import marimo

from classroom import handler, room, serve
from lab.files import (
    UnsafeWriteError,
    check_inside,
    copy_inside,
    exists_inside,
    names_inside,
    remove_inside,
    write_inside,
)
from lab.teach import course
from publish import marimo_bundle, standalone

ROOT = Path(__file__).resolve().parents[1]  # the repository: publish/site.py
NOTEBOOKS = ROOT / "notebooks"
MARIMO_STATIC = Path(marimo.__file__).resolve().parent / "_static"
ASSET_DIR = "assets/marimo"
# The front-end marimo's export points at: a CDN path that names the marimo version.
CDN_PREFIX = re.compile(r"https://cdn\.jsdelivr\.net/npm/@marimo-team/frontend@(?P<version>[^/\"'\s]+)/dist/")
# vega-embed reads the library and version out of "$schema" (".../schema/vega-lite/vX.json") and
# never fetches it, so a relative spelling keeps the chart working without naming a host.
VEGA_SCHEMA = re.compile(r"https://vega\.github\.io/schema/")
# XML namespace names are identifiers, not addresses; nothing fetches them.
NAMESPACES = ("http://www.w3.org/2000/svg", "http://www.w3.org/1999/xhtml", "http://www.w3.org/1999/xlink")
EXTERNAL = re.compile(r"(?:https?:)?//[A-Za-z0-9.-]+\.[A-Za-z]{2,}[^\s\"'<>)]*")
# How marimo's bundled modules name other files of the bundle (vite output: "./name-HASH.js").
MODULE_IMPORT = marimo_bundle.STATIC_IMPORT
DYNAMIC_IMPORT = re.compile(r"""\bimport\(\s*["'`]\./([^"'`/]+)["'`]\s*\)""")
WORKER_URL = re.compile(r"""\bnew URL\(\s*["'`](?:\./)?([^"'`/]+)["'`]\s*,\s*import\.meta\.url""")
CSS_URL = re.compile(r"""url\(\s*["']?(?:\./)?([^"')/]+?)["']?\s*\)""")
# Files that are not modules (stylesheets a module preloads, fonts, images, wasm) count wherever
# a reachable file names them; they cannot pull in further code.
NAMED_FILE = re.compile(r"[\w.~-]+\.(?:css|woff2?|ttf|otf|png|svg|gif|jpe?g|ico|wasm|json)\b")
# The chunk that starts marimo's slides layout: a page loads it, and what it imports, only as slides.
SLIDES_CHUNK = "reveal-component"
# Chunks that start features of marimo's front-end that an exported course page never shows,
# named without vite's content hash. Their dynamic imports are not followed, which keeps about
# 13 MB of code out of site/. A notebook that starts using one of them makes the browser tests
# fail on the 404; remove its line here then.
UNUSED_FEATURES = {
    "edit-page": "the editor: an exported page runs in read mode",
    "home-page": "the notebook browser of marimo edit",
    "gallery-page": "the gallery of marimo's examples",
    "terminal": "the editor's terminal",
    "agent-panel": "the editor's AI agent panel",
    "chat-panel": "the editor's AI chat panel",
    "dependency-graph-panel": "the editor's dependency graph",
    "file-explorer-panel": "the editor's file explorer",
    "session-panel": "the editor's variables panel",
    "chat-ui": "mo.ui.chat",
    "Plot": "charts of mo.ui.dataframe and the data explorer",
    "mermaid": "mo.mermaid and mermaid blocks in markdown",
    "node-sql-parser": "SQL cells",
    "glide-data-editor": "mo.ui.data_editor",
    "ConnectedDataExplorerComponent": "mo.ui.data_explorer",
    "swiper-component": "mo.carousel",
    "ImageComparisonComponent": "mo.image_compare",
}
# Features of marimo's front-end that an author's page (publish/export.py) leaves out unless it
# shows them: what in an exported page says it does (an element or a mimetype), the chunks (named without vite's hash) that
# start the feature, and how the names of the files only it fetches begin (KaTeX's 60 fonts, 1 MB).
# Left out, the feature's code and files are in neither the page's bundle nor its folder.
PAGE_FEATURES = {
    "charts": (
        re.compile(r"marimo-vega(?![\w-])|application/vnd\.vega"),
        {"vega-component", "vega-embed-container"},
        (),
    ),
    "math": (re.compile(r"marimo-tex(?![\w-])"), {"katex", "mhchem"}, ("KaTeX_",)),
}
# Files that an author's page never fetches though a stylesheet or its bundle names them, by how
# their names begin: the background images of marimo's screen for a lost kernel, which a page with
# no kernel never shows (some 420 KB), and the slides' stylesheet (an author's page has no slides).
UNFETCHED_BY_AN_AUTHORS_PAGE = ("gradient-", "noise-", f"{SLIDES_CHUNK}-")
# The test, in a page's own script, of whether its address asks for slides (?slides).
SLIDES_ASKED = 'new URLSearchParams(location.search).has("slides")'
# the content hash Vite puts in a front-end file's name; the server caches such names for a year
VITE_HASH = handler.HASHED_NAME
MODEL_ID = re.compile(r'"model_id": "([0-9a-f]{32})"')
RANDOM_ID = re.compile(r"random-id=\\?'([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})")


# Notebooks exported at once: each export is a marimo process that runs its notebook's cells, one
# core's work, so two cores build the course in about half the time. Four bound the memory of a
# machine with many cores (notebook 12 holds a 270 M-parameter model while it runs).
EXPORTS_AT_ONCE = max(1, min(4, os.cpu_count() or 1))
# The notebooks whose exports take longest, longest first: each runs a real model (12: Gemma 3
# 270M in every format, 13: the same in mlx-lm, 10: all-MiniLM-L6-v2, 9: its weights), and together
# they are most of a build's time (`labctl.py site` prints each export's time). They start first, and the short ones fill the
# other cores: in the course's order notebook 12 started only once the eleven before it had, and
# the build ended that much later.
LONGEST_EXPORTS = (
    "12_a_chat_models_answers",
    "13_the_guides_checks",
    "10_what_four_bits_do_to_answers",
    "09_real_weights",
)


def export_order(notebooks: list[Path]) -> list[Path]:
    """`notebooks` in the order their exports start: LONGEST_EXPORTS first, the rest as given."""
    rank = {stem: place for place, stem in enumerate(LONGEST_EXPORTS)}
    return sorted(notebooks, key=lambda notebook: rank.get(notebook.stem, len(rank)))


def minutes(seconds: float) -> str:
    """A duration as a reader says it: "48 s", "11 min 20 s"."""
    whole = round(seconds)
    return f"{whole // 60} min {whole % 60} s" if whole >= 60 else f"{whole} s"


class SiteBuildError(RuntimeError):
    """The site could not be built offline-clean; the message says which page and why."""


def export_notebook(notebook: Path, cwd: Path | None = ROOT) -> str:
    """A notebook as static HTML with its outputs and without its code, run by marimo in `cwd`
    (the caller's own folder when None, as for an author's notebook)."""
    with tempfile.TemporaryDirectory(prefix="four-bit-lab-export-") as scratch:
        exported = Path(scratch) / f"{notebook.stem}.html"
        result = subprocess.run(
            [sys.executable, "-m", "marimo", "export", "html", "--no-include-code", str(notebook), "-o", str(exported)],
            capture_output=True,
            text=True,
            cwd=cwd,
        )
        page = exported.read_text(encoding="utf-8") if exported.exists() else ""
    if result.returncode != 0 or "<html" not in page:
        raise SiteBuildError(f"marimo could not export {notebook.name}:\n{result.stderr[-3000:]}")
    return page


# marimo's page preloads two background images (gradient and noise, some 420 KB) that only its
# screen for a lost kernel draws, which a static page never shows: on a classroom's wifi the preload
# is most of a cold load's bytes. The images stay in the site, for the stylesheet that names them.
IMAGE_PRELOAD = re.compile(r'<link rel="preload"[^>]*\bas="image"[^>]*>\s*')
# It also preloads its six fonts (some 500 KB, one of them used by no page), which on a slow link take
# their share of the bandwidth before the code that draws the page; without the preload a page asks
# for the fonts its text uses once that text is drawn.
FONT_PRELOAD = re.compile(r'<link rel="preload"[^>]*\bas="font"[^>]*>\s*')


def localise_frontend(page: str, name: str) -> str:
    versions = {match.group("version") for match in CDN_PREFIX.finditer(page)}
    if not versions:
        raise SiteBuildError(
            f"{name}: the export names no marimo front-end on the CDN, so marimo's export format has "
            "changed; update publish/site.py before trusting the site"
        )
    if versions != {marimo.__version__}:
        raise SiteBuildError(
            f"{name}: the export asks for marimo front-end {sorted(versions)} but marimo {marimo.__version__} is installed"
        )
    page = CDN_PREFIX.sub(f"{ASSET_DIR}/", page)
    for asset in page_assets(page):
        if not (MARIMO_STATIC / asset).is_file():
            raise SiteBuildError(f"{name}: the page needs {asset}, which the installed marimo does not ship")
    return FONT_PRELOAD.sub("", IMAGE_PRELOAD.sub("", VEGA_SCHEMA.sub("./schema/", page)))


def page_assets(page: str) -> set[str]:
    """The front-end files a localised page names, as paths inside marimo's static folder."""
    return set(re.findall(rf"{re.escape(ASSET_DIR)}/([^\"'\s?#)]+)", page))


def asset_closure(roots: set[str], static: Path = MARIMO_STATIC, leave_out: frozenset[str] = frozenset()) -> set[str]:
    """Every file of marimo's front-end that a page naming `roots` can load, to a fixed point; the
    dynamic imports of UNUSED_FEATURES, and of the chunks named in `leave_out` (with or without
    their hash), are not followed."""
    files = [path for path in static.rglob("*") if path.is_file()]
    by_name = {path.name: path.relative_to(static).as_posix() for path in files}
    # vite gives every file a content-hashed name, so a bare name identifies one file.
    if len(by_name) != len(files):
        raise SiteBuildError(f"marimo's front-end in {static} repeats file names; the asset closure needs them unique")
    starts = {VITE_HASH.sub("", name) for name in by_name}
    if missing := sorted(set(UNUSED_FEATURES) - starts):
        raise SiteBuildError(
            f"marimo's front-end has no chunks named {missing}; update UNUSED_FEATURES in publish/site.py"
        )
    reached: set[str] = set()
    pending = sorted(roots)
    while pending:
        relative = pending.pop()
        if relative in reached:
            continue
        reached.add(relative)
        path = static / relative
        if path.suffix not in (".js", ".mjs", ".css", ".json"):
            continue
        names = named_files(path.read_text(encoding="utf-8", errors="replace"), leave_out)
        pending.extend(by_name[name] for name in names if name in by_name and by_name[name] not in reached)
    return reached


def named_files(text: str, leave_out: frozenset[str] = frozenset()) -> set[str]:
    """The file names a module or stylesheet of the front-end can load, the dynamic imports of
    UNUSED_FEATURES and of the chunks in `leave_out` (named with or without their hash) aside."""
    return {
        *MODULE_IMPORT.findall(text),
        *WORKER_URL.findall(text),
        *CSS_URL.findall(text),
        *NAMED_FILE.findall(text),
        *(
            name
            for name in DYNAMIC_IMPORT.findall(text)
            if VITE_HASH.sub("", name) not in UNUSED_FEATURES
            and VITE_HASH.sub("", name) not in leave_out
            and name not in leave_out
        ),
    }


# The front-end entry an exported page starts, and the modules marimo's export has it preload.
ENTRY_SCRIPT = re.compile(
    rf'<script type="module" crossorigin src="{ASSET_DIR}/(assets/index-[\w-]{{8}}\.js)"></script>'
)
MODULE_PRELOAD = re.compile(rf'<link rel="modulepreload" crossorigin href="{ASSET_DIR}/assets/[^"]+">\s*')


def bundle_loader(names: dict[str, str]) -> str:
    """The scripts that start a page's front-end from its bundle (publish/marimo_bundle.py): the
    slides' bundle, where there is one, when the address asks for slides. The first asks for the
    bundle while the page is still arriving; the second, a module script, runs it once the page is
    parsed, as marimo's own entry ran."""
    page = f'"./{ASSET_DIR}/assets/{names["page"]}"'
    chosen = f'({SLIDES_ASKED} ? "./{ASSET_DIR}/assets/{names["slides"]}" : {page})' if "slides" in names else page
    return (
        "<script>/* marimo's front-end, bundled by the site's build */ document.head.append("
        f'Object.assign(document.createElement("link"), {{ rel: "modulepreload", href: {chosen} }}));</script>\n'
        f'    <script type="module">import({chosen});</script>'
    )


def unshown_features(pages: dict[Path, str]) -> tuple[set[str], tuple[str, ...]]:
    """The chunks (stems) of the PAGE_FEATURES that none of `pages` shows, and how the names of the
    files only those features fetch begin."""
    unshown = [
        (stems, files)
        for shows, stems, files in PAGE_FEATURES.values()
        if not any(shows.search(page) for page in pages.values())
    ]
    return {stem for stems, _ in unshown for stem in stems}, tuple(start for _, files in unshown for start in files)


def left_out_chunks(stems: set[str]) -> frozenset[str]:
    """The chunks of marimo's front-end (file names) that leaving out `stems` leaves out of a bundle
    (marimo_bundle.left_out_chunks): those, and the chunks that import them statically."""
    sources = {
        path.name: path.read_text(encoding="utf-8", errors="replace")
        for path in (MARIMO_STATIC / "assets").glob("*.js")
    }
    return frozenset(marimo_bundle.left_out_chunks(sources, stems, VITE_HASH))


def bundle_frontend(
    pages: dict[Path, str], *, slides: bool = True, leave_out: set[str] = frozenset()
) -> tuple[dict[Path, str], dict[str, bytes]]:
    """The pages with marimo's front-end started from its bundles, one for a page and, with
    `slides`, one for a page as slides, and the bundles by file name. The chunks of `leave_out`
    (stems) are left out of both, as UNUSED_FEATURES are. Where it cannot be bundled here
    (marimo_bundle.BundleUnavailable, said on stderr), the pages as they were, loading marimo's
    modules one by one, and no bundles."""
    entries = set()
    for path, page in pages.items():
        found = ENTRY_SCRIPT.findall(page)
        if len(found) != 1 or not MODULE_PRELOAD.search(page):
            raise SiteBuildError(
                f"{path.stem}: the export has no single front-end entry with its module preloads; "
                "marimo's export format has changed"
            )
        entries.add(found[0])
    if len(entries) != 1:
        raise SiteBuildError(f"the pages start different front-ends: {sorted(entries)}")
    entry = entries.pop()
    try:
        made = marimo_bundle.bundles(
            MARIMO_STATIC,
            entry,
            set(UNUSED_FEATURES) | set(leave_out),
            SLIDES_CHUNK,
            VITE_HASH,
            marimo_bundle.LAYOUTS if slides else ("page",),
        )
    except marimo_bundle.BundleUnavailable as error:
        print(
            f"note: the site's pages load marimo's front-end module by module, some 300 requests a page, "
            f"slow on a slow network, because it could not be bundled: {error}",
            file=sys.stderr,
        )
        return pages, {}
    # The run page's stylesheets, which marimo's preload helper would ask for only once the bundle
    # has run, and wait for: linked from the head, they come with the page, a round trip sooner.
    sheets = marimo_bundle.run_page_stylesheets((MARIMO_STATIC / entry).read_text(encoding="utf-8"))
    if not sheets:
        raise SiteBuildError(
            f"{entry} does not name the run page's stylesheets as publish/marimo_bundle.py reads them "
            "(RUN_PAGE_IMPORT); marimo's build has changed"
        )
    loader = bundle_loader({layout: name for layout, (name, _) in made.items()})
    bundled = {}
    for path, page in pages.items():
        page = MODULE_PRELOAD.sub("", ENTRY_SCRIPT.sub(lambda _: loader, page))
        links = "".join(
            f'<link rel="stylesheet" crossorigin href="{ASSET_DIR}/assets/{sheet}">\n'
            for sheet in sheets
            if f"{ASSET_DIR}/assets/{sheet}" not in page
        )
        bundled[path] = page.replace("</head>", links + "</head>", 1)
    return bundled, dict(made.values())


def bundle_assets(bundles: dict[str, bytes], leave_out: frozenset[str] = frozenset()) -> set[str]:
    """The files of marimo's front-end the bundles name (stylesheets, fonts, images, wasm, web
    workers), as paths inside its static folder, but for the chunks the bundles left out
    (`leave_out`, file names). The page's bundle leaves the slides' chunk out: a page as slides
    loads the slides' bundle instead."""
    names = set()
    for name, body in bundles.items():
        slides = frozenset({SLIDES_CHUNK}) if name.startswith("lab-page-") else frozenset()
        names |= named_files(body.decode("utf-8"), slides | leave_out)
    return {f"assets/{name}" for name in names if (MARIMO_STATIC / "assets" / name).is_file()}


def asset_copies(roots: set[str], leave_out: frozenset[str] = frozenset()) -> dict[str, Path]:
    """The front-end files a site needs (asset_closure of `roots`, without the chunks of `leave_out`):
    where each goes in the site, and the installed file it is copied from."""
    return {
        f"{ASSET_DIR}/{relative}": MARIMO_STATIC / relative
        for relative in sorted(asset_closure(roots, leave_out=leave_out))
    }


# marimo's export writes each widget's ES module into the page as a base64 data: URL, a copy on
# every page: on the first course page some 190 KB of its 220 KB compressed, as base64 keeps gzip
# from shrinking code, fetched again with every page. The build writes each module once, as a file
# named by its content, and points the page at it with marimo's own spelling of a file beside the
# notebook ("./@file/NAME"), which its widget loader accepts and resolves against the page's
# address; served compressed and cached, each widget's code crosses a classroom's wifi once. The
# page's head asks for them at once, beside marimo's front-end, rather than when that front-end
# first draws a widget.
WIDGET_DIR = "@file"
WIDGET_MODULE = re.compile(r'"url": "data:text/javascript;base64,([A-Za-z0-9+/]+=*)"')


def widget_files(page: str) -> tuple[str, dict[str, bytes]]:
    """The page with each widget module it carries as a data: URL named as a file of WIDGET_DIR
    instead, and asked for from its head; and those files' contents by name."""
    modules = {}

    def as_file(match: re.Match) -> str:
        body = base64.b64decode(match.group(1), validate=True)
        name = f"lab-widget-{hashlib.sha256(body).hexdigest()[:8]}.js"
        modules[name] = body
        return f'"url": "./{WIDGET_DIR}/{name}"'

    page = WIDGET_MODULE.sub(as_file, page)
    preloads = "".join(f'<link rel="modulepreload" href="./{WIDGET_DIR}/{name}">\n' for name in modules)
    return page.replace("</head>", preloads + "</head>", 1), modules


def stable_ids(page: str, name: str) -> str:
    """Replace the per-export random ids by ids derived from the page name and their order."""
    replacements: dict[str, str] = {}
    for pattern, width in ((MODEL_ID, 32), (RANDOM_ID, 36)):
        for original in pattern.findall(page):
            if original in replacements:
                continue
            digest = hashlib.sha256(f"{name}:{len(replacements)}".encode()).hexdigest()
            if width == 36:
                digest = f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"
            replacements[original] = digest[:width]
    for original, stable in replacements.items():
        page = page.replace(original, stable)
    return page


def link_notebooks(page: str) -> str:
    """Links between notebooks use marimo's ?file= form live; on the site they are sibling pages,
    and the index notebook's place is taken by the site's own index.html."""
    page = page.replace(course.link(course.INDEX), "index.html")
    return re.sub(r"\?file=(\d\d_[a-z0-9_]+)\.py", r"\1.html", page)


# How a reader with only the built folder (a copy of site/, with no lab beside it) serves it:
# Python's own static server, or any other. labctl.py is not in that folder.
SERVE_THIS_FOLDER = "<code>python3 -m http.server --bind 127.0.0.1</code>"
# The class the banner's script gives <html> on a page opened from disk (file://), where the browser
# refuses marimo's module scripts and the page cannot run.
FROM_DISK_CLASS = "lab-from-disk"


# marimo's UI elements, all of which need a kernel to act on. A course page shows none: its menus and
# sliders are the lab's precomputed choices (widgets/choice.py), and what only a kernel can do
# (open a file of your own, answer a typed prompt) the notebooks wrap in course.live_only, which
# a static page hides in favour of the note beside it; the browser tests fail on any other. An
# author's own notebook may still use them: there they are shown disabled, and say so.
CONTROLS = (
    "marimo-slider, marimo-number, marimo-dropdown, marimo-switch, marimo-checkbox, marimo-radio, marimo-text, "
    "marimo-text-area, marimo-multiselect, marimo-button, marimo-file"
)
# Injected into every exported notebook. Readouts the notebooks mark with course.READOUT_CLASS
# follow a lab widget through the kernel, so they are labelled as computed at build time.
STATIC_STYLE = f"""<style id="lab-static-style">
/* marimo's app fills #root from an absolutely placed layer and scrolls there; the banner takes its
   own row above, and #root, made the containing block, keeps that layer below the banner. */
body {{ display: flex; flex-direction: column; height: 100vh; margin: 0; }}
#root {{ flex: 1 1 auto; min-height: 0; position: relative; }}
.lab-static-banner {{ font: 16px/1.45 system-ui, sans-serif; background: #fff4d6; color: #1a1a1a;
  border-bottom: 2px solid #e69f00; padding: 0.4rem 1rem; }}
.lab-static-banner a {{ color: #0072b2; }}
/* the system's monospace: marimo's Fira Mono would be fetched before the page's code, for one line */
.lab-static-banner code, .lab-fallback code {{ font-family: ui-monospace, Menlo, Consolas, "DejaVu Sans Mono", monospace; }}
.lab-banner-short, .lab-banner-disk {{ display: none; }}
.{FROM_DISK_CLASS} .lab-banner-served {{ display: none !important; }}
.{FROM_DISK_CLASS} .lab-banner-disk {{ display: inline; }}
@media (max-width: 700px) {{
  .lab-static-banner {{ white-space: nowrap; overflow: hidden; text-overflow: ellipsis; padding: 0.3rem 1rem; }}
  .lab-banner-short {{ display: inline; }}
  .lab-banner-long {{ display: none; }}
}}
.lab-fallback {{ font: 19px/1.5 system-ui, sans-serif; max-width: 46rem; margin: 2rem auto; padding: 0 1rem; }}
/* Only a kernel can act on these: hidden, with the note the notebook gave in their place. */
.{course.LIVE_ONLY_CLASS} {{ display: none !important; }}
.{course.LIVE_ONLY_NOTE_CLASS} {{ display: block; border-left: 3px solid #e69f00; padding-left: 0.5rem; margin: 0.5rem 0; }}
/* marimo draws its controls as display: contents elements, which take no opacity or filter; give
   them (and their wrapper, which carries the note) a box of their own. */
marimo-ui-element:has(> :is({CONTROLS})) {{ display: inline-flex !important; flex-direction: column;
  align-items: flex-start; }}
marimo-ui-element:has(> :is({CONTROLS}))::after {{ content: "fixed in this static page";
  font: italic 16px system-ui, sans-serif; color: var(--lab-static-note); }}
/* Dimmed, not greyed out: the setting the page was built with must stay readable. */
:is({CONTROLS}) {{ display: block !important; pointer-events: none; opacity: 0.8; }}
.{course.READOUT_CLASS}::before {{ content: "Computed at build time for the settings shown; the live lab recomputes it."; display: block;
  font: italic 16px/1.4 system-ui, sans-serif; color: var(--lab-static-note); border-left: 3px solid #e69f00;
  padding-left: 0.5rem; margin-bottom: 0.3rem; }}
/* The notes follow marimo's theme (it puts .dark on <body> when the reader's system is dark):
   dark amber on light, light amber on dark, both above 7:1. */
:root {{ --lab-static-note: #6b4e00; }}
:root:has(body.dark), .dark {{ --lab-static-note: #f5c96a; }}
</style>
<script>
// Make the kernel-less controls unreachable by keyboard too, as the note beside them says.
new MutationObserver(() => {{
  for (const control of document.querySelectorAll("{CONTROLS}")) {{
    if (!control.inert) {{ control.inert = true; control.setAttribute("aria-disabled", "true"); }}
  }}
}}).observe(document.documentElement, {{ childList: true, subtree: true }});
// Slides (?slides, SLIDES_LAYOUT): say which slide shows, and the heading it belongs to (its own, or
// the last one before it), on a channel of this browser, for the speaker view of serve --class
// (widgets/speaker.js) in another tab. Nothing leaves the browser.
if ({SLIDES_ASKED} && "BroadcastChannel" in window) {{
  const channel = new BroadcastChannel("four-bit-lab:slides");
  const page = decodeURIComponent(location.pathname.split("/").pop());
  const title = (section) => section?.querySelector("h1, h2")?.textContent.trim().replace(/\\s+/g, " ") ?? "";
  let told = "";
  let due = false;
  const tell = () => {{
    due = false;
    const sections = [...document.querySelectorAll(".reveal .slides > section")];
    const index = sections.findIndex((section) => section.classList.contains("present"));
    if (index < 0) return;
    let heading = "";
    for (let i = index; i >= 0 && !heading; i -= 1) heading = title(sections[i]);
    let next = "";
    for (let i = index + 1; i < sections.length && !next; i += 1) next = title(sections[i]);
    const slide = {{ page, slide: index + 1, of: sections.length, heading, next }};
    if (JSON.stringify(slide) !== told) {{ told = JSON.stringify(slide); channel.postMessage(slide); }}
  }};
  // a timer, not an animation frame: a slides tab behind another still tells its speaker view
  const soon = () => {{ if (!due) {{ due = true; setTimeout(tell, 50); }} }};
  new MutationObserver(soon).observe(document.documentElement, {{ subtree: true, childList: true, attributes: true, attributeFilter: ["class"] }});
  channel.onmessage = (event) => {{ if (event.data?.ask) {{ told = ""; soon(); }} }};
}}
</script>
"""


def static_banner(live_only: bool) -> str:
    """The banner of a course page, saying what is true of that page: every control works, or, on a
    page with parts that need a running kernel (`live_only`), those are hidden with a note; and,
    opened from disk, that the page cannot run there at all (its script swaps the text before the
    first paint). Kept short: it holds its own row above the page, and on a phone every line of it is
    a line less of the course, so a phone gets one line. It names no labctl.py: a reader of a copy
    of the site has only the folder."""
    short, long = (
        (
            "Static page: some parts hidden",
            "every control shown works in your browser. What needs a running Python kernel (the live lab, "
            "not this folder) is hidden, with a note in its place",
        )
        if live_only
        else ("Static page: all controls work", "every control works in your browser, with nothing to install")
    )
    return (
        '<div class="lab-static-banner" role="note">'
        f'<span class="lab-banner-served"><span class="lab-banner-short">{short}</span>'
        f'<span class="lab-banner-long"><strong>Static page:</strong> {long}.</span></span>'
        '<span class="lab-banner-disk">Cannot run from disk: see below</span>'
        ' \u00b7 <a href="index.html">Contents</a></div>'
        f'<script>if (location.protocol === "file:") document.documentElement.classList.add("{FROM_DISK_CLASS}");</script>'
    )


STATIC_BANNER = static_banner(live_only=False)
# Shown until marimo's app mounts: React replaces everything inside #root when it renders. Opened
# from disk (file://) the browser refuses marimo's module scripts, so this is what stays.
FALLBACK = (
    '<div class="lab-fallback"><h1>This course page needs a local web server</h1><p>Browsers do not run '
    "this page's scripts when it is opened straight from disk. In the folder that holds this page run "
    f"{SERVE_THIS_FOLDER} (or serve the folder with any static web server) and open this page's name "
    "under the address it prints. The single-page explainers "
    '(<a href="index.html">listed on the index</a>) do open from disk.</p></div>'
)
ROOT_DIV = '<div id="root"></div>'
# The same page as slides: marimo reads its layout from the mount config, a JavaScript object in
# the page, so the page picks marimo's slides layout itself when its address says ?slides.
MOUNT_CONFIG = '"__MARIMO_MOUNT_CONFIG__"'
NO_LAYOUT = '"layout": null'
SLIDES_LAYOUT = f'"layout": ({SLIDES_ASKED} ? {{"type": "slides", "data": {{}}}} : null)'


# An author's page (publish/export.py) stands alone: it has no course around it to point to.
AUTHOR_FALLBACK = (
    '<div class="lab-fallback"><h1>This page needs a local web server</h1><p>Browsers do not run '
    "this page's scripts when it is opened straight from disk. In the folder that holds it run "
    f"{SERVE_THIS_FOLDER} and open this page's name under the "
    "address it prints.</p></div>"
)
# Written into every page the export command writes, so that exporting again may replace that
# page, and only that page: a file of the same name without it is the author's own.
EXPORT_MARK = '<meta name="generator" content="the four-bit lab\'s export">'


def written_by_export(head: bytes) -> bool:
    """Whether a file's first bytes are the head of a page the export wrote, which EXPORT_MARK opens."""
    return EXPORT_MARK.encode("utf-8") in head


def mark_static(
    page: str, name: str, banner: str = STATIC_BANNER, fallback: str = FALLBACK, slides: bool = True
) -> str:
    """Add the static-page banner (none when empty), the disabled-control rules, the from-disk
    fallback, and with `slides` marimo's slides layout when the page's address asks for it (?slides)."""
    if page.count(ROOT_DIV) != 1 or page.count("</head>") != 1:
        raise SiteBuildError(
            f"{name}: the export has no single empty #root in its body; marimo's export format has changed"
        )
    config = page.find(MOUNT_CONFIG)
    if config < 0 or page.count(NO_LAYOUT, config) != 1:
        raise SiteBuildError(
            f"{name}: the export's mount config has no single layout; marimo's export format has changed"
        )
    if slides:
        page = page[:config] + page[config:].replace(NO_LAYOUT, SLIDES_LAYOUT, 1)
    page = page.replace("</head>", STATIC_STYLE + "</head>", 1)
    return page.replace(ROOT_DIV, banner + f'<div id="root">{fallback}</div>', 1)


def external_references(page: str) -> list[str]:
    found = []
    for match in EXTERNAL.finditer(page):
        start = match.start()
        if any(page.startswith(namespace, start) for namespace in NAMESPACES):
            continue
        found.append(match.group(0))
    return found


def check_offline(site: Path, pages: list[Path] | None = None) -> None:
    """Fail if any page the build wrote (`pages`, else every page in `site`) names a non-relative
    address.

    marimo's copied bundle (assets/marimo) is not scanned: its code mentions hosts for features
    the lab's pages never use, which the browser tests confirm by counting blocked requests.
    """
    problems = []
    for path in sorted(pages if pages is not None else site.rglob("*.html")):
        if ASSET_DIR in path.relative_to(site).as_posix():
            continue
        hits = external_references(path.read_text(encoding="utf-8"))
        if hits:
            problems.append(f"{path.relative_to(site)}: {', '.join(sorted(set(hits))[:5])}")
    if problems:
        raise SiteBuildError("pages still reference non-relative URLs:\n  " + "\n  ".join(problems))


def index_page() -> str:
    notebooks = "\n".join(
        f'<li><a href="{file.removesuffix(".py")}.html">{html.escape(title)}</a>: {html.escape(summary)}</li>'
        for file, title, summary in course.NOTEBOOKS
        if (NOTEBOOKS / file).exists()
    )
    explainers = "\n".join(
        f'<li><a href="explainers/{slug}.html">{html.escape(title)}</a></li>'
        for slug, (_, _, title) in standalone.PAGES.items()
    )
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'self'; style-src 'unsafe-inline'">
<title>The four-bit lab</title>
<link rel="icon" href="favicon.ico">
<style>
/* the index follows the reader's theme, as the course pages do */
{room.THEME_CSS}
body {{ font-family: system-ui, sans-serif; font-size: 19px; line-height: 1.5; max-width: 46rem; margin: 2rem auto; padding: 0 1rem; }}
li {{ margin: 0.4rem 0; }}
</style>
</head>
<body>
<h1>The four-bit lab</h1>
<p>What a 4-bit weight really is: open one byte, do the arithmetic by hand, and see the lab agree.
Nothing here reaches the network. The course pages are marimo apps, and browsers do not run
their scripts from disk: in this folder run {SERVE_THIS_FOLDER} (or serve it with any static web
server) and open the address it prints. The single-page explainers open straight from disk. In
these static pages every control works in your browser; opening a file of your own (notebook 6)
or typing a prompt of your own (notebook 12) needs the live lab, a running Python kernel from the
lab's own source rather than this folder, and is hidden here with a note in its place.</p>
<h2>The course</h2>
<ol>
{notebooks}
</ol>
<h2>Single-page explainers</h2>
<p>Each is one self-contained file that opens straight from disk; its state lives in the link.</p>
<ul>
{explainers}
</ul>
</body>
</html>
"""


def build(
    site: Path = ROOT / "site",
    notebooks: list[Path] | None = None,
    *,
    course_chrome: bool = True,
    pages_only: bool = False,
    cwd: Path | None = ROOT,
    seconds: dict[str, float] | None = None,
) -> list[Path]:
    """Build the site into `site` and return the pages written. Raises SiteBuildError.

    The defaults are the course: its banner and Contents link, links between notebooks as sibling
    pages, the explainers and the index, into a folder the build owns and clears. `course_chrome`
    False leaves out the banner and the notebook links and gives the stand-alone from-disk note.
    `pages_only` (an author's export into a folder of their own) writes the notebooks' pages,
    marked with EXPORT_MARK, marimo's front-end under assets/marimo and a favicon.ico where there
    is none (nor a link of that name), and deletes nothing. `cwd` is where marimo runs the notebooks
    (the caller's folder when None). `seconds`, where given, gets each notebook's export time.

    Every file is written by lab.files.write_inside: whole or not at all, and never through a link
    inside `site` (UnsafeWriteError, a LabError). With `pages_only` every refusal is found before
    the first write, so a refused export leaves the folder as it was; a page there that the export
    did not write is refused too. The course's clearing unlinks a link in its way, never following it.
    """
    notebooks = (
        notebooks
        if notebooks is not None
        else [NOTEBOOKS / file for file, _, _ in course.NOTEBOOKS if (NOTEBOOKS / file).exists()]
    )
    if not pages_only:
        # what the build writes, and only that: a link among it is deleted as a link, its target untouched
        for name in names_inside(site):
            if name in ("assets", "explainers", WIDGET_DIR) or name.endswith(".html"):
                remove_inside(site, name)
    pages = notebook_pages(
        site, notebooks, course_chrome=course_chrome, pages_only=pages_only, cwd=cwd, seconds=seconds
    )
    outputs = site_outputs(site, pages, pages_only=pages_only, course_chrome=course_chrome)
    write_outputs(site, outputs, pages, pages_only=pages_only)
    written = list(pages)
    if pages_only:
        return written
    written += standalone.write_all(site, "explainers")
    written.append(write_inside(site, "index.html", index_page()))
    check_offline(site)
    return written


def notebook_pages(
    site: Path,
    notebooks: list[Path],
    *,
    course_chrome: bool,
    pages_only: bool,
    cwd: Path | None,
    seconds: dict[str, float] | None = None,
) -> dict[Path, str]:
    """Each notebook's page, by the path it is written to in `site`, in the notebooks' order: exported
    by marimo (several at once, the longest first), its front-end made local, marked static, and with
    stable ids. `seconds`, where given, gets each export's time by the notebook's name."""

    def timed_export(notebook: Path) -> str:
        started = time.monotonic()
        page = export_notebook(notebook, cwd)
        if seconds is not None:
            seconds[notebook.stem] = time.monotonic() - started
        return page

    with ThreadPoolExecutor(max_workers=EXPORTS_AT_ONCE) as pool:
        exported = dict(zip(export_order(notebooks), pool.map(timed_export, export_order(notebooks)), strict=True))
    # each page in the notebooks' order, whichever export ends first
    exports = [exported[notebook] for notebook in notebooks]
    pages = {}
    for notebook, exported in zip(notebooks, exports, strict=True):
        name = notebook.stem
        page = localise_frontend(exported, name)
        if course_chrome:
            # the banner says what is true of this page: whether it hides parts that need a kernel
            page = link_notebooks(mark_static(page, name, banner=static_banner(course.LIVE_ONLY_CLASS in page)))
        else:
            # an author's page has no slides layout, and so no slides' bundle (8 MB) in its folder
            page = mark_static(page, name, banner="", fallback=AUTHOR_FALLBACK, slides=False)
        if pages_only:
            page = mark_export(page, name)
        pages[site / f"{name}.html"] = stable_ids(page, name)
    return pages


def mark_export(page: str, name: str) -> str:
    """An author's exported page, marked with EXPORT_MARK, checked offline-clean before anything is
    written. Raises SiteBuildError."""
    if page.count("<head>") != 1:
        raise SiteBuildError(f"{name}: the export has no single <head>; marimo's export format has changed")
    # first in the head, where check_folder reads it without reading the whole page
    page = page.replace("<head>", "<head>" + EXPORT_MARK, 1)
    # checked before anything is written: a refused export leaves the author's folder as it was
    if hits := external_references(page):
        raise SiteBuildError(f"{name}: the page names non-relative URLs: {', '.join(sorted(set(hits))[:5])}")
    return page


def site_outputs(
    site: Path, pages: dict[Path, str], *, pages_only: bool, course_chrome: bool = True
) -> dict[str, bytes | Path]:
    """Everything the build writes besides the explainers and the index, by its place in the site:
    bytes, or the installed file it copies: the pages, rewritten to load marimo's front-end from its
    bundles and their widgets from files of their own, and the assets those need. Without
    `course_chrome` (an author's page) there is no slides' bundle, and the PAGE_FEATURES the pages
    do not show are left out."""
    unshown, unfetched = (set(), ()) if course_chrome else unshown_features(pages)
    if not course_chrome:
        unfetched += UNFETCHED_BY_AN_AUTHORS_PAGE
    pages, bundles = bundle_frontend(pages, slides=course_chrome, leave_out=unshown)
    # the chunks the bundles left out, which the copies leave out too
    left_out = left_out_chunks(unshown) if bundles else frozenset()
    outputs: dict[str, bytes | Path] = {}
    assets: set[str] = set()
    for path, page in pages.items():
        page, modules = widget_files(page)
        assets |= page_assets(page)
        outputs[path.name] = page.encode("utf-8")
        outputs |= {f"{WIDGET_DIR}/{name}": body for name, body in modules.items()}
    outputs |= {f"{ASSET_DIR}/assets/{name}": body for name, body in bundles.items()}
    roots = {asset for asset in assets if Path(asset).name not in bundles} | bundle_assets(bundles, left_out)
    outputs |= {
        relative: copied
        for relative, copied in asset_copies(roots, left_out).items()
        if not copied.name.startswith(unfetched)
    }
    # Browsers ask every served page's origin for /favicon.ico; without one the pages log a 404.
    # marimo's own icon, which the course pages already name; an author's own icon, or a link of
    # that name, stays.
    if not pages_only or not exists_inside(site, "favicon.ico"):
        outputs["favicon.ico"] = MARIMO_STATIC / "favicon.ico"
    return outputs


def write_outputs(site: Path, outputs: dict[str, bytes | Path], pages: dict[Path, str], *, pages_only: bool) -> None:
    """Writes `outputs` into `site` once every one of them has been checked writable there."""
    # An author's page of the same name is theirs: only a page the export wrote may be replaced.
    replaces = {relative: True for relative in outputs} | {
        path.name: written_by_export if pages_only else True for path in pages
    }
    for relative, replace in replaces.items():
        check_inside(site, relative, replace=replace)
    site.mkdir(parents=True, exist_ok=True)
    for relative, body in outputs.items():
        replace = replaces[relative]
        if isinstance(body, Path):
            copy_inside(site, relative, body, replace=replace)
        else:
            write_inside(site, relative, body, replace=replace)


def main(argv: list[str]) -> int:
    # `labctl.py serve` runs the server itself (`python -m classroom.serve`); `site serve` hands it its words
    if argv and argv[0] == "serve":
        return serve.main(argv[1:], ROOT / "site")
    started = time.monotonic()
    seconds: dict[str, float] = {}
    try:
        pages = build(seconds=seconds)
    except SiteBuildError as error:
        print(f"site build failed: {error}", file=sys.stderr)
        return 1
    except UnsafeWriteError as error:
        print(f"site build refused: {error}", file=sys.stderr)
        return 2
    # where the time went: the notebooks run their cells, the longest a model in every format
    longest = sorted(seconds.items(), key=lambda item: -item[1])[:3]
    print(
        f"built {len(pages)} pages into {ROOT / 'site'} in {minutes(time.monotonic() - started)}; "
        f"the longest exports: {', '.join(f'{name} {minutes(taken)}' for name, taken in longest)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
