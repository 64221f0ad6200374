"""Formats compared: storage per weight (notebook 07), and error against cost and one outlier in a
block, format by format (notebook 11)."""

from __future__ import annotations

import math

import altair as alt

from lab.numbers import format_number
from lab.teach import sizes
from lab.teach.charts._layout import (
    NARROWEST_PLOT,
    PALETTE,
    Figure,
    chart_title,
    decade_axis,
    domain_around,
    fitted_legend,
    label_sides,
    pixel_position,
    point_labels,
    row_names,
    row_scale,
    styled,
)


def bits_per_weight_chart(extra: dict[str, float] | None = None) -> Figure:
    """Bits per weight of each format, plus the MLX affine grid at 16-bit scale and bias."""
    entries = dict(sizes.FORMAT_BITS_PER_WEIGHT)
    for (bits, group), bpw in sizes.affine_grid().items():
        if bits in (4, 8):
            entries[f"MLX affine {bits}-bit g{group}"] = bpw
    entries.update(extra or {})
    frame = alt.Data(
        values=[
            {"format": name, "bits per weight": bpw, "name": [f"{name}: {bpw:.4g}"]} for name, bpw in entries.items()
        ]
    )
    rows, height = row_scale(len(entries), 1, 12)
    order = alt.EncodingSortField("bits per weight", order="ascending")
    bars = (
        alt.Chart(frame)
        .mark_bar(color=PALETTE[0])
        .encode(
            x=alt.X("bits per weight:Q"),
            y=alt.Y("format:N", sort=order, scale=rows, axis=None),
            tooltip=["format:N", "bits per weight:Q"],
        )
    )
    ranked = sorted(entries.items(), key=lambda entry: entry[1])
    description = f"Bits stored per weight, codes plus scales, for {len(ranked)} formats, fewest first: " + (
        "; ".join(f"{name} {bpw:.4g}" for name, bpw in ranked) + "."
    )
    return styled(
        (bars + row_names(alt.Chart(frame), "format", order, 1)).properties(
            height=height, title=chart_title("Storage per weight", "Codes plus scales, in bits.")
        ),
        description,
    )


def pareto_chart(
    rows: list[dict],
    source: str,
    *,
    error: str = "relative_error",
    error_words: str = "relative error",
    note: str = "Relative error ‖ŵ − w‖ / ‖w‖.",
) -> Figure:
    """An error measure (`error`, relative error by default) against bits per weight for every
    format on one source; the Pareto front joined, and formats named where a name fits (the
    front's first). `rows` carry `on_front` (lab.study.compare.pareto_front)."""
    height = 360
    measured = [row for row in rows if row["source"] == source and row[error] is not None]
    x_domain = [
        math.floor(min(row["bits_per_weight"] for row in measured)),
        math.ceil(max(row["bits_per_weight"] for row in measured)),
    ]
    y_domain = domain_around([row[error] for row in measured], log=True)
    xs = [pixel_position(row["bits_per_weight"], x_domain, NARROWEST_PLOT) for row in measured]
    ys = [height - pixel_position(row[error], y_domain, height, log=True) for row in measured]
    order = sorted(range(len(measured)), key=lambda i: (not measured[i]["on_front"], measured[i]["bits_per_weight"]))
    sides = label_sides(xs, ys, [[row["title"]] for row in measured], order, height)
    frame = alt.Data(
        values=[
            dict(
                row,
                front="on the front" if row["on_front"] else "dominated",
                label=row["title"],
                **{"label side": sides[i]},
            )
            for i, row in enumerate(measured)
        ]
    )
    base = alt.Chart(frame).encode(
        x=alt.X("bits_per_weight:Q", scale=alt.Scale(domain=x_domain, nice=False), title="bits per weight"),
        y=alt.Y(
            f"{error}:Q",
            scale=alt.Scale(type="log", domain=y_domain, nice=False),
            axis=decade_axis(y_domain),
            title=f"{error_words} (log axis)",
        ),
        tooltip=["title:N", "bits_per_weight:Q", alt.Tooltip(f"{error}:Q", format=".4f"), "front:N"],
    )
    points = base.mark_point(size=110, filled=True).encode(
        color=alt.Color(
            "front:N",
            scale=alt.Scale(domain=["on the front", "dominated"], range=[PALETTE[3], "#9aa5b1"]),
            title=None,
            legend=fitted_legend(["on the front", "dominated"]),
        )
    )
    front = base.transform_filter("datum.on_front").mark_line(color=PALETTE[3]).encode(order="bits_per_weight:Q")
    on_front = sorted((row for row in measured if row["on_front"]), key=lambda row: row["bits_per_weight"])
    description = (
        f"{error_words.capitalize()}, on a log axis, against bits per weight for {len(measured)} formats on {source}. "
        f"{len(on_front)} are on the Pareto front, no other format both as cheap and as accurate: "
        + "; ".join(
            f"{row['title']} at {row['bits_per_weight']:g} bits, error {format_number(row[error], 3)}"
            for row in on_front
        )
        + "."
    )
    return styled(
        alt.layer(front, points, *point_labels(base)).properties(
            height=height, title=chart_title("Error against cost", source, note)
        ),
        description,
    )


def block_outlier_chart(rows: list[dict]) -> Figure:
    """RMS error of the other weights in the block holding one outlier, per format, with and without it."""
    cases = ["with the outlier", "without"]
    formats = [row["title"] for row in rows]
    frame = alt.Data(
        values=[
            {"format": row["title"], "case": case, "RMS error of the others": row[key], "name": [row["title"]]}
            for row in rows
            for case, key in zip(cases, ("others_rms_error", "others_rms_error_without_outlier"), strict=True)
        ]
    )
    y_scale, height = row_scale(len(rows), 1, 16)
    bars = (
        alt.Chart(frame)
        .mark_bar()
        .encode(
            y=alt.Y("format:N", sort=formats, scale=y_scale, axis=None),
            x=alt.X("RMS error of the others:Q"),
            yOffset=alt.YOffset("case:N", sort=cases),
            color=alt.Color(
                "case:N",
                sort=cases,
                scale=alt.Scale(range=[PALETTE[3], PALETTE[0]]),
                title=None,
                legend=fitted_legend(cases),
            ),
            tooltip=["format:N", "case:N", alt.Tooltip("RMS error of the others:Q", format=".4f")],
        )
    )
    description = (
        "Bars of the RMS error of the other weights in the block that holds a weight of 20, per format, "
        "with the outlier and without it: "
        + "; ".join(
            f"{row['title']} {format_number(row['others_rms_error'], 3)} with, {format_number(row['others_rms_error_without_outlier'], 3)} without"
            for row in rows
        )
        + "."
    )
    return styled(
        (
            bars + row_names(alt.Chart(frame).transform_filter(alt.datum.case == cases[0]), "format", formats, 1)
        ).properties(
            height=height, title=chart_title("One outlier in a block", "A weight of 20 among N(0, 1) weights.")
        ),
        description,
    )
