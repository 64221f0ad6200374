"""`python -m publish.export PATH.py -o DIR`: an author's own notebook, outside the course's
folder, as an offline page without the course around it; bad input refused in the lab's words with
exit status 2 and nothing written; the author's own files in DIR left as they were."""

from __future__ import annotations

import hashlib
import re
import textwrap

import pytest

from publish import export, site

# An author's notebook: one cell imports marimo and a lab widget, the other shows it.
AUTHOR_NOTEBOOK = textwrap.dedent(
    """\
    import marimo

    app = marimo.App()


    @app.cell
    def _():
        import marimo as mo

        from widgets import NibbleDecoder

        return NibbleDecoder, mo


    @app.cell
    def _(NibbleDecoder, mo):
        decoder = mo.ui.anywidget(NibbleDecoder(code=0b0101))
        decoder
        return


    if __name__ == "__main__":
        app.run()
    """
)
FAILING_NOTEBOOK = textwrap.dedent(
    """\
    import marimo

    app = marimo.App()


    @app.cell
    def _():
        raise ValueError("the author's own mistake")
        return


    if __name__ == "__main__":
        app.run()
    """
)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """An author's folder holding the notebook, and an output folder that already holds the
    author's own files, exported into once."""
    author = tmp_path_factory.mktemp("author")
    notebook = author / "own.py"
    notebook.write_text(AUTHOR_NOTEBOOK, encoding="utf-8")
    out = author / "public"
    (out / "assets").mkdir(parents=True)
    (out / "notes.txt").write_text("mine", encoding="utf-8")
    (out / "index.html").write_text("<p>my own index</p>", encoding="utf-8")
    (out / "assets" / "mine.css").write_text("p { color: red }", encoding="utf-8")
    status = export.main([str(notebook), "-o", str(out)])
    return notebook, out, status


@pytest.mark.slow
def test_an_authors_notebook_exports_into_an_offline_page_without_the_course(exported, capsys):
    notebook, out, status = exported
    assert status == 0
    page = (out / "own.html").read_text(encoding="utf-8")
    # the widget's model and its state are in the page, for the front-end to draw with no kernel
    assert '"_anywidget_id": "widgets.NibbleDecoder"' in page and '"code": 5' in page
    assert "lab-static-banner" not in page.split("</head>", 1)[1]
    assert 'href="index.html"' not in page and "labctl.py serve" not in page
    assert site.AUTHOR_FALLBACK in page and site.EXPORT_MARK in page
    assert site.CDN_PREFIX.search(page) is None
    site.check_offline(out, [out / "own.html"])
    assert site.external_references(page) == []
    named = site.page_assets(page)
    assert named and all((out / site.ASSET_DIR / asset).is_file() for asset in named)
    # the widget's ES module is a file beside the page, named by its content, not a data: URL in it
    modules = re.findall(rf'"url": "\./{re.escape(site.WIDGET_DIR)}/(lab-widget-[0-9a-f]{{8}}\.js)"', page)
    assert modules and "data:text/javascript" not in page
    for name in modules:
        body = (out / site.WIDGET_DIR / name).read_bytes()
        assert name == f"lab-widget-{hashlib.sha256(body).hexdigest()[:8]}.js" and b"export default" in body
    # nothing of the course: no explainers, no course index
    assert not (out / "explainers").exists()
    assert (out / "favicon.ico").read_bytes() == (site.MARIMO_STATIC / "favicon.ico").read_bytes()


# What exporting one widget may write: the page, its widget's module and the part of marimo's
# front-end it runs. It was 21 MB with the slides' bundle (8 MB), the editor's collaboration wasm
# (3 MB), KaTeX's fonts (1 MB) and the code of charts and math the page never shows; now some 7.2 MB,
# of which 5.8 MB is the code marimo's read-only app runs whatever the page shows (docs/authors.md).
ONE_WIDGET_BUDGET = 7_500_000


@pytest.mark.slow
def test_one_widget_exports_only_the_front_end_its_page_runs(exported):
    _, out, status = exported
    assert status == 0
    theirs = {out / "notes.txt", out / "index.html", out / "assets" / "mine.css"}
    written = [path for path in out.rglob("*") if path.is_file() and path not in theirs]
    assert sum(path.stat().st_size for path in written) <= ONE_WIDGET_BUDGET
    names = [path.name for path in written]
    # one bundle, for the page: an author's page has no slides layout
    assert len([name for name in names if name.startswith("lab-page-")]) == 1
    assert not [name for name in names if name.startswith(("lab-slides-", "reveal-component-"))]
    page = (out / "own.html").read_text(encoding="utf-8")
    assert site.SLIDES_ASKED not in page.split("</head>", 1)[1]
    # nor the features this page does not show: charts, math and their fonts, the editor's wasm
    assert not [name for name in names if name.startswith(("react-vega-", "katex-", "KaTeX_", "loro_wasm"))]
    assert not [name for name in names if name.endswith(".wasm")]


@pytest.mark.slow
def test_the_authors_own_files_in_the_folder_are_left_as_they_were(exported):
    _, out, status = exported
    assert status == 0
    assert (out / "notes.txt").read_text(encoding="utf-8") == "mine"
    assert (out / "index.html").read_text(encoding="utf-8") == "<p>my own index</p>"
    assert (out / "assets" / "mine.css").read_text(encoding="utf-8") == "p { color: red }"


@pytest.mark.slow
def test_exporting_again_replaces_the_page_it_wrote_with_the_same_bytes(exported, capsys):
    notebook, out, _ = exported
    first = (out / "own.html").read_bytes()
    assert export.main([str(notebook), "-o", str(out)]) == 0
    assert (out / "own.html").read_bytes() == first
    said = capsys.readouterr().out
    assert f"python3 -m http.server --bind 127.0.0.1 --directory {out}" in said
    # it says how much it wrote
    megabytes = float(re.search(r": (\d+\.\d) MB in all\.", said).group(1))
    assert 1 < megabytes <= ONE_WIDGET_BUDGET / 1e6


def test_a_page_of_the_same_name_that_the_export_did_not_write_is_refused(tmp_path, capsys):
    notebook = tmp_path / "own.py"
    notebook.write_text(AUTHOR_NOTEBOOK, encoding="utf-8")
    out = tmp_path / "out"
    out.mkdir()
    (out / "own.html").write_text("<p>written by hand</p>", encoding="utf-8")
    assert export.main([str(notebook), "-o", str(out)]) == 2
    assert "is already there and this command did not write it" in capsys.readouterr().err
    assert (out / "own.html").read_text(encoding="utf-8") == "<p>written by hand</p>"
    assert sorted(p.name for p in out.iterdir()) == ["own.html"]


@pytest.mark.parametrize(
    ("name", "text", "says"),
    [
        ("missing.py", None, "missing.py: there is no such file"),
        ("plain.py", 'print("hello")\n', "plain.py is not a marimo notebook: it has no `app = marimo.App()`"),
        ("notes.txt", "import marimo\n", "notes.txt is not a marimo notebook: export takes a notebook's .py file"),
        (
            "cut.py",
            "import marimo\napp = marimo.App(\n",
            "cut.py, line 2: Python cannot read it ('(' was never closed)",
        ),
        ("latin.py", b"# caf\xe9\n", "latin.py is not UTF-8 text"),
        ("no_cells.py", "import marimo\napp = marimo.App()\n", "no_cells.py is not a marimo notebook"),
        ("<b>x</b>\u202e.py", None, "<b>x</b>\\u202e.py: there is no such file"),
    ],
)
def test_a_path_that_is_not_a_marimo_notebook_is_refused_in_words(tmp_path, capsys, name, text, says):
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    elif text is not None:
        path.write_text(text, encoding="utf-8")
    out = tmp_path / "out"
    assert export.main([str(path), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("export: ") and says in err
    assert "Traceback" not in err
    assert not out.exists()


def test_a_folder_as_the_notebook_or_a_file_as_the_folder_is_refused(tmp_path, capsys):
    notebook = tmp_path / "own.py"
    notebook.write_text(AUTHOR_NOTEBOOK, encoding="utf-8")
    assert export.main([str(tmp_path), "-o", str(tmp_path / "out")]) == 2
    assert "is a folder, not a notebook" in capsys.readouterr().err
    occupied = tmp_path / "taken"
    occupied.write_text("mine", encoding="utf-8")
    assert export.main([str(notebook), "-o", str(occupied)]) == 2
    assert "is a file; -o takes the folder" in capsys.readouterr().err
    assert occupied.read_text(encoding="utf-8") == "mine"
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / site.WIDGET_DIR).write_text("mine", encoding="utf-8")
    assert export.main([str(notebook), "-o", str(folder)]) == 2
    assert "is a file; the page's widget modules go in a folder of that name" in capsys.readouterr().err
    assert sorted(path.name for path in folder.iterdir()) == [site.WIDGET_DIR]


@pytest.mark.slow
def test_a_notebook_that_fails_when_it_runs_is_refused_with_its_error(tmp_path, capsys):
    notebook = tmp_path / "broken.py"
    notebook.write_text(FAILING_NOTEBOOK, encoding="utf-8")
    out = tmp_path / "out"
    assert export.main([str(notebook), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"export: {notebook} did not run, so nothing was written: ")
    assert "the author's own mistake" in err and f"marimo edit {notebook}" in err
    assert "Traceback" not in err and "Export was successful" not in err
    assert not out.exists()


def test_the_single_file_form_is_refused_with_why_and_what_to_do(tmp_path, capsys):
    notebook = tmp_path / "own.py"
    notebook.write_text(AUTHOR_NOTEBOOK, encoding="utf-8")
    out = tmp_path / "my pages"
    assert export.main([str(notebook), "-o", str(out), "--single-file"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("--single-file: a marimo page cannot be one file that opens from disk.")
    assert "browsers refuse module scripts on file:// pages" in err
    assert f"python3 -m http.server --bind 127.0.0.1 --directory '{out}'" in err
    assert "then open own.html under the address it prints" in err
    assert "python3 labctl.py explainer NAME -o FILE.html" in err
    assert not out.exists()


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        ([], "usage: export PATH.py -o DIR"),
        (["own.py"], "usage: export PATH.py -o DIR"),
        (["own.py", "-o"], "-o needs a folder"),
        (["own.py", "other.py", "-o", "out"], "usage: export PATH.py -o DIR"),
        (["own.py", "--open", "-o", "out"], "usage: export PATH.py -o DIR"),
    ],
)
def test_words_the_command_does_not_take_print_its_usage(tmp_path, capsys, argv, says):
    assert export.main(argv) == 2
    assert says in capsys.readouterr().err


@pytest.mark.slow
def test_with_course_the_page_carries_the_courses_banner_and_says_where_its_contents_are(tmp_path, capsys):
    notebook = tmp_path / "own.py"
    notebook.write_text(AUTHOR_NOTEBOOK, encoding="utf-8")
    out = tmp_path / "out"
    assert export.main([str(notebook), "-o", str(out), "--course"]) == 0
    page = (out / "own.html").read_text(encoding="utf-8")
    assert site.STATIC_BANNER in page and site.FALLBACK in page and site.EXPORT_MARK in page
    assert f"Its banner links to index.html, which {out} lacks" in capsys.readouterr().out
    assert sorted(p.name for p in out.iterdir()) == [site.WIDGET_DIR, "assets", "favicon.ico", "own.html"]


@pytest.mark.parametrize("planted", ["own.html", site.WIDGET_DIR, site.ASSET_DIR])
def test_a_link_where_the_page_or_its_folders_go_is_refused_before_marimo_runs(tmp_path, capsys, planted):
    """A dangling own.html would have the page created outside DIR; an @file or assets/marimo link
    to another folder, the modules written into it."""
    notebook = tmp_path / "own.py"
    notebook.write_text(AUTHOR_NOTEBOOK, encoding="utf-8")
    outside = tmp_path / "outside"
    outside.mkdir()
    out = tmp_path / "out"
    (out / "assets").mkdir(parents=True)
    link = out / planted
    link.symlink_to(outside / "page.html" if planted.endswith(".html") else outside)
    assert export.main([str(notebook), "-o", str(out)]) == 2
    assert capsys.readouterr().err == (
        f"export: {link} is a link, and the lab never writes through one: remove it or write somewhere else\n"
    )
    assert list(outside.iterdir()) == [] and link.is_symlink()
    assert sorted(path.name for path in out.iterdir()) == sorted({"assets", planted.split("/")[0]})


@pytest.mark.slow
def test_links_inside_the_folder_are_never_written_through(tmp_path, capsys):
    """A dangling favicon.ico is the author's, left as it is, and nothing is made where it points; a
    link in place of a widget module, known only once the notebook has run, refuses the export
    before it writes anything, and the file it points at is untouched."""
    notebook = tmp_path / "own.py"
    notebook.write_text(AUTHOR_NOTEBOOK, encoding="utf-8")
    outside = tmp_path / "outside"
    outside.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    (out / "favicon.ico").symlink_to(outside / "favicon.ico")
    assert export.main([str(notebook), "-o", str(out)]) == 0
    assert list(outside.iterdir()) == [] and (out / "favicon.ico").is_symlink()
    (module,) = (out / site.WIDGET_DIR).iterdir()
    (outside / "precious.js").write_text("the author's own", encoding="utf-8")
    module.unlink()
    module.symlink_to(outside / "precious.js")
    written = {path: path.stat().st_mtime_ns for path in out.rglob("*") if not path.is_symlink()}
    capsys.readouterr()
    assert export.main([str(notebook), "-o", str(out)]) == 2
    assert capsys.readouterr().err == (
        f"export: {module} is a link, and the lab never writes through one: remove it or write somewhere else\n"
    )
    assert (outside / "precious.js").read_text(encoding="utf-8") == "the author's own"
    assert sorted(path.name for path in outside.iterdir()) == ["precious.js"]
    # a refused export writes nothing: every file is as the first export left it
    assert {path: path.stat().st_mtime_ns for path in out.rglob("*") if not path.is_symlink()} == written
