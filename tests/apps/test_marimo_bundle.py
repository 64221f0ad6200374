"""The site build's bundles of marimo's front-end (publish/marimo_bundle.py), made by the real esbuild
(through Deno) from a small stand-in for marimo's static folder, and run by Node: what a bundle
holds, what it leaves to the network, and what its patched preload helper still asks for."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from publish import marimo_bundle as bundle
from publish import site as sitebuild
from tests.conftest import require_bundler

# A vite-style helper, shaped as marimo's: it adds a <link> for each dependency of a lazy import
# (here it records them) before importing it.
HELPER = (
    "var t=function(n,r,i){let a=Promise.resolve();if(r&&r.length>0){function c(e){return Promise.all(e)}"
    "a=c(r.map(r=>{globalThis.asked.push(r)}))}return a.then(()=>n())};export{t};"
)
STAND_IN = {
    "assets/index-AAAAAAAA.js": (
        'import{t as p}from"./preload-helper-PPPPPPPP.js";import{shared as s}from"./shared-SSSSSSSS.js";'
        'export const run=()=>p(()=>import("./run-page-DDDDDDDD.js"),'
        '["./run-page-DDDDDDDD.js","./cells-GGGGGGGG.js","./run-page-EEEEEEEE.css"],import.meta.url);'
        'export const slides=()=>import("./reveal-component-RRRRRRRR.js");'
        'export const edit=()=>import("./edit-page-Ab3_x9Zq.js");'
        "export const worker=new URL(`worker-FFFFFFFF.js`,import.meta.url).href;"
        "export const started=s;"
    ),
    "assets/preload-helper-PPPPPPPP.js": HELPER,
    "assets/shared-SSSSSSSS.js": 'export const shared="shared code";',
    "assets/run-page-DDDDDDDD.js": 'import{cells as c}from"./cells-GGGGGGGG.js";export const page="run page: "+c;',
    "assets/cells-GGGGGGGG.js": 'export const cells="cells";',
    "assets/run-page-EEEEEEEE.css": "p{color:red}",
    "assets/reveal-component-RRRRRRRR.js": 'import{shared as s}from"./shared-SSSSSSSS.js";export const deck="slides on "+s;',
    "assets/worker-FFFFFFFF.js": "self.onmessage=()=>{};",
}


@pytest.fixture
def static(tmp_path):
    unused = {f"assets/{stem}-Ab3_x9Zq.js": "export const unused=1;" for stem in sitebuild.UNUSED_FEATURES}
    for name, text in {**unused, **STAND_IN}.items():
        path = tmp_path / "static" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path / "static"


def _bundles(static):
    require_bundler()
    return bundle.bundles(
        static, "assets/index-AAAAAAAA.js", set(sitebuild.UNUSED_FEATURES), sitebuild.SLIDES_CHUNK, sitebuild.VITE_HASH
    )


def _run(node_script: str, folder) -> dict:
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not installed; the JS tests need it too")
    result = subprocess.run(
        [node, "--input-type=module", "-e", node_script], cwd=folder, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_each_layout_is_one_file_named_by_its_content(static):
    made = _bundles(static)
    assert set(made) == {"page", "slides"}
    for layout, (name, body) in made.items():
        assert bundle.BUNDLE_NAME.match(name) and name.startswith(f"lab-{layout}-")
        assert sitebuild.VITE_HASH.search(name)  # serve caches it for a year
        assert b'from"./' not in body and b"from './" not in body
    assert _bundles(static) == made  # the same input gives the same bytes, so the same name


def test_the_page_bundle_runs_lazy_parts_from_itself_and_leaves_the_slides_and_unused_features_out(static, tmp_path):
    made = _bundles(static)
    page_name, page = made["page"]
    slides_name, slides = made["slides"]
    # the stand-in's files are gone: whatever runs, runs from the bundles
    out = tmp_path / "out"
    out.mkdir()
    (out / page_name).write_bytes(page)
    (out / slides_name).write_bytes(slides)
    ran = _run(
        f"""globalThis.asked = [];
const page = await import("./{page_name}");
const lazy = await page.run();
const refused = async (load) => {{ try {{ await load(); return false; }} catch {{ return true; }} }};
const slides = await import("./{slides_name}");
console.log(JSON.stringify({{
  started: page.started, lazy: lazy.page, asked: globalThis.asked, worker: page.worker.split("/").pop(),
  pageSlides: await refused(page.slides), edit: await refused(page.edit),
  deck: (await slides.slides()).deck,
}}));""",
        out,
    )
    assert ran["started"] == "shared code"
    assert ran["lazy"] == "run page: cells"
    # the patched helper asks for the lazy part's stylesheet, not for the modules the bundle holds
    assert ran["asked"] == ["./run-page-EEEEEEEE.css"]
    assert ran["worker"] == "worker-FFFFFFFF.js"  # a worker stays a file beside the bundle
    assert ran["pageSlides"] and ran["edit"]  # left outside the page's bundle: imports of absent files
    assert ran["deck"] == "slides on shared code"  # the slides' bundle holds its reveal component
    assert b"slides on " not in page
    assert b'import("./reveal-component-RRRRRRRR.js")' in page
    assert b'import("./edit-page-Ab3_x9Zq.js")' in page and b'import("./edit-page-Ab3_x9Zq.js")' in slides


def test_a_chunk_left_out_takes_the_chunks_that_import_it_statically_with_it():
    """esbuild would hoist a left-out chunk's static import to the top of the bundle, where it stops
    every page; a dynamic import of it waits until its feature starts."""
    sources = {
        "katex-KKKKKKKK.js": "export const k=1;",
        "dist-DDDDDDDD.js": 'import{k}from"./katex-KKKKKKKK.js";export const d=k;',
        "markdown-MMMMMMMM.js": 'export const m=()=>import("./dist-DDDDDDDD.js");',
        "uses-dist-UUUUUUUU.js": 'export{d}from"./dist-DDDDDDDD.js";',
    }
    left = bundle.left_out_chunks(sources, {"katex"}, sitebuild.VITE_HASH)
    assert left == {"katex-KKKKKKKK.js", "dist-DDDDDDDD.js", "uses-dist-UUUUUUUU.js"}


def test_a_page_without_slides_gets_one_bundle_and_leaves_out_what_it_is_told(static):
    """An author's page (publish/export.py) has no slides layout, and leaves out the features it
    does not show: here the run page's cells, and with them the run page, which imports them."""
    require_bundler()
    made = bundle.bundles(
        static,
        "assets/index-AAAAAAAA.js",
        set(sitebuild.UNUSED_FEATURES) | {"cells"},
        sitebuild.SLIDES_CHUNK,
        sitebuild.VITE_HASH,
        ("page",),
    )
    assert set(made) == {"page"}
    _, page = made["page"]
    assert b'import("./run-page-DDDDDDDD.js")' in page and b"run page: " not in page
    assert b"shared code" in page
    # a chunk the entry imports statically cannot be left out: every page would stop
    with pytest.raises(bundle.BundleUnavailable, match="leaves out"):
        bundle.bundles(static, "assets/index-AAAAAAAA.js", {"shared"}, "reveal-component", sitebuild.VITE_HASH)


def test_a_page_without_slides_starts_its_one_bundle(monkeypatch, tmp_path):
    monkeypatch.setattr(bundle, "bundles", lambda *_: {"page": ("lab-page-0123abcd.js", b"")})
    (entry,) = (sitebuild.MARIMO_STATIC / "assets").glob("index-*.js")
    page = (
        '<head><link rel="modulepreload" crossorigin href="assets/marimo/assets/cells-GGGGGGGG.js">\n    '
        f'<script type="module" crossorigin src="assets/marimo/assets/{entry.name}"></script></head>'
    )
    pages, made = sitebuild.bundle_frontend({tmp_path / "own.html": page}, slides=False)
    rewritten = pages[tmp_path / "own.html"]
    assert 'import("./assets/marimo/assets/lab-page-0123abcd.js")' in rewritten
    assert sitebuild.SLIDES_ASKED not in rewritten and "lab-slides-" not in rewritten
    assert made == {"lab-page-0123abcd.js": b""}


def test_a_changed_preload_helper_stops_the_bundle_with_what_to_update(static):
    (static / "assets" / "preload-helper-PPPPPPPP.js").write_text("export const t=(n)=>n();")
    with pytest.raises(bundle.BundleUnavailable, match="PRELOAD_PATCH"):
        _bundles(static)


def test_without_a_bundle_the_pages_load_marimos_modules_and_the_build_says_so(monkeypatch, capsys, tmp_path):
    def unavailable(*_):
        raise bundle.BundleUnavailable("no deno here")

    monkeypatch.setattr(bundle, "bundles", unavailable)
    page = (
        "<head>"
        '<link rel="modulepreload" crossorigin href="assets/marimo/assets/cells-GGGGGGGG.js">\n'
        '<script type="module" crossorigin src="assets/marimo/assets/index-AAAAAAAA.js"></script>'
        "</head>"
    )
    pages, made = sitebuild.bundle_frontend({tmp_path / "01_one.html": page})
    assert pages == {tmp_path / "01_one.html": page} and made == {}
    assert "no deno here" in capsys.readouterr().err


def test_a_page_starts_the_bundle_of_its_layout_with_the_run_pages_stylesheets(monkeypatch, tmp_path):
    monkeypatch.setattr(
        bundle, "bundles", lambda *_: {"page": ("lab-page-0123abcd.js", b""), "slides": ("lab-slides-4567ef01.js", b"")}
    )
    (entry,) = (sitebuild.MARIMO_STATIC / "assets").glob("index-*.js")
    page = (
        '<head><link rel="modulepreload" crossorigin href="assets/marimo/assets/cells-GGGGGGGG.js">\n    '
        f'<script type="module" crossorigin src="assets/marimo/assets/{entry.name}"></script>'
        '<link rel="stylesheet" crossorigin href="assets/marimo/assets/cells-0PFKL3SH.css"></head>'
    )
    pages, made = sitebuild.bundle_frontend({tmp_path / "01_one.html": page})
    rewritten = pages[tmp_path / "01_one.html"]
    assert "modulepreload crossorigin" not in rewritten and entry.name not in rewritten
    sheets = bundle.run_page_stylesheets(entry.read_text(encoding="utf-8"))
    assert {"assets/lab-page-0123abcd.js", "assets/lab-slides-4567ef01.js"} | {f"assets/{s}" for s in sheets} == (
        sitebuild.page_assets(rewritten)
    )
    assert rewritten.count("cells-0PFKL3SH.css") == 1  # a stylesheet the page links already is not linked twice
    assert made == {"lab-page-0123abcd.js": b"", "lab-slides-4567ef01.js": b""}


def test_the_run_pages_stylesheets_are_read_from_marimos_entry():
    entry = (
        'const __vite__mapDeps=(i,m=__vite__mapDeps,d=(m.f||(m.f=["./home-page-A.js","./home-EEEEEEEE.css",'
        '"./run-page-DDDDDDDD.js","./cells-GGGGGGGG.js","./layout-LLLLLLLL.css","./panels-PPPPPPPP.css"])))=>i.map(i=>d[i]);'
        "const home=()=>p(()=>import(`./home-page-A.js`),__vite__mapDeps([0,1]),import.meta.url),"
        "run=()=>p(()=>import(`./run-page-DDDDDDDD.js`),__vite__mapDeps([2,3,5,4]),import.meta.url);"
    )
    assert bundle.run_page_stylesheets(entry) == ["panels-PPPPPPPP.css", "layout-LLLLLLLL.css"]
    assert bundle.run_page_stylesheets(entry.replace("run-page", "read-page")) == []
    (installed,) = (sitebuild.MARIMO_STATIC / "assets").glob("index-*.js")
    names = {sitebuild.VITE_HASH.sub("", name) for name in bundle.run_page_stylesheets(installed.read_text())}
    assert {"layout", "panels", "cells"} <= names


def test_a_page_without_marimos_entry_is_refused(tmp_path):
    with pytest.raises(sitebuild.SiteBuildError, match="front-end entry"):
        sitebuild.bundle_frontend({tmp_path / "01_one.html": "<head></head>"})


def test_preparing_the_bundler_says_what_happened_and_never_fails_setup(monkeypatch, capsys):
    require_bundler()
    assert bundle.prepare() == 0
    assert "bundler (esbuild, through Deno) is ready" in capsys.readouterr().out

    def missing():
        raise bundle.BundleUnavailable("the deno package is not installed")

    monkeypatch.setattr(bundle, "deno_command", missing)
    assert bundle.prepare() == 0
    assert "will not bundle marimo's front-end: the deno package is not installed" in capsys.readouterr().err
