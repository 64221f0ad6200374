"""A chat model's answers under every format (notebook 12): where each greedy answer first departs."""

from __future__ import annotations

import altair as alt

from lab.teach.charts._layout import PALETTE, chart_title, fitted_legend, row_names, row_scale, styled


def divergence_chart(rows: list[dict], tokens: int, prompts: list[str]) -> alt.Chart:
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
    frame = alt.Data(values=values)
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
