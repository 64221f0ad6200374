"""`labctl.py explainer NAME --state '#…' -o FILE.html`: the state an author gives is read as a
page's link state and refused, in the lab's words and before anything is written, when it is not
one the explainer takes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest

from lab.errors import InputError
from publish import standalone

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("slug", "text", "expected"),
    [
        ("nibble-decoder", "#" + quote(json.dumps({"code": 8})), {"code": 8}),
        ("nibble-decoder", '{"code": 8}', {"code": 8}),
        ("scale-lab", '#{"scale": 0.125, "fine": true}', {"scale": 0.125, "fine": True}),
        ("exercises", '{"seed": 7}', {"seed": 7}),
        # as a page's Copy link now spells it: only the inputs that differ from the defaults
        ("q4k-explorer", "#%7B%22payload_index%22%3A17%7D", {"payload_index": 17}),
    ],
)
def test_a_link_state_in_any_spelling_is_read(slug, text, expected):
    assert standalone.read_state(slug, text) == expected


@pytest.mark.parametrize(
    ("slug", "text", "says"),
    [
        ("nibble-decoder", "not json", "is not a page's link state"),
        ("nibble-decoder", "#%E0%A4%A", "is not a page's link state"),
        ("nibble-decoder", "[8]", "must be a set of named values"),
        ("nibble-decoder", '{"presenter": true}', "has no input presenter; its inputs are code"),
        ("nibble-decoder", '{"<img src=x>": 1}', "has no input <img src=x>; its inputs"),
        ("nibble-decoder", '{"code": "8"}', 'code must be a whole number (its default is 5), got "8"'),
        ("nibble-decoder", '{"code": 8.5}', "code must be a whole number"),
        ("nibble-decoder", '{"code": 99}', "refuses this state: nibble must be in 0..15, got 99"),
        ("scale-lab", '{"scale": 1e999}', "scale must be a number"),
        ("scale-lab", '{"fine": 1}', "fine must be true or false"),
        ("ownership", '{"codes": [1, 2]}', "codes must be a list of 32 values"),
        ("exercises", '{"seed": -4}', "seed must be a whole number 1..4294967295, or 0"),
        ("nibble-decoder", "{" + " " * standalone.LONGEST_STATE + "}", "a state is at most 100,000"),
    ],
)
def test_a_state_the_explainer_does_not_take_is_refused_in_words(slug, text, says):
    with pytest.raises(InputError) as refused:
        standalone.read_state(slug, text)
    assert says in str(refused.value)


def test_the_command_refuses_before_it_writes(tmp_path, capsys):
    target = tmp_path / "page.html"
    assert standalone.main(["nibble-decoder", "--state", '{"code": 99}', "-o", str(target)]) == 2
    assert capsys.readouterr().err.startswith("--state: nibble-decoder refuses this state")
    assert standalone.main(["no-such-explainer", "-o", str(target)]) == 2
    assert "NAME one of nibble-decoder, scale-lab" in capsys.readouterr().err
    assert standalone.main(["nibble-decoder"]) == 2
    assert standalone.main(["nibble-decoder", "-o"]) == 2
    assert "-o needs a value" in capsys.readouterr().err
    assert not target.exists()
    assert standalone.main(["nibble-decoder", "-o", str(tmp_path / "no-folder" / "page.html")]) == 1
    assert "cannot write" in capsys.readouterr().err


def test_a_state_holding_an_end_tag_cannot_end_the_pages_script(tmp_path):
    """An answer is any text; written into the page's script, '</script>' stays inside the JSON."""
    page = standalone.page(
        "exercises", standalone.read_state("exercises", '{"answers": {"nibble-decode": "</script><b>"}}')
    )
    script = page[page.index('<script type="module">') :]
    assert script.count("</script") == 1
    assert '"nibble-decode": "\\u003c/script>\\u003cb>"' in script


def test_a_state_nested_a_thousand_deep_is_one_line_and_exit_2(tmp_path):
    """As `labctl.py explainer` runs it: the depth is refused before json parses, so no RecursionError."""
    target = tmp_path / "x.html"
    state = "[" * 1000 + "]" * 1000
    result = subprocess.run(
        [sys.executable, "-m", "publish.standalone", "nibble-decoder", "--state", state, "-o", str(target)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == (
        "--state: the state nests lists and objects 1,000 deep; at most 32 levels are read, so it is not a "
        "page's link state: copy it from the page's Copy link\n"
    )
    assert not target.exists()


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('{"code": NaN}', "the state holds NaN, which is not a number in JSON"),
        ('{"\\ud800": 1}', "the state holds a lone surrogate"),
        ('{"code": "\\udc00"}', "the state holds a lone surrogate"),
    ],
)
def test_json_the_lab_does_not_read_is_refused_as_a_state(text, says):
    with pytest.raises(InputError) as refused:
        standalone.read_state("nibble-decoder", text)
    assert str(refused.value).startswith(says)


def test_the_command_replaces_its_own_page_and_refuses_anyone_elses(tmp_path, capsys):
    target = tmp_path / "page.html"
    assert standalone.main(["nibble-decoder", "-o", str(target)]) == 0
    assert target.read_text(encoding="utf-8").startswith(
        f'<!doctype html>\n<html lang="en">\n<head>\n{standalone.EXPLAINER_MARK}\n'
    )
    assert standalone.main(["nibble-decoder", "--state", '{"code": 8}', "-o", str(target)]) == 0
    assert 'const given = {"code": 8};' in target.read_text(encoding="utf-8")
    capsys.readouterr()
    hand = tmp_path / "hand.html"
    hand.write_text("<p>my own page</p>", encoding="utf-8")
    assert standalone.main(["nibble-decoder", "-o", str(hand)]) == 2
    assert capsys.readouterr().err == (
        f"-o: {hand} is already there and this command did not write it, so it is left as it is: "
        "move it or write somewhere else\n"
    )
    assert hand.read_text(encoding="utf-8") == "<p>my own page</p>"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["hand.html", "page.html"]


@pytest.mark.parametrize("dangling", [False, True])
def test_the_command_never_writes_through_a_link(tmp_path, capsys, dangling):
    outside = tmp_path / "outside"
    outside.mkdir()
    pointed_at = outside / "page.html"
    if not dangling:
        # even a link to a page this command wrote: replacing it would write outside -o's folder
        assert standalone.main(["scale-lab", "-o", str(pointed_at)]) == 0
    before = sorted((path.name, path.read_bytes()) for path in outside.iterdir())
    link = tmp_path / "link.html"
    link.symlink_to(pointed_at)
    capsys.readouterr()
    assert standalone.main(["nibble-decoder", "-o", str(link)]) == 2
    said = capsys.readouterr()
    assert said.out == "" and said.err == (
        f"-o: {link} is a link, and the lab never writes through one: remove it or write somewhere else\n"
    )
    assert link.is_symlink()
    assert sorted((path.name, path.read_bytes()) for path in outside.iterdir()) == before


def test_a_folder_as_the_file_is_refused(tmp_path, capsys):
    assert standalone.main(["nibble-decoder", "-o", str(tmp_path)]) == 2
    assert "is a folder, not a regular file, so nothing is written there" in capsys.readouterr().err
