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
    scale, height = row_scale(len(formats), 1, 18)
    order = formats
    points = (
        alt.Chart(frame)
        .mark_point(size=120, filled=True)
        .encode(
            x=alt.X(
                "token:Q", scale=alt.Scale(domain=[0, tokens], nice=False), title="first token unlike the reference's"
            ),
            y=alt.Y("format:N", sort=order, scale=scale, axis=None),
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
    same = sum(row["position"] is None for row in rows)
    description = (
        f"For {len(formats)} formats and {len(prompts)} prompts, the first generated token that differs from the "
        f"reference's; {same} of {len(rows)} answers match it for all {tokens} tokens: "
        + "; ".join(f"{v['format']}, {v['prompt']}: {v['where']}" for v in values)
    )
    return styled(
        (points + row_names(alt.Chart(frame), "format", order, 1)).properties(
            height=height,
            title=chart_title("Where the answers depart", f"A mark at {tokens}: the same to the end."),
        ),
        description,
    )
