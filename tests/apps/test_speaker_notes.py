"""The speaker notes (lab/teach/speaker_notes.md): every course notebook has notes, each note is
keyed by a heading its notebook's slides really show, a malformed file is refused by line, and the
notes go only to the teacher's token (serve --class, /class/notes.json)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from serving import fetch, make_site, start_server, stop_server

from classroom import teacher_view
from classroom.teacher_view import Classroom
from lab.teach import course
from lab.teach.speaker_notes import read_notes, speaker_notes

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
TOKEN = "speaker-token-for-the-tests-0123456789"


def test_every_course_notebook_has_notes_and_starts_with_its_title():
    notes = speaker_notes()
    stems = [file.removesuffix(".py") for file, _, _ in course.NOTEBOOKS]
    assert list(notes) == stems
    for number, (stem, (_, title, _)) in enumerate(zip(stems, course.NOTEBOOKS, strict=True), start=1):
        first = next(iter(notes[stem]))
        assert first.startswith(f"{number} · {title}"), (stem, first)
        assert all(len(note.split()) >= 8 for note in notes[stem].values()), stem


def test_each_note_is_keyed_by_a_heading_its_notebook_shows():
    for stem, notes in speaker_notes().items():
        source = (NOTEBOOKS / f"{stem}.py").read_text(encoding="utf-8")
        for heading in notes:
            # a Markdown heading line of the notebook's prose: at a line's start or a string's
            shown = rf'(?:^\s*|["(]|\\n)#{{1,2}} {re.escape(heading)}(?:\\n|"|[ \t]*$)'
            assert re.search(shown, source, flags=re.MULTILINE), (stem, heading)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("## A\nnote words here\n", "line 1: a note before the first notebook"),
        ("# 01_x\nstray words\n", "line 2: text outside a note"),
        ("# 01_x\n## A\nwords\n## A\nmore\n", "line 4: 01_x has a note for 'A' already"),
        ("# 01_x\n## A\nwords\n# 01_x\n", "line 4: 01_x has notes further up already"),
        ("# 01_x\n## A\n\n## B\nwords\n", "the note for 'A' in 01_x is empty"),
    ],
)
def test_a_malformed_notes_file_is_refused_by_line(text, says):
    with pytest.raises(ValueError, match=re.escape(says)):
        read_notes(text)


def test_a_note_runs_to_the_next_heading_as_one_paragraph():
    assert read_notes("# 01_x\n## A · b\nfirst line\n  second line\n\n## C\nthird\n# 02_y\n## D\nfourth\n") == {
        "01_x": {"A · b": "first line second line", "C": "third"},
        "02_y": {"D": "fourth"},
    }


def test_the_notes_go_only_to_the_teachers_token(tmp_path):
    server, thread = start_server(make_site(tmp_path), classroom=Classroom(token=TOKEN))
    port = server.server_address[1]
    try:
        for headers, status in [([], 401), ([("Authorization", "Bearer nope")], 403)]:
            got, _, body = fetch(port, teacher_view.NOTES_PATH, headers=headers)
            assert got == status and "token" in json.loads(body)["error"]
        got, headers, body = fetch(port, teacher_view.NOTES_PATH, headers=[("Authorization", f"Bearer {TOKEN}")])
        assert got == 200 and headers["Cache-Control"] == "no-store"
        notebooks = json.loads(body)["notebooks"]
        assert [entry["page"] for entry in notebooks] == [
            f"{f.removesuffix('.py')}.html" for f, _, _ in course.NOTEBOOKS
        ]
        mxfp4 = notebooks[2]
        assert (mxfp4["number"], mxfp4["title"]) == (3, "MXFP4")
        assert dict(mxfp4["notes"]) == speaker_notes()["03_mxfp4"]
        got, headers, page = fetch(port, teacher_view.SPEAKER_PATH)
        assert got == 200 and TOKEN not in page.decode() and "Speaker notes" in page.decode()
        assert "script-src 'sha256-" in headers["Content-Security-Policy"]
    finally:
        stop_server(server, thread)
