"""Altair charts for the course, where a picture beats a table. Each takes plain inputs and
computes nothing the codec modules do not already provide.

Every chart spans its output (width "container"), from a 390 px phone to a 1920 px projector. On
the phone marimo leaves a chart about 316 px beside vega-embed's actions menu, and after the y
axis the plot is about 265 px wide. Text never shrinks below 15 px, so whatever a chart writes is
laid out for that narrowest plot: titles of a few words with the explanation wrapped into subtitle
lines, y axis titles level above the plot, legends below it, category names written above their
bars instead of beside them, and point labels only where they fit. Vega's fit sizing counts all of
it, so anything wider than the plot would shrink the plot to make room.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING

import altair as alt
import numpy as np
from numpy.typing import ArrayLike

from lab.codes import e2m1
from lab.numbers import format_number, position_text
from lab.teach import scale, sizes

if TYPE_CHECKING:
    import marimo

    from lab.device.report import DeviceReport

# Okabe–Ito colours, safe for the common colour-vision deficiencies.
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"]

NARROWEST_PLOT = 260  # px: the plot on a 390 px phone, less a little
TEXT_PX = 15  # no text in a chart is smaller
CHAR_PX = 8  # the mean advance of a character of 15 px sans-serif prose (DejaVu Sans: about 7.8)
LINE_CHARS = int(NARROWEST_PLOT // CHAR_PX)  # 32: a subtitle or label line that fits the narrowest plot
LINE_PX = 19  # one line of 15 px text

# Tick labels closer than labelSeparation are thinned out (the binned axes have many).
_AXIS = {"labelFontSize": TEXT_PX, "titleFontSize": 16, "labelSeparation": 8}
# The y axis title sits level above the plot, where it takes height instead of plot width, and
# the grid lines stand in for tick marks there.
_AXIS_Y = {
    "titleAngle": 0,
    "titleAlign": "left",
    "titleBaseline": "bottom",
    "titleX": 0,
    "titleY": -10,
    "ticks": False,
    "labelPadding": 4,
}

# Text and the traced lanes are drawn in the foreground colour of the chart's theme: black, or
# white on the dark grey of marimo's dark theme, where black would vanish. (Vega-Lite writes a
# text mark's colour out as black, whatever the theme says for axis labels.)
FOREGROUND = {"expr": "luminance(background) < 0.5 ? '#ffffff' : '#000000'"}

# Drawn as SVG rather than marimo's default canvas: text stays sharp when a projector or a
# browser zooms in, and the chart's layout (its plot area, its labels) is in the page, where the
# browser tests measure it at phone and projector widths. Of vega-embed's "⋯" menu only the SVG
# and PNG downloads stay: "Open in Vega Editor" sends the chart to vega.github.io, and the course
# never reaches the network (the source views go with it; the notebook holds the spec).
EMBED_OPTIONS = {"renderer": "svg", "actions": {"export": True, "source": False, "compiled": False, "editor": False}}


def _data(columns: dict) -> alt.Data:
    """Columns of equal length as inline Vega data (plain Python values, so it serialises)."""
    names = list(columns)
    rows = zip(*(np.asarray(columns[name]).tolist() for name in names), strict=True)
    return alt.Data(values=[dict(zip(names, row, strict=True)) for row in rows])


def _wrap(text: str, chars: int = LINE_CHARS) -> list[str]:
    """Lines of at most `chars` characters, broken at spaces; a longer word (a tensor's name)
    breaks after a dot."""
    pieces: list[tuple[str, str]] = []  # (text, what joins it to the piece before it)
    for word in text.split():
        parts = re.findall(r"[^.]+\.?|\.", word) if len(word) > chars else [word]
        pieces += [(part, " " if i == 0 else "") for i, part in enumerate(parts)]
    lines: list[str] = []
    for piece, joint in pieces:
        if lines and len(lines[-1]) + len(joint) + len(piece) <= chars:
            lines[-1] += joint + piece
        else:
            lines.append(piece)
    return lines


def _title(text: str, *notes: str) -> alt.Title:
    """A title of a few words over the plot, each note wrapped into subtitle lines below it. None
    may be wider than the plot (`limit`): a line that is gets an ellipsis rather than squeezing
    the plot."""
    lines = [line for note in notes for line in _wrap(note)]
    return alt.Title(text, subtitle=lines or alt.Undefined, anchor="start", frame="group", limit=alt.ExprRef("width"))


def _styled(chart: alt.Chart, description: str) -> alt.Chart:
    """The chart spanning its output, in the course's type sizes, with `description` as its text
    alternative: what it shows in words, which Vega gives the SVG as its aria-label for a screen
    reader, and for anyone who cannot hover over a point to have it named."""
    return (
        chart.properties(
            description=description,
            width="container",
            autosize=alt.AutoSizeParams(type="fit-x", contains="padding"),
            padding={"left": 2, "top": 5, "right": 5, "bottom": 5},
            usermeta={"embedOptions": EMBED_OPTIONS},
        )
        .configure_axis(**_AXIS)
        .configure_axisY(**_AXIS_Y)
        .configure_legend(
            orient="bottom", labelFontSize=TEXT_PX, titleFontSize=16, labelLimit=NARROWEST_PLOT - 30, symbolSize=120
        )
        .configure_title(fontSize=18, subtitleFontSize=TEXT_PX, subtitlePadding=6, offset=14)
    )


# A symbol legend's entry is its symbol, a gap and its label; columns of entries are this far apart.
LEGEND_SYMBOL_PX = 22
LEGEND_COLUMN_GAP = 10


def _legend(labels: list[str]) -> alt.Legend:
    """A legend below the plot in as many columns as fit the narrowest plot: one row where every
    entry fits in it, else fewer columns, down to one entry under another. Vega starts a bottom
    legend at the plot's left edge and never wraps it, so a row wider than the plot runs out of a
    phone's chart. (The columns are fixed here: a count that follows the plot's width in the page
    changes the legend's height after Vega has sized the chart, which then cuts it off.)"""
    widths = [_text_px([label])[0] + LEGEND_SYMBOL_PX for label in labels]

    def row_px(columns: int) -> float:
        # Vega lines the entries up in columns, each as wide as its widest entry.
        return sum(max(widths[i::columns]) for i in range(columns)) + LEGEND_COLUMN_GAP * (columns - 1)

    columns = max((n for n in range(1, len(labels) + 1) if row_px(n) <= NARROWEST_PLOT), default=1)
    return alt.Legend(columns=columns)


def _axis_title(head: str, name: str) -> str | list[str]:
    """An axis title that names something (a format): one line where it fits the narrowest plot,
    else the name on a line of its own, whole. Axis titles are 16 px, a little wider than _text_px
    counts."""
    line = f"{head} {name}"
    return line if _text_px([line])[0] * 16 / TEXT_PX <= NARROWEST_PLOT else [head, name]


def _text_px(lines: list[str]) -> tuple[float, float]:
    """The width and height of a label of these lines, generously estimated: capitals and digits
    are wider than the mean (format names are mostly capitals)."""

    def width(line: str) -> float:
        return len(line) * CHAR_PX + 2.5 * sum(char.isupper() or char.isdigit() for char in line)

    return max(map(width, lines)), len(lines) * LINE_PX


def _span(values, *, log: bool = False, pad: float = 0.06) -> list[float]:
    """A scale domain around `values`: padded a little, or whole decades on a log axis, so that
    the pixel position of every point is known here, where the labels are placed."""
    low, high = float(np.min(values)), float(np.max(values))
    if log:
        return [10.0 ** math.floor(math.log10(low)), 10.0 ** math.ceil(math.log10(high))]
    reach = (high - low) or abs(high) or 1.0
    return [low - pad * reach, high + pad * reach]


def _position(value: float, domain: list[float], pixels: float, *, log: bool = False) -> float:
    if log:
        value, domain = math.log(value), [math.log(end) for end in domain]
    return (value - domain[0]) / (domain[1] - domain[0]) * pixels


def _place_labels(points, marks, height: float, width: float = NARROWEST_PLOT, gap: float = 8) -> list[str | None]:
    """Where each scatter point's label goes: "left" (the text starts just right of the point) or
    "right" (it ends just left of it), or None where neither fits inside the plot without covering
    a label already placed or any of the `marks` (every point drawn, as (x px, y px)). `points`
    are (x px, y px, lines of text), most important first. Positions are in the narrowest plot;
    the plot only widens from there, and what fits there fits at every width."""
    placed: list[tuple[float, float, float, float, float]] = []  # a label's box and its point's x
    radius = 6  # of a drawn point

    def clear(box, x) -> bool:
        # Beside each other, a label must be on the same side of the other as its point is: as
        # the plot widens the points part, and labels that cross would meet.
        return all(
            box[3] <= b[1] or b[3] <= box[1] or (box[2] <= b[0] and x <= bx) or (b[2] <= box[0] and bx <= x)
            for *b, bx in placed
        )

    sides: list[str | None] = []
    for x, y, lines in points:
        w, h = _text_px(lines)
        side = None
        for align, left in (("left", x + gap), ("right", x - gap - w)):
            box = (left, y - h / 2, left + w, y + h / 2)
            inside = box[0] >= 0 and box[2] <= width and box[1] >= 0 and box[3] <= height
            covers = any(
                box[0] - radius < mx < box[2] + radius and box[1] - radius < my < box[3] + radius for mx, my in marks
            )
            if inside and not covers and clear(box, x):
                placed.append((*box, x))
                side = align
                break
        sides.append(side)
    return sides


def _label_sides(xs, ys, labels, order, height: float, marks=()) -> list[str | None]:
    """_place_labels for the points whose pixel positions are `xs`, `ys` (in the narrowest plot),
    trying them in `order`; every one of them, and any other `marks`, is kept clear. The sides come
    back in the points' own order."""
    placed = _place_labels(
        [(xs[i], ys[i], labels[i]) for i in order], [*zip(xs, ys, strict=True), *marks], height=height
    )
    sides: list[str | None] = [None] * len(xs)
    for i, side in zip(order, placed, strict=True):
        sides[i] = side
    return sides


def _point_labels(base: alt.Chart) -> list[alt.Chart]:
    """Text layers for the labels _place_labels placed, one per side: Vega-Lite aligns a text
    mark's items all alike."""
    return [
        base.transform_filter(alt.datum["label side"] == side)
        .mark_text(align=side, dx=8 if side == "left" else -8, fontSize=TEXT_PX, lineHeight=LINE_PX, color=FOREGROUND)
        .encode(text="label:N")
        for side in ("left", "right")
    ]


def _row_scale(rows: int, label_lines: int, bar_px: int) -> tuple[alt.Scale, int]:
    """A band scale for horizontal bars with their names written above them, and the chart's
    height: each row is `label_lines` lines of text, then a bar (or group of bars) `bar_px` high."""
    step = _label_px(label_lines) + bar_px
    gap = _label_px(label_lines) / step
    # align=1 puts all the outer padding at the top, where the first row's name goes.
    return alt.Scale(paddingInner=gap, paddingOuter=gap / 2, align=1), rows * step


def _label_px(label_lines: int) -> int:
    """The gap above a row's bars that holds its name: more space above the name than below, so
    that it reads with the bars under it."""
    return label_lines * LINE_PX + 10


def _row_names(base: alt.Chart, field: str, sort, label_lines: int) -> alt.Chart:
    """The rows' names (a "name" field, a list of lines) written left-aligned in the gap above each
    row's bars, on the same band scale."""
    return base.mark_text(
        align="left",
        baseline="top",
        dy=8 - _label_px(label_lines),
        fontSize=TEXT_PX,
        lineHeight=LINE_PX,
        color=FOREGROUND,
    ).encode(x=alt.value(0), y=alt.Y(f"{field}:N", sort=sort, bandPosition=0, axis=None), text="name:N")


RULER_DOMAIN = (-6.5, 6.5)
# Label rows, in px from the ticks: below and above, near and far. Neighbouring marks near zero
# are 0.5 apart, about 10 px on the narrowest plot, far narrower than a label like "−0.5", so
# four neighbours in a row take four rows and labels in one row are at least 2 apart (40 px).
RULER_LABEL_OFFSETS = (34, -34, 54, -54)


def e2m1_ruler_chart() -> alt.Chart:
    """The fifteen distinct E2M1 values on a line, with the gap to the next mark; labels take
    turns between four rows so that no two in a row overlap."""
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
        .mark_text(dy=offset, fontSize=TEXT_PX, color=FOREGROUND)
        .encode(x="value:Q", text="label:N")
        for row, offset in enumerate(RULER_LABEL_OFFSETS)
    ]
    description = (
        f"The {values.size} distinct E2M1 values on a number line: {', '.join(labels_text)}. "
        f"Neighbours are {format_number(gaps[:-1].min(), 3)} apart near zero and {format_number(gaps[:-1].max(), 3)} apart at the ends."
    )
    return _styled(
        alt.layer(marks, *labels).properties(
            height=150, title=_title("Every E2M1 value", "Dense near zero, sparse far out.")
        ),
        description,
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
    zero = alt.Chart(alt.Data(values=[{"y": 0}])).mark_rule(color="#555").encode(y="y:Q")
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
    return _styled(
        (zero + lines).properties(height=300, title=_title("Error against scale", "Same weights; a line per input.")),
        description,
    )


# The foreground (black, or white on a dark chart) is kept for the traced lanes, so the eight
# subblocks take the Okabe–Ito colours but black, and a grey.
TRACED_COLOUR = FOREGROUND
SUBBLOCK_COLOURS = [*PALETTE[:7], "#8C8C8C"]
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
        width = _text_px(lines)[0]
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
        top += _text_px(places[i]["lines"])[1]

    def box(i):
        width, height = _text_px(places[i]["lines"])
        left = xs[i] + TRACED_LABEL_GAP if places[i]["side"] == "left" else xs[i] - TRACED_LABEL_GAP - width
        return left, left + width, places[i]["label top"] + height

    for i, place in enumerate(places):
        place["rule top"] = place["label top"]
        for j in range(len(places)):
            left, right, bottom = box(j)
            if j != i and left - 2 <= xs[i] <= right + 2:
                place["rule top"] = max(place["rule top"], bottom + 2)
    return places


def q4k_lane_chart(weights, highlight: tuple[int, ...] = ()) -> alt.Chart:
    """All 256 weights of a Q4_K block by output lane, coloured by subblock; the traced lanes are
    marked by a dashed black line up the chart, a wider black bar, a point and a "lane n: weight"
    label at the top, so they stand out among 256 bars. The dashed lines never run through another
    lane's label (traced_label_layout)."""
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
    return _styled(
        alt.layer(bars, rule, bar, point, *label_marks).properties(
            height=300,
            title=_title(
                "One Q4_K block", "256 lanes in eight subblocks of 32; a traced lane is dashed and named at the top."
            ),
        ),
        description,
    )


def bits_per_weight_chart(extra: dict[str, float] | None = None) -> alt.Chart:
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
    rows, height = _row_scale(len(entries), 1, 12)
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
    return _styled(
        (bars + _row_names(alt.Chart(frame), "format", order, 1)).properties(
            height=height, title=_title("Storage per weight", "Codes plus scales, in bits.")
        ),
        description,
    )


def block_grid_chart(weights: ArrayLike, levels: ArrayLike, title: str = "A block on its grid") -> alt.LayerChart:
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
    return _styled(alt.layer(shade, rules, bars).properties(height=220, title=_title(title, *notes)), description)


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
    where there is nothing to draw: no weight comparison (MLX absent or refused), or every one
    bit-identical in every group (bars of no length; the report says so in words)."""
    rows = difference_rows(report)
    if not any(row["max abs diff"] for row in rows):
        return None
    compared = list(dict.fromkeys(row["compared"] for row in rows))
    groups = list(dict.fromkeys(row["group"] for row in rows))
    names = [_wrap(name) for name in compared]
    y_scale, height = _row_scale(len(compared), max(map(len, names)), 10 * len(groups))
    frame = alt.Data(values=rows)
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
    lines = alt.Data(values=[{"compared": name, "name": lines} for name, lines in zip(compared, names, strict=True)])
    row_names = _row_names(
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
    return _styled(
        alt.layer(bars, row_names, notes).properties(
            height=height,
            title=_title("MLX beside the lab", "The largest |MLX − lab| in each group; 0: bit-identical."),
        ),
        description,
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


def _short_tensor(tensor: str) -> str:
    """'encoder.layer.3.attention.self.query.weight' -> 'layer.3.attention.self.query'."""
    return tensor.removeprefix("encoder.").removesuffix(".weight")


def tensor_error_chart(records: list[dict], format_name: str) -> alt.Chart:
    """Relative RMSE of every tensor the format took (worst first), coloured by layer type;
    `records` are a real-weights report's records()."""
    rows = _measured(records, format_name)
    frame = alt.Data(
        values=[
            {
                "tensor": row["tensor"],
                "layer type": layer_type(row["tensor"]),
                "relative RMSE": row["relative_rmse"],
                "name": _wrap(_short_tensor(row["tensor"])),
            }
            for row in rows
        ]
    )
    order = alt.EncodingSortField("relative RMSE", order="descending")
    label_lines = max([len(_wrap(_short_tensor(row["tensor"]))) for row in rows] or [1])
    y_scale, height = _row_scale(len(rows), label_lines, 7)
    base = alt.Chart(frame)
    bars = base.mark_bar().encode(
        x=alt.X("relative RMSE:Q"),
        y=alt.Y("tensor:N", sort=order, scale=y_scale, axis=None),
        color=alt.Color("layer type:N", scale=alt.Scale(range=LAYER_COLOURS), legend=alt.Legend(columns=1)),
        tooltip=["tensor:N", "layer type:N", "relative RMSE:Q"],
    )
    names = _row_names(base, "tensor", order, label_lines)
    ranked = sorted(rows, key=lambda row: row["relative_rmse"], reverse=True)
    description = f"Bars of the relative RMSE of {len(rows)} tensors in {format_name}, worst first" + (
        f": worst {_short_tensor(ranked[0]['tensor'])} at {format_number(ranked[0]['relative_rmse'], 3)}, best "
        f"{_short_tensor(ranked[-1]['tensor'])} at {format_number(ranked[-1]['relative_rmse'], 3)}."
        if rows
        else "."
    )
    return _styled(
        (bars + names).properties(
            height=max(80, height), title=_title("Relative RMSE per tensor", f"{format_name}, worst first.")
        ),
        description,
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
            color=alt.Color("layer type:N", scale=alt.Scale(range=LAYER_COLOURS), legend=alt.Legend(columns=1)),
            tooltip=["tensor:N", "outlier share:Q", "relative RMSE:Q"],
        )
    )
    note = f"{format_name}, one point per tensor. Outliers: weights beyond 6 × the tensor's RMS."
    description = (
        f"Relative RMSE against outlier share for {len(rows)} tensors in {format_name}, coloured by layer type"
        + (
            f"; outlier shares from {min(r['outlier_share'] for r in rows):.2%} to {max(r['outlier_share'] for r in rows):.2%}, "
            f"relative RMSE from {format_number(min(r['relative_rmse'] for r in rows), 3)} to {format_number(max(r['relative_rmse'] for r in rows), 3)}."
            if rows
            else "."
        )
    )
    return _styled(points.properties(height=300, title=_title("Outliers against error", note)), description)


def _heatmap(matrix, labels: list[str], title: str, legend: bool) -> alt.Chart:
    """One cosine matrix; rows and columns are numbered, and a cell's tooltip names its sentences."""
    rows, cols = np.indices(np.shape(matrix))
    numbers = [str(i + 1) for i in range(len(labels))]
    frame = _data(
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
    return _styled(
        alt.Chart(frame)
        .mark_rect()
        .encode(
            x=alt.X("column:N", sort=numbers, title=None, axis=alt.Axis(labelAngle=0, orient="top")),
            y=alt.Y("row:N", sort=numbers, title=None),
            color=colour,
            tooltip=["row sentence:N", "column sentence:N", "cosine:Q"],
        )
        .properties(height=300, title=_title(title, "Sentences 1 to 10, in pairs.")),
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


def per_sentence_cosine_chart(cosines, labels: list[str], format_title: str) -> alt.Chart:
    """How far each sentence's quantized embedding turned from its float32 one: 1 − cosine, per
    sentence, numbered as in the heatmaps."""
    names = [_wrap(f"{i + 1} · {label}") for i, label in enumerate(labels)]
    distance = (1.0 - np.asarray(cosines, dtype=np.float64)).tolist()
    frame = alt.Data(
        values=[
            {"sentence": label, "1 − cosine": value, "name": name}
            for label, value, name in zip(labels, distance, names, strict=True)
        ]
    )
    y_scale, height = _row_scale(len(labels), max(map(len, names)), 12)
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
    return _styled(
        (bars + _row_names(alt.Chart(frame), "sentence", labels, max(map(len, names)))).properties(
            height=height, title=_title("Each sentence", f"{format_title} against float32.")
        ),
        description,
    )


def retrieval_quality_chart(rows: list[dict]) -> alt.Chart:
    """Top-1 accuracy and MRR of every format against its bits per weight (log axis); formats are
    named beside their top-1 points where a name fits."""
    height = 340
    bits = [row["bits_per_weight"] for row in rows]
    scores = [row[key] for row in rows for key in ("top1", "mrr")]
    x_domain = [2.0 ** math.floor(math.log2(min(bits))), 2.0 ** math.ceil(math.log2(max(bits)))]
    y_domain = _span(scores)
    xs = [_position(b, x_domain, NARROWEST_PLOT, log=True) for b in bits]
    top1 = [height - _position(row["top1"], y_domain, height) for row in rows]
    mrr = [height - _position(row["mrr"], y_domain, height) for row in rows]
    # The extremes first: they carry the story (where answers break, and the float32 reference).
    ends = (bits.index(min(bits)), bits.index(max(bits)))
    order = sorted(range(len(rows)), key=lambda i: (i not in ends, bits[i]))
    sides = _label_sides(
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
        color=alt.Color("measure:N", scale=alt.Scale(range=PALETTE), title=None, legend=_legend(["top-1", "MRR"]))
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
    return _styled(
        alt.layer(points, *_point_labels(base)).properties(
            height=height,
            # At 4 to 8 bits the formats crowd together: there is room to name only a few of them.
            title=_title("Where answers break", "Named where a name fits; the table above lists every format."),
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


def retrieval_margins_chart(records: list[dict], format_title: str) -> alt.Chart:
    """Each question's margin (right passage's cosine minus the best distractor's) with the format
    against float32's. On the diagonal nothing moved; below it the question came closer to a wrong
    answer; below the zero line the format answers it wrong."""
    height = 340
    margins = [record[key] for record in records for key in ("fp32_margin", "margin")]
    domain = _span([*margins, 0.0])
    frame = alt.Data(values=[dict(record) for record in records])
    base = alt.Chart(frame).encode(
        x=alt.X("fp32_margin:Q", scale=alt.Scale(domain=domain, nice=False), title="margin in float32"),
        y=alt.Y("margin:Q", scale=alt.Scale(domain=domain, nice=False), title=_axis_title("margin in", format_title)),
    )
    outcomes = [outcome for outcome in _OUTCOME_MARKS if any(r["outcome"] == outcome for r in records)]
    points = base.mark_point(size=90, filled=True, opacity=0.85).encode(
        color=alt.Color(
            "outcome:N",
            scale=alt.Scale(domain=outcomes, range=[_OUTCOME_MARKS[o][0] for o in outcomes]),
            title=None,
            legend=_legend(outcomes),
        ),
        shape=alt.Shape(
            "outcome:N",
            scale=alt.Scale(domain=outcomes, range=[_OUTCOME_MARKS[o][1] for o in outcomes]),
            title=None,
            legend=_legend(outcomes),
        ),
        tooltip=[
            alt.Tooltip("question:N"),
            alt.Tooltip("fp32_margin:Q", format=".3f", title="margin in float32"),
            alt.Tooltip("margin:Q", format=".3f", title=f"margin in {format_title}"),
            alt.Tooltip("outcome:N"),
            alt.Tooltip("picked:N", title="answered with"),
        ],
    )
    guides = alt.Data(values=[{"from": domain[0], "to": domain[1], "zero": 0.0}])
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
    return _styled(
        alt.layer(diagonal, zero, points).properties(
            height=height,
            title=_title(
                "Margin per question",
                f"One point per question. Dashed: as in float32; below it, closer to a wrong answer. "
                f"Below the solid line at zero, {format_title} answers wrong.",
            ),
        ),
        description,
    )


def layer_errors_chart(records: list[dict], format_title: str) -> alt.Chart:
    """Each Linear's weight error against its output error on real inputs; disagreeing layers
    named where a name fits."""
    height = 360
    x_domain = _span([record["weight_error"] for record in records])
    y_domain = _span([record["output_error"] for record in records])
    shorts = [record["layer"].removeprefix("encoder.") for record in records]
    # "layer.5.attention.output.dense" -> "layer 5" over "attention.output.dense"
    labels = [
        [f"layer {m[1]}", m[2]] if (m := re.fullmatch(r"layer\.(\d+)\.(.+)", short)) else _wrap(short)
        for short in shorts
    ]
    xs = [_position(record["weight_error"], x_domain, NARROWEST_PLOT) for record in records]
    ys = [height - _position(record["output_error"], y_domain, height) for record in records]
    disagreeing = [i for i, record in enumerate(records) if record["disagreeing"]]
    sides = _label_sides(xs, ys, labels, disagreeing, height)
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
    legend = _legend(list(kinds))
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
    return _styled(
        alt.layer(points, *_point_labels(base)).properties(
            height=height,
            title=_title(
                "Weight vs output error",
                f"{format_title}, one point per Linear: the two errors rank layers differently. "
                "Those whose rank moves most are named where a name fits; the table above names them all.",
            ),
        ),
        description,
    )


def channel_outliers_chart(rms, top_channels, layer: str) -> alt.Chart:
    """One Linear's per-input-channel activation RMS, the top outlier channels coloured and marked
    by a triangle over their bars: a shape as well as a colour, so no one needs the hue."""
    rms = np.asarray(rms, dtype=np.float64)
    count = np.size(top_channels)
    top = "top channel" if count == 1 else f"top {count} channels"
    kinds = {"other channels": ("#9aa5b1", "square"), top: (PALETTE[3], "triangle-down")}
    channels = np.arange(rms.size)
    frame = _data(
        {"channel": channels, "RMS": rms, "kind": np.where(np.isin(channels, top_channels), top, "other channels")}
    )
    legend = _legend(list(kinds))
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
    return _styled(
        alt.layer(base.mark_bar(), markers).properties(
            height=240, title=_title("Input channels", f"Of {layer.removeprefix('encoder.')}.")
        ),
        description,
    )


def pareto_chart(rows: list[dict], source: str) -> alt.Chart:
    """Relative error against bits per weight for every format on one source; the Pareto front
    joined, and formats named where a name fits (the front's first)."""
    height = 360
    measured = [row for row in rows if row["source"] == source and row["relative_error"] is not None]
    x_domain = [
        math.floor(min(row["bits_per_weight"] for row in measured)),
        math.ceil(max(row["bits_per_weight"] for row in measured)),
    ]
    y_domain = _span([row["relative_error"] for row in measured], log=True)
    xs = [_position(row["bits_per_weight"], x_domain, NARROWEST_PLOT) for row in measured]
    ys = [height - _position(row["relative_error"], y_domain, height, log=True) for row in measured]
    order = sorted(range(len(measured)), key=lambda i: (not measured[i]["on_front"], measured[i]["bits_per_weight"]))
    sides = _label_sides(xs, ys, [[row["title"]] for row in measured], order, height)
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
            "relative_error:Q",
            scale=alt.Scale(type="log", domain=y_domain, nice=False),
            title="relative error (log axis)",
        ),
        tooltip=["title:N", "bits_per_weight:Q", alt.Tooltip("relative_error:Q", format=".4f"), "front:N"],
    )
    points = base.mark_point(size=110, filled=True).encode(
        color=alt.Color(
            "front:N",
            scale=alt.Scale(domain=["on the front", "dominated"], range=[PALETTE[3], "#9aa5b1"]),
            title=None,
            legend=_legend(["on the front", "dominated"]),
        )
    )
    front = base.transform_filter("datum.on_front").mark_line(color=PALETTE[3]).encode(order="bits_per_weight:Q")
    on_front = sorted((row for row in measured if row["on_front"]), key=lambda row: row["bits_per_weight"])
    description = (
        f"Relative error, on a log axis, against bits per weight for {len(measured)} formats on {source}. "
        f"{len(on_front)} are on the Pareto front, no other format both as cheap and as accurate: "
        + "; ".join(
            f"{row['title']} at {row['bits_per_weight']:g} bits, error {format_number(row['relative_error'], 3)}"
            for row in on_front
        )
        + "."
    )
    return _styled(
        alt.layer(front, points, *_point_labels(base)).properties(
            height=height, title=_title("Error against cost", source, "Relative error ‖ŵ − w‖ / ‖w‖.")
        ),
        description,
    )


def block_outlier_chart(rows: list[dict]) -> alt.Chart:
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
    y_scale, height = _row_scale(len(rows), 1, 16)
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
                legend=_legend(cases),
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
    return _styled(
        (
            bars + _row_names(alt.Chart(frame).transform_filter(alt.datum.case == cases[0]), "format", formats, 1)
        ).properties(height=height, title=_title("One outlier in a block", "A weight of 20 among N(0, 1) weights.")),
        description,
    )
