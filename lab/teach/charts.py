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
