"""A typo keeps the output (lab/teach/kept.py): a field-driven cell shows its last good output,
dimmed under a note naming the entry it came from, beside the refusal in the lab's words, until the
field is valid again."""

from __future__ import annotations

import html
import re

import pytest

from lab.errors import FileReadError
from lab.teach import course, kept
from lab.text import Safe


def _block_cell(entry):
    """Notebook 6's block field as a cell draws it: a whole number 0..9, then the block's line."""

    def draw():
        block = course.whole_number(entry, label="block", low=0, high=9)
        return kept.Drawn(Safe(f"<p>block {block}: weights {block * 32} to {block * 32 + 31}</p>"), f"block {block}")

    return draw


def _state(html):
    return re.match(r'<div data-lab-kept="(\w+)">', html).group(1)


def test_a_valid_entry_shows_its_output_and_a_refused_one_keeps_the_last_dimmed_under_a_note():
    cell = kept.KeptOutput()
    following = cell.show(_block_cell(5))
    assert following == '<div data-lab-kept="following"><p>block 5: weights 160 to 191</p></div>'
    # a plain str, as mo.Html takes it; markup the lab built, so a readout takes it as Safe
    assert type(following) is str
    assert course.readout(Safe(following)) == f'<div class="lab-readout">{following}</div>'
    stale = cell.show(_block_cell(3.7))
    assert _state(stale) == "stale"
    # the refusal first, as the lab words it, with the error's type
    refusal = html.unescape(re.search(r'<p role="alert"[^>]*>(.*?)</p>', stale).group(1))
    assert refusal == "InputError: block: type a whole number from 0 to 9, not 3.7."
    # then the note, naming the entry the kept output was drawn from
    note = html.unescape(re.search(r'<p data-lab-kept-note="" role="note"[^>]*>(.*?)</p>', stale).group(1))
    assert note == "Showing the last valid input: block 5. What is shown here follows again once the field is valid."
    assert stale.index('role="alert"') < stale.index("data-lab-kept-note") < stale.index("block 5: weights 160")
    # the output itself, unchanged, dimmed: greyed and faded, not hidden
    assert f'<div style="{kept.DIMMED_STYLE}"><p>block 5: weights 160 to 191</p></div>' in stale
    assert kept.DIMMED_STYLE == "filter: grayscale(1); opacity: 0.85;"


def test_the_kept_output_is_the_last_valid_one_and_a_valid_entry_follows_again():
    cell = kept.KeptOutput()
    cell.show(_block_cell(5))
    cell.show(_block_cell(7))
    for typo in (None, 12, float("nan")):  # an emptied field, out of range, not a number
        stale = cell.show(_block_cell(typo))
        assert _state(stale) == "stale" and "block 7: weights 224 to 255" in stale and "block 5" not in stale, typo
        assert "Showing the last valid input: block 7." in html.unescape(stale)
    # the empty field's refusal says so
    assert "the field is empty" in cell.show(_block_cell(None))
    assert cell.show(_block_cell(2)) == '<div data-lab-kept="following"><p>block 2: weights 64 to 95</p></div>'


def test_a_refusal_before_any_valid_entry_shows_the_refusal_alone():
    cell = kept.KeptOutput()
    refused = cell.show(_block_cell(-1))
    assert _state(refused) == "refused"
    assert "InputError: block: type a whole number from 0 to 9, not -1." in html.unescape(refused)
    assert "data-lab-kept-note" not in refused and "opacity" not in refused


def test_what_was_typed_reaches_the_page_inert():
    cell = kept.KeptOutput()

    def draw_path(path):
        def draw():
            if not path.endswith(".gguf"):
                raise FileReadError(f"cannot open {path}: not a GGUF file name")
            return kept.Drawn(f"<b>{path}</b>", f"path {path}")

        return draw

    # plain text output is shown literally, and the typed input in the note is made inert too
    first = cell.show(draw_path("<img src=x onerror=alert(1)>.gguf"))
    assert "<img" not in first and "<b>" not in first and "&lt;b&gt;" in first
    stale = cell.show(draw_path("<script>alert(1)</script>"))
    assert "<script>" not in stale and "<img" not in stale
    assert "FileReadError: cannot open <script>" in html.unescape(stale)
    # a pasted page in the refusal is cut, not echoed whole
    long = cell.show(draw_path("x" * 5000))
    assert len(long) < 2500 and "…" in long


def test_only_the_labs_own_refusals_are_kept_a_bug_still_raises():
    cell = kept.KeptOutput()
    cell.show(_block_cell(1))

    def broken():
        raise ZeroDivisionError("a bug, not a typo")

    with pytest.raises(ZeroDivisionError):
        cell.show(broken)
    # and the kept output is still the last valid one
    assert "block 1: weights 32 to 63" in cell.show(_block_cell(""))
