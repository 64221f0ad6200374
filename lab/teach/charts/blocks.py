"""One block's weights: a Q4_K block by output lane with traced lanes named, and a block's histogram
on the grid its codes decode to (notebooks 03 to 05)."""

from __future__ import annotations

import altair as alt
import numpy as np
from numpy.typing import ArrayLike

from lab.numbers import format_number
from lab.teach.charts._layout import (
    FOREGROUND,
    LINE_PX,
    NARROWEST_PLOT,
    PALETTE,
    SUBBLOCK_COLOURS,
    TEXT_PX,
    Figure,
    chart_title,
    inline_data,
    styled,
    text_px,
)

# The foreground (black, or white on a dark chart) marks the traced lanes; no subblock has it.
TRACED_COLOUR = FOREGROUND
TRACED_LABEL_GAP = 5  # px between a traced lane and its label
TRACED_FIRST_ROW = 3  # px from the plot's top to the top of the first traced-lane label


def traced_label_layout(lanes, labels, lane_count: int = 256) -> list[dict]:
    """Where each traced lane's label goes, and where its dashed rule starts, so that no rule runs
    through another lane's label. Laid out in the narrowest plot: wider plots only part the lanes
    further, while labels keep their size, so what is clear there is clear at every width.

    A label ("lane n: weight") reads away from its lane, rightwards ("left": its text starts just
    right of the lane) where it fits in the plot, else leftwards ("right"); one too long for
    either breaks after the colon. Each label takes a row of its own, from the top in the order
    the labels read, so a label sits higher than the lanes it reads towards. A lane's rule rises
    from the bottom of the plot to its own label's row, stopping below any other lane's label
    that spans it. Returns per lane {"side", "lines", "label top", "rule top"} (px from the plot's
    top)."""
    xs = [lane / lane_count * NARROWEST_PLOT for lane in lanes]

    def side(x, lines):
        width = text_px(lines)[0]
        if x + TRACED_LABEL_GAP + width <= NARROWEST_PLOT:
            return "left"
        return "right" if x - TRACED_LABEL_GAP - width >= 0 else None

    places = []
    for x, label in zip(xs, labels, strict=True):
        lines = [label]
        if side(x, lines) is None:
            head, _, weight = label.partition(": ")
            lines = [f"{head}:", weight]
        places.append({"side": side(x, lines) or "left", "lines": lines})
    reads_left = bool(places) and all(place["side"] == "right" for place in places)
    top = TRACED_FIRST_ROW
    for i in sorted(range(len(lanes)), key=lambda i: xs[i], reverse=reads_left):
        places[i]["label top"] = top
        top += text_px(places[i]["lines"])[1]

    def box(i):
        width, height = text_px(places[i]["lines"])
        left = xs[i] + TRACED_LABEL_GAP if places[i]["side"] == "left" else xs[i] - TRACED_LABEL_GAP - width
        return left, left + width, places[i]["label top"] + height

    for i, place in enumerate(places):
        place["rule top"] = place["label top"]
        for j in range(len(places)):
            left, right, bottom = box(j)
            if j != i and left - 2 <= xs[i] <= right + 2:
                place["rule top"] = max(place["rule top"], bottom + 2)
    return places


def q4k_lane_chart(weights, highlight: tuple[int, ...] = ()) -> Figure:
    """All 256 weights of a Q4_K block by output lane, coloured by subblock; the traced lanes are
    marked by a dashed black line up the chart, a wider black bar, a point and a "lane n: weight"
    label at the top, so they stand out among 256 bars. The dashed lines never run through another
    lane's label (traced_label_layout)."""
    weights = np.asarray(weights, dtype=np.float64)
    lanes = np.arange(weights.size)
    frame = inline_data({"lane": lanes, "weight": weights, "subblock": [str(j) for j in lanes // 32]})
    x = alt.X("lane:Q", title="output lane", scale=alt.Scale(domain=[0, weights.size], nice=False))
    bars = (
        alt.Chart(frame)
        .mark_bar(opacity=0.6)
        .encode(
            x=x,
            y=alt.Y("weight:Q", title="reconstructed weight"),
            color=alt.Color(
                "subblock:N",
                scale=alt.Scale(range=SUBBLOCK_COLOURS),
                title="subblock j",
                legend=alt.Legend(columns=4, symbolType="square"),
            ),
            tooltip=["lane:Q", "weight:Q", "subblock:N"],
        )
    )
    traced_lanes = [int(lane) for lane in highlight]
    labels = [f"lane {lane}: {weights[lane]:g}" for lane in traced_lanes]
    layout = traced_label_layout(traced_lanes, labels, weights.size)
    # Row by row: a label's lines are a list, one or two long, which columns of equal length cannot hold.
    traced = alt.Data(
        values=[
            {"lane": lane, "weight": float(weights[lane]), "label": label, **place}
            for lane, label, place in zip(traced_lanes, labels, layout, strict=True)
        ]
    )
    rule = (
        alt.Chart(traced)
        .mark_rule(color=TRACED_COLOUR, strokeWidth=2, strokeDash=[4, 3])
        .encode(x="lane:Q", y=alt.Y("rule top:Q", scale=None), y2=alt.value("height"))
    )
    bar = alt.Chart(traced).mark_bar(color=TRACED_COLOUR, size=5).encode(x="lane:Q", y="weight:Q")
    point = (
        alt.Chart(traced)
        .mark_point(color=TRACED_COLOUR, filled=True, size=120, shape="diamond")
        .encode(x="lane:Q", y="weight:Q", tooltip=["label:N"])
    )
    label_marks = [
        alt.Chart(traced)
        .transform_filter(alt.datum["side"] == side)
        .mark_text(
            align=side,
            baseline="top",
            dx=TRACED_LABEL_GAP if side == "left" else -TRACED_LABEL_GAP,
            fontSize=TEXT_PX,
            lineHeight=LINE_PX,
            fontWeight="bold",
            color=TRACED_COLOUR,
        )
        .encode(x="lane:Q", y=alt.Y("label top:Q", scale=None), text="lines:N")
        for side in ("left", "right")
    ]
    description = (
        f"Bars of the {weights.size} reconstructed weights of one Q4_K block by output lane, coloured by "
        f"subblock, eight of 32 lanes; weights from {format_number(weights.min(), 3)} to {format_number(weights.max(), 3)}."
        + (f" Traced: {'; '.join(labels)}." if labels else "")
    )
    return styled(
        alt.layer(bars, rule, bar, point, *label_marks).properties(
            height=300,
            title=chart_title(
                "One Q4_K block", "256 lanes in eight subblocks of 32; a traced lane is dashed and named at the top."
            ),
        ),
        description,
    )


def block_grid_chart(weights: ArrayLike, levels: ArrayLike, title: str = "A block on its grid") -> Figure:
    """A histogram of a block's weights with the values its codes decode to at this block's scale
    drawn as vertical rules, and the range beyond the outermost level shaded: weights there clip."""
    weights = np.asarray(weights, dtype=np.float64).ravel()
    grid = np.unique(np.asarray(levels, dtype=np.float64).ravel() + 0.0)  # + 0.0: −0 and +0 are one rule
    low, high = float(grid.min()), float(grid.max())
    reach = max(float(np.abs(weights).max()), abs(low), abs(high)) * 1.1
    # one shared domain, so the histogram, the rules and the shading line up
    x_scale = alt.Scale(domain=[-reach, reach], nice=False)
    shade = (
        alt.Chart(inline_data({"from": [-reach, high], "to": [low, reach]}))
        .mark_rect(color=PALETTE[3], opacity=0.15)
        .encode(x=alt.X("from:Q", scale=x_scale, title="weight"), x2="to:Q")
    )
    rules = (
        alt.Chart(inline_data({"level": grid}))
        .mark_rule(color=PALETTE[0], strokeWidth=1.5)
        .encode(x=alt.X("level:Q", scale=x_scale), tooltip=["level:Q"])
    )
    bars = (
        alt.Chart(inline_data({"weight": weights}))
        .mark_bar(color=PALETTE[1], opacity=0.85)
        .encode(
            x=alt.X("weight:Q", bin=alt.Bin(maxbins=40, extent=[-reach, reach]), scale=x_scale),
            y=alt.Y("count():Q", title="weights"),
        )
    )
    notes = (
        f"{weights.size} weights (orange bars).",
        f"Blue rules: the {grid.size} values the codes decode to, {low:g} to {high:g}.".replace("-", "\u2212"),
        "Shaded: beyond them, clipped.",
    )
    clipped = int(np.count_nonzero((weights < low) | (weights > high)))
    description = (
        f"{title}: a histogram of {weights.size} weights from {format_number(weights.min(), 3)} to {format_number(weights.max(), 3)}, "
        f"with rules at the {grid.size} values the codes decode to, {format_number(low, 3)} to {format_number(high, 3)}; "
        f"{clipped} of the weights lie beyond them and clip."
    )
    return styled(alt.layer(shade, rules, bars).properties(height=220, title=chart_title(title, *notes)), description)
