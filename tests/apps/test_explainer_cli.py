"""`labctl.py explainer NAME --state '#…' -o FILE.html`: the state an author gives is read as a
page's link state and refused, in the lab's words and before anything is written, when it is not
one the explainer takes."""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest

from lab.errors import InputError
from widgets.build import standalone


@pytest.mark.parametrize(
    ("slug", "text", "expected"),
    [
        ("nibble-decoder", "#" + quote(json.dumps({"code": 8})), {"code": 8}),
        ("nibble-decoder", '{"code": 8}', {"code": 8}),
        ("scale-lab", '#{"scale": 0.125, "fine": true}', {"scale": 0.125, "fine": True}),
        ("exercises", '{"seed": 7}', {"seed": 7}),
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
