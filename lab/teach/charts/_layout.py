"""The layout every chart shares: the palette, the type sizes, the theme, and the helpers that lay
text out for the narrowest plot.

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

import altair as alt
import numpy as np

# Okabe–Ito colours, safe for the common colour-vision deficiencies.
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"]
# Eight groups (a Q4_K block's subblocks, the pane's scale groups) take the Okabe–Ito colours
# but black, which a Q4_K chart keeps for its traced lanes, and a grey.
SUBBLOCK_COLOURS = [*PALETTE[:7], "#8C8C8C"]

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


class _InlineData(alt.Data):
    # Altair validates a Data against the schema as it is made, row by row: 0.1 s for a few
    # thousand rows, on every page that draws them. The rows are plain numbers and strings made
    # here; the tests validate every chart whole (Figure.to_dict).
    _class_is_valid_at_instantiation = False


def inline_data(columns: dict) -> alt.Data:
    """Columns of equal length as inline Vega data (plain Python values, so it serialises)."""
    names = list(columns)
    rows = zip(*(np.asarray(columns[name]).tolist() for name in names), strict=True)
    return row_data([dict(zip(names, row, strict=True)) for row in rows])


def row_data(rows: list[dict]) -> alt.Data:
    """Rows of plain Python values as inline Vega data."""
    return _InlineData(values=rows)


def wrap(text: str, chars: int = LINE_CHARS) -> list[str]:
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


def chart_title(text: str, *notes: str) -> alt.Title:
    """A title of a few words over the plot, each note wrapped into subtitle lines below it. None
    may be wider than the plot (`limit`): a line that is gets an ellipsis rather than squeezing
    the plot."""
    lines = [line for note in notes for line in wrap(note)]
    return alt.Title(text, subtitle=lines or alt.Undefined, anchor="start", frame="group", limit=alt.ExprRef("width"))


def styled(chart: alt.TopLevelMixin, description: str) -> Figure:
    """The chart spanning its output, in the course's type sizes, with `description` as its text
    alternative: what it shows in words, which Vega gives the SVG as its aria-label for a screen
    reader, and for anyone who cannot hover over a point to have it named."""
    return Figure(
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
        .configure_title(
            fontSize=18, subtitleFontSize=TEXT_PX, subtitleLineHeight=LINE_PX, subtitlePadding=6, offset=14
        )
    )


class Figure:
    """A finished chart as a page shows it.

    marimo shows an Altair chart by validating its whole Vega-Lite spec against the JSON schema,
    which took more time than anything else on a live page (0.1 to 0.3 s a chart), and then
    writing it out again unvalidated. A Figure is written out once, unvalidated; the tests
    validate every chart the course draws through `to_dict()`, which validates as Altair does.
    """

    __slots__ = ("chart",)

    def __init__(self, chart: alt.TopLevelMixin) -> None:
        self.chart = chart

    def to_dict(self, **options) -> dict:
        """The Vega-Lite spec, validated (Altair's own to_dict)."""
        return self.chart.to_dict(**options)

    def _mime_(self) -> tuple[str, str]:
        # marimo's own writer: it replaces NaN and infinities, which JSON cannot hold.
        from marimo._plugins.ui._impl.altair_chart import chart_to_json, get_chart_mimetype

        return get_chart_mimetype("vega-lite"), chart_to_json(self.chart, validate=False)


# A symbol legend's entry is its symbol, a gap and its label; columns of entries are this far apart.
LEGEND_SYMBOL_PX = 22
LEGEND_COLUMN_GAP = 10


def fitted_legend(labels: list[str]) -> alt.Legend:
    """A legend below the plot in as many columns as fit the narrowest plot: one row where every
    entry fits in it, else fewer columns, down to one entry under another. Vega starts a bottom
    legend at the plot's left edge and never wraps it, so a row wider than the plot runs out of a
    phone's chart. (The columns are fixed here: a count that follows the plot's width in the page
    changes the legend's height after Vega has sized the chart, which then cuts it off.)"""
    widths = [text_px([label])[0] + LEGEND_SYMBOL_PX for label in labels]

    def row_px(columns: int) -> float:
        # Vega lines the entries up in columns, each as wide as its widest entry.
        return sum(max(widths[i::columns]) for i in range(columns)) + LEGEND_COLUMN_GAP * (columns - 1)

    columns = max((n for n in range(1, len(labels) + 1) if row_px(n) <= NARROWEST_PLOT), default=1)
    return alt.Legend(columns=columns)


def axis_title(head: str, name: str) -> str | list[str]:
    """An axis title that names something (a format): one line where it fits the narrowest plot,
    else the name on a line of its own, whole. Axis titles are 16 px, a little wider than text_px
    counts."""
    line = f"{head} {name}"
    return line if text_px([line])[0] * 16 / TEXT_PX <= NARROWEST_PLOT else [head, name]


def text_px(lines: list[str]) -> tuple[float, float]:
    """The width and height of a label of these lines, generously estimated: capitals and digits
    are wider than the mean (format names are mostly capitals)."""

    def width(line: str) -> float:
        return len(line) * CHAR_PX + 2.5 * sum(char.isupper() or char.isdigit() for char in line)

    return max(map(width, lines)), len(lines) * LINE_PX


def domain_around(values, *, log: bool = False, pad: float = 0.06) -> list[float]:
    """A scale domain around `values`: padded a little, or whole decades on a log axis, so that
    the pixel position of every point is known here, where the labels are placed."""
    low, high = float(np.min(values)), float(np.max(values))
    if log:
        return [10.0 ** math.floor(math.log10(low)), 10.0 ** math.ceil(math.log10(high))]
    reach = (high - low) or abs(high) or 1.0
    return [low - pad * reach, high + pad * reach]


# Below 1 a decade is labelled as a power of ten: "10⁻⁴" is half as wide as "0.0001", and on a
# phone the width an axis's labels take comes out of the plot's. Exponents of one digit are
# written so; a smaller decade keeps vega's own label.
_SUPERSCRIPT_DIGITS = "⁰¹²³⁴⁵⁶⁷⁸⁹"
_DECADE_LABEL = (
    "datum.value >= 1 || datum.value < 1e-9 ? datum.label : '10⁻' + "
    f"substring('{_SUPERSCRIPT_DIGITS}', -round(log(datum.value) / LN10), 1 - round(log(datum.value) / LN10))"
)


def decade_axis(domain: list[float]) -> alt.Axis:
    """A log axis over whole decades (domain_around(..., log=True)), a tick and a label at each."""
    low, high = (round(math.log10(end)) for end in domain)
    return alt.Axis(values=[10.0**power for power in range(low, high + 1)], labelExpr=_DECADE_LABEL)


def pixel_position(value: float, domain: list[float], pixels: float, *, log: bool = False) -> float:
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
        w, h = text_px(lines)
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


def label_sides(xs, ys, labels, order, height: float, marks=()) -> list[str | None]:
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


def point_labels(base: alt.Chart) -> list[alt.Chart]:
    """Text layers for the labels _place_labels placed, one per side: Vega-Lite aligns a text
    mark's items all alike."""
    return [
        base.transform_filter(alt.datum["label side"] == side)
        .mark_text(align=side, dx=8 if side == "left" else -8, fontSize=TEXT_PX, lineHeight=LINE_PX, color=FOREGROUND)
        .encode(text="label:N")
        for side in ("left", "right")
    ]


def row_scale(rows: int, label_lines: int, bar_px: int) -> tuple[alt.Scale, int]:
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


def row_names(base: alt.Chart, field: str, sort, label_lines: int) -> alt.Chart:
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
