"""What a format does to the model's answers: the sentences' cosine heatmaps, each sentence's turn
from float32, retrieval scores against bits per weight, and each question's margin (notebook 10)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import altair as alt
import numpy as np

from lab.numbers import format_number
from lab.teach.charts._layout import (
    NARROWEST_PLOT,
    PALETTE,
    Figure,
    axis_title,
    chart_title,
    domain_around,
    fitted_legend,
    inline_data,
    label_sides,
    pixel_position,
    point_labels,
    row_data,
    row_names,
    row_scale,
    styled,
    wrap,
)

if TYPE_CHECKING:
    import marimo


def _heatmap(matrix, labels: list[str], title: str, legend: bool) -> Figure:
    """One cosine matrix; rows and columns are numbered, and a cell's tooltip names its sentences."""
    rows, cols = np.indices(np.shape(matrix))
    numbers = [str(i + 1) for i in range(len(labels))]
    frame = inline_data(
        {
            "row": [numbers[i] for i in rows.ravel()],
            "column": [numbers[j] for j in cols.ravel()],
            "row sentence": [labels[i] for i in rows.ravel()],
            "column sentence": [labels[j] for j in cols.ravel()],
            "cosine": np.round(np.asarray(matrix, dtype=np.float64).ravel(), 4),
        }
    )
    colour = alt.Color(
        "cosine:Q",
        scale=alt.Scale(scheme="viridis", domain=[0, 1]),
        title="cosine",
        legend=alt.Legend(direction="horizontal", gradientLength=220, values=[0, 0.5, 1]) if legend else None,
    )
    # Sentences 1 and 2, 3 and 4, ... say the same thing; a format that damages the model lifts
    # the cosines of the unrelated ones towards those of the pairs.
    matrix = np.asarray(matrix, dtype=np.float64)
    pair = (rows // 2 == cols // 2) & (rows != cols)
    description = (
        f"{title}: the cosine similarity of every two of {len(labels)} sentences' embeddings, a "
        f"{len(labels)} by {len(labels)} grid, coloured from 0 (dark) to 1 (bright). Sentences 1 and 2, 3 "
        f"and 4 and so on say the same thing: their cosines run from {format_number(matrix[pair].min(), 3)} to "
        f"{format_number(matrix[pair].max(), 3)}; unrelated sentences' from {format_number(matrix[rows // 2 != cols // 2].min(), 3)} "
        f"to {format_number(matrix[rows // 2 != cols // 2].max(), 3)}."
    )
    return styled(
        alt.Chart(frame)
        .mark_rect()
        .encode(
            x=alt.X("column:N", sort=numbers, title=None, axis=alt.Axis(labelAngle=0, orient="top")),
            y=alt.Y("row:N", sort=numbers, title=None),
            color=colour,
            tooltip=["row sentence:N", "column sentence:N", "cosine:Q"],
        )
        .properties(height=300, title=chart_title(title, "Sentences 1 to 10, in pairs.")),
        description,
    )


def similarity_heatmaps_chart(fp32, quantized, labels: list[str], format_title: str) -> marimo.Html:
    """The sentences' cosine matrix from the float32 model beside the same from a quantized one:
    two charts side by side where they fit (each at least 22 rem wide), one above the other on a
    phone. Vega-Lite sizes a concatenation only in fixed pixels, so the two are separate charts,
    placed by a CSS grid."""
    import marimo as mo

    charts = [_heatmap(fp32, labels, "float32", legend=False), _heatmap(quantized, labels, format_title, legend=True)]
    grid = "display: grid; grid-template-columns: repeat(auto-fit, minmax(min(100%, 22rem), 1fr)); gap: 1rem 2rem"
    return mo.Html(f'<div style="{grid}">{"".join(mo.as_html(chart).text for chart in charts)}</div>')


def per_sentence_cosine_chart(cosines, labels: list[str], format_title: str) -> Figure:
    """How far each sentence's quantized embedding turned from its float32 one: 1 − cosine, per
    sentence, numbered as in the heatmaps."""
    names = [wrap(f"{i + 1} · {label}") for i, label in enumerate(labels)]
    distance = (1.0 - np.asarray(cosines, dtype=np.float64)).tolist()
    frame = alt.Data(
        values=[
            {"sentence": label, "1 − cosine": value, "name": name}
            for label, value, name in zip(labels, distance, names, strict=True)
        ]
    )
    y_scale, height = row_scale(len(labels), max(map(len, names)), 12)
    bars = (
        alt.Chart(frame)
        .mark_bar(color=PALETTE[3])
        .encode(
            x=alt.X("1 − cosine:Q", title="1 − cosine to float32"),
            y=alt.Y("sentence:N", sort=labels, scale=y_scale, axis=None),
            tooltip=["sentence:N", alt.Tooltip("1 − cosine:Q", format=".2e")],
        )
    )
    most, least = int(np.argmax(distance)), int(np.argmin(distance))
    description = (
        f"Bars of 1 − cosine between each of {len(labels)} sentences' embedding in {format_title} and in "
        f"float32: largest {format_number(distance[most], 3)} for sentence {most + 1}, “{labels[most]}”; smallest "
        f"{format_number(distance[least], 3)} for sentence {least + 1}, “{labels[least]}”."
    )
    return styled(
        (bars + row_names(alt.Chart(frame), "sentence", labels, max(map(len, names)))).properties(
            height=height, title=chart_title("Each sentence", f"{format_title} against float32.")
        ),
        description,
    )


def retrieval_quality_chart(rows: list[dict]) -> Figure:
    """Top-1 accuracy and MRR of every format against its bits per weight (log axis); formats are
    named beside their top-1 points where a name fits."""
    height = 340
    bits = [row["bits_per_weight"] for row in rows]
    scores = [row[key] for row in rows for key in ("top1", "mrr")]
    x_domain = [2.0 ** math.floor(math.log2(min(bits))), 2.0 ** math.ceil(math.log2(max(bits)))]
    y_domain = domain_around(scores)
    xs = [pixel_position(b, x_domain, NARROWEST_PLOT, log=True) for b in bits]
    top1 = [height - pixel_position(row["top1"], y_domain, height) for row in rows]
    mrr = [height - pixel_position(row["mrr"], y_domain, height) for row in rows]
    # The extremes first: they carry the story (where answers break, and the float32 reference).
    ends = (bits.index(min(bits)), bits.index(max(bits)))
    order = sorted(range(len(rows)), key=lambda i: (i not in ends, bits[i]))
    sides = label_sides(
        xs, top1, [[row["title"]] for row in rows], order, height, marks=list(zip(xs, mrr, strict=True))
    )
    frame = alt.Data(
        values=[
            {
                "format": row["title"],
                "bits per weight": row["bits_per_weight"],
                "measure": measure,
                "score": row[key],
                "Linears kept float32": row["fallbacks"],
                "label": row["title"],
                "label side": sides[i] if key == "top1" else None,
            }
            for i, row in enumerate(rows)
            for measure, key in (("top-1", "top1"), ("MRR", "mrr"))
        ]
    )
    base = alt.Chart(frame).encode(
        x=alt.X(
            "bits per weight:Q",
            scale=alt.Scale(type="log", base=2, domain=x_domain, nice=False),
            title="bits per weight (log₂ axis)",
        ),
        y=alt.Y("score:Q", scale=alt.Scale(domain=y_domain, nice=False, zero=False), title="retrieval score"),
        tooltip=[
            "format:N",
            "bits per weight:Q",
            "measure:N",
            alt.Tooltip("score:Q", format=".3f"),
            "Linears kept float32:Q",
        ],
    )
    points = base.mark_point(size=120, filled=True).encode(
        color=alt.Color("measure:N", scale=alt.Scale(range=PALETTE), title=None, legend=fitted_legend(["top-1", "MRR"]))
    )
    # In words: the most bits (the reference), the fewest, and the lowest top-1.
    worst = min(range(len(rows)), key=lambda i: (rows[i]["top1"], bits[i]))
    description = (
        f"Top-1 accuracy and MRR of {len(rows)} formats against bits per weight, on a log₂ axis. "
        + "; ".join(
            f"{row['title']} at {row['bits_per_weight']:g} bits: top-1 {row['top1']:.3f}, MRR {row['mrr']:.3f}"
            for row in (rows[i] for i in dict.fromkeys([ends[1], ends[0], worst]))
        )
        + "."
    )
    return styled(
        alt.layer(points, *point_labels(base)).properties(
            height=height,
            # At 4 to 8 bits the formats crowd together: there is room to name only a few of them.
            title=chart_title("Where answers break", "Named where a name fits; the table above lists every format."),
        ),
        description,
    )


#: a grey with 3:1 contrast or more on white and on marimo's dark grey, for lines a reader needs
GUIDE_GREY = "#8C8C8C"
#: each retrieval outcome's colour and shape: shape as well as colour, so no one needs the hue
_OUTCOME_MARKS = {
    "right in both": (PALETTE[0], "circle"),
    "lost: now wrong": (PALETTE[3], "triangle-down"),
    "gained: now right": (PALETTE[2], "triangle-up"),
    "wrong in both": (GUIDE_GREY, "square"),
}


def retrieval_margins_chart(records: list[dict], format_title: str) -> Figure:
    """Each question's margin (right passage's cosine minus the best distractor's) with the format
    against float32's. On the diagonal nothing moved; below it the question came closer to a wrong
    answer; below the zero line the format answers it wrong."""
    height = 340
    margins = [record[key] for record in records for key in ("fp32_margin", "margin")]
    domain = domain_around([*margins, 0.0])
    frame = row_data([dict(record) for record in records])
    base = alt.Chart(frame).encode(
        x=alt.X("fp32_margin:Q", scale=alt.Scale(domain=domain, nice=False), title="margin in float32"),
        y=alt.Y("margin:Q", scale=alt.Scale(domain=domain, nice=False), title=axis_title("margin in", format_title)),
    )
    outcomes = [outcome for outcome in _OUTCOME_MARKS if any(r["outcome"] == outcome for r in records)]
    points = base.mark_point(size=90, filled=True, opacity=0.85).encode(
        color=alt.Color(
            "outcome:N",
            scale=alt.Scale(domain=outcomes, range=[_OUTCOME_MARKS[o][0] for o in outcomes]),
            title=None,
            legend=fitted_legend(outcomes),
        ),
        shape=alt.Shape(
            "outcome:N",
            scale=alt.Scale(domain=outcomes, range=[_OUTCOME_MARKS[o][1] for o in outcomes]),
            title=None,
            legend=fitted_legend(outcomes),
        ),
        tooltip=[
            alt.Tooltip("question:N"),
            alt.Tooltip("fp32_margin:Q", format=".3f", title="margin in float32"),
            alt.Tooltip("margin:Q", format=".3f", title=f"margin in {format_title}"),
            alt.Tooltip("outcome:N"),
            alt.Tooltip("picked:N", title="answered with"),
        ],
    )
    guides = row_data([{"from": domain[0], "to": domain[1], "zero": 0.0}])
    diagonal = (
        alt.Chart(guides)
        .mark_rule(strokeDash=[6, 4], color=GUIDE_GREY)
        .encode(x="from:Q", y="from:Q", x2="to:Q", y2="to:Q")
    )
    zero = alt.Chart(guides).mark_rule(color=PALETTE[3], opacity=0.6).encode(y="zero:Q")
    closer = sum(record["margin"] < record["fp32_margin"] for record in records)
    counts = [f"{sum(r['outcome'] == outcome for r in records)} {outcome}" for outcome in outcomes]
    description = (
        f"Each of {len(records)} questions' retrieval margin in {format_title} against its margin in float32 "
        f"(the right passage's cosine minus the best wrong one's; below 0 the answer is wrong). "
        f"{closer} of {len(records)} came closer to a wrong answer. Outcomes: {', '.join(counts)}."
    )
    return styled(
        alt.layer(diagonal, zero, points).properties(
            height=height,
            title=chart_title(
                "Margin per question",
                f"One point per question. Dashed: as in float32; below it, closer to a wrong answer. "
                f"Below the solid line at zero, {format_title} answers wrong.",
            ),
        ),
        description,
    )
