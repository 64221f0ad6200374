"""Notebook 6's Try-this sends the reader to a row of the page: the section it names holds that
tensor, and the first row of it there has the type the Try-this asks about. The page lists a tensor
of the same name twice (the toy file's Q4_K inventory near the top, the real file's list under
"Open a file"), so a Try-this that names no section sends a reader to the toy file's row first."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from support import require_shipped_gguf
from test_notebooks import run_notebook_with_outputs

HEADINGS = ("h1", "h2", "h3", "h4")


class _Page(HTMLParser):
    """The page's text in order as ("heading", text) and ("row", [cell texts]) entries, and the
    items of its Try-this list."""

    def __init__(self):
        super().__init__()
        self.entries: list[tuple[str, object]] = []
        self.try_this: list[str] = []
        self._heading: list[str] | None = None
        self._row: list[str] | None = None
        self._cell: list[str] | None = None
        self._item: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag in HEADINGS:
            self._heading = []
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []
        elif tag == "li" and self.entries and self.entries[-1] == ("heading", "Try this"):
            self._item = []

    def handle_endtag(self, tag):
        if tag in HEADINGS and self._heading is not None:
            self.entries.append(("heading", " ".join("".join(self._heading).split())))
            self._heading = None
        elif tag in ("td", "th") and self._cell is not None:
            self._row.append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.entries.append(("row", self._row))
            self._row = None
        elif tag == "li" and self._item is not None:
            self.try_this.append(" ".join("".join(self._item).split()))
            self._item = None

    def handle_data(self, data):
        for part in (self._heading, self._cell, self._item):
            if part is not None:
                part.append(data)


def test_the_real_files_try_this_names_the_section_whose_row_it_asks_about():
    require_shipped_gguf()  # a skip on a laptop without the package, a failure in CI
    outputs, defs = run_notebook_with_outputs("06_files_and_recipes.py")
    assert defs["browsing"] == "real"
    page = _Page()
    for output in outputs:
        if output is not None:
            page.feed(output.text)
    assert page.try_this, "notebook 6 shows no Try-this list"
    item = page.try_this[0]
    tensor, asked = re.search(r"(blk\.\d+\.\w+\.weight)\b.*?\bWhy is it (\w+) and not", item).groups()
    headings = [text for kind, text in page.entries if kind == "heading" and text != "Try this"]
    named = [heading for heading in headings if heading in item]
    assert named, f"the Try-this {item!r} names none of the page's sections {headings}"
    # the reader goes to the section named, and reads the first row of the tensor found after it
    start = page.entries.index(("heading", named[0]))
    found = next(cells for kind, cells in page.entries[start:] if kind == "row" and tensor in cells)
    assert asked in found, (named[0], found)
    # and that row is the real file's own: its type, read by the lab's reader
    assert asked == next(row.type_name for row in defs["own_tensors"] if row.name == tensor) == "Q5_0"
