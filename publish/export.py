"""One notebook, the course's or an author's own, as an offline page: `python3 labctl.py export`.

    python -m publish.export PATH.py -o DIR [--course] [--single-file]

The page is built as the course's pages are (publish/site.py: marimo's export, its front-end
copied from the installed wheel into DIR/assets/marimo, stable ids, no external address), so a
notebook that shows the lab's widgets works with no network. Without --course it has none of the
course around it: no banner, no Contents link, no index. With --course it carries the course's
banner and links, for a page added to a built site/ beside the course's own.

DIR may hold the author's own files: the export writes DIR/NAME.html, files under
DIR/assets/marimo and DIR/@file (the widgets' modules) and, where there is none, DIR/favicon.ico,
and deletes nothing. A NAME.html that this command did not write is refused rather than replaced,
and so is a link anywhere the export would write, in place of a file or of a folder inside DIR:
nothing is ever written through one, so nothing outside DIR is touched (DIR itself may be a link).
Every refusal is found before the first file is written, and each file is written whole or not at all.

--single-file is refused with the reason: marimo's page runs its front-end and the widgets' code as
ES modules loaded from files beside it, and browsers do not load module scripts from file://, so it
cannot be one file that opens from disk. The folder is served instead; the lab's explainers are the
single-file form.
"""

from __future__ import annotations

import ast
import shlex
import sys
from pathlib import Path

import marimo

from lab.errors import LabError
from lab.files import UnsafeWriteError, check_folder_inside, check_inside
from lab.text import visible
from publish import site

USAGE = "export PATH.py -o DIR [--course] [--single-file]"
# A notebook is source code: far below this, and reading one this size is instant.
LARGEST_NOTEBOOK = 10_000_000

SINGLE_FILE_REFUSED = (
    "--single-file: a marimo page cannot be one file that opens from disk. Its front-end and its "
    "widgets' code are ES modules loaded from files beside the page, and browsers refuse module "
    "scripts on file:// pages, so such a page stays blank there (marimo {version} has no export that "
    "inlines them). Export without --single-file and serve the folder:\n"
    "    python3 -m http.server --bind 127.0.0.1 --directory {folder}\n"
    "then open {page} under the address it prints, or copy the folder to any static web host. "
    "For one of the lab's widgets in a single file that opens from disk, use "
    "`python3 labctl.py explainer NAME -o FILE.html`."
)


class ExportError(LabError):
    """A notebook or an output folder that the export cannot use; the message says which and why."""


def _is_app(node: ast.expr) -> bool:
    """`marimo.App(...)` (or `mo.App(...)`, as `import marimo as mo` spells it)."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "App"


def _is_cell(decorator: ast.expr) -> bool:
    """`@app.cell`, `@app.cell(...)`, or marimo's other cell kinds (`@app.function`, ...)."""
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return (
        isinstance(target, ast.Attribute)
        and isinstance(target.value, ast.Name)
        and target.value.id == "app"
        and target.attr in ("cell", "function", "class_definition")
    )


def check_notebook(path: Path) -> None:
    """Raise ExportError unless `path` is a readable marimo notebook: a .py file with an
    `app = marimo.App(...)` and at least one cell. Its cells are not run here."""
    shown = visible(str(path), 200)
    if not path.exists():
        raise ExportError(f"{shown}: there is no such file")
    if not path.is_file():
        raise ExportError(f"{shown} is a folder, not a notebook: give the notebook's .py file")
    if path.suffix != ".py":
        raise ExportError(f"{shown} is not a marimo notebook: export takes a notebook's .py file")
    if path.stat().st_size > LARGEST_NOTEBOOK:
        raise ExportError(f"{shown} is {path.stat().st_size:,} bytes; a notebook is at most {LARGEST_NOTEBOOK:,}")
    try:
        source = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ExportError(f"{shown} is not UTF-8 text, so it is not a marimo notebook") from None
    except OSError as error:
        raise ExportError(f"{shown} cannot be read ({error.strerror})") from None
    try:
        module = ast.parse(source, filename=path.name)
    except SyntaxError as error:
        raise ExportError(
            f"{shown}, line {error.lineno}: Python cannot read it ({visible(error.msg, 120)}); "
            f"open it with `marimo edit {shown}` to fix it"
        ) from None
    has_app = any(
        isinstance(node, ast.Assign)
        and any(isinstance(target, ast.Name) and target.id == "app" for target in node.targets)
        and _is_app(node.value)
        for node in module.body
    )
    has_cells = any(
        isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        and any(map(_is_cell, node.decorator_list))
        for node in module.body
    )
    if not (has_app and has_cells):
        raise ExportError(
            f"{shown} is not a marimo notebook: it has no `app = marimo.App()` with `@app.cell` cells "
            f"(`marimo edit {shown}` starts one, `marimo convert` turns a Jupyter notebook into one)"
        )


def check_folder(folder: Path, notebook: Path) -> None:
    """Raise ExportError or UnsafeWriteError if the page cannot go into `folder` without harming
    what is there: before marimo runs the notebook, which takes seconds. site.build checks every
    file it will write once it knows them all, before the first."""
    shown = visible(str(folder), 200)
    if folder.exists() and not folder.is_dir():
        raise ExportError(f"-o {shown} is a file; -o takes the folder to write the page into")
    widgets = folder / site.WIDGET_DIR
    if widgets.is_file() and not widgets.is_symlink():
        raise ExportError(
            f"{visible(str(widgets), 200)} is a file; the page's widget modules go in a folder of that name, "
            "so move it or choose another -o folder"
        )
    for inside in (site.WIDGET_DIR, site.ASSET_DIR):
        check_folder_inside(folder, inside)
    check_inside(folder, f"{notebook.stem}.html", replace=site.written_by_export)


def cell_failure(error: str) -> str:
    """The lines of marimo's report that say what went wrong in the notebook, without the
    traceback frames around them."""
    lines = [
        line.strip().rstrip(".")
        for line in error.splitlines()
        # marimo's closing line says the HTML was written, which is marimo's scratch copy, not the page
        if line.strip() and not line.startswith((" ", "Traceback", "Error: Export was successful"))
    ]
    return "; ".join(visible(line, 200) for line in lines[-6:])


def export(notebook: Path, folder: Path, course_chrome: bool = False) -> Path:
    """Write `notebook`'s offline page into `folder` and return its path. Raises ExportError for a
    notebook or folder the export cannot use and UnsafeWriteError for a link or a page not its own
    where it would write (nothing written for either), SiteBuildError when marimo's export format is
    not the one the build knows."""
    check_notebook(notebook)
    check_folder(folder, notebook)
    try:
        # marimo runs the notebook in the caller's folder, as `marimo export html` there would
        (page,) = site.build(folder, [notebook], course_chrome=course_chrome, pages_only=True, cwd=None)
    except site.SiteBuildError as error:
        message = str(error)
        if not message.startswith("marimo could not export"):
            raise
        raise ExportError(
            f"{visible(str(notebook), 200)} did not run, so nothing was written: "
            f"{cell_failure(message.partition(':')[2])}. Open it with `marimo edit {visible(str(notebook), 200)}` "
            "to see which cell fails"
        ) from None
    return page


def written_bytes(folder: Path, page: Path) -> int:
    """The bytes of `page` and of the front-end and widgets' modules beside it in `folder`: what the
    export writes, which a page exported there before shares."""
    beside = [path for inside in (site.ASSET_DIR, site.WIDGET_DIR) for path in (folder / inside).rglob("*")]
    return page.stat().st_size + sum(path.stat().st_size for path in beside if path.is_file() and not path.is_symlink())


def main(argv: list[str]) -> int:
    words = list(argv)
    flags = {flag for flag in ("--course", "--single-file") if flag in words}
    words = [word for word in words if word not in flags]
    if "-o" in words:
        at = words.index("-o")
        if at + 1 >= len(words):
            print(f"-o needs a folder: {USAGE}", file=sys.stderr)
            return 2
        folder = Path(words.pop(at + 1))
        words.pop(at)
    else:
        folder = None
    if len(words) != 1 or folder is None or any(word.startswith("-") for word in words):
        print(f"usage: {USAGE}", file=sys.stderr)
        return 2
    notebook = Path(words[0])
    shown = shlex.quote(visible(str(folder), 200))
    if "--single-file" in flags:
        page_name = visible(f"{notebook.stem}.html", 200)
        print(SINGLE_FILE_REFUSED.format(version=marimo.__version__, folder=shown, page=page_name), file=sys.stderr)
        return 2
    try:
        page = export(notebook, folder, course_chrome="--course" in flags)
    except (ExportError, UnsafeWriteError) as error:
        print(f"export: {error}", file=sys.stderr)
        return 2
    except site.SiteBuildError as error:
        print(f"export failed: {error}", file=sys.stderr)
        return 1
    except OSError as error:
        print(f"export: cannot write into {visible(str(folder), 200)} ({error.strerror})", file=sys.stderr)
        return 1
    print(
        f"wrote {visible(str(page), 200)}, with marimo's front-end in {visible(str(folder / site.ASSET_DIR), 200)}: "
        f"{written_bytes(folder, page) / 1e6:.1f} MB in all."
    )
    print(
        "Browsers do not run its scripts from disk: serve the folder, for example with\n"
        f"    python3 -m http.server --bind 127.0.0.1 --directory {shown}\n"
        f"and open {visible(page.name, 200)} under the address it prints, or copy the folder to a static web host."
    )
    if "--course" in flags and not (folder / "index.html").exists():
        print(f"Its banner links to index.html, which {shown} lacks: export into a built site/ to have it.")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
