"""Every on-device report as markdown, in words a reader follows: "row 0, element 5", "1 × 32", never a tuple.

One renderer for every pane: the same words where nothing ran, the same heading, then each
device's run as its pane filled it (a block's comparisons, a model's Linears, a chat model's
answers). It reads a report's fields and imports none of lab.device.report's types, which hand
themselves here (`DeviceReport.to_markdown`); the limits on what a report lists live here too,
below the comparisons that honour them.
"""

from __future__ import annotations

import re

import numpy as np

from lab.numbers import format_number, position_text
from lab.text import code_name, shown

#: how many differing elements a comparison lists one by one; the rest are only counted
LISTED_DIFFERENCES = 32
#: how many groups a verdict names before it says "and N more"
NAMED_GROUPS = 8


def shape_text(shape: tuple[int, ...]) -> str:
    """(32,) -> '32'; (1, 32) -> '1 × 32'."""
    return " × ".join(str(int(n)) for n in shape)


def non_finite_summary(flag) -> str:
    """'3 non-finite values (1 NaN, 2 +inf), first at row 0, element 4 (row 0, scale group 0, scale byte 0xFF)'."""
    kinds = {"NaN": flag.nan, "+inf": flag.positive_infinity, "−inf": flag.negative_infinity}
    counted = ", ".join(f"{count} {name}" for name, count in kinds.items() if count)
    first = flag.first[0]
    where = f"{position_text(first.index)} ({position_text(first.group, 'scale group')}, {first.scale})"
    return f"{flag.count} non-finite value{'s' if flag.count != 1 else ''} ({counted}), first at {where}"


def report_markdown(report) -> str:
    """A DeviceReport of any pane: why nothing ran, or a heading and each device's run."""
    name = report.title or report.format
    if not report.available:
        return (
            f"**On-device check ({name}): MLX is not available here.** {report.message}\n\n"
            f"To get it: `{report.install_hint}`"
        )
    shape = f", {shape_text(report.shape)}" if report.shape else ""
    version = f" with MLX {report.mlx_version}" if report.mlx_version else ""
    lines = [f"### On-device check: {name}{shape}{version}", ""]
    parameters = ", ".join(f"{key}={value}" for key, value in report.parameters.items())
    if parameters:
        lines += [f"Parameters: {parameters}", ""]
    lines += [*_workload(report), report.message, ""]
    if report.reference_checks:
        lines += [
            "#### The lab against gguf-py (no MLX involved)",
            "",
            *_comparison_table(report.reference_checks),
            "",
        ]
    for run in report.runs:
        lines += [f"#### Device: {run.device} ({run.device_name})", ""]
        lines += _RUN_LINES.get(report.pane, _block_run)(run)
        lines += [f"- MLX refused: {refusal}" for refusal in run.refusals] + [""]
    return in_words("\n".join(lines).rstrip() + "\n")


def _workload(report) -> list[str]:
    """What a model pane ran, before the verdicts: the sentences embedded, or the Linears and fallbacks."""
    if report.pane == "model" and report.runs:
        return [f"{report.sentences} sentences.", ""]
    if report.pane == "chat" and report.runs:
        run = report.runs[0]
        return [
            f"{run.quantized} of {len(run.layers)} Linears through `mx.quantized_matmul`, {report.fallbacks} "
            "fallbacks through `mx.matmul` on the lab's decoded weights.",
            "",
        ]
    return []


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


def _block_run(run) -> list[str]:
    """A block's (or Q4_K bytes') run: the comparison table, where they differ, the matmul, the notes."""
    lines = []
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
    return lines + [f"- {note}" for note in run.notes]


def _model_run(run) -> list[str]:
    """The embedding model's run: the verdict, the embeddings, and one row per Linear."""
    rows = [
        f"| {code_name(layer.layer.removeprefix('encoder.'))} | {layer.path} | {layer.max_abs_diff:.3g} "
        f"| {layer.bound_at_max:.3g} | {layer.bound_used:.2%} | {'yes' if layer.refused else 'no'} |"
        for layer in run.layers
    ]
    return [
        f"{run.verdict}. Embeddings: largest |MLX − lab| in a component {run.embedding_max_abs_diff:.3g}, "
        f"smallest cosine {run.embedding_min_cosine:.9f}.",
        "",
        "| Linear | MLX path | max abs diff | its bound | share of bound used (max) | refused |",
        "|---|---|---:|---:|---:|---|",
        *rows,
        "",
    ]


def _chat_run(run) -> list[str]:
    """The chat model's run: its Linears against the bound in one sentence, and one row per prompt."""
    worst = run.worst_layer
    verdict = "within" if all(layer.within_bound for layer in run.layers) else "**beyond**"
    lines = [
        f"Every Linear's output {verdict} the float32 accumulation bound (at most {worst.bound_used:.1%} of it "
        f"used, in {shown(worst.layer)}; largest difference "
        f"{format_number(max(layer.max_abs_diff for layer in run.layers), 3)}).",
        "",
        "| prompt | the same tokens | largest logit difference | the lab's margin where they part |",
        "|---:|---|---:|---:|",
    ]
    for index, answer in enumerate(run.answers, start=1):
        same = (
            f"all {len(answer.lab_ids)}" if answer.first_divergence is None else f"the first {answer.first_divergence}"
        )
        margin = "—" if answer.lab_margin is None else format_number(answer.lab_margin, 3)
        lines.append(f"| {index} | {same} | {format_number(answer.max_logit_diff, 3)} | {margin} |")
    return lines + [""]


#: what each pane's run shows; the block's sections serve Q4_K bytes too
_RUN_LINES = {"model": _model_run, "chat": _chat_run}


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


def _difference_details(comparison, original: np.ndarray | None = None) -> list[str]:
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


def _group_word(comparison) -> str:
    return comparison.breakdowns[0].label if comparison.breakdowns else "group"


def _breakdown_lines(breakdown) -> list[str]:
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


def _round_trip_lines(round_trip) -> list[str]:
    """MLX's own round trip beside the lab's: how far each lands from w, and where they part."""
    comparison = round_trip.comparison
    lines = [
        f"*MLX's own round trip (mx.quantize, then mx.dequantize with dtype=float32) against the lab's "
        f"(quantize, then dequantize()): {comparison.verdict}.* Largest distance from the original "
        f"weights: lab {format_number(round_trip.lab_max_error, 6)}, MLX {format_number(round_trip.mlx_max_error, 6)}.",
        "",
    ]
    return lines + _difference_details(comparison, original=round_trip.original)


def _non_finite_lines(flag) -> list[str]:
    if len(flag.first) < 2:
        return []
    shown = flag.first[:NAMED_GROUPS]
    located = "; ".join(
        f"{position_text(value.index)} = {format_number(value.value, 6)} ({position_text(value.group, 'scale group')}, {value.scale})"
        for value in shown
    )
    more = f" and {flag.count - len(shown)} more" if flag.count > len(shown) else ""
    return [f"  - the first {len(shown)}: {located}{more}"]


def _matmul_markdown(matmul) -> list[str]:
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
