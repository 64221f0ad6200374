"""The on-device pane's weight comparisons: the rows per scale group, and the bars of the largest
|MLX − lab| in each (notebooks 03 to 05)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import altair as alt
import numpy as np

from lab.numbers import format_number, position_text
from lab.teach.charts._layout import (
    FOREGROUND,
    SUBBLOCK_COLOURS,
    TEXT_PX,
    Figure,
    chart_title,
    row_data,
    row_names,
    row_scale,
    styled,
    wrap,
)

if TYPE_CHECKING:
    from lab.device.report import DeviceReport


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


def difference_chart(report: DeviceReport) -> Figure | None:
    """The on-device pane's weight comparisons as bars: per group, the largest |MLX − lab|; None
    where there is nothing to draw: no weight comparison (MLX absent or refused), or every one
    bit-identical in every group (bars of no length; the report says so in words)."""
    rows = difference_rows(report)
    if not any(row["max abs diff"] for row in rows):
        return None
    compared = list(dict.fromkeys(row["compared"] for row in rows))
    groups = list(dict.fromkeys(row["group"] for row in rows))
    names = [wrap(name) for name in compared]
    y_scale, height = row_scale(len(compared), max(map(len, names)), 10 * len(groups))
    frame = row_data(rows)
    bars = (
        alt.Chart(frame)
        .mark_bar()
        .encode(
            x=alt.X("max abs diff:Q", title="largest |difference|"),
            y=alt.Y("compared:N", sort=compared, scale=y_scale, axis=None),
            yOffset=alt.YOffset("group:N", sort=groups),
            color=alt.Color(
                "group:N",
                sort=groups,
                scale=alt.Scale(range=SUBBLOCK_COLOURS),
                title="group",
                # Two columns where the names are short ("subblock 3"), else one.
                legend=alt.Legend(columns=2 if max(map(len, groups)) <= 12 else 1),
            ),
            tooltip=["compared:N", "group:N", "max abs diff:Q", "not identical:Q"],
        )
    )
    # The names come from a lookup, so the chart's own data stays the report's rows.
    lines = row_data([{"compared": name, "name": lines} for name, lines in zip(compared, names, strict=True)])
    names_above_bars = row_names(
        alt.Chart(frame)
        .transform_filter(alt.datum.group == groups[0])
        .transform_lookup(lookup="compared", from_=alt.LookupData(data=lines, key="compared", fields=["name"])),
        "compared",
        compared,
        max(map(len, names)),
    )
    # A comparison that is 0 in every group has bars of no length: it says so where they would be.
    notes = (
        alt.Chart(frame)
        .transform_aggregate(largest="max(max abs diff)", groupby=["compared"])
        .transform_filter(alt.datum.largest == 0)
        .transform_calculate(note="'bit-identical in every group'")
        .mark_text(align="left", dx=4, fontSize=TEXT_PX, color=FOREGROUND)
        .encode(
            x=alt.value(0),
            y=alt.Y("compared:N", sort=compared, scale=y_scale, axis=None, bandPosition=0.5),
            text="note:N",
        )
    )
    largest = {
        name: max((row for row in rows if row["compared"] == name), key=lambda row: row["max abs diff"])
        for name in compared
    }
    description = (
        f"Bars of the largest |MLX − lab| in each of {len(groups)} groups, for {len(compared)} weight comparisons. "
        + "; ".join(
            f"{name}: bit-identical in every group"
            if not row["max abs diff"]
            else f"{name}: largest {format_number(row['max abs diff'], 3)}, in {row['group']}"
            for name, row in largest.items()
        )
        + "."
    )
    return styled(
        alt.layer(bars, names_above_bars, notes).properties(
            height=height,
            title=chart_title("MLX beside the lab", "The largest |MLX − lab| in each group; 0: bit-identical."),
        ),
        description,
    )
