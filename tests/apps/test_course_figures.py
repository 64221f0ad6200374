"""The course's figures and controls: every formula of the metadata puzzle shows, the traced lanes
stand out, the ruler's labels never overlap, sliders show their value, every notebook links to its
neighbours, and the Try-this item about the two MXFP4 scale rules can be done with the controls."""

from __future__ import annotations

import ast
import html
import importlib.util
import re
from pathlib import Path

import marimo as mo
import numpy as np
import pytest

from lab.teach import charts, course
from publish import site as sitebuild

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


def run_notebook(name: str, defs: dict | None = None) -> dict:
    spec = importlib.util.spec_from_file_location(f"course_{name}", NOTEBOOKS / name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.app.run(defs=defs)[1]


def test_metadata_puzzle_table_shows_all_sixteen_fields_and_their_formulas():
    rendered = mo.md(run_notebook("05_q4k.py")["metadata_table"]).text
    rows = re.findall(r"<tr>(.*?)</tr>", rendered, flags=re.S)
    # what a reader sees in each cell: lab.text.shown writes its punctuation as character references
    cells = [[html.unescape(cell) for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, flags=re.S)] for row in rows[1:]]
    assert len(cells) == 8 and all(len(row) == 5 for row in cells)
    subscripts = "₀₁₂₃₄₅₆₇"
    for j, row in enumerate(cells):
        assert row[1].startswith(f"s{subscripts[j]} = ") and row[3].startswith(f"m{subscripts[j]} = ")
    # The article's split field, with its bitwise or intact in one cell.
    assert cells[4][1] == "s₄ = 33" and cells[4][3] == "m₄ = 18"
    assert "(33 & 15) | ((130 >> 6) << 4) = 1 | 32 = 33" in cells[4][2]


def test_markdown_table_escapes_pipes():
    table = course.table(["a", "b"], [["x | y", 1]])
    assert mo.md(table).text.count("<td") == 2 and "x | y" in html.unescape(mo.md(table).text)


def _values(layer: dict, spec: dict) -> list[dict]:
    """A layer's rows, whether Altair left them inline or moved them to the top-level datasets."""
    data = layer.get("data") or spec["data"]
    return data["values"] if "values" in data else spec["datasets"][data["name"]]


def test_lane_chart_marks_the_traced_lanes():
    weights = np.linspace(-1.0, 3.0, 256)
    spec = charts.q4k_lane_chart(weights, highlight=(0, 32)).to_dict()
    layers = spec["layer"]
    bars = layers[0]
    traced_layers = layers[1:]
    rows = _values(traced_layers[0], spec)
    assert [row["lane"] for row in rows] == [0, 32]
    assert [row["label"] for row in rows] == ["lane 0: -1", "lane 32: -0.498039"]
    marks = {layer["mark"]["type"]: layer["mark"] for layer in traced_layers}
    assert set(marks) == {"rule", "bar", "point", "text"}
    assert all(mark["color"] == charts.TRACED_COLOUR for mark in marks.values())
    assert charts.TRACED_COLOUR not in bars["encoding"]["color"]["scale"]["range"]
    assert (
        marks["bar"]["size"] >= 4 and marks["point"]["size"] >= 100
    )  # 256 lanes in 270–1000 px: a lane's bar is 1–4 px
    assert len(set(bars["encoding"]["color"]["scale"]["range"])) == 8


def test_no_traced_lane_rule_runs_through_another_lanes_label():
    """Every payload byte's two lanes, with short and long labels: in the narrowest plot, where
    labels take the most lanes (and so at every width), each label stays inside the plot and no
    traced lane's dashed rule reaches into another traced lane's label."""
    from lab.formats import q4k

    for payload_index in range(q4k.PAYLOAD_BYTES):
        traced = [int(lane) for lane in q4k.lanes(payload_index)]
        for weights in (["1", "3.25"], ["-0.0123457", "-0.00123457"]):
            labels = [f"lane {lane}: {weight}" for lane, weight in zip(traced, weights, strict=True)]
            layout = charts.traced_label_layout(traced, labels)
            xs = [lane / 256 * charts.NARROWEST_PLOT for lane in traced]
            boxes = []
            for x, label, place in zip(xs, labels, layout, strict=True):
                assert " ".join(place["lines"]) == label
                width, height = charts.text_px(place["lines"])
                left = x + charts.TRACED_LABEL_GAP if place["side"] == "left" else x - charts.TRACED_LABEL_GAP - width
                assert 0 <= left and left + width <= charts.NARROWEST_PLOT, (payload_index, label, place)
                boxes.append((left, place["label top"], left + width, place["label top"] + height))
            if payload_index % 32 == 8:  # and the chart draws those lines, one byte per chunk
                chart_weights = np.zeros(256)
                chart_weights[traced] = [float(weight) for weight in weights]
                spec = charts.q4k_lane_chart(chart_weights, highlight=tuple(traced)).to_dict()
                assert [row["lines"] for row in _values(spec["layer"][1], spec)] == [place["lines"] for place in layout]
            for i, (x, place) in enumerate(zip(xs, layout, strict=True)):
                for j, (left, _, right, bottom) in enumerate(boxes):
                    crossing = i != j and left <= x <= right and place["rule top"] < bottom
                    assert not crossing, (payload_index, traced[i], labels[j], layout)


def test_e2m1_ruler_labels_never_overlap():
    spec = charts.e2m1_ruler_chart().to_dict()
    values = _values(spec["layer"][0], spec)
    low, high = charts.RULER_DOMAIN
    label_layers = [layer for layer in spec["layer"] if layer["mark"]["type"] == "text"]
    assert len(label_layers) == len(charts.RULER_LABEL_OFFSETS)
    labelled = []
    for layer in label_layers:
        row = int(re.search(r"== (\d+)", layer["transform"][0]["filter"]).group(1))
        # At the narrowest plot the chart is laid out for (a phone); wider, labels only spread out.
        xs = sorted((v["value"] - low) / (high - low) * charts.NARROWEST_PLOT for v in values if v["label row"] == row)
        labelled += xs
        # A label such as "−0.5" at 15 px is under 32 px wide.
        assert min(np.diff(xs)) >= 40, f"labels in row {row} are {min(np.diff(xs)):.1f} px apart"
    assert len(labelled) == len(values) == 15
    assert [v["label"] for v in values][:3] == ["\u22126", "\u22124", "\u22123"]
    assert max(len(v["label"]) for v in values) <= 4  # the spacing above assumes labels this short


def _calls(tree: ast.AST, name: str):
    for node in ast.walk(tree):
        called = node.func.attr if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) else None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            called = node.func.id
        if called == name:
            yield node


def test_every_slider_shows_its_value():
    """A marimo slider shows its value only when asked; the course's sliders are precomputed
    choices, which always draw the option they stand on beside them (widgets/choice.js)."""
    marimo_sliders = choice_sliders = 0
    for path in sorted(NOTEBOOKS.glob("*.py")):
        tree = ast.parse(path.read_text())
        for call in _calls(tree, "slider"):
            marimo_sliders += 1
            shows = {kw.arg: kw.value for kw in call.keywords}.get("show_value")
            assert isinstance(shows, ast.Constant) and shows.value is True, f"{path.name}:{call.lineno}"
        for call in _calls(tree, "Control"):
            kind = {kw.arg: kw.value for kw in call.keywords}.get("kind")
            choice_sliders += isinstance(kind, ast.Constant) and kind.value == "slider"
    assert choice_sliders >= 3  # notebook 3's spread, 7's weights, 11's byte position
    assert marimo_sliders == 0  # none is left to sit still on the static page
    source = (NOTEBOOKS.parent / "widgets" / "choice.js").read_text()
    assert 'h("output", { class: "lab-choice-value"' in source and "setText(readout, option)" in source


def test_every_notebook_ends_with_its_navigation():
    for path in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.py")):
        assert f'navigation("{path.name}")' in path.read_text() or (
            path.name == course.INDEX and "navigation(course.INDEX)" in path.read_text()
        ), path.name
    middle = course.navigation("05_q4k.py")
    assert "(?file=04_nvfp4.py)" in middle and "(?file=06_files_and_recipes.py)" in middle
    assert "(?file=00_index.py)" in middle
    assert "Previous" not in course.navigation(course.INDEX)
    assert "Next" not in course.navigation(course.NOTEBOOKS[-1][0])  # the last notebook of the contents


def test_index_links_every_notebook_live_and_on_the_site():
    rendered = mo.md(course.index_markdown()).text
    for file, _, _ in course.NOTEBOOKS:
        assert f'href="?file={file}"' in rendered
        assert f'href="{file.removesuffix(".py")}.html"' in sitebuild.link_notebooks(rendered)
    assert sitebuild.link_notebooks(course.navigation("01_one_nibble.py")).count("(index.html)") == 1


def test_the_two_scale_rules_disagree_on_the_preset_block():
    defs = run_notebook("03_mxfp4.py")
    mxfp4 = defs["mxfp4"]
    # the blocks the page draws for seed 7 and spread 0, as its controls name them
    agree = defs["drawn_block"]("7", "0", "5 (both rules agree)")
    disagree = defs["drawn_block"]("7", "0", "7 (the rules disagree)")
    assert int(mxfp4.quantize(agree, rule="ocp").scale_bytes[0]) == int(
        mxfp4.quantize(agree, rule="mlx").scale_bytes[0]
    )
    assert float(np.abs(disagree).max()) == 7.0
    assert int(mxfp4.quantize(disagree, rule="ocp").scale_bytes[0]) == 0x7F  # floor: 2^0, 7 clips to 6
    assert int(mxfp4.quantize(disagree, rule="mlx").scale_bytes[0]) == 0x80  # ceil: 2^1
    source = (NOTEBOOKS / "03_mxfp4.py").read_text()
    assert '"7 (the rules disagree)": 7.0' in source and "Set the largest element to 7" in source


# What marimo's number field can hand over, and what the notebooks make of it.
WHOLE_NUMBER_CASES = [
    (7, 7),
    (7.0, 7),
    (0, 0),
    (10_000, 10_000),
    (3.7, "from 0 to 10000, not 3.7."),
    (None, "from 0 to 10000; the field is empty."),
    ("", "from 0 to 10000; the field is empty."),
    (-1, "not -1."),
    (10_001, "not 10001."),
    (1e300, "not 1e+300."),
    (float("nan"), "not nan."),
    (float("inf"), "not inf."),
    (True, "not True."),
    ("7", "not '7'."),
]


@pytest.mark.parametrize(("value", "expected"), WHOLE_NUMBER_CASES)
def test_whole_number_reads_a_number_control_or_says_what_to_type(value, expected):
    from lab.errors import InputError
    from lab.teach.course import whole_number

    if isinstance(expected, int):
        assert whole_number(value, label="random seed", low=0, high=10_000) == expected
        return
    with pytest.raises(InputError) as refusal:
        whole_number(value, label="random seed", low=0, high=10_000)
    assert str(refusal.value).startswith("random seed: type a whole number") and str(refusal.value).endswith(expected)


@pytest.mark.parametrize(
    "name", ["encoder.layer.0.attention.output.dense.weight", "blk.0.attn_q.weight", "a<b>|c.d", "plain"]
)
def test_code_name_breaks_only_after_dots_and_reads_back_as_the_name(name):
    import html

    from lab.text import code_name

    written = code_name(name)
    assert "|" not in written and written.count("<wbr>") == name.count(".")
    # what a reader copies: the tags dropped, the entities read back
    assert html.unescape(re.sub(r"<[^>]+>", "", written)) == name
    # marimo's Markdown passes the element through (a table cell keeps it whole)
    assert written in mo.md(f"| tensor |\n|---|\n| {written} |").text


# (value, decimals, plus, written): the real minus sign, a + only for a change, no sign on zero.
SIGNED_CASES = [
    (-0.0184, 3, False, "\u22120.018"),
    (-0.0184, 3, True, "\u22120.018"),
    (0.0042, 3, True, "+0.004"),
    (0.0042, 3, False, "0.004"),
    (-0.0004, 3, True, "0.000"),
    (-0.0, 2, False, "0.00"),
    (-0.09, 2, False, "\u22120.09"),
    (0.995, 2, False, "0.99"),  # 0.995 is 0.99499999... in binary
    (-1234.5678, 1, False, "\u22121234.6"),
    (float("nan"), 3, True, "NaN"),
]


@pytest.mark.parametrize(("value", "decimals", "plus", "written"), SIGNED_CASES)
def test_format_signed_writes_a_real_minus_sign(value, decimals, plus, written):
    from lab.numbers import format_signed

    assert format_signed(value, decimals, plus=plus) == written


def test_a_table_lines_numbers_up_on_the_right_and_text_on_the_left():
    table = course.table(
        ["tensor", "bytes", "bits per weight", "share", "the lab decodes it"],
        [
            ["blk.0.attn_q.weight", "1,234", "7.36 bits", "12.5 %", "yes"],
            ["token_embd", "−0.25", "4.5 bits", "3 %", "no"],
        ],
    )
    rendered = mo.md(table).text
    aligned = re.findall(r'<th style="text-align: (\w+);">(.*?)</th>', rendered)
    assert [(side, html.unescape(name)) for side, name in aligned] == [
        ("left", "tensor"),
        ("right", "bytes"),
        ("right", "bits per weight"),
        ("right", "share"),
        ("left", "the lab decodes it"),
    ]
