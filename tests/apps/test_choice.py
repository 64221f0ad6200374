"""The precomputed choice (widgets/choice.py): every outcome present, each marked with the options
it belongs to, only the current one shown, and outside text in a mark or a view shown literally."""

from __future__ import annotations

import json
from html.parser import HTMLParser

import pytest

from widgets.choice import MOST_OUTCOMES, Control, PrecomputedChoice, outcome_panels


class _Panels(HTMLParser):
    """The outcome panels of some HTML: (group, when, hidden, text inside)."""

    def __init__(self):
        super().__init__()
        self.panels: list[dict] = []
        self._depth = 0

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "div" and "data-lab-choice" in attributes and self._depth == 0:
            self.panels.append(
                {
                    "group": attributes["data-lab-choice"],
                    "when": json.loads(attributes["data-lab-when"]),
                    "hidden": "hidden" in attributes,
                    "text": "",
                }
            )
            self._depth = 1
        elif self._depth:
            self._depth += 1

    def handle_endtag(self, tag):
        if self._depth:
            self._depth -= 1

    def handle_data(self, data):
        if self._depth:
            self.panels[-1]["text"] += data


def panels(markup: str) -> list[dict]:
    parser = _Panels()
    parser.feed(markup)
    return parser.panels


class Rendered:
    """What marimo hands back for mo.md(...) and friends: HTML in `.text`."""

    def __init__(self, text: str):
        self.text = text


def two_controls(on_demand: bool | None = None) -> PrecomputedChoice:
    return PrecomputedChoice(
        "payload",
        [
            Control("source", "weights", ["tiny", "real"], "real"),
            Control("byte", "byte", [str(n) for n in range(4)], "2", kind="slider"),
        ],
        on_demand=on_demand,
    )


def test_the_widget_starts_at_each_controls_value_and_says_how_to_draw_it():
    choice = two_controls()
    assert choice.values == {"source": "real", "byte": "2"}
    assert choice.group == "payload"
    assert choice.controls == [
        {"name": "source", "label": "weights", "kind": "select", "options": ["tiny", "real"], "value": "real"},
        {"name": "byte", "label": "byte", "kind": "slider", "options": ["0", "1", "2", "3"], "value": "2"},
    ]


def test_every_combination_gets_a_panel_and_only_the_current_one_shows():
    choice = two_controls()
    views = {(s, b): Rendered(f"<p>{s} byte {b}</p>") for s in ("tiny", "real") for b in "0123"}
    found = panels(choice.outcomes(["source", "byte"], views))
    assert [(p["when"]["source"], p["when"]["byte"]) for p in found] == list(views)
    assert {p["group"] for p in found} == {"payload"}
    assert [p["text"] for p in found if not p["hidden"]] == ["real byte 2"]
    assert all(p["text"] == f"{p['when']['source']} byte {p['when']['byte']}" for p in found)


def test_panels_may_depend_on_some_controls_only():
    choice = two_controls()
    found = panels(choice.outcomes(["source"], {("tiny",): Rendered("<p>t</p>"), ("real",): Rendered("<p>r</p>")}))
    assert [(p["when"], p["hidden"]) for p in found] == [({"source": "tiny"}, True), ({"source": "real"}, False)]


def test_an_option_from_a_file_is_shown_literally_in_the_mark_and_a_plain_view_as_text():
    hostile = '"><img src=x onerror=alert(1)>'
    choice = PrecomputedChoice("names", [Control("tensor", "tensor", [hostile, "blk.0"], hostile)])
    markup = choice.outcomes(["tensor"], {(hostile,): "<b>not markup</b>", ("blk.0",): Rendered("<p>ok</p>")})
    assert "<img" not in markup and "<b>" not in markup
    found = panels(markup)
    assert found[0]["when"] == {"tensor": hostile}
    assert found[0]["text"] == "<b>not markup</b>"


@pytest.mark.parametrize(
    ("depends_on", "views", "words"),
    [
        (["source"], {("tiny",): "t"}, "no outcome for ('real',)"),
        (["source"], {("tiny",): "t", ("real",): "r", ("other",): "o"}, "an outcome for ('other',)"),
        (["colour"], {}, "distinct controls"),
        (["source", "source"], {}, "distinct controls"),
        ([], {}, "distinct controls"),
    ],
)
def test_missing_extra_or_unknown_outcomes_are_refused(depends_on, views, words):
    with pytest.raises(ValueError, match=words.replace("(", r"\(").replace(")", r"\)")):
        two_controls().outcomes(depends_on, views)


def test_a_page_never_carries_more_outcomes_than_the_limit():
    options = [str(n) for n in range(MOST_OUTCOMES + 1)]
    choice = PrecomputedChoice("many", [Control("n", "n", options, "0", kind="slider")])
    with pytest.raises(ValueError, match="more than a page should carry"):
        choice.outcomes(["n"], {(o,): o for o in options})


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        ({"name": "Format"}, "lowercase"),
        ({"label": " "}, "needs a label"),
        ({"kind": "radio"}, "kind is one of"),
        ({"options": []}, "distinct, non-empty"),
        ({"options": ["a", "a"]}, "distinct, non-empty"),
        ({"options": ["a", ""]}, "distinct, non-empty"),
        ({"value": "z"}, "not one of its options"),
        ({"kind": "number", "options": ["0", "2"], "value": "0"}, "consecutive whole numbers"),
        ({"kind": "number", "options": ["1", "0"], "value": "0"}, "consecutive whole numbers"),
        ({"kind": "number", "options": ["01", "02"], "value": "01"}, "consecutive whole numbers"),
        ({"kind": "number", "options": ["a", "b"]}, "consecutive whole numbers"),
    ],
)
def test_a_control_that_cannot_be_drawn_is_refused(arguments, words):
    fields = {"name": "format", "label": "format", "options": ["a", "b"], "value": "a"} | arguments
    with pytest.raises(ValueError, match=words):
        Control(**fields)


def test_a_number_field_offers_a_run_of_whole_numbers():
    field = Control("seed", "random seed", [str(n) for n in range(3, 13)], "7", kind="number")
    assert field.options[0] == "3" and field.options[-1] == "12"


def test_headings_in_a_panel_leave_the_outline_alone():
    """marimo's outline lists every heading of a page, hidden or not: a panel's are paragraphs
    that say they are headings, and carry no id an option's copy would repeat."""
    choice = two_controls()
    markup = choice.outcomes(
        ["source"],
        {
            ("tiny",): Rendered('<h3 id="on-device">On device</h3><p>x</p>'),
            ("real",): Rendered("<h4>Device: cpu</h4>"),
        },
    )
    assert "<h3" not in markup and "<h4" not in markup and 'id="on-device"' not in markup
    assert '<p class="lab-outcome-heading" role="heading" aria-level="3">On device</p>' in markup
    assert '<p class="lab-outcome-heading" role="heading" aria-level="4">Device: cpu</p>' in markup


def test_a_group_name_and_the_control_names_are_checked():
    with pytest.raises(ValueError, match="group"):
        PrecomputedChoice("two words", [Control("a", "a", ["x"], "x")])
    with pytest.raises(ValueError, match="distinct names"):
        PrecomputedChoice("g", [Control("a", "a", ["x"], "x"), Control("a", "b", ["y"], "y")])
    with pytest.raises(ValueError, match="distinct names"):
        PrecomputedChoice("g", [])


def test_a_widget_can_drive_panels_of_its_own_values():
    """outcome_panels without a choice: notebook 1's working for each of a nibble's sixteen codes,
    keyed as the nibble widget's `code` trait reads as text; only the current code's shows."""
    markup = outcome_panels(
        "nibble-by-hand",
        {"code": [str(c) for c in range(16)]},
        {"code": "5"},
        {(str(c),): f"code {c}" for c in range(16)},
    )
    found = panels(markup)
    assert [p["when"] for p in found] == [{"code": str(c)} for c in range(16)]
    assert [p["text"] for p in found if not p["hidden"]] == ["code 5"]
    with pytest.raises(ValueError, match="current values"):
        outcome_panels("g", {"code": ["0", "1"]}, {"code": "7"}, {("0",): "a", ("1",): "b"})
    with pytest.raises(ValueError, match="group"):
        outcome_panels("G G", {"code": ["0"]}, {"code": "0"}, {("0",): "a"})


def test_a_view_function_is_called_for_every_combination_where_the_page_carries_them_all():
    """Off demand (the static site's export, a script run) a function of the options gives the
    same panels as the mapping of every outcome it would make."""
    choice = two_controls(on_demand=False)
    called = []

    def view(source, byte):
        called.append((source, byte))
        return Rendered(f"<p>{source} byte {byte}</p>")

    markup = choice.outcomes(["source", "byte"], view)
    every = {(s, b): Rendered(f"<p>{s} byte {b}</p>") for s in ("tiny", "real") for b in "0123"}
    assert called == list(every)
    assert markup == choice.outcomes(["source", "byte"], every)
    assert "lab-outcome-pending" not in markup


def test_on_demand_only_the_outcome_shown_is_computed_and_the_others_wait_for_their_pick():
    """A live page (labctl.py open) computed 70 blocks with their MLX runs before notebook 3 showed
    anything: on demand only the combination shown is computed; each other panel says it is being
    worked out, and a pick in the browser (the cell runs again) computes that one."""
    choice = two_controls(on_demand=True)
    called = []

    def view(source, byte):
        called.append((source, byte))
        return Rendered(f"<p>{source} byte {byte}</p>")

    found = panels(choice.outcomes(["source", "byte"], view))
    assert called == [("real", "2")]
    assert len(found) == 8 and [(p["when"], p["hidden"]) for p in found if not p["hidden"]] == [
        ({"source": "real", "byte": "2"}, False)
    ]
    waiting = [p for p in found if p["when"] != {"source": "real", "byte": "2"}]
    assert all(p["hidden"] and p["text"].startswith("Working this choice out") for p in waiting)

    choice.values = {"source": "tiny", "byte": "3"}  # the reader picks, as the browser sets it
    found = panels(choice.outcomes(["source", "byte"], view))
    assert called[-1] == ("tiny", "3")
    assert [p["text"] for p in found if not p["hidden"]] == ["tiny byte 3"]

    # a field holding a typo (the browser sends null) keeps the last good outcome, computed again
    choice.values = {"source": "tiny", "byte": None}
    found = panels(choice.outcomes(["source"], lambda source: Rendered(f"<p>{source}</p>")))
    assert [p["text"] for p in found if not p["hidden"]] == ["tiny"]
    found = panels(choice.outcomes(["byte"], lambda byte: Rendered(f"<p>byte {byte}</p>")))
    assert [p["text"] for p in found if not p["hidden"]] == ["byte 3"]


def test_only_a_readers_page_under_marimo_run_computes_on_demand():
    """Outside a marimo kernel (a script, this test, the site's export of a notebook's cells)
    every outcome is computed; the choice decides once, when it is made."""
    from widgets.choice import kernel_on_demand

    assert kernel_on_demand() is False
    assert two_controls().on_demand is False
