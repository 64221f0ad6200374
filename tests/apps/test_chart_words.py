"""Every chart says what it shows in words: a description (Vega gives it to the chart as its
aria-label, the text alternative for a screen reader, or for a phone that cannot hover over a
point), legends that name things rather than reading "true" / "false", and legends laid out to fit
the narrowest plot. tests/browser/test_chart_layout.py checks the same in the drawn charts."""

from __future__ import annotations

import json

import numpy as np
import pytest

from lab.study import compare
from lab.teach import charts, scale

RNG = np.random.default_rng(7)
FORMAT = "MLX affine 2-bit g64"  # the longest format name the course shows

MARGINS = [
    {"question": f"question {i}", "fp32_margin": a, "margin": b, "outcome": outcome, "picked": "a passage"}
    for i, (a, b, outcome) in enumerate(
        [
            (0.3, 0.25, "right in both"),
            (0.2, -0.03, "lost: now wrong"),
            (-0.05, 0.04, "gained: now right"),
            (-0.04, -0.06, "wrong in both"),
            (0.4, 0.1, "right in both"),
        ]
    )
]
LAYERS = [
    {
        "layer": f"encoder.layer.{i // 6}.{role}",
        "weight_error": 0.3 + 0.004 * i,
        "output_error": float(RNG.uniform(0.2, 0.6)),
        "weight_rank": float(36 - i),
        "output_rank": float(i + 1),
        "peak_to_median": 3.0,
        "disagreeing": i in (5, 11, 17),
    }
    for i, role in enumerate(["attention.self.query", "attention.output.dense", "output.dense"] * 12)
]
STUDY = [
    {"title": title, "bits_per_weight": bits, "top1": top1, "mrr": mrr, "fallbacks": 0}
    for title, bits, top1, mrr in [
        ("float32", 32.0, 0.97, 0.98),
        ("MXFP4", 4.25, 0.95, 0.97),
        (FORMAT, 2.5, 0.89, 0.94),
    ]
]
PARETO = [
    {"source": "N(0, 1)", "title": title, "bits_per_weight": bits, "relative_error": error, "on_front": front}
    for title, bits, error, front in [
        ("MXFP4", 4.25, 0.1, False),
        ("Q4_K", 4.5, 0.05, True),
        ("Q8_0", 8.5, 0.004, True),
    ]
]
TENSORS = [
    {"tensor": f"encoder.layer.{i}.output.dense.weight", "format": "NVFP4", "relative_rmse": 0.1 + 0.01 * i,
     "outlier_share": 0.001 * i, "skipped": None}
    for i in range(3)
]  # fmt: skip
SENTENCES = [f"sentence number {i}" for i in range(4)]
SIMILARITY = np.array([[1.0, 0.8, 0.1, 0.2], [0.8, 1.0, 0.15, 0.1], [0.1, 0.15, 1.0, 0.7], [0.2, 0.1, 0.7, 1.0]])


def _difference():
    pytest.importorskip("mlx.core")
    from lab import device
    from lab.formats import q4k

    return charts.difference_chart(device.run_q4k(q4k.presentation_fixture()))


# Every chart function, called with data like the notebooks'. similarity_heatmaps_chart returns
# marimo HTML holding two of _heatmap's charts: those are what it draws.
CHARTS = {
    "e2m1_ruler_chart": lambda: charts.e2m1_ruler_chart(),
    "error_vs_scale_chart": lambda: charts.error_vs_scale_chart(
        scale.ARTICLE_W, {"all ones": [1.0] * 4, "last weight dominant [0, 0, 0, 4]": [0, 0, 0, 4.0]}, [0.25, 0.5, 1.0]
    ),
    "q4k_lane_chart": lambda: charts.q4k_lane_chart(np.linspace(-1, 3, 256), highlight=(3, 200)),
    "bits_per_weight_chart": lambda: charts.bits_per_weight_chart(),
    # two formats' greedy answers to two prompts: one departs at token 4, the others never
    "divergence_chart": lambda: charts.divergence_chart(
        [
            {"title": "Q8_0", "prompt": "The capital of France is", "position": None},
            {"title": "Q8_0", "prompt": "Water boils at", "position": None},
            {"title": "Q4_0", "prompt": "The capital of France is", "position": 4},
            {"title": "Q4_0", "prompt": "Water boils at", "position": 11},
        ],
        20,
        ["The capital of France is", "Water boils at"],
    ),
    # the real Gemma file's type summary, in the shape lab.interop.gguf.type_summary returns it
    "type_bytes_chart": lambda: charts.type_bytes_chart(
        [
            {"type": "Q8_0", "share_of_bytes": 0.729, "bits_per_weight": 8.5},
            {"type": "Q5_0", "share_of_bytes": 0.177, "bits_per_weight": 5.5},
            {"type": "Q4_K", "share_of_bytes": 0.054, "bits_per_weight": 4.5},
            {"type": "Q6_K", "share_of_bytes": 0.039, "bits_per_weight": 6.5625},
            {"type": "F32", "share_of_bytes": 0.001, "bits_per_weight": 32.0},
        ],
        "Q4_K_M",
    ),
    "block_grid_chart": lambda: charts.block_grid_chart(RNG.normal(0, 2, 32), np.arange(-6.0, 7.0)),
    "difference_chart": _difference,
    "tensor_error_chart": lambda: charts.tensor_error_chart(TENSORS, "NVFP4"),
    "outlier_chart": lambda: charts.outlier_chart(TENSORS, "NVFP4"),
    "similarity_heatmaps_chart": lambda: charts.answers._heatmap(SIMILARITY, SENTENCES, FORMAT, legend=True),
    "per_sentence_cosine_chart": lambda: charts.per_sentence_cosine_chart([0.99, 0.98, 0.97, 0.999], SENTENCES, FORMAT),
    "retrieval_quality_chart": lambda: charts.retrieval_quality_chart(STUDY),
    "retrieval_margins_chart": lambda: charts.retrieval_margins_chart(MARGINS, FORMAT),
    "layer_errors_chart": lambda: charts.layer_errors_chart(LAYERS, FORMAT),
    "channel_outliers_chart": lambda: charts.channel_outliers_chart(
        RNG.gamma(2.0, 0.2, 384), [10, 200, 301], "layer.5"
    ),
    "pareto_chart": lambda: charts.pareto_chart(PARETO, "N(0, 1)"),
    "front_chart": lambda: charts.front_chart(
        PARETO, "N(0, 1)", error="relative_error", error_words="relative error", note=""
    ),
    "block_outlier_chart": lambda: charts.block_outlier_chart(compare.outlier_rows()),
}
LEGEND_CHANNELS = ("color", "fill", "stroke", "shape", "size", "opacity", "strokeDash")


def test_every_chart_function_is_called_here():
    functions = {name for name in dir(charts) if name.endswith("_chart") and callable(getattr(charts, name))}
    assert set(CHARTS) == functions


def _spec(name: str) -> dict:
    chart = CHARTS[name]()
    assert chart is not None
    return chart.to_dict()


def _views(spec: dict):
    """The spec and every view under it, each with the inline rows it draws (a layer's own, else
    its parent's)."""
    stack = [(spec, [])]
    while stack:
        view, rows = stack.pop()
        rows = view.get("data", {}).get("values", rows)
        yield view, rows
        stack += [(child, rows) for child in view.get("layer", [])]


def _legends(spec: dict):
    """(field, legend, entries) for every nominal channel drawn with a legend."""
    for view, rows in _views(spec):
        for channel in LEGEND_CHANNELS:
            encoding = view.get("encoding", {}).get(channel)
            if not encoding or "field" not in encoding or encoding.get("legend", {}) is None:
                continue
            if encoding.get("type") != "nominal":
                continue  # a gradient (the heatmaps' cosine) is laid out by its gradientLength
            field = encoding["field"]
            entries = encoding.get("scale", {}).get("domain") or list(
                dict.fromkeys(row[field] for row in rows if field in row)
            )
            yield field, encoding.get("legend", {}), entries


@pytest.mark.parametrize("name", list(CHARTS))
def test_every_chart_says_what_it_shows_in_words(name):
    description = _spec(name).get("description", "")
    assert len(description) > 40, (name, description)
    assert "nan" not in description.split() and "None" not in description, description


def test_descriptions_are_built_from_the_data():
    margins = _spec("retrieval_margins_chart")["description"]
    assert f"{len(MARGINS)} questions" in margins and FORMAT in margins
    assert "2 right in both, 1 lost: now wrong, 1 gained: now right, 1 wrong in both" in margins
    layers = _spec("layer_errors_chart")["description"]
    assert "for 36 Linears" in layers
    assert all(f"layer.{i // 6}." in layers for i in (5, 11, 17))
    channels = _spec("channel_outliers_chart")["description"]
    assert "of 384 input channels" in channels and "channel 200" in channels and "channel 301" in channels


@pytest.mark.parametrize("name", list(CHARTS))
def test_no_legend_reads_true_or_false(name):
    booleans = [
        (field, entries) for field, _, entries in _legends(_spec(name)) if any(isinstance(e, bool) for e in entries)
    ]
    assert booleans == []


def _label_lines(entry: str, legend: dict) -> list[str]:
    """A legend label's lines: error_vs_scale_chart's labelExpr writes "name [vector]" as the
    name over the vector."""
    at = entry.find(" [")
    return [entry[:at], entry[at + 1 :]] if "labelExpr" in legend and at > 0 else [entry]


@pytest.mark.parametrize("name", list(CHARTS))
def test_every_legend_fits_the_narrowest_plot(name):
    """A bottom legend's row starts at the plot's left edge and does not wrap: its columns, each
    as wide as its widest entry, must fit the plot on a phone."""
    for field, legend, entries in _legends(_spec(name)):
        columns = legend.get("columns") or len(entries)
        widths = [charts.text_px(_label_lines(str(entry), legend))[0] + charts.LEGEND_SYMBOL_PX for entry in entries]
        row = sum(max(widths[i::columns]) for i in range(columns)) + charts.LEGEND_COLUMN_GAP * (columns - 1)
        assert row <= charts.NARROWEST_PLOT, (name, field, entries, columns, row)


def test_points_that_matter_differ_in_shape_as_well_as_colour():
    """The layers whose rank moves most and the top input channels are told apart by a shape, not
    only a hue."""
    for name in ("layer_errors_chart", "channel_outliers_chart", "retrieval_margins_chart"):
        shapes = [encoding for view, _ in _views(_spec(name)) if (encoding := view.get("encoding", {}).get("shape"))]
        assert shapes and all(len(set(shape["scale"]["range"])) == len(shape["scale"]["domain"]) for shape in shapes)


@pytest.mark.parametrize("name", sorted(CHARTS))
def test_what_a_page_is_sent_is_the_spec_the_schema_accepted(name):
    chart = CHARTS[name]()
    mime, text = chart._mime_()  # what marimo sends the page, written without validating again
    assert mime.startswith("application/vnd.vegalite.v") and mime.endswith("+json")
    assert json.loads(text) == chart.to_dict()  # to_dict validates against Vega-Lite's schema
