"""What a GGUF file's bytes are spent on (notebook 06): bytes and bits per weight by tensor type."""

from __future__ import annotations

import altair as alt

from lab.teach.charts._layout import PALETTE, Figure, chart_title, row_data, row_names, row_scale, styled


def type_bytes_chart(rows: list[dict], label: str | None) -> Figure:
    """One bar per tensor type, most bytes first: its share of the file's tensor bytes, named with
    its bits per weight; `rows` are lab.interop.gguf.type_summary's (or type_reasons') rows."""
    values = [
        {
            "type": row["type"],
            "share": row["share_of_bytes"],
            "name": [
                f"{row['type']}: {row['share_of_bytes']:.1%} of bytes, {row['bits_per_weight']:.3g} bits a weight"
            ],
        }
        for row in rows
    ]
    frame = row_data(values)
    scale, height = row_scale(len(values), 1, 14)
    order = alt.EncodingSortField("share", order="descending")
    bars = (
        alt.Chart(frame)
        .mark_bar(color=PALETTE[0])
        .encode(
            x=alt.X("share:Q", axis=alt.Axis(format="%"), title="share of the tensor bytes"),
            y=alt.Y("type:N", sort=order, scale=scale, axis=None),
            tooltip=["type:N", alt.Tooltip("share:Q", format=".1%")],
        )
    )
    said = f"labelled {label}" if label else "with no recipe label"
    description = f"Where the bytes of a GGUF file {said} go, by tensor type, most first: " + "; ".join(
        value["name"][0] for value in values
    )
    return styled(
        (bars + row_names(alt.Chart(frame), "type", order, 1)).properties(
            height=height, title=chart_title("Bytes by tensor type", f"The file is {said}.")
        ),
        description,
    )
