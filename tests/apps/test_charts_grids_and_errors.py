"""The grid, difference and real-weights charts hold the numbers they claim to draw.

Each test reads the chart's inline data back out of its Vega-Lite spec and compares it with the
codec (or the report) computed independently here.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from lab import device
from lab.codes import e2m1
from lab.formats import mxfp4, nvfp4
from lab.teach import charts


def layer_values(chart, field: str) -> list[dict]:
    """The inline rows of the one layer whose data has `field`."""
    spec = chart.to_dict()
    found = [layer["data"]["values"] for layer in spec.get("layer", [spec]) if field in layer["data"]["values"][0]]
    assert len(found) == 1, f"expected one layer with {field!r}"
    return found[0]


def test_block_grid_chart_draws_the_mxfp4_levels_at_the_blocks_scale():
    block = np.random.default_rng(3).normal(0, 1, 32).astype(np.float32)
    block[4] = 7.0  # beyond 6 × the floor rule's scale: it clips
    tensor = mxfp4.quantize(block, rule="ocp")
    levels = e2m1.VALUES * float(tensor.scales[0])
    chart = charts.block_grid_chart(block, levels)
    drawn = sorted(row["level"] for row in layer_values(chart, "level"))
    # the levels as the codec decodes every one of the 16 codes with this block's scale byte
    every_code = mxfp4.from_parts(np.arange(32) % 16, tensor.scale_bytes).dequantize()
    assert drawn == sorted(set((every_code.astype(np.float64) + 0.0).tolist()))
    assert len(drawn) == 15  # −0 and +0 are one rule
    assert [row["weight"] for row in layer_values(chart, "weight")] == block.astype(np.float64).tolist()
    shaded = layer_values(chart, "from")
    assert shaded[0]["to"] == min(drawn)
    assert shaded[1]["from"] == max(drawn) == 6 * float(tensor.scales[0]) < 7.0 < shaded[1]["to"]


def test_block_grid_chart_takes_an_nvfp4_groups_levels_with_the_tensor_factor():
    weights = np.random.default_rng(9).normal(0, 1, (1, 32)).astype(np.float32)
    tensor = nvfp4.quantize(weights, global_scale=nvfp4.tensor_amax(weights))
    group = 1
    levels = e2m1.VALUES * float(tensor.block_scales[0, group]) * tensor.tensor_factor
    chart = charts.block_grid_chart(weights[0, 16:], levels)
    drawn = np.array(sorted(row["level"] for row in layer_values(chart, "level")))
    # every decoded weight of the group sits on a drawn level (to float32 rounding)
    decoded = tensor.dequantize()[0, 16:].astype(np.float64)
    gaps = np.abs(decoded[:, None] - drawn[None, :]).min(axis=1)
    assert np.all(gaps <= 1e-6 * np.abs(decoded))
    assert drawn.max() == pytest.approx(6 * float(tensor.block_scales[0, group]) * tensor.tensor_factor)


def test_difference_chart_holds_the_pane_breakdowns():
    pytest.importorskip("mlx.core")
    from lab.formats import q4k

    report = device.run_q4k(q4k.presentation_fixture())
    rows = charts.difference_rows(report)
    chart = charts.difference_chart(report)
    assert chart is not None and chart.to_dict()["data"]["values"] == rows
    expected = []
    for source, comparisons in [("gguf-py", report.reference_checks)] + [
        (r.device, r.comparisons) for r in report.runs
    ]:
        for comparison in comparisons:
            if comparison.unit == "weight" and comparison.breakdowns:
                breakdown = comparison.breakdowns[0]
                expected += [
                    (f"{source}: {comparison.name}", float(v)) for v in breakdown.max_abs_diff.reshape(-1).tolist()
                ]
    assert [(row["compared"], row["max abs diff"]) for row in rows] == expected
    assert all("(" not in row["group"] for row in rows)  # groups named in words, not tuples
    assert any(row["group"] == "subblock 1" for row in rows)


def test_difference_chart_is_none_where_mlx_and_the_lab_agree_bit_for_bit():
    pytest.importorskip("mlx.core")
    report = device.run_block("mxfp4", w=np.linspace(-5, 7, 32, dtype=np.float32).reshape(1, 32), rule="mlx")
    rows = charts.difference_rows(report)
    assert rows and all(row["max abs diff"] == 0 for row in rows)
    assert charts.difference_chart(report) is None


def test_difference_chart_is_none_without_weight_comparisons():
    report = device.DeviceReport("block", "mxfp4", "MXFP4", "no MLX", available=False, install_hint="pip install mlx")
    assert charts.difference_rows(report) == [] and charts.difference_chart(report) is None


RECORDS = [
    {"tensor": "encoder.layer.0.attention.self.query.weight", "format": "NVFP4", "relative_rmse": 0.09,
     "outlier_share": 0.001, "skipped": None},
    {"tensor": "encoder.layer.1.intermediate.dense.weight", "format": "NVFP4", "relative_rmse": 0.12,
     "outlier_share": 0.004, "skipped": None},
    {"tensor": "encoder.layer.1.output.dense.weight", "format": "NVFP4", "relative_rmse": None,
     "outlier_share": None, "skipped": "skipped: rows"},
    {"tensor": "encoder.layer.1.output.dense.weight", "format": "Q4_K", "relative_rmse": 0.5,
     "outlier_share": 0.004, "skipped": None},
]  # fmt: skip


def test_tensor_error_and_outlier_charts_hold_the_chosen_formats_measurements():
    bars = charts.tensor_error_chart(RECORDS, "NVFP4").to_dict()["data"]["values"]
    assert [(row["tensor"], row["relative RMSE"], row["layer type"]) for row in bars] == [
        ("encoder.layer.0.attention.self.query.weight", 0.09, "attention.self.query"),
        ("encoder.layer.1.intermediate.dense.weight", 0.12, "intermediate.dense"),
    ]
    points = charts.outlier_chart(RECORDS, "NVFP4").to_dict()["data"]["values"]
    assert [(row["outlier share"], row["relative RMSE"]) for row in points] == [(0.001, 0.09), (0.004, 0.12)]
    assert charts.layer_type("embeddings.word_embeddings.weight") == "embeddings.word_embeddings"


def test_the_pane_writes_shapes_in_words_and_differences_as_a_table():
    pytest.importorskip("mlx.core")
    from lab.formats import q4k

    markdown = device.report_markdown(device.run_q4k(q4k.presentation_fixture()))
    assert not re.search(r"\(\d+(, \d+)*,?\)", markdown)
    assert "| subblock | not identical | beyond rounding | max abs diff |" in markdown
    assert "| subblock 1 | 32 | 32 | 1.62 |" in markdown


def test_in_words_rewrites_python_tuples_only():
    from lab.device.render import in_words

    assert in_words("returned float16 of .shape (2, 512).") == "returned float16 of shape 2 × 512."
    assert in_words("got (256,) and (1, 32)") == "got 256 and 1 × 32"
    assert in_words("3 values (1 NaN, 2 +inf), 32 (none)") == "3 values (1 NaN, 2 +inf), 32 (none)"
