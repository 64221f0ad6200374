"""What the pane reports: comparisons, MLX's own round trip, non-finite values, runs per device.

Plain frozen dataclasses; `DeviceReport.as_dict()` turns one into lists and dicts for JSON and
notebooks, and lab.device.render's `report_markdown(report)` renders it; this module knows no renderer.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, is_dataclass

import numpy as np

from lab.numbers import position_text


@dataclass(frozen=True)
class Difference:
    """One element where the two sides are not bit-identical."""

    index: tuple[int, ...]  # position in the tensor
    group: tuple[int, ...]  # the scale group (or Q4_K subblock) it belongs to
    reference: float
    mlx: float

    @property
    def signed_difference(self) -> float:
        return self.mlx - self.reference


@dataclass(frozen=True)
class Breakdown:
    """A comparison summed over groups of `size` consecutive elements along the last axis."""

    label: str
    size: int
    not_identical: np.ndarray  # per group: elements that are not bit-identical
    beyond_rounding: np.ndarray  # per group: elements outside the rounding the comparison allows
    max_abs_diff: np.ndarray  # per group

    def groups_with_differences(self) -> list[tuple[int, ...]]:
        return [tuple(int(i) for i in where) for where in np.argwhere(self.not_identical > 0)]


@dataclass(frozen=True)
class Comparison:
    """The lab's side (or gguf-py's) against MLX's, element by element."""

    name: str
    unit: str  # what one compared item is: "byte", "scale", "bias" or "weight"
    total: int
    identical: int
    within_rounding: int
    max_abs_diff: float | None  # None where the items are codes, not numbers
    max_ulps: int | None  # in units of `rounding`'s dtype
    rounding: str  # what the comparison allows beyond bit identity, in words
    differences: tuple[Difference, ...]  # the first few of the `differing` items
    differing: int  # how many items fall in the listed category
    listing: str  # which items are listed: "beyond rounding" where there are any, else "not bit-identical"
    breakdowns: tuple[Breakdown, ...]
    verdict: str
    note: str = ""


@dataclass(frozen=True)
class MatmulComparison:
    """mx.quantized_matmul against the float64 dot product of the reference weights with x."""

    x_shape: tuple[int, ...]
    y_reference: np.ndarray  # float64, [M, N]
    y_mlx: np.ndarray  # float32 as returned (times the tensor factor where MLX cannot apply it)
    signed_error: np.ndarray  # y_mlx - y_reference
    relative_error: np.ndarray  # signed_error / |y_reference|, NaN where y_reference is 0
    accumulation_bound: np.ndarray  # K * 2^-24 * sum |w x|: what float32 accumulation may cost
    max_abs_error: float
    verdict: str
    quantization_error: np.ndarray | None = None  # reference ŷ - y of the original weights
    note: str = ""


@dataclass(frozen=True)
class NonFiniteValue:
    """One NaN or infinity MLX returned, with the scale of the group it came from."""

    index: tuple[int, ...]
    value: float
    group: tuple[int, ...]
    scale: str  # the group's scale as MLX holds it, in words: "scale byte 0xFF", "scale 0.25"


@dataclass(frozen=True)
class NonFinite:
    """Every non-finite value in one MLX result: counted by kind, the first few located."""

    source: str  # which MLX result: "MLX's round trip", "mx.dequantize of the lab's bytes"
    nan: int
    positive_infinity: int
    negative_infinity: int
    first: tuple[NonFiniteValue, ...]

    @property
    def count(self) -> int:
        return self.nan + self.positive_infinity + self.negative_infinity


@dataclass(frozen=True)
class RoundTrip:
    """MLX's own round trip, mx.dequantize(mx.quantize(w)), beside the lab's and the original weights.

    `comparison` (MLX's round trip against the lab's) is also among the run's comparisons.
    """

    original: np.ndarray  # the learner's weights as float32
    lab: np.ndarray  # the lab tensor's dequantize()
    mlx: np.ndarray  # mx.dequantize(*mx.quantize(w), dtype=float32)
    lab_max_error: float  # max |lab - original|, inf where a weight came back infinite or NaN
    mlx_max_error: float  # max |mlx - original|
    comparison: Comparison


@dataclass(frozen=True)
class DeviceRun:
    """Everything one MLX device did with the block, and what it refused to do."""

    device: str  # "cpu", "gpu (Metal)", "gpu (CUDA)"
    device_name: str  # what mx.device_info reports
    comparisons: tuple[Comparison, ...]
    matmul: MatmulComparison | None
    default_dtype: str | None  # what mx.dequantize returns when dtype is not given
    forgotten_global_scale_factor: float | None  # with a tensor scale: weights without it / with it
    notes: tuple[str, ...]
    refusals: tuple[str, ...]  # steps MLX refused, with its message
    round_trip: RoundTrip | None = None  # only when the pane had the original weights
    non_finite: tuple[NonFinite, ...] = ()  # one entry per MLX result holding NaN or infinity

    @property
    def verdict(self) -> str:
        parts = [f"{comparison.name}: {comparison.verdict}" for comparison in self.comparisons]
        if self.matmul is not None:
            parts.append(f"quantized_matmul: {self.matmul.verdict}")
        parts.extend(f"{flag.source} holds {non_finite_summary(flag)}" for flag in self.non_finite)
        parts.extend(f"refused: {refusal}" for refusal in self.refusals)
        return "; ".join(parts) if parts else "nothing ran"


@dataclass(frozen=True)
class DeviceReport:
    """The on-device pane's answer: one run per MLX device, or why there is none."""

    available: bool  # MLX could be imported
    kind: str  # the registry name of the format ("mxfp4", "affine4_g64") or "q4k"
    message: str
    install_hint: str | None = None
    mlx_version: str | None = None
    shape: tuple[int, ...] = ()
    parameters: dict = field(default_factory=dict)  # group_size, bits, mode and the format's own settings
    reference_checks: tuple[Comparison, ...] = ()  # device-independent: the lab against gguf-py
    runs: tuple[DeviceRun, ...] = ()
    title: str = ""  # how pages name the format ("MXFP4"); the kind where empty

    def as_dict(self) -> dict:
        return _plain(self)


def non_finite_summary(flag: NonFinite) -> str:
    """'3 non-finite values (1 NaN, 2 +inf), first at row 0, element 4 (row 0, scale group 0, scale byte 0xFF)'."""
    kinds = {"NaN": flag.nan, "+inf": flag.positive_infinity, "−inf": flag.negative_infinity}
    counted = ", ".join(f"{count} {name}" for name, count in kinds.items() if count)
    first = flag.first[0]
    where = f"{position_text(first.index)} ({position_text(first.group, 'scale group')}, {first.scale})"
    return f"{flag.count} non-finite value{'s' if flag.count != 1 else ''} ({counted}), first at {where}"


def _plain(value):
    """A report value as plain Python (lists, dicts, floats) for JSON and notebooks."""
    if is_dataclass(value):
        plain = {item.name: _plain(getattr(value, item.name)) for item in fields(value)}
        if isinstance(value, DeviceRun):
            plain["verdict"] = value.verdict
        return plain
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (tuple, list)):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value
