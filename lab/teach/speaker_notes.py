"""The speaker notes of the course's slides: a teacher's words for each notebook, slide by slide,
kept out of every page a student opens.

The notes live in speaker_notes.md beside this file: `# STEM` starts a notebook (its file name
without .py), `## HEADING` a note, keyed by a heading the notebook's slides show, and the lines
under it are the note. A slide without a heading of its own takes the note of the last heading
before it. Only `serve --class` reads them, and hands them to the teacher's token alone
(classroom/teacher_view.py); the site's pages never carry them.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

NOTES_FILE = Path(__file__).with_name("speaker_notes.md")
_NOTEBOOK = re.compile(r"# (?P<stem>\d\d_\w+)")
_HEADING = re.compile(r"## (?P<heading>\S.*)")


def read_notes(text: str) -> dict[str, dict[str, str]]:
    """{notebook stem: {heading: note}} in the file's order; ValueError names a malformed line."""
    notes: dict[str, dict[str, str]] = {}
    stem = heading = None
    lines: list[str] = []

    def close() -> None:
        if heading is not None:
            note = " ".join(line.strip() for line in lines).strip()
            if not note:
                raise ValueError(f"the note for {heading!r} in {stem} is empty")
            notes[stem][heading] = note

    for number, line in enumerate(text.splitlines(), start=1):
        if notebook := _NOTEBOOK.fullmatch(line.rstrip()):
            close()
            stem, heading, lines = notebook["stem"], None, []
            if stem in notes:
                raise ValueError(f"line {number}: {stem} has notes further up already")
            notes[stem] = {}
        elif titled := _HEADING.fullmatch(line.rstrip()):
            if stem is None:
                raise ValueError(f"line {number}: a note before the first notebook (# STEM)")
            close()
            heading, lines = titled["heading"], []
            if heading in notes[stem]:
                raise ValueError(f"line {number}: {stem} has a note for {heading!r} already")
        elif line.strip():
            if heading is None:
                raise ValueError(f"line {number}: text outside a note (## HEADING)")
            lines.append(line)
    close()
    return notes


@cache
def speaker_notes() -> dict[str, dict[str, str]]:
    """The course's speaker notes (NOTES_FILE), read once."""
    return read_notes(NOTES_FILE.read_text(encoding="utf-8"))
