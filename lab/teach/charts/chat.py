"""A chat model's answers under every format (notebook 12): where each greedy answer first departs,
and the formats' damage against their cost, every format on the Pareto front numbered."""

from __future__ import annotations

import math

import altair as alt

from lab.numbers import format_number
from lab.teach.charts._layout import (
    FOREGROUND,
    LINE_CHARS,
    LINE_PX,
    NARROWEST_PLOT,
    PALETTE,
    TEXT_PX,
    Figure,
    chart_title,
    decade_axis,
    domain_around,
    fitted_legend,
    pixel_position,
    row_data,
    row_names,
    row_scale,
    styled,
    text_px,
)


def divergence_chart(rows: list[dict], tokens: int, prompts: list[str]) -> Figure:
    """One row per format, one mark per prompt at the token where its greedy answer first leaves the
    reference's; an answer that never leaves it sits past the last token, at `tokens`."""
    labels = [f"prompt {i + 1}" for i in range(len(prompts))]
    label_of = dict(zip(prompts, labels, strict=True))
    values = [
        {
            "format": row["title"],
            "prompt": label_of[row["prompt"]],
            "token": tokens if row["position"] is None else row["position"],
            "where": "the same to the end" if row["position"] is None else f"token {row['position']}",
            "name": [row["title"]],
        }
        for row in rows
    ]
    frame = row_data(values)
    formats = list(dict.fromkeys(row["title"] for row in rows))
    # each prompt has its own lane within a format's row, so two answers that depart at the same
    # token stay two marks
    scale, height = row_scale(len(formats), 1, 14 * len(labels))
    points = (
        alt.Chart(frame)
        .mark_point(size=110, filled=True)
        .encode(
            x=alt.X(
                "token:Q",
                # half a token of room at each end, so a mark at 0 or at the last token is drawn whole
                scale=alt.Scale(domain=[-0.5, tokens + 0.5], nice=False),
                axis=alt.Axis(values=list(range(0, tokens + 1, 5 if tokens > 20 else 1))),
                title="first token unlike the reference's",
            ),
            y=alt.Y("format:N", sort=formats, scale=scale, axis=None),
            yOffset=alt.YOffset("prompt:N", sort=labels, scale=alt.Scale(domain=labels)),
            color=alt.Color(
                "prompt:N",
                scale=alt.Scale(domain=labels, range=PALETTE[: len(labels)]),
                legend=fitted_legend(labels),
                title=None,
            ),
            shape=alt.Shape("prompt:N", scale=alt.Scale(domain=labels), legend=None),
            tooltip=["format:N", "prompt:N", "where:N"],
        )
    )
    # a format's name once, over its row: the frame holds a row per (format, prompt)
    names = alt.Chart(frame).transform_filter(alt.datum.prompt == labels[0])
    same = sum(row["position"] is None for row in rows)
    description = (
        f"For {len(formats)} formats and {len(prompts)} prompts, the first generated token that differs from the "
        f"reference's; {same} of {len(rows)} answers match it for all {tokens} tokens: "
        + "; ".join(f"{v['format']}, {v['prompt']}: {v['where']}" for v in values)
    )
    return styled(
        (points + row_names(names, "format", formats, 1)).properties(
            height=height,
            title=chart_title("Where the answers depart", f"A mark at {tokens}: the same to the end."),
        ),
        description,
    )


#: where a front point's number may go, tried in this order, and how the text mark is set for it:
#: just right of the point, just left, centred above, centred below, then the four corners
NUMBER_SPOTS = {
    "left": {"align": "left", "dx": 8, "dy": 0},
    "right": {"align": "right", "dx": -8, "dy": 0},
    "above": {"align": "center", "dx": 0, "dy": -16},
    "below": {"align": "center", "dx": 0, "dy": 16},
    "above left": {"align": "right", "dx": -6, "dy": -14},
    "below left": {"align": "right", "dx": -6, "dy": 14},
    "above right": {"align": "left", "dx": 6, "dy": -14},
    "below right": {"align": "left", "dx": 6, "dy": 14},
}
_POINT_RADIUS = 6  # px: a drawn point, which no number may cover
_NUMBER_GAP = 6  # px between two numbers side by side


def number_box(side: str, x: float, y: float, number: int) -> tuple[float, float, float, float]:
    """The box (left, top, right, bottom, px) that `number` takes when drawn at `side` of a point at (x, y)."""
    width, height = text_px([str(number)])
    spot = NUMBER_SPOTS[side]
    left = {"left": x + spot["dx"], "right": x + spot["dx"] - width, "center": x - width / 2}[spot["align"]]
    middle = y + spot["dy"]
    return left, middle - height / 2, left + width, middle + height / 2


def _domains(rows: list[dict], error: str) -> tuple[list[float], list[float]]:
    """The plot's x domain (whole bits) and y domain (whole decades of `error`): fixed here, so each
    point's pixel position is known where its number is placed. A whole bit of room at either end
    when a format sits on a whole number of bits (MLX affine 8-bit g32's 9.0), so no point lies on
    the plot's edge, where a number has one side less."""
    bits = [row["bits_per_weight"] for row in rows]
    return [math.ceil(min(bits)) - 1, math.floor(max(bits)) + 1], domain_around([row[error] for row in rows], log=True)


def front_numbers(rows: list[dict], error: str, height: float) -> list[dict]:
    """Each format's row with `number` (1, 2, … along the Pareto front by bits per weight; None off
    it) and `number side`, a key of NUMBER_SPOTS: the first spot, in the narrowest plot, inside the
    plot, over no other point and clear of every number placed before. Two numbers side by side
    keep their points' order, so they only part as the plot widens. Where no spot is clear (none
    on notebook 11's two dozen synthetic points, tests/apps/test_chat_page.py) the one with fewest
    clashes is taken: every point on the front is numbered."""
    x_domain, y_domain = _domains(rows, error)
    xs = [pixel_position(row["bits_per_weight"], x_domain, NARROWEST_PLOT) for row in rows]
    ys = [height - pixel_position(row[error], y_domain, height, log=True) for row in rows]
    front = sorted((i for i, row in enumerate(rows) if row["on_front"]), key=lambda i: rows[i]["bits_per_weight"])
    placed: list[tuple[tuple[float, float, float, float], float]] = []  # each number's box and its point's x
    sides: dict[int, str] = {}
    for number, i in enumerate(front, start=1):

        def clashes(box, x=xs[i], i=i) -> int:
            outside = not (box[0] >= 0 and box[2] <= NARROWEST_PLOT and box[1] >= 0 and box[3] <= height)
            covered = sum(
                box[0] - _POINT_RADIUS < xs[j] < box[2] + _POINT_RADIUS
                and box[1] - _POINT_RADIUS < ys[j] < box[3] + _POINT_RADIUS
                for j in range(len(rows))
                if j != i
            )
            # a space between two numbers, so that 4 and 5 side by side never read as 45
            met = sum(
                not (
                    box[3] <= b[1]
                    or b[3] <= box[1]
                    or (box[2] + _NUMBER_GAP <= b[0] and x <= bx)
                    or (b[2] + _NUMBER_GAP <= box[0] and bx <= x)
                )
                for b, bx in placed
            )
            return outside + covered + met

        boxes = {side: number_box(side, xs[i], ys[i], number) for side in NUMBER_SPOTS}
        sides[i] = min(NUMBER_SPOTS, key=lambda side: clashes(boxes[side]))  # the first of the fewest
        placed.append((boxes[sides[i]], xs[i]))
    numbers = {i: n for n, i in enumerate(front, start=1)}
    return [dict(row, number=numbers.get(i), **{"number side": sides.get(i)}) for i, row in enumerate(rows)]


def front_chart(rows: list[dict], source: str, *, error: str, error_words: str, note: str) -> Figure:
    """An error measure against bits per weight for every format on `source` (notebook 12: KL
    divergence), the Pareto front joined and every format on it numbered, the numbers' key under
    the title. A number fits beside a point where a name does not: a dozen formats crowd between 4
    and 5 bits, and a phone's plot is 260 px wide. The front is told from the rest by shape as well
    as colour (a filled circle on it, a square off it), so no reader needs the colours apart.
    `rows` carry `on_front` (lab.study.compare.pareto_front)."""
    height = 360
    measured = front_numbers([row for row in rows if row["source"] == source and row[error] is not None], error, height)
    on_front = sorted((row for row in measured if row["on_front"]), key=lambda row: row["number"])
    frame = alt.Data(
        values=[
            dict(row, front="on the front" if row["on_front"] else "dominated", label=str(row["number"] or ""))
            for row in measured
        ]
    )
    x_domain, y_domain = _domains(measured, error)
    base = alt.Chart(frame).encode(
        x=alt.X("bits_per_weight:Q", scale=alt.Scale(domain=x_domain, nice=False), title="bits per weight"),
        y=alt.Y(
            f"{error}:Q",
            scale=alt.Scale(type="log", domain=y_domain, nice=False),
            axis=decade_axis(y_domain),
            title=f"{error_words} (log axis)",
        ),
        tooltip=[
            "title:N",
            "bits_per_weight:Q",
            alt.Tooltip(f"{error}:Q", format=".4f"),
            "front:N",
            alt.Tooltip("label:N", title="number"),
        ],
    )
    kinds = ["on the front", "dominated"]
    points = base.mark_point(size=110, filled=True).encode(
        color=alt.Color(
            "front:N",
            scale=alt.Scale(domain=kinds, range=[PALETTE[3], "#9aa5b1"]),
            title=None,
            legend=fitted_legend(kinds),
        ),
        # the same legend as the colour's, so Vega-Lite draws one legend of both
        shape=alt.Shape(
            "front:N",
            scale=alt.Scale(domain=kinds, range=["circle", "square"]),
            title=None,
            legend=fitted_legend(kinds),
        ),
    )
    line = base.transform_filter("datum.on_front").mark_line(color=PALETTE[3]).encode(order="bits_per_weight:Q")
    numbers = [
        base.transform_filter(alt.datum["number side"] == side)
        .mark_text(fontSize=TEXT_PX, fontWeight="bold", lineHeight=LINE_PX, color=FOREGROUND, **spot)
        .encode(text="label:N")
        for side, spot in NUMBER_SPOTS.items()
    ]
    # the key in lines of whole entries: a format's name is never split across two lines
    key = [f"On the front: {on_front[0]['number']} {on_front[0]['title']}"] if on_front else []
    for row in on_front[1:]:
        entry = f"{row['number']} {row['title']}"
        # room for " · ", the entry, and the " ·" or "." that ends a line
        if len(key[-1]) + 3 + len(entry) + 2 <= LINE_CHARS:
            key[-1] += f" · {entry}"
        else:
            key[-1] += " ·"
            key.append(entry)
    if key:
        key[-1] += "."
    description = (
        f"{error_words.capitalize()}, on a log axis, against bits per weight for {len(measured)} formats on {source}. "
        f"{len(on_front)} are on the Pareto front, no other format both as cheap and as accurate, numbered by "
        "bits: "
        + "; ".join(
            f"{row['number']}, {row['title']} at {row['bits_per_weight']:g} bits, {error_words} "
            f"{format_number(row[error], 3)}"
            for row in on_front
        )
        + "."
    )
    return styled(
        alt.layer(line, points, *numbers).properties(
            height=height, title=chart_title("Error against cost", source, note, *key)
        ),
        description,
    )
