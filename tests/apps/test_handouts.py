"""`labctl.py handouts` before any browser starts: a seed that is not one is refused in one line with
exit status 2 and nothing written, a folder that cannot be written is one line and exit status 1,
and the page that draws a sheet is offline and sets only its inputs. The printed PDFs are checked
in tests/browser/test_handout_pdfs.py."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

import labctl
from publish import handouts

SEED_MESSAGE = "is not a seed: type a whole number from 1 to 4294967295, as the exercises' seed field takes"


@pytest.mark.parametrize("seed", ["abc", "0", "-3", "4294967296", "1.5", "", "0x10", "1e3", "\u0667"])
def test_a_seed_that_is_not_one_is_refused_in_one_line_and_nothing_is_written(tmp_path, capsys, seed):
    folder = tmp_path / "out"
    assert handouts.main(["--seed", seed, "-o", str(folder)]) == 2
    said = capsys.readouterr()
    assert said.out == ""
    assert said.err.count("\n") == 1 and SEED_MESSAGE in said.err, said.err
    assert not folder.exists()


def test_labctl_handouts_refuses_a_bad_seed_in_the_callers_folder(tmp_path, monkeypatch, capfd):
    """labctl's `handouts` runs publish.handouts in the folder it was started in (so -o is the
    caller's), with the same exit status and message; the default folder ./handouts is not made.
    (Called past labctl's set-up, which this run's environment has already had.)"""
    monkeypatch.chdir(tmp_path)
    assert labctl.print_handouts(Path(sys.executable), ["--seed", "-3"]) == 2
    assert capfd.readouterr().err == f"handouts: '-3' {SEED_MESSAGE}\n"
    assert list(tmp_path.iterdir()) == []


def test_the_seed_takes_the_whole_range_the_exercises_take():
    assert [handouts.read_seed(text) for text in ("1", "7", "4294967295", " 42 ")] == [1, 7, 4294967295, 42]


def test_a_folder_that_cannot_be_written_is_one_line_and_exit_1(tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    assert handouts.main(["-o", str(blocker / "handouts")]) == 1
    said = capsys.readouterr().err
    assert said == f"handouts: cannot write the handouts into {blocker / 'handouts'}: Not a directory\n"


def test_a_folder_name_with_hidden_characters_is_shown_spelt_out(tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    assert handouts.main(["-o", str(blocker / "x\u202ey")]) == 1
    assert "x\\u202ey" in capsys.readouterr().err


def test_file_names_carry_the_notebook_the_seed_and_the_sheet():
    assert handouts.file_name(1, 7, "worksheet") == "01_one_nibble-seed7-worksheet.pdf"
    assert handouts.file_name(5, 1, "key") == "05_q4k-seed1-key.pdf"
    assert [handouts.notebook(topic)[0][:2] for topic in handouts.TOPICS] == [f"{n:02d}" for n in range(1, 13)]
    assert handouts.booklet_name(7, "worksheet") == "booklet-seed7-worksheet.pdf"


@pytest.mark.parametrize("sheet", handouts.SHEETS)
def test_the_page_is_offline_and_sets_only_its_inputs(sheet):
    text = handouts.page(5, 4294967295, sheet)
    assert "default-src 'none'" in text
    assert not re.search(r"https?://|//cdn|@import|\bsrc=", text)
    assert f'const inputs = {{"topic": 5, "title": "Q4_K", "seed": 4294967295, "sheet": "{sheet}"}};' in text
    # the sheet is written by the module, from the exercises' generator: the page holds no question
    assert '<main id="sheet"></main>' in text
    assert "handoutQuestion(kind, seed, 0, sheet, i + 1)" in text and "exerciseInstance(kind, seed, round)" in text
    assert "break-inside: avoid" in text and "size: A4" in text


def _palette(css: str, start: str) -> dict[str, str]:
    block = re.search(re.escape(start) + r"\s*\{([^}]*)\}", css)
    assert block, start
    return dict(re.findall(r"(--lab-[\w-]+):\s*(#[0-9a-fA-F]{6})", block.group(1)))


def test_the_widgets_print_in_the_light_palette_whatever_the_theme():
    """lab.css's @media print restates the light palette (so that a dark theme prints black on
    white); the two must stay the same colour for colour, as the dark blocks do."""
    css = (Path(handouts.__file__).resolve().parents[1] / "widgets" / "lab.css").read_text(encoding="utf-8")
    assert css.count("@media print") == 1
    printed = css[css.index("@media print") :]
    light = _palette(css, ".four-bit-lab, .lab-page")
    assert len(light) >= 20
    assert _palette(printed, ".four-bit-lab, .lab-page") == light


def test_a_link_where_a_sheet_goes_is_refused_before_any_browser_starts(tmp_path, capsys):
    """A sheet is never written through a link, which could point anywhere: one line, exit status 2."""
    folder = tmp_path / "handouts"
    folder.mkdir()
    outside = tmp_path / "theirs.pdf"
    outside.write_bytes(b"not a handout")
    link = folder / handouts.file_name(3, 7, "key")
    link.symlink_to(outside)
    assert handouts.main(["--seed", "7", "--separate", "-o", str(folder)]) == 2
    said = capsys.readouterr()
    assert said.out == ""
    assert (
        said.err
        == f"handouts: {link} is a link, and the lab never writes through one: remove it or write somewhere else\n"
    )
    assert outside.read_bytes() == b"not a handout" and sorted(path.name for path in folder.iterdir()) == [link.name]


def test_a_link_where_the_booklet_goes_is_refused_before_any_browser_starts(tmp_path, capsys):
    folder = tmp_path / "handouts"
    folder.mkdir()
    outside = tmp_path / "theirs.pdf"
    outside.write_bytes(b"not a booklet")
    link = folder / handouts.booklet_name(7, "key")
    link.symlink_to(outside)
    assert handouts.main(["--seed", "7", "-o", str(folder)]) == 2
    assert capsys.readouterr().err == (
        f"handouts: {link} is a link, and the lab never writes through one: remove it or write somewhere else\n"
    )
    assert outside.read_bytes() == b"not a booklet"


def test_the_notebooks_of_a_booklet_are_numbers_and_ranges_in_course_order():
    assert handouts.read_notebooks("1-12") == list(range(1, 13))
    assert handouts.read_notebooks(" 9 - 12, 3,1,3 ") == [1, 3, 9, 10, 11, 12]
    assert handouts.read_notebooks("12") == [12]
    assert [handouts.read_pages(text) for text in ("1", "4", " 2 ")] == [1, 4, 2]


@pytest.mark.parametrize(
    ("argument", "text", "says"),
    [
        ("--notebooks", "13", "'13' is not a notebook with exercises: choose from 1 to 12, as in 1,3,9-12"),
        ("--notebooks", "0", "'0' is not a notebook with exercises"),
        ("--notebooks", "3-1", "'3-1' is not a notebook with exercises"),
        ("--notebooks", "1,,2", "'' is not a notebook with exercises"),
        ("--notebooks", "one", "'one' is not a notebook with exercises"),
        ("--notebooks", "1-99", "'1-99' is not a notebook with exercises"),
        ("--pages", "0", "'0' is not a number of pages: type a whole number from 1 to 4"),
        ("--pages", "5", "'5' is not a number of pages"),
        ("--pages", "1.5", "'1.5' is not a number of pages"),
    ],
)
def test_a_booklet_choice_that_is_not_one_is_refused_in_one_line_and_nothing_is_written(
    tmp_path, capsys, argument, text, says
):
    folder = tmp_path / "out"
    assert handouts.main([argument, text, "-o", str(folder)]) == 2
    said = capsys.readouterr()
    assert said.out == "" and said.err.count("\n") == 1 and f"handouts: {says}" in said.err, said.err
    assert not folder.exists()


@pytest.mark.parametrize("sheet", handouts.SHEETS)
def test_the_booklet_page_is_offline_and_sets_only_its_inputs(sheet):
    chosen = {"3": [{"kind": "e8m0-rule", "round": 0}]} if sheet == "key" else None
    text = handouts.booklet_page(7, [3, 12], sheet, 2, chosen)
    assert "default-src 'none'" in text
    assert not re.search(r"https?://|//cdn|@import|\bsrc=", text)
    notebooks = [{"topic": 3, "title": "MXFP4"}, {"topic": 12, "title": "What four bits do to a chat model's answers"}]
    inputs = {"seed": 7, "sheet": sheet, "notebooks": notebooks, "pages": 2, "chosen": chosen}
    assert f"const inputs = {json.dumps(inputs)};" in text
    assert '<main id="sheet"></main>' in text and "writeBooklet(" in text
    # a page is one printed page's box, A4 less its margins
    assert ".booklet-page { box-sizing: border-box; width: 176mm; height: 256mm;" in text
