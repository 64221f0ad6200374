"""Altair charts for the course, where a picture beats a table. Each takes plain inputs and
computes nothing the codec modules do not already provide."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import altair as alt
import numpy as np
from numpy.typing import ArrayLike

from lab.codes import e2m1
from lab.numbers import position_text
from lab.teach import scale, sizes

if TYPE_CHECKING:
    from lab.teach.pane.report import DeviceReport

# Okabe–Ito colours, safe for the common colour-vision deficiencies.
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"]
_AXIS = {"labelFontSize": 15, "titleFontSize": 16}


def _data(columns: dict) -> alt.Data:
    """Columns of equal length as inline Vega data (plain Python values, so it serialises)."""
    names = list(columns)
    rows = zip(*(np.asarray(columns[name]).tolist() for name in names), strict=True)
    return alt.Data(values=[dict(zip(names, row, strict=True)) for row in rows])


def _styled(chart: alt.Chart) -> alt.Chart:
    return (
        chart.configure_axis(**_AXIS).configure_legend(labelFontSize=15, titleFontSize=16).configure_title(fontSize=18)
    )


RULER_WIDTH = 620
RULER_DOMAIN = (-6.5, 6.5)
# Label rows sit this far below the ticks. Neighbouring marks near zero are 0.5 apart, about 24 px
# at this width, narrower than a label like "−0.5", so neighbours take alternate rows.
RULER_LABEL_OFFSETS = (30, 50)


def e2m1_ruler_chart() -> alt.Chart:
    """The fifteen distinct E2M1 values on a line, with the gap to the next mark; labels alternate
    between two rows so that no two in a row overlap."""
    values = np.unique(e2m1.VALUES.astype(np.float64) + 0.0)
    gaps = np.append(np.diff(values), 0.0)
    rows = np.arange(values.size) % len(RULER_LABEL_OFFSETS)
    # Labels are written here: Vega's "g" format pads to six significant digits ("6.00000").
    labels_text = [f"{value:g}".replace("-", "\u2212") for value in values]
    frame = _data({"value": values, "gap to next": gaps, "label row": rows, "label": labels_text})
    x = alt.X("value:Q", title="E2M1 value", scale=alt.Scale(domain=list(RULER_DOMAIN)))
    marks = (
        alt.Chart(frame)
        .mark_tick(thickness=3, size=40, color=PALETTE[0])
        .encode(x=x, tooltip=["value:Q", "gap to next:Q"])
    )
    labels = [
        alt.Chart(frame)
        .transform_filter(alt.datum["label row"] == row)
        .mark_text(dy=offset, fontSize=14)
        .encode(x="value:Q", text="label:N")
        for row, offset in enumerate(RULER_LABEL_OFFSETS)
    ]
    return _styled(
        alt.layer(marks, *labels).properties(
            height=130, width=RULER_WIDTH, title="Every E2M1 value: dense near zero, sparse at the top"
        )
    )


def error_vs_scale_chart(w, inputs: dict[str, list[float]], scales) -> alt.Chart:
    """Signed output error Δy against the scale, one line per input vector."""
    rows = [
        {"scale": float(s), "Δy": scale.output_error(w, x, s), "input": name}
        for name, x in inputs.items()
        for s in scales
    ]
    frame = alt.Data(values=rows)
    lines = (
        alt.Chart(frame)
        .mark_line(point=True, strokeWidth=3)
        .encode(
            x=alt.X("scale:Q", scale=alt.Scale(type="log", base=2), title="scale (log₂ axis)"),
            y=alt.Y("Δy:Q", title="signed output error Δy"),
            color=alt.Color("input:N", scale=alt.Scale(range=PALETTE), title="input x"),
            tooltip=["input:N", "scale:Q", "Δy:Q"],
        )
    )
    zero = alt.Chart(alt.Data(values=[{"y": 0}])).mark_rule(color="#555").encode(y="y:Q")
    return _styled(
        (zero + lines).properties(height=300, width=620, title="The same weights, different inputs, different errors")
    )


# Black is kept for the traced lanes, so the eight subblocks take the other seven colours and a grey.
TRACED_COLOUR = "#000000"
SUBBLOCK_COLOURS = [*PALETTE[:7], "#8C8C8C"]


def q4k_lane_chart(weights, highlight: tuple[int, ...] = ()) -> alt.Chart:
    """All 256 weights of a Q4_K block by output lane, coloured by subblock; the traced lanes are
    marked by a dashed black line the chart's full height, a wider black bar, a point and a
    "lane n: weight" label at the top, so they stand out among 256 bars."""
    weights = np.asarray(weights, dtype=np.float64)
    lanes = np.arange(weights.size)
    frame = _data({"lane": lanes, "weight": weights, "subblock": [str(j) for j in lanes // 32]})
    x = alt.X("lane:Q", title="output lane", scale=alt.Scale(domain=[0, weights.size], nice=False))
    bars = (
        alt.Chart(frame)
        .mark_bar(opacity=0.6)
        .encode(
            x=x,
            y=alt.Y("weight:Q", title="reconstructed weight"),
            color=alt.Color("subblock:N", scale=alt.Scale(range=SUBBLOCK_COLOURS), title="subblock j"),
            tooltip=["lane:Q", "weight:Q", "subblock:N"],
        )
    )
    traced_lanes = [int(lane) for lane in highlight]
    traced = _data(
        {
            "lane": traced_lanes,
            "weight": weights[traced_lanes],
            "label": [f"lane {lane}: {weights[lane]:g}" for lane in traced_lanes],
            # Pixel rows for the labels, alternating, so two nearby lanes' labels never collide.
            "label y": [12 + 20 * (i % 2) for i in range(len(traced_lanes))],
        }
    )
    rule = alt.Chart(traced).mark_rule(color=TRACED_COLOUR, strokeWidth=2, strokeDash=[4, 3]).encode(x="lane:Q")
    bar = alt.Chart(traced).mark_bar(color=TRACED_COLOUR, size=5).encode(x="lane:Q", y="weight:Q")
    point = (
        alt.Chart(traced)
        .mark_point(color=TRACED_COLOUR, filled=True, size=120, shape="diamond")
        .encode(x="lane:Q", y="weight:Q", tooltip=["label:N"])
    )
    label = (
        alt.Chart(traced)
        .mark_text(align="left", dx=5, fontSize=15, fontWeight="bold", color=TRACED_COLOUR)
        .encode(x="lane:Q", y=alt.Y("label y:Q", scale=None), text="label:N")
    )
    return _styled(
        alt.layer(bars, rule, bar, point, label).properties(
            height=280, width=660, title="256 lanes, eight subblocks of 32 (traced lanes in black)"
        )
    )


def bits_per_weight_chart(extra: dict[str, float] | None = None) -> alt.Chart:
    """Bits per weight of each format, plus the MLX affine grid at 16-bit scale and bias."""
    entries = dict(sizes.FORMAT_BITS_PER_WEIGHT)
    for (bits, group), bpw in sizes.affine_grid().items():
        if bits in (4, 8):
            entries[f"MLX affine {bits}-bit g{group}"] = bpw
    entries.update(extra or {})
    frame = _data({"format": list(entries), "bits per weight": list(entries.values())})
    bars = (
        alt.Chart(frame)
        .mark_bar(color=PALETTE[0])
        .encode(
            x=alt.X("bits per weight:Q"),
            y=alt.Y("format:N", sort="x", title=None),
            tooltip=["format:N", "bits per weight:Q"],
        )
    )
    text = (
        alt.Chart(frame)
        .mark_text(align="left", dx=4, fontSize=14)
        .encode(x="bits per weight:Q", y=alt.Y("format:N", sort="x"), text=alt.Text("bits per weight:Q", format=".4g"))
    )
    return _styled(
        (bars + text).properties(
            height=28 * len(entries), width=560, title="Storage per weight: codes plus their scales"
        )
    )


def block_grid_chart(
    weights: ArrayLike, levels: ArrayLike, title: str = "The block's weights on the format's grid"
) -> alt.LayerChart:
    """A histogram of a block's weights with the values its codes decode to at this block's scale
    drawn as vertical rules, and the range beyond the outermost level shaded: weights there clip."""
    weights = np.asarray(weights, dtype=np.float64).ravel()
    grid = np.unique(np.asarray(levels, dtype=np.float64).ravel() + 0.0)  # + 0.0: −0 and +0 are one rule
    low, high = float(grid.min()), float(grid.max())
    reach = max(float(np.abs(weights).max()), abs(low), abs(high)) * 1.1
    # one shared domain, so the histogram, the rules and the shading line up
    x_scale = alt.Scale(domain=[-reach, reach], nice=False)
    shade = (
        alt.Chart(_data({"from": [-reach, high], "to": [low, reach]}))
        .mark_rect(color=PALETTE[3], opacity=0.15)
        .encode(x=alt.X("from:Q", scale=x_scale, title="weight"), x2="to:Q")
    )
    rules = (
        alt.Chart(_data({"level": grid}))
        .mark_rule(color=PALETTE[0], strokeWidth=1.5)
        .encode(x=alt.X("level:Q", scale=x_scale), tooltip=["level:Q"])
    )
    bars = (
        alt.Chart(_data({"weight": weights}))
        .mark_bar(color=PALETTE[1], opacity=0.85)
        .encode(
            x=alt.X("weight:Q", bin=alt.Bin(maxbins=40, extent=[-reach, reach]), scale=x_scale),
            y=alt.Y("count():Q", title="weights"),
        )
    )
    subtitle = f"{weights.size} weights; blue rules: the {grid.size} values the codes decode to, {low:g} to {high:g}; shaded: clipped"
    return _styled(
        alt.layer(shade, rules, bars).properties(height=220, width=620, title=alt.Title(title, subtitle=subtitle))
    )


def difference_rows(report: DeviceReport) -> list[dict]:
    """Per scale group (or Q4_K subblock) of every weight comparison in an on-device report: the
    largest |MLX − lab| and how many weights are not bit-identical, with the group named in words."""
    sources = [("gguf-py", comparison) for comparison in report.reference_checks]
    sources += [(run.device, comparison) for run in report.runs for comparison in run.comparisons]
    rows = []
    for device, comparison in sources:
        if comparison.unit != "weight" or not comparison.breakdowns:
            continue
        breakdown = comparison.breakdowns[0]  # the finest grouping the pane made
        for group in np.ndindex(breakdown.max_abs_diff.shape):
            rows.append(
                {
                    "compared": f"{device}: {comparison.name}",
                    "group": position_text(group, breakdown.label),
                    "max abs diff": float(breakdown.max_abs_diff[group]),
                    "not identical": int(breakdown.not_identical[group]),
                }
            )
    return rows


def difference_chart(report: DeviceReport) -> alt.LayerChart | None:
    """The on-device pane's weight comparisons as bars: per group, the largest |MLX − lab|; None
    where the report has no weight comparison (MLX absent or refused)."""
    rows = difference_rows(report)
    if not rows:
        return None
    frame = alt.Data(values=rows)
    bars = (
        alt.Chart(frame)
        .mark_bar()
        .encode(
            x=alt.X("max abs diff:Q", title="largest |difference| in the group (0: bit-identical)"),
            y=alt.Y("compared:N", title=None),
            yOffset=alt.YOffset("group:N"),
            color=alt.Color("group:N", scale=alt.Scale(range=SUBBLOCK_COLOURS), title="group"),
            tooltip=["compared:N", "group:N", "max abs diff:Q", "not identical:Q"],
        )
    )
    groups = len({row["group"] for row in rows})
    compared = len({row["compared"] for row in rows})
    return _styled(
        bars.properties(
            height=max(60, 14 * groups * compared), width=420, title="On device: where MLX and the lab differ"
        )
    )


# Okabe–Ito, then a grey and two of Paul Tol's: a real model has nine or ten layer types
LAYER_COLOURS = [*PALETTE, "#8C8C8C", "#882255", "#44AA99"]
_LAYER_PREFIX = re.compile(r"^.*?layer\.\d+\.")


def layer_type(tensor: str) -> str:
    """A tensor's role without its layer number: 'encoder.layer.3.attention.self.query.weight' ->
    'attention.self.query'."""
    return _LAYER_PREFIX.sub("", tensor).removesuffix(".weight")


def _measured(records: list[dict], format_name: str) -> list[dict]:
    return [row for row in records if row["format"] == format_name and not row["skipped"]]


def tensor_error_chart(records: list[dict], format_name: str) -> alt.Chart:
    """Relative RMSE of every tensor the format took (worst first), coloured by layer type;
    `records` are a real-weights report's records()."""
    rows = _measured(records, format_name)
    frame = _data(
        {
            "tensor": [row["tensor"] for row in rows],
            "layer type": [layer_type(row["tensor"]) for row in rows],
            "relative RMSE": [row["relative_rmse"] for row in rows],
        }
    )
    bars = (
        alt.Chart(frame)
        .mark_bar()
        .encode(
            x=alt.X("relative RMSE:Q"),
            y=alt.Y("tensor:N", sort="-x", title=None, axis=alt.Axis(labelFontSize=10)),
            color=alt.Color("layer type:N", scale=alt.Scale(range=LAYER_COLOURS)),
            tooltip=["tensor:N", "layer type:N", "relative RMSE:Q"],
        )
    )
    return _styled(
        bars.properties(height=max(80, 12 * len(rows)), width=420, title=f"{format_name}: relative RMSE per tensor")
    )


def outlier_chart(records: list[dict], format_name: str) -> alt.Chart:
    """Outlier share (weights beyond 6 × the tensor's RMS) against relative RMSE, one point per tensor."""
    rows = _measured(records, format_name)
    frame = _data(
        {
            "tensor": [row["tensor"] for row in rows],
            "layer type": [layer_type(row["tensor"]) for row in rows],
            "outlier share": [row["outlier_share"] for row in rows],
            "relative RMSE": [row["relative_rmse"] for row in rows],
        }
    )
    points = (
        alt.Chart(frame)
        .mark_point(filled=True, size=80)
        .encode(
            x=alt.X("outlier share:Q", axis=alt.Axis(format="%")),
            y=alt.Y("relative RMSE:Q"),
            color=alt.Color("layer type:N", scale=alt.Scale(range=LAYER_COLOURS)),
            tooltip=["tensor:N", "outlier share:Q", "relative RMSE:Q"],
        )
    )
    return _styled(points.properties(height=300, width=520, title=f"{format_name}: do outliers cost accuracy?"))


def _heatmap(matrix, labels: list[str], title: str) -> alt.Chart:
    rows, cols = np.indices(np.shape(matrix))
    frame = _data(
        {
            "row": [labels[i] for i in rows.ravel()],
            "column": [labels[j] for j in cols.ravel()],
            "cosine": np.round(np.asarray(matrix, dtype=np.float64).ravel(), 4),
        }
    )
    return (
        alt.Chart(frame)
        .mark_rect()
        .encode(
            x=alt.X("column:N", sort=labels, title=None, axis=alt.Axis(labels=False, ticks=False)),
            y=alt.Y("row:N", sort=labels, title=None),
            color=alt.Color("cosine:Q", scale=alt.Scale(scheme="viridis", domain=[0, 1]), title="cosine"),
            tooltip=["row:N", "column:N", "cosine:Q"],
        )
        .properties(width=260, height=260, title=title)
    )


def similarity_heatmaps_chart(fp32, quantized, labels: list[str], format_title: str) -> alt.Chart:
    """The sentences' cosine matrix from the float32 model beside the same from a quantized one."""
    return _styled(
        alt.hconcat(_heatmap(fp32, labels, "float32"), _heatmap(quantized, labels, format_title)).resolve_scale(
            color="shared"
        )
    )


def per_sentence_cosine_chart(cosines, labels: list[str], format_title: str) -> alt.Chart:
    """How far each sentence's quantized embedding turned from its float32 one: 1 − cosine, per sentence."""
    frame = _data({"sentence": labels, "1 − cosine": 1.0 - np.asarray(cosines, dtype=np.float64)})
    bars = (
        alt.Chart(frame)
        .mark_bar(color=PALETTE[3])
        .encode(
            x=alt.X("1 − cosine:Q", title="1 − cosine(float32, quantized)"),
            y=alt.Y("sentence:N", sort=labels, title=None),
            tooltip=["sentence:N", alt.Tooltip("1 − cosine:Q", format=".2e")],
        )
    )
    return _styled(bars.properties(width=460, height=24 * len(labels), title=f"Each sentence, {format_title}"))


def retrieval_quality_chart(rows: list[dict]) -> alt.Chart:
    """Top-1 accuracy and MRR of every format against its bits per weight (log axis)."""
    frame = alt.Data(
        values=[
            {
                "format": row["title"],
                "bits per weight": row["bits_per_weight"],
                "measure": measure,
                "score": row[key],
                "Linears kept float32": row["fallbacks"],
            }
            for row in rows
            for measure, key in (("top-1", "top1"), ("MRR", "mrr"))
        ]
    )
    base = alt.Chart(frame).encode(
        x=alt.X("bits per weight:Q", scale=alt.Scale(type="log", base=2), title="bits per weight (log₂ axis)"),
        y=alt.Y("score:Q", scale=alt.Scale(zero=False), title="retrieval score"),
        color=alt.Color("measure:N", scale=alt.Scale(range=PALETTE), title=None),
        tooltip=[
            "format:N",
            "bits per weight:Q",
            "measure:N",
            alt.Tooltip("score:Q", format=".3f"),
            "Linears kept float32:Q",
        ],
    )
    points = base.mark_point(size=120, filled=True)
    labels = base.transform_filter(alt.datum.measure == "top-1").mark_text(dy=-12, fontSize=12).encode(text="format:N")
    return _styled((points + labels).properties(width=620, height=340, title="Where answers start to break"))


def layer_errors_chart(records: list[dict], format_title: str) -> alt.Chart:
    """Each Linear's weight error against its output error on real inputs; disagreeing layers labelled."""
    frame = alt.Data(values=[dict(record, short=record["layer"].removeprefix("encoder.")) for record in records])
    base = alt.Chart(frame).encode(
        x=alt.X("weight_error:Q", scale=alt.Scale(zero=False), title="weight error ‖Ŵ − W‖ / ‖W‖"),
        y=alt.Y("output_error:Q", scale=alt.Scale(zero=False), title="output error ‖(Ŵ − W)x‖ / ‖Wx‖"),
        tooltip=[
            "short:N",
            alt.Tooltip("weight_error:Q", format=".4f"),
            alt.Tooltip("output_error:Q", format=".4f"),
            "weight_rank:Q",
            "output_rank:Q",
            alt.Tooltip("peak_to_median:Q", format=".1f", title="peak / median channel RMS"),
        ],
    )
    points = base.mark_point(size=90, filled=True).encode(
        color=alt.Color("disagreeing:N", scale=alt.Scale(range=[PALETTE[0], PALETTE[3]]), title="rank moves most")
    )
    labels = (
        base.transform_filter("datum.disagreeing").mark_text(align="left", dx=8, fontSize=12).encode(text="short:N")
    )
    return _styled(
        (points + labels).properties(width=620, height=360, title=f"{format_title}: weight error is not output error")
    )


def channel_outliers_chart(rms, top_channels, layer: str) -> alt.Chart:
    """One Linear's per-input-channel activation RMS, the top outlier channels highlighted."""
    rms = np.asarray(rms, dtype=np.float64)
    frame = _data({"channel": np.arange(rms.size), "RMS": rms, "outlier": np.isin(np.arange(rms.size), top_channels)})
    bars = (
        alt.Chart(frame)
        .mark_bar()
        .encode(
            x=alt.X("channel:Q", title="input channel", scale=alt.Scale(domain=[0, rms.size])),
            y=alt.Y("RMS:Q", title="activation RMS over tokens"),
            color=alt.Color("outlier:N", scale=alt.Scale(range=["#9aa5b1", PALETTE[3]]), title="top channel"),
            tooltip=["channel:Q", alt.Tooltip("RMS:Q", format=".3f")],
        )
    )
    return _styled(bars.properties(width=660, height=240, title=f"Inputs of {layer.removeprefix('encoder.')}"))


def pareto_chart(rows: list[dict], source: str) -> alt.Chart:
    """Relative error against bits per weight for every format on one source; the Pareto front joined and filled."""
    measured = [row for row in rows if row["source"] == source and row["relative_error"] is not None]
    frame = alt.Data(values=[dict(row, front="on the front" if row["on_front"] else "dominated") for row in measured])
    base = alt.Chart(frame).encode(
        x=alt.X("bits_per_weight:Q", scale=alt.Scale(zero=False), title="bits per weight"),
        y=alt.Y("relative_error:Q", scale=alt.Scale(type="log"), title="relative error ‖ŵ − w‖ / ‖w‖ (log axis)"),
        tooltip=["title:N", "bits_per_weight:Q", alt.Tooltip("relative_error:Q", format=".4f"), "front:N"],
    )
    points = base.mark_point(size=110, filled=True).encode(
        color=alt.Color(
            "front:N", scale=alt.Scale(domain=["on the front", "dominated"], range=[PALETTE[3], "#9aa5b1"]), title=None
        )
    )
    front = base.transform_filter("datum.on_front").mark_line(color=PALETTE[3]).encode(order="bits_per_weight:Q")
    labels = base.mark_text(align="left", dx=8, fontSize=11).encode(text="title:N")
    return _styled((front + points + labels).properties(width=620, height=360, title=f"Error against cost: {source}"))


def block_outlier_chart(rows: list[dict]) -> alt.Chart:
    """RMS error of the other weights in the block holding one outlier, per format, with and without it."""
    frame = alt.Data(
        values=[
            {"format": row["title"], "case": case, "RMS error of the others": row[key]}
            for row in rows
            for case, key in (("with the outlier", "others_rms_error"), ("without", "others_rms_error_without_outlier"))
        ]
    )
    bars = (
        alt.Chart(frame)
        .mark_bar()
        .encode(
            y=alt.Y("format:N", sort=None, title=None),
            x=alt.X("RMS error of the others:Q"),
            yOffset=alt.YOffset("case:N"),
            color=alt.Color("case:N", scale=alt.Scale(range=[PALETTE[3], PALETTE[0]]), title=None),
            tooltip=["format:N", "case:N", alt.Tooltip("RMS error of the others:Q", format=".4f")],
        )
    )
    return _styled(bars.properties(width=560, height=36 * len(rows), title="One weight of 20 in a block of N(0, 1)"))
