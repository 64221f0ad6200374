"""What every on-device pane reports: one DeviceReport, one DeviceRun per MLX device.

The block pane, the Q4_K pane, the embedding model's and the chat model's all answer with a
DeviceReport: what ran, the comparison rows per device, what differs and by how much, or why
nothing ran. A pane's own details are fields its runs fill and the others leave empty: a block's
comparisons, matmul and round trip; a model's Linears and embeddings; a chat model's answers.

Plain frozen dataclasses, so lab.study.results keeps a report on disk and reads it back equal.
`report.as_dict()` gives lists and dicts for JSON; `report.to_markdown()` renders it through
lab.device.render, which reads the report's fields and imports none of its types.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, is_dataclass

import numpy as np

from lab.device.render import non_finite_summary, report_markdown


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
class LayerDifference:
    """One Linear on one device: MLX's product beside the lab's on the same inputs, over every call."""

    layer: str
    path: str  # "mx.quantized_matmul", or "mx.matmul (kept float32)" for a Linear the format left float
    max_abs_diff: float  # largest |y_MLX − y_lab| over every token and output
    bound_at_max: float  # the accumulation bound of that same element
    bound_used: float  # largest |y_MLX − y_lab| / bound over every element (≤ 1: explained)
    refused: bool  # MLX refused; the lab's product stood in

    @property
    def within_bound(self) -> bool:
        return self.bound_used <= 1.0


@dataclass(frozen=True)
class ChatAnswer:
    """One prompt answered greedily by the lab and by MLX's Linears."""

    prompt: str
    lab_ids: tuple[int, ...]
    device_ids: tuple[int, ...]
    first_divergence: int | None  # the first index where the two answers differ, None when equal
    max_logit_diff: float  # over the steps of the lab's answer, both fed the same tokens
    lab_margin: float | None  # the lab's best-minus-second logit at the first divergence


@dataclass(frozen=True)
class DeviceRun:
    """Everything one MLX device did, and what it refused to do.

    The block and Q4_K panes fill the comparisons and what follows them; the model panes fill
    `layers`, and the embedding model its embeddings, the chat model its answers.
    """

    device: str  # "cpu", "gpu (Metal)", "gpu (CUDA)"
    device_name: str  # what mx.device_info reports
    comparisons: tuple[Comparison, ...] = ()
    matmul: MatmulComparison | None = None
    default_dtype: str | None = None  # what mx.dequantize returns when dtype is not given
    forgotten_global_scale_factor: float | None = None  # with a tensor scale: weights without it / with it
    round_trip: RoundTrip | None = None  # only when the pane had the original weights
    non_finite: tuple[NonFinite, ...] = ()  # one entry per MLX result holding NaN or infinity
    layers: tuple[LayerDifference, ...] = ()  # per Linear of a model, in the order the model runs them
    embedding_max_abs_diff: float | None = None  # MLX-linear embeddings against the lab's numpy embeddings
    embedding_min_cosine: float | None = None
    answers: tuple[ChatAnswer, ...] = ()
    notes: tuple[str, ...] = ()
    refusals: tuple[str, ...] = ()  # steps MLX refused, with its message

    @property
    def quantized(self) -> int:
        """How many Linears ran through mx.quantized_matmul (the rest: mx.matmul on the lab's ŵ)."""
        return sum(layer.path == "mx.quantized_matmul" for layer in self.layers)

    @property
    def worst_layer(self) -> LayerDifference | None:
        """The Linear that used the largest share of its bound."""
        return max(self.layers, key=lambda layer: layer.bound_used, default=None)

    @property
    def verdict(self) -> str:
        if self.layers:
            return self._layers_verdict()
        parts = [f"{comparison.name}: {comparison.verdict}" for comparison in self.comparisons]
        if self.matmul is not None:
            parts.append(f"quantized_matmul: {self.matmul.verdict}")
        parts.extend(f"{flag.source} holds {non_finite_summary(flag)}" for flag in self.non_finite)
        parts.extend(f"refused: {refusal}" for refusal in self.refusals)
        return "; ".join(parts) if parts else "nothing ran"

    def _layers_verdict(self) -> str:
        ran = [layer for layer in self.layers if not layer.refused]
        beyond = [layer.layer for layer in ran if not layer.within_bound]
        if not ran:
            return "MLX refused every Linear"
        if beyond:
            return f"{len(beyond)} of {len(ran)} Linears differ beyond float32 accumulation: {', '.join(beyond)}"
        worst = max(layer.max_abs_diff for layer in ran)
        return f"all {len(ran)} Linears agree within float32 accumulation (largest difference {worst:.3g})"


def verdicts(runs) -> str:
    """Every device's verdict in one line, the message a report opens with: "cpu: …. gpu: …."."""
    return " ".join(f"{run.device}: {run.verdict}." for run in runs)


@dataclass(frozen=True)
class DeviceReport:
    """Every on-device pane's answer: one run per MLX device, or why there is none."""

    pane: str  # "block", "q4k", "model" or "chat": which details the runs hold
    format: str  # the registry name of the format ("mxfp4", "affine4_g64", "q4k")
    title: str  # how pages name the format ("MXFP4")
    message: str  # each device's verdict, or why nothing ran
    available: bool = True  # MLX could be imported
    install_hint: str = ""  # how to install MLX, where it could not be imported
    mlx_version: str | None = None
    shape: tuple[int, ...] = ()  # the block's
    parameters: dict = field(default_factory=dict)  # group_size, bits, mode and the format's own settings
    reference_checks: tuple[Comparison, ...] = ()  # device-independent: the lab against gguf-py
    sentences: int = 0  # how many sentences the embedding model embedded
    fallbacks: int = 0  # how many of the chat model's Linears the format could not hold
    runs: tuple[DeviceRun, ...] = ()

    def as_dict(self) -> dict:
        return _plain(self)

    def to_markdown(self) -> str:
        return report_markdown(self)


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
