"""A real model's tensors through one format: relative RMSE per tensor and outliers against error,
coloured by the tensor's layer type, read from its name (notebook 09)."""

from __future__ import annotations

import re

import altair as alt

from lab.numbers import format_number
from lab.teach.charts._layout import PALETTE, Figure, chart_title, inline_data, row_names, row_scale, styled, wrap

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


def tensor_error_chart(records: list[dict], format_name: str) -> Figure:
    """Relative RMSE of every tensor the format took (worst first), coloured by layer type;
    `records` are a real-weights report's records()."""
    rows = _measured(records, format_name)
    frame = alt.Data(
        values=[
            {
                "tensor": row["tensor"],
                "layer type": layer_type(row["tensor"]),
                "relative RMSE": row["relative_rmse"],
                "name": wrap(_short_tensor(row["tensor"])),
            }
            for row in rows
        ]
    )
    order = alt.EncodingSortField("relative RMSE", order="descending")
    label_lines = max([len(wrap(_short_tensor(row["tensor"]))) for row in rows] or [1])
    y_scale, height = row_scale(len(rows), label_lines, 7)
    base = alt.Chart(frame)
    bars = base.mark_bar().encode(
        x=alt.X("relative RMSE:Q"),
        y=alt.Y("tensor:N", sort=order, scale=y_scale, axis=None),
        color=alt.Color("layer type:N", scale=alt.Scale(range=LAYER_COLOURS), legend=alt.Legend(columns=1)),
        tooltip=["tensor:N", "layer type:N", "relative RMSE:Q"],
    )
    names = row_names(base, "tensor", order, label_lines)
    ranked = sorted(rows, key=lambda row: row["relative_rmse"], reverse=True)
    description = f"Bars of the relative RMSE of {len(rows)} tensors in {format_name}, worst first" + (
        f": worst {_short_tensor(ranked[0]['tensor'])} at {format_number(ranked[0]['relative_rmse'], 3)}, best "
        f"{_short_tensor(ranked[-1]['tensor'])} at {format_number(ranked[-1]['relative_rmse'], 3)}."
        if rows
        else "."
    )
    return styled(
        (bars + names).properties(
            height=max(80, height), title=chart_title("Relative RMSE per tensor", f"{format_name}, worst first.")
        ),
        description,
    )


def outlier_chart(records: list[dict], format_name: str) -> Figure:
    """Outlier share (weights beyond 6 × the tensor's RMS) against relative RMSE, one point per tensor."""
    rows = _measured(records, format_name)
    frame = inline_data(
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
    return styled(points.properties(height=300, title=chart_title("Outliers against error", note)), description)
