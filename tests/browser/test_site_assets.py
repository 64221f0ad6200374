"""Which part of marimo's front-end the site build copies: the closure of what the pages name,
worked on a small stand-in for marimo's static folder, and on the installed one."""

from __future__ import annotations

import pytest

from publish import site as sitebuild


def _write(folder, files):
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


@pytest.fixture
def static(tmp_path):
    """A vite-style bundle: every unused feature's chunk exists, as in marimo's."""
    _write(tmp_path, {f"assets/{stem}-Ab3_x9Zq.js": "export const unused = 1;" for stem in sitebuild.UNUSED_FEATURES})
    _write(
        tmp_path,
        {
            "favicon.ico": "",
            "assets/index-AAAAAAAA.js": (
                'import{a as b}from"./static-BBBBBBBB.js";import"./side-CCCCCCCC.js";'
                "const run=()=>import(`./run-page-DDDDDDDD.js`);"
                'const edit=()=>import("./edit-page-Ab3_x9Zq.js");'
                'const deps=["assets/run-page-EEEEEEEE.css"];'
            ),
            "assets/static-BBBBBBBB.js": "export const a=new URL(`worker-FFFFFFFF.js`,import.meta.url).href;",
            "assets/side-CCCCCCCC.js": "",
            "assets/run-page-DDDDDDDD.js": 'export*from"./cells-GGGGGGGG.js";',
            "assets/run-page-EEEEEEEE.css": "@font-face{src:url(./Font-HHHHHHHH.woff2)}",
            "assets/cells-GGGGGGGG.js": "",
            "assets/worker-FFFFFFFF.js": "",
            "assets/Font-HHHHHHHH.woff2": "",
            "assets/never-IIIIIIII.js": "",
        },
    )
    return tmp_path


def test_closure_follows_imports_workers_and_stylesheets(static):
    reached = sitebuild.asset_closure({"assets/index-AAAAAAAA.js", "favicon.ico"}, static)
    assert reached == {
        "favicon.ico",
        "assets/index-AAAAAAAA.js",
        "assets/static-BBBBBBBB.js",
        "assets/side-CCCCCCCC.js",
        "assets/run-page-DDDDDDDD.js",
        "assets/run-page-EEEEEEEE.css",
        "assets/cells-GGGGGGGG.js",
        "assets/worker-FFFFFFFF.js",
        "assets/Font-HHHHHHHH.woff2",
    }


def test_closure_leaves_out_unused_features_and_unnamed_files(static):
    reached = sitebuild.asset_closure({"assets/index-AAAAAAAA.js"}, static)
    assert "assets/edit-page-Ab3_x9Zq.js" not in reached
    assert "assets/never-IIIIIIII.js" not in reached


def test_closure_fails_loudly_when_an_unused_feature_is_gone(static):
    (static / "assets" / "mermaid-Ab3_x9Zq.js").unlink()
    with pytest.raises(sitebuild.SiteBuildError, match="mermaid"):
        sitebuild.asset_closure({"assets/index-AAAAAAAA.js"}, static)


def test_closure_of_marimos_entry_reaches_its_run_page_but_not_its_editor():
    entries = {
        path.relative_to(sitebuild.MARIMO_STATIC).as_posix()
        for path in (sitebuild.MARIMO_STATIC / "assets").glob("index-*.js")
    }
    reached = sitebuild.asset_closure(entries)
    names = {path.rsplit("/", 1)[-1] for path in reached}
    assert any(name.startswith("run-page-") for name in names)
    # the editor's code stays out; its small stylesheet, named in a preload list, comes along
    assert not any(name.startswith("edit-page-") and name.endswith(".js") for name in names)
