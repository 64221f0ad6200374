"""Inside the model: each Linear's weight error against its output error, and one Linear's
activation RMS per input channel (notebook 10)."""

from __future__ import annotations

import re

import altair as alt
import numpy as np

from lab.numbers import format_number
from lab.teach.charts._layout import (
    NARROWEST_PLOT,
    PALETTE,
    Figure,
    chart_title,
    domain_around,
    fitted_legend,
    inline_data,
    label_sides,
    pixel_position,
    point_labels,
    styled,
    wrap,
)


def layer_errors_chart(records: list[dict], format_title: str) -> Figure:
    """Each Linear's weight error against its output error on real inputs; disagreeing layers
    named where a name fits."""
    height = 360
    x_domain = domain_around([record["weight_error"] for record in records])
    y_domain = domain_around([record["output_error"] for record in records])
    shorts = [record["layer"].removeprefix("encoder.") for record in records]
    # "layer.5.attention.output.dense" -> "layer 5" over "attention.output.dense"
    labels = [
        [f"layer {m[1]}", m[2]] if (m := re.fullmatch(r"layer\.(\d+)\.(.+)", short)) else wrap(short)
        for short in shorts
    ]
    xs = [pixel_position(record["weight_error"], x_domain, NARROWEST_PLOT) for record in records]
    ys = [height - pixel_position(record["output_error"], y_domain, height) for record in records]
    disagreeing = [i for i, record in enumerate(records) if record["disagreeing"]]
    sides = label_sides(xs, ys, labels, disagreeing, height)
    frame = alt.Data(
        values=[
            dict(
                record,
                short=short,
                label=label,
                kind="rank moves most" if record["disagreeing"] else "other layers",
                **{"label side": sides[i]},
            )
            for i, (record, short, label) in enumerate(zip(records, shorts, labels, strict=True))
        ]
    )
    base = alt.Chart(frame).encode(
        x=alt.X("weight_error:Q", scale=alt.Scale(domain=x_domain, nice=False), title="weight error ‖Ŵ−W‖/‖W‖"),
        y=alt.Y("output_error:Q", scale=alt.Scale(domain=y_domain, nice=False), title="output error ‖(Ŵ−W)x‖/‖Wx‖"),
        tooltip=[
            "short:N",
            alt.Tooltip("weight_error:Q", format=".4f"),
            alt.Tooltip("output_error:Q", format=".4f"),
            "weight_rank:Q",
            "output_rank:Q",
            alt.Tooltip("peak_to_median:Q", format=".1f", title="peak / median channel RMS"),
        ],
    )
    # Named in words, in the legend's order; a shape as well as a colour, so no one needs the hue.
    kinds = {"rank moves most": (PALETTE[3], "diamond"), "other layers": (PALETTE[0], "circle")}
    legend = fitted_legend(list(kinds))
    # A diamond of the circles' area looks smaller than they do, and these are the points to find.
    points = base.mark_point(filled=True).encode(
        size=alt.Size("kind:N", scale=alt.Scale(domain=list(kinds), range=[140, 90]), legend=None),
        color=alt.Color(
            "kind:N",
            scale=alt.Scale(domain=list(kinds), range=[colour for colour, _ in kinds.values()]),
            title=None,
            legend=legend,
        ),
        shape=alt.Shape(
            "kind:N",
            scale=alt.Scale(domain=list(kinds), range=[shape for _, shape in kinds.values()]),
            title=None,
            legend=legend,
        ),
    )
    moved = "; ".join(
        f"{shorts[i]} (weight error {format_number(records[i]['weight_error'], 3)}, output error {format_number(records[i]['output_error'], 3)})"
        for i in disagreeing
    )
    description = (
        f"Relative output error against relative weight error for {len(records)} Linears in {format_title}, "
        f"from {format_number(min(r['weight_error'] for r in records), 3)} to {format_number(max(r['weight_error'] for r in records), 3)} "
        f"and {format_number(min(r['output_error'] for r in records), 3)} to {format_number(max(r['output_error'] for r in records), 3)}."
        + (f" The layers whose rank moves most: {moved}." if disagreeing else "")
    )
    return styled(
        alt.layer(points, *point_labels(base)).properties(
            height=height,
            title=chart_title(
                "Weight vs output error",
                f"{format_title}, one point per Linear: the two errors rank layers differently. "
                "Those whose rank moves most are named where a name fits; the table above names them all.",
            ),
        ),
        description,
    )


def channel_outliers_chart(rms, top_channels, layer: str) -> Figure:
    """One Linear's per-input-channel activation RMS, the top outlier channels coloured and marked
    by a triangle over their bars: a shape as well as a colour, so no one needs the hue."""
    rms = np.asarray(rms, dtype=np.float64)
    count = np.size(top_channels)
    top = "top channel" if count == 1 else f"top {count} channels"
    kinds = {"other channels": ("#9aa5b1", "square"), top: (PALETTE[3], "triangle-down")}
    channels = np.arange(rms.size)
    frame = inline_data(
        {"channel": channels, "RMS": rms, "kind": np.where(np.isin(channels, top_channels), top, "other channels")}
    )
    legend = fitted_legend(list(kinds))
    base = alt.Chart(frame).encode(
        x=alt.X("channel:Q", title="input channel", scale=alt.Scale(domain=[0, rms.size])),
        # Headroom over the tallest bar for its triangle.
        y=alt.Y("RMS:Q", title="activation RMS over tokens", scale=alt.Scale(domainMax=float(rms.max()) * 1.12)),
        color=alt.Color(
            "kind:N",
            scale=alt.Scale(domain=list(kinds), range=[colour for colour, _ in kinds.values()]),
            title=None,
            legend=legend,
        ),
        tooltip=["channel:Q", alt.Tooltip("RMS:Q", format=".3f")],
    )
    markers = (
        base.transform_filter(alt.datum.kind == top)
        .mark_point(filled=True, size=80, opacity=1, yOffset=-9)
        .encode(
            shape=alt.Shape(
                "kind:N",
                scale=alt.Scale(domain=list(kinds), range=[shape for _, shape in kinds.values()]),
                title=None,
                legend=legend,
            )
        )
    )
    description = (
        f"Bars of the activation RMS of each of {rms.size} input channels of {layer.removeprefix('encoder.')}, "
        f"median {format_number(np.median(rms), 3)}. The {top}: "
        + ", ".join(f"channel {int(c)} (RMS {format_number(rms[c], 3)})" for c in np.asarray(top_channels).ravel())
        + "."
    )
    return styled(
        alt.layer(base.mark_bar(), markers).properties(
            height=240, title=chart_title("Input channels", f"Of {layer.removeprefix('encoder.')}.")
        ),
        description,
    )
