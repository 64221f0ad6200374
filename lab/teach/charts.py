"""Altair charts for the course, where a picture beats a table. Each takes plain inputs and
computes nothing the codec modules do not already provide."""

from __future__ import annotations

import altair as alt
import numpy as np

from lab.codes import e2m1
from lab.teach import scale, sizes

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


def e2m1_ruler_chart() -> alt.Chart:
    """The fifteen distinct E2M1 values on a line, with the gap to the next mark."""
    values = np.unique(e2m1.VALUES.astype(np.float64) + 0.0)
    gaps = np.append(np.diff(values), 0.0)
    frame = _data({"value": values, "gap to next": gaps})
    marks = (
        alt.Chart(frame)
        .mark_tick(thickness=3, size=40, color=PALETTE[0])
        .encode(
            x=alt.X("value:Q", title="E2M1 value", scale=alt.Scale(domain=[-6.5, 6.5])),
            tooltip=["value:Q", "gap to next:Q"],
        )
    )
    labels = alt.Chart(frame).mark_text(dy=30, fontSize=14).encode(x="value:Q", text=alt.Text("value:Q", format="g"))
    return _styled(
        (marks + labels).properties(height=90, width=620, title="Every E2M1 value: dense near zero, sparse at the top")
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


def q4k_lane_chart(weights, highlight: tuple[int, ...] = ()) -> alt.Chart:
    """All 256 weights of a Q4_K block by output lane, coloured by subblock."""
    weights = np.asarray(weights, dtype=np.float64)
    lanes = np.arange(weights.size)
    frame = _data(
        {
            "lane": lanes,
            "weight": weights,
            "subblock": [str(j) for j in lanes // 32],
            "traced": np.isin(lanes, highlight),
        }
    )
    bars = (
        alt.Chart(frame)
        .mark_bar()
        .encode(
            x=alt.X("lane:Q", title="output lane", scale=alt.Scale(domain=[0, weights.size])),
            y=alt.Y("weight:Q", title="reconstructed weight"),
            color=alt.Color("subblock:N", scale=alt.Scale(range=PALETTE), title="subblock j"),
            opacity=alt.condition("datum.traced", alt.value(1.0), alt.value(0.55)),
            tooltip=["lane:Q", "weight:Q", "subblock:N"],
        )
    )
    return _styled(bars.properties(height=260, width=660, title="256 lanes, eight subblocks of 32"))


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
