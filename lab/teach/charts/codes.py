"""One code and one scale: every E2M1 value on a number line, and the output error of the same
weights against the scale (notebooks 01 and 02)."""

from __future__ import annotations

import altair as alt
import numpy as np

from lab.codes import e2m1
from lab.numbers import format_number
from lab.teach import scale
from lab.teach.charts._layout import FOREGROUND, PALETTE, TEXT_PX, Figure, chart_title, inline_data, row_data, styled

RULER_DOMAIN = (-6.5, 6.5)
# Label rows, in px from the ticks: below and above, near and far. Neighbouring marks near zero
# are 0.5 apart, about 10 px on the narrowest plot, far narrower than a label like "−0.5", so
# four neighbours in a row take four rows and labels in one row are at least 2 apart (40 px).
RULER_LABEL_OFFSETS = (34, -34, 54, -54)


def e2m1_ruler_chart() -> Figure:
    """The fifteen distinct E2M1 values on a line, with the gap to the next mark; labels take
    turns between four rows so that no two in a row overlap."""
    values = np.unique(e2m1.VALUES.astype(np.float64) + 0.0)
    gaps = np.append(np.diff(values), 0.0)
    rows = np.arange(values.size) % len(RULER_LABEL_OFFSETS)
    # Labels are written here: Vega's "g" format pads to six significant digits ("6.00000").
    labels_text = [f"{value:g}".replace("-", "\u2212") for value in values]
    frame = inline_data({"value": values, "gap to next": gaps, "label row": rows, "label": labels_text})
    x = alt.X("value:Q", title="E2M1 value", scale=alt.Scale(domain=list(RULER_DOMAIN)))
    marks = (
        alt.Chart(frame)
        .mark_tick(thickness=3, size=40, color=PALETTE[0])
        .encode(x=x, tooltip=["value:Q", "gap to next:Q"])
    )
    labels = [
        alt.Chart(frame)
        .transform_filter(alt.datum["label row"] == row)
        .mark_text(dy=offset, fontSize=TEXT_PX, color=FOREGROUND)
        .encode(x="value:Q", text="label:N")
        for row, offset in enumerate(RULER_LABEL_OFFSETS)
    ]
    description = (
        f"The {values.size} distinct E2M1 values on a number line: {', '.join(labels_text)}. "
        f"Neighbours are {format_number(gaps[:-1].min(), 3)} apart near zero and {format_number(gaps[:-1].max(), 3)} apart at the ends."
    )
    return styled(
        alt.layer(marks, *labels).properties(
            height=150, title=chart_title("Every E2M1 value", "Dense near zero, sparse far out.")
        ),
        description,
    )


def error_vs_scale_chart(w, inputs: dict[str, list[float]], scales) -> Figure:
    """Signed output error Δy against the scale, one line per input vector."""
    rows = [
        {"scale": float(s), "Δy": scale.output_error(w, x, s), "input": name}
        for name, x in inputs.items()
        for s in scales
    ]
    frame = row_data(rows)
    lines = (
        alt.Chart(frame)
        .mark_line(point=True, strokeWidth=3)
        .encode(
            x=alt.X("scale:Q", scale=alt.Scale(type="log", base=2), title="scale (log₂ axis)"),
            y=alt.Y("Δy:Q", title="signed output error Δy"),
            color=alt.Color(
                "input:N",
                scale=alt.Scale(range=PALETTE),
                title="input x",
                # "last weight dominant [0, 0, 0, 4]": the name over the vector, in two lines.
                legend=alt.Legend(
                    columns=1,
                    labelExpr="indexof(datum.label, ' [') > 0 ? [slice(datum.label, 0, indexof(datum.label, ' [')),"
                    " slice(datum.label, indexof(datum.label, ' [') + 1)] : datum.label",
                ),
            ),
            tooltip=["input:N", "scale:Q", "Δy:Q"],
        )
    )
    zero = alt.Chart(row_data([{"y": 0}])).mark_rule(color="#555").encode(y="y:Q")
    # Per input, the scale where the error is smallest: the lines' story, that it is not the same scale.
    best = [min((row for row in rows if row["input"] == name), key=lambda row: abs(row["Δy"])) for name in inputs]
    description = (
        f"Signed output error Δy of the same four weights against the scale, from {format_number(min(scales), 3)} to "
        f"{format_number(max(scales), 3)} on a log₂ axis, one line per input vector. Smallest |Δy|: "
        + "; ".join(
            f"{row['input']} at scale {format_number(row['scale'], 3)}, Δy {format_number(row['Δy'], 3)}"
            for row in best
        )
        + "."
    )
    return styled(
        (zero + lines).properties(
            height=300, title=chart_title("Error against scale", "Same weights; a line per input.")
        ),
        description,
    )
