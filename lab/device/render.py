"""The pane's report as markdown, in words a reader follows: "row 0, element 5", "1 × 32", never a tuple."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import numpy as np

from lab.device.report import non_finite_summary
from lab.numbers import format_number, position_text

if TYPE_CHECKING:
    from lab.device.report import (
        Breakdown,
        Comparison,
        DeviceReport,
        DeviceRun,
        MatmulComparison,
        NonFinite,
        RoundTrip,
    )

#: how many differing elements a comparison lists one by one; the rest are only counted
LISTED_DIFFERENCES = 32
#: how many groups a verdict names before it says "and N more"
NAMED_GROUPS = 8
#: names for the last axes of an index, innermost first; further axes are "axis k"


def shape_text(shape: tuple[int, ...]) -> str:
    """(32,) -> '32'; (1, 32) -> '1 × 32'."""
    return " × ".join(str(int(n)) for n in shape)


def report_markdown(report: DeviceReport) -> str:
    name = report.title or report.kind
    if not report.available and report.install_hint is not None:
        lines = [f"**On-device check ({name}): MLX is not available here.** {report.message}"]
        lines.append(f"\nTo get it: `{report.install_hint}`")
        return "\n".join(lines)
    shape = f", {shape_text(report.shape)}" if report.shape else ""
    version = f" with MLX {report.mlx_version}" if report.mlx_version else ""
    lines = [f"### On-device check: {name}{shape}{version}", ""]
    parameters = ", ".join(f"{key}={value}" for key, value in report.parameters.items())
    if parameters:
        lines += [f"Parameters: {parameters}", ""]
    lines += [report.message, ""]
    if report.reference_checks:
        lines += [
            "#### The lab against gguf-py (no MLX involved)",
            "",
            *_comparison_table(report.reference_checks),
            "",
        ]
    for run in report.runs:
        lines += _run_markdown(run)
    return in_words("\n".join(lines).rstrip() + "\n")


#: a shape quoted as MLX's `.shape` prints it, "(256,)" or "(2, 512)"
_QUOTED_SHAPE = re.compile(r"\.shape \((\d+(?:, \d+)*),?\)")
#: any other Python tuple of integers in a message MLX or the lab wrote
_TUPLE = re.compile(r"\((\d+(?:, \d+)+|\d+,)\)")


def in_words(markdown: str) -> str:
    """Notes and refusals quote shapes as Python prints them; the pane writes them as '2 × 512'."""
    markdown = _QUOTED_SHAPE.sub(lambda found: "shape " + _dims_text(found.group(1)), markdown)
    return _TUPLE.sub(lambda found: _dims_text(found.group(1)), markdown)


def _dims_text(dims: str) -> str:
    return " × ".join(part.strip() for part in dims.split(",") if part.strip())


def _run_markdown(run: DeviceRun) -> list[str]:
    lines = [f"#### Device: {run.device} ({run.device_name})", ""]
    if run.comparisons:
        lines += [*_comparison_table(run.comparisons), ""]
    round_trip = run.round_trip
    for comparison in run.comparisons:
        if round_trip is not None and comparison is round_trip.comparison:
            lines += _round_trip_lines(round_trip)
        else:
            lines += _difference_details(comparison)
    for flag in run.non_finite:
        lines += [f"- **{flag.source} holds {non_finite_summary(flag)}.**", *_non_finite_lines(flag)]
    if run.non_finite:
        lines.append("")
    if run.matmul is not None:
        lines += _matmul_markdown(run.matmul)
    if run.default_dtype is not None:
        lines.append(f"- `mx.dequantize` without `dtype=` returns **{run.default_dtype}**.")
    lines += [f"- {note}" for note in run.notes]
    lines += [f"- MLX refused: {refusal}" for refusal in run.refusals]
    return lines + [""]


def _number(value) -> str:
    return "—" if value is None else format_number(value, 6)


def _comparison_table(comparisons) -> list[str]:
    lines = [
        "| compared | identical | within rounding | max abs diff | max ulps | verdict |",
        "|---|---|---|---|---|---|",
    ]
    for c in comparisons:
        lines.append(
            f"| {c.name} | {c.identical} of {c.total} {c.unit}s | {c.within_rounding} ({c.rounding}) | "
            f"{_number(c.max_abs_diff)} | {_number(c.max_ulps)} | {c.verdict} |"
        )
    return lines


def _difference_details(comparison: Comparison, original: np.ndarray | None = None) -> list[str]:
    """The breakdowns and the first differing items; with `original`, the learner's weight beside each."""
    lines = []
    if comparison.note:
        lines += [f"*{comparison.name}:* {comparison.note}", ""]
    if not comparison.differences:
        return lines
    for breakdown in comparison.breakdowns:
        lines += _breakdown_lines(breakdown)
    shown = len(comparison.differences)
    # the round trip shows the learner's weight beside both round trips
    header = (
        "| where | group | original w | lab round trip | MLX round trip | MLX − lab |"
        if original is not None
        else "| where | group | reference | MLX | MLX − reference |"
    )
    lines += [
        f"*{comparison.name}: first {shown} of {comparison.differing} {comparison.unit}s {comparison.listing}*",
        "",
        header,
        "|---" * header.count(" |") + "|",
    ]
    # scales and biases are listed one per group; codes and weights one per element
    item = "scale group" if comparison.unit in ("scale", "bias") else "element"
    for d in comparison.differences:
        before = "" if original is None else f" {format_number(float(original[d.index]), 9)} |"
        lines.append(
            f"| {position_text(d.index, item)} | {position_text(d.group, _group_word(comparison))} |{before} "
            f"{format_number(d.reference, 9)} | {format_number(d.mlx, 9)} | {format_number(d.signed_difference, 3)} |"
        )
    return lines + [""]


def _group_word(comparison: Comparison) -> str:
    return comparison.breakdowns[0].label if comparison.breakdowns else "group"


def _breakdown_lines(breakdown: Breakdown) -> list[str]:
    """The groups that differ, one table row each (the first NAMED_GROUPS of them)."""
    groups = breakdown.groups_with_differences()
    if not groups:
        return []
    lines = [
        f"*Per {breakdown.label} of {breakdown.size}, where they differ:*",
        "",
        f"| {breakdown.label} | not identical | beyond rounding | max abs diff |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {position_text(group, breakdown.label)} | {int(breakdown.not_identical[group])} | "
        f"{int(breakdown.beyond_rounding[group])} | {format_number(float(breakdown.max_abs_diff[group]), 3)} |"
        for group in groups[:NAMED_GROUPS]
    ]
    if len(groups) > NAMED_GROUPS:
        lines.append(f"| and {len(groups) - NAMED_GROUPS} more {breakdown.label}s | | | |")
    return lines + [""]


def _round_trip_lines(round_trip: RoundTrip) -> list[str]:
    """MLX's own round trip beside the lab's: how far each lands from w, and where they part."""
    comparison = round_trip.comparison
    lines = [
        f"*MLX's own round trip (mx.quantize, then mx.dequantize with dtype=float32) against the lab's "
        f"(quantize, then dequantize()): {comparison.verdict}.* Largest distance from the original "
        f"weights: lab {format_number(round_trip.lab_max_error, 6)}, MLX {format_number(round_trip.mlx_max_error, 6)}.",
        "",
    ]
    return lines + _difference_details(comparison, original=round_trip.original)


def _non_finite_lines(flag: NonFinite) -> list[str]:
    if len(flag.first) < 2:
        return []
    shown = flag.first[:NAMED_GROUPS]
    located = "; ".join(
        f"{position_text(value.index)} = {format_number(value.value, 6)} ({position_text(value.group, 'scale group')}, {value.scale})"
        for value in shown
    )
    more = f" and {flag.count - len(shown)} more" if flag.count > len(shown) else ""
    return [f"  - the first {len(shown)}: {located}{more}"]


def _matmul_markdown(matmul: MatmulComparison) -> list[str]:
    with_original = matmul.quantization_error is not None
    lines = [
        f"*mx.quantized_matmul with x of shape {shape_text(matmul.x_shape)}: {matmul.verdict}*",
        "",
        "| output | reference (float64) | MLX | signed error | relative | float32 bound |"
        + (" ŷ − y (quantization) |" if with_original else ""),
        "|---|---|---|---|---|---|" + ("---|" if with_original else ""),
    ]
    flat = list(np.ndindex(matmul.y_reference.shape))
    for index in flat[:LISTED_DIFFERENCES]:
        lines.append(
            f"| {position_text(index, 'output')} | {format_number(matmul.y_reference[index], 9)} | {format_number(matmul.y_mlx[index], 9)} | "
            f"{format_number(matmul.signed_error[index], 3)} | {format_number(matmul.relative_error[index], 3)} | "
            f"{format_number(matmul.accumulation_bound[index], 3)} |"
            + (f" {format_number(matmul.quantization_error[index], 3)} |" if with_original else "")
        )
    if len(flat) > LISTED_DIFFERENCES:
        lines.append(f"| … {len(flat) - LISTED_DIFFERENCES} more |")
    if matmul.note:
        lines += ["", matmul.note]
    return lines + [""]
