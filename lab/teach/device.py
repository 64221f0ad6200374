"""The on-device pane: the block the learner is looking at, run through the installed MLX.

For MXFP4, MXFP8, NVFP4 and affine tensors the pane asks MLX to do what the lab did and shows
where the two agree:
    mx.quantize        on the original weights, compared byte for byte with the lab's bytes;
    mx.dequantize      of the lab's bytes with dtype=float32, against the lab's dequantize(),
                       and what the default dtype would have handed back instead;
    mx.quantized_matmul with the learner's input x, against a float64 dot product of the lab's
                       dequantized weights.
For a Q4_K block there are two MLX paths: the block rewritten as MLX affine groups of 32
(lab.q4k.to_mlx_affine), and a real GGUF file read back with mx.load. The reference for Q4_K is
gguf-py's decoder; where MLX disagrees with it the pane says where, and never moves the lab.

Every MLX device present gets its own run: the CPU always, the GPU when there is one. Without
MLX the report says so and how to install it; a step MLX refuses becomes a line in the report,
not an exception.
"""

from __future__ import annotations

import pathlib
import tempfile
from dataclasses import dataclass, field, fields, is_dataclass

import gguf
import numpy as np

from lab._arrays import round_to, to_float32_input
from lab.errors import LabError, ShapeError
from lab.formats import affine, mlx_layout, mxfp4, mxfp8, nvfp4, q4k
from lab.formats._mx import MXTensor
from lab.formats.affine import AffineTensor
from lab.formats.nvfp4 import NVFP4Tensor
from lab.teach.fixtures import varied_input
from lab.teach.zoo import wrong_q4k_decoder_matching

KINDS = ("mxfp4", "mxfp8", "nvfp4", "affine")
#: how many differing elements a comparison lists one by one; the rest are only counted
LISTED_DIFFERENCES = 32
#: how many groups a verdict names before it says "and N more"
NAMED_GROUPS = 8
#: the unit roundoff of float32 accumulation, 2^-24
FLOAT32_UNIT_ROUNDOFF = 2.0**-24
GGUF_TENSOR_NAME = "lab.q4k"
Q4_K_TYPE = gguf.GGMLQuantizationType.Q4_K
# MLX's exceptions on a refused operation: ValueError for bad arguments, RuntimeError from the
# backend, TypeError for a keyword this version does not take.
_MLX_REFUSALS = (ValueError, RuntimeError, TypeError)


# --------------------------------------------------------------------------------------------
# The report
# --------------------------------------------------------------------------------------------


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
class DeviceRun:
    """Everything one MLX device did with the block, and what it refused to do."""

    device: str  # "cpu", "gpu (Metal)", "gpu (CUDA)"
    device_name: str  # what mx.device_info reports
    comparisons: tuple[Comparison, ...]
    matmul: MatmulComparison | None
    default_dtype: str | None  # what mx.dequantize returns when dtype is not given
    forgotten_global_scale_factor: float | None  # NVFP4: weights without global_scale / with it
    notes: tuple[str, ...]
    refusals: tuple[str, ...]  # steps MLX refused, with its message

    @property
    def verdict(self) -> str:
        parts = [f"{comparison.name}: {comparison.verdict}" for comparison in self.comparisons]
        if self.matmul is not None:
            parts.append(f"quantized_matmul: {self.matmul.verdict}")
        parts.extend(f"refused: {refusal}" for refusal in self.refusals)
        return "; ".join(parts) if parts else "nothing ran"


@dataclass(frozen=True)
class DeviceReport:
    """The on-device pane's answer: one run per MLX device, or why there is none."""

    available: bool
    kind: str
    message: str
    install_hint: str | None = None
    mlx_version: str | None = None
    shape: tuple[int, ...] = ()
    parameters: dict = field(default_factory=dict)  # group_size, bits, mode and the format's own settings
    reference_checks: tuple[Comparison, ...] = ()  # device-independent: the lab against gguf-py
    runs: tuple[DeviceRun, ...] = ()

    def as_dict(self) -> dict:
        return _plain(self)

    def to_markdown(self) -> str:
        if not self.available:
            lines = [f"**On-device check ({self.kind}): MLX is not available here.** {self.message}"]
            if self.install_hint:
                lines.append(f"\nTo get it: `{self.install_hint}`")
            return "\n".join(lines)
        parameters = ", ".join(f"{name}={value}" for name, value in self.parameters.items())
        lines = [f"### On-device check: {self.kind} {self.shape} with MLX {self.mlx_version}", ""]
        if parameters:
            lines += [f"Parameters: {parameters}", ""]
        lines += [self.message, ""]
        if self.reference_checks:
            lines += [
                "#### The lab against gguf-py (no MLX involved)",
                "",
                *_comparison_table(self.reference_checks),
                "",
            ]
        for run in self.runs:
            lines += [f"#### Device: {run.device} ({run.device_name})", ""]
            if run.comparisons:
                lines += [*_comparison_table(run.comparisons), ""]
            for comparison in run.comparisons:
                lines += _difference_details(comparison)
            if run.matmul is not None:
                lines += _matmul_markdown(run.matmul)
            if run.default_dtype is not None:
                lines.append(f"- `mx.dequantize` without `dtype=` returns **{run.default_dtype}**.")
            lines += [f"- {note}" for note in run.notes]
            lines += [f"- MLX refused: {refusal}" for refusal in run.refusals]
            lines.append("")
        return "\n".join(lines).rstrip() + "\n"


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


def _number(value) -> str:
    return "—" if value is None else f"{value:.6g}"


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


def _difference_details(comparison: Comparison) -> list[str]:
    lines = []
    if comparison.note:
        lines += [f"*{comparison.name}:* {comparison.note}", ""]
    if not comparison.differences:
        return lines
    for breakdown in comparison.breakdowns:
        lines += _breakdown_lines(breakdown)
    shown = len(comparison.differences)
    lines += [
        f"*{comparison.name}: first {shown} of {comparison.differing} {comparison.unit}s {comparison.listing}*",
        "",
        "| index | group | reference | MLX | MLX − reference |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {d.index} | {d.group} | {d.reference:.9g} | {d.mlx:.9g} | {d.signed_difference:.3g} |"
        for d in comparison.differences
    ]
    return lines + [""]


def _breakdown_lines(breakdown: Breakdown) -> list[str]:
    groups = breakdown.groups_with_differences()
    if not groups:
        return []
    described = [
        f"{group}: {int(breakdown.not_identical[group])} not identical, "
        f"{int(breakdown.beyond_rounding[group])} beyond rounding, max {float(breakdown.max_abs_diff[group]):.3g}"
        for group in groups[:NAMED_GROUPS]
    ]
    more = [f"and {len(groups) - NAMED_GROUPS} more {breakdown.label}s"] if len(groups) > NAMED_GROUPS else []
    return [f"Per {breakdown.label} of {breakdown.size}: " + "; ".join(described + more), ""]


def _matmul_markdown(matmul: MatmulComparison) -> list[str]:
    with_original = matmul.quantization_error is not None
    lines = [
        f"*mx.quantized_matmul with x {matmul.x_shape}: {matmul.verdict}*",
        "",
        "| output | reference (float64) | MLX | signed error | relative | float32 bound |"
        + (" ŷ − y (quantization) |" if with_original else ""),
        "|---|---|---|---|---|---|" + ("---|" if with_original else ""),
    ]
    flat = list(np.ndindex(matmul.y_reference.shape))
    for index in flat[:LISTED_DIFFERENCES]:
        lines.append(
            f"| {index} | {matmul.y_reference[index]:.9g} | {matmul.y_mlx[index]:.9g} | "
            f"{matmul.signed_error[index]:.3g} | {matmul.relative_error[index]:.3g} | "
            f"{matmul.accumulation_bound[index]:.3g} |"
            + (f" {matmul.quantization_error[index]:.3g} |" if with_original else "")
        )
    if len(flat) > LISTED_DIFFERENCES:
        lines.append(f"| … {len(flat) - LISTED_DIFFERENCES} more |")
    if matmul.note:
        lines += ["", matmul.note]
    return lines + [""]


# --------------------------------------------------------------------------------------------
# Comparing arrays
# --------------------------------------------------------------------------------------------


def _same_float(reference: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """Bit-identical as float32, with any NaN equal to any NaN (the payload carries no weight)."""
    same_bits = reference.view(np.uint32) == observed.view(np.uint32)
    return same_bits | (np.isnan(reference) & np.isnan(observed))


def _abs_diff(reference: np.ndarray, observed: np.ndarray, identical: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(observed.astype(np.float64) - reference.astype(np.float64))
    # NaN on one side only, or infinities of opposite sign, are as far apart as numbers get.
    diff = np.where(np.isnan(diff), np.inf, diff)
    return np.where(identical, 0.0, diff)


def _ordered_bits(values: np.ndarray, dtype: str) -> np.ndarray:
    """Float bit patterns mapped to integers that count representable values in order."""
    if dtype == "float16":
        bits = values.astype(np.float16).view(np.uint16).astype(np.int64)
        sign_bit, magnitude_mask = 15, 0x7FFF
    elif dtype == "bfloat16":  # the values are exact in bfloat16: its bits are float32's top half
        bits = (values.astype(np.float32).view(np.uint32) >> np.uint32(16)).astype(np.int64)
        sign_bit, magnitude_mask = 15, 0x7FFF
    else:
        bits = values.astype(np.float32).view(np.uint32).astype(np.int64)
        sign_bit, magnitude_mask = 31, 0x7FFFFFFF
    magnitude = bits & magnitude_mask
    return np.where(bits >> sign_bit, -magnitude, magnitude)


def _max_ulps(reference: np.ndarray, observed: np.ndarray, dtype: str) -> int | None:
    """Largest distance in representable `dtype` values over the pairs where both are finite."""
    with np.errstate(over="ignore"):
        rounded = round_to(reference, dtype)
    finite = np.isfinite(rounded) & np.isfinite(observed)
    if not finite.any():
        return None
    distance = np.abs(_ordered_bits(observed[finite], dtype) - _ordered_bits(rounded[finite], dtype))
    return int(distance.max())


def _breakdown(label, size, not_identical, beyond, diff) -> Breakdown:
    def per_group(array, reduce):
        return reduce(array.reshape(*array.shape[:-1], array.shape[-1] // size, size), axis=-1)

    return Breakdown(
        label=label,
        size=size,
        not_identical=per_group(not_identical, np.sum),
        beyond_rounding=per_group(beyond, np.sum),
        max_abs_diff=per_group(diff, np.max),
    )


def _listed(mask: np.ndarray, reference: np.ndarray, observed: np.ndarray, group_size: int) -> tuple[Difference, ...]:
    listed = []
    for where in np.argwhere(mask)[:LISTED_DIFFERENCES]:
        index = tuple(int(i) for i in where)
        listed.append(
            Difference(
                index=index,
                group=index[:-1] + (index[-1] // group_size,),
                reference=float(reference[index]),
                mlx=float(observed[index]),
            )
        )
    return tuple(listed)


def _where_text(label: str, mask_per_group: np.ndarray, groups_per_block: int | None) -> str:
    """The groups that hold differences, in words; for Q4_K also their positions within a block."""
    groups = [tuple(int(i) for i in where) for where in np.argwhere(mask_per_group > 0)]
    if groups_per_block:
        by_position = mask_per_group.reshape(-1, groups_per_block) > 0
        positions = [int(j) for j in np.flatnonzero(by_position.any(axis=0))]
        blocks_hit = int(by_position.any(axis=1).sum())
        return (
            f"{len(groups)} {label}s: positions {positions} within the block, "
            f"in {blocks_hit} of {by_position.shape[0]} blocks"
        )
    named = ", ".join(str(group) for group in groups[:NAMED_GROUPS])
    more = f" and {len(groups) - NAMED_GROUPS} more" if len(groups) > NAMED_GROUPS else ""
    return f"{label}s {named}{more}"


def compare_values(
    name: str,
    reference: np.ndarray,
    observed: np.ndarray,
    *,
    group_size: int,
    group_label: str,
    allowed: np.ndarray,
    rounding: str,
    ulp_dtype: str = "float32",
    block_size: int | None = None,
) -> Comparison:
    """Weights (or any float values) against a reference, per element and per group.

    `allowed` is the absolute difference, element by element, that the rounding named in
    `rounding` can explain; anything beyond it is a real disagreement.
    """
    reference = np.asarray(reference, dtype=np.float32)
    observed = np.asarray(observed, dtype=np.float32)
    identical = _same_float(reference, observed)
    diff = _abs_diff(reference, observed, identical)
    beyond = ~identical & ~(diff <= allowed)
    not_identical = ~identical
    breakdowns = [_breakdown(group_label, group_size, not_identical, beyond, diff)]
    if block_size:
        breakdowns.append(_breakdown("block", block_size, not_identical, beyond, diff))
    total = reference.size
    listed = beyond if beyond.any() else not_identical
    ulps = _max_ulps(reference, observed, ulp_dtype)
    if identical.all():
        verdict = "bit-identical"
    elif not beyond.any():
        # near zero a tiny difference spans many ulps; there the absolute size says more
        size = f"max {ulps} ulp" if ulps is not None and ulps <= 4 else f"max abs diff {float(diff.max()):.3g}"
        verdict = f"agrees within {rounding} ({size})"
    else:
        where = _where_text(group_label, breakdowns[0].beyond_rounding, block_size and block_size // group_size)
        verdict = (
            f"differs: {int(beyond.sum())} of {total} beyond {rounding}, "
            f"max abs diff {float(diff.max()):.6g}, in {where}"
        )
    return Comparison(
        name=name,
        unit="weight",
        total=total,
        identical=int(identical.sum()),
        within_rounding=int(total - beyond.sum()),
        max_abs_diff=float(diff.max()) if total else 0.0,
        max_ulps=ulps,
        rounding=rounding,
        differences=_listed(listed, reference, observed, group_size),
        differing=int(listed.sum()),
        listing="beyond rounding" if beyond.any() else "not bit-identical",
        breakdowns=tuple(breakdowns),
        verdict=verdict,
    )


def _compare_exact(
    name, unit, reference, observed, *, group_size, group_label, total=None, identical=None
) -> Comparison:
    """Codes or scale bytes: equal or not, no rounding allowed.

    `total` and `identical` override the element counts where the comparison is reported in
    another unit (packed bytes) than the one the differences are listed in (codes).
    """
    same = reference == observed
    if reference.dtype.kind == "f":
        same = _same_float(reference.astype(np.float32), observed.astype(np.float32))
    not_identical = ~same
    zeros = np.zeros(reference.shape)
    breakdown = _breakdown(group_label, group_size, not_identical, not_identical, zeros)
    count = reference.size if total is None else total
    equal = int(same.sum()) if identical is None else identical
    where = _where_text(group_label, breakdown.not_identical, None)
    if not not_identical.any():
        verdict = "bit-identical"
    elif unit == "byte":
        codes = int(not_identical.sum())
        verdict = f"differs: {count - equal} of {count} bytes, holding {codes} differing codes in {where}"
    else:
        verdict = f"differs: {count - equal} of {count} {unit}s, in {where}"
    return Comparison(
        name=name,
        unit=unit,
        total=count,
        identical=equal,
        within_rounding=equal,
        max_abs_diff=None,
        max_ulps=None,
        rounding="none",
        differences=_listed(not_identical, reference, observed, group_size),
        differing=int(not_identical.sum()),
        listing="not bit-identical",
        breakdowns=(breakdown,),
        verdict=verdict,
    )


def compare_matmul(
    x: np.ndarray, w_reference: np.ndarray, y_mlx: np.ndarray, w_original=None, note: str = ""
) -> MatmulComparison:
    """MLX's x @ ŵ.T against the float64 dot product of the reference weights ŵ [N, K] with x [M, K]."""
    x64 = x.astype(np.float64)
    w64 = w_reference.astype(np.float64)
    y64 = y_mlx.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        y_reference = x64 @ w64.T
        bound = w64.shape[-1] * FLOAT32_UNIT_ROUNDOFF * (np.abs(x64) @ np.abs(w64).T)
        signed = y64 - y_reference
        relative = signed / np.abs(np.where(y_reference != 0, y_reference, np.nan))
    same = (y64 == y_reference) | (np.isnan(y64) & np.isnan(y_reference))
    error = np.where(same, 0.0, np.nan_to_num(np.abs(signed), nan=np.inf))
    # an infinite weight makes the bound infinite too; then only exact agreement counts
    outside = error > np.where(np.isfinite(bound), bound, 0.0)
    if not outside.any():
        verdict = f"agrees within float32 accumulation (largest error {float(error.max()):.3g})"
    else:
        verdict = (
            f"differs beyond float32 accumulation at {int(outside.sum())} of {outside.size} outputs "
            f"(largest error {float(error.max()):.6g})"
        )
        too_large = int((np.abs(y_reference[outside]) > np.finfo(np.float32).max).sum())
        if too_large:
            verdict += f"; at {too_large} of them the exact output is beyond float32's range"
    quantization_error = None
    if w_original is not None:
        with np.errstate(invalid="ignore", over="ignore"):
            quantization_error = y_reference - x64 @ w_original.astype(np.float64).T
    return MatmulComparison(
        x_shape=tuple(x.shape),
        y_reference=y_reference,
        y_mlx=y_mlx,
        signed_error=np.where(same, 0.0, signed),
        relative_error=np.where(same, 0.0, relative),
        accumulation_bound=bound,
        max_abs_error=float(error.max()),
        verdict=verdict,
        quantization_error=quantization_error,
        note=note,
    )


# --------------------------------------------------------------------------------------------
# Devices and MLX calls
# --------------------------------------------------------------------------------------------


def mlx_devices(mx) -> list[tuple[str, object]]:
    """(label, device) for every MLX device that can run an operation: the CPU, then a GPU if any."""
    devices = [("cpu", mx.cpu)]
    try:
        mx.eval(mx.add(mx.array([1.0]), 1.0, stream=mx.gpu))
    except _MLX_REFUSALS:
        return devices
    if mx.metal.is_available():
        backend = "Metal"
    elif hasattr(mx, "cuda") and mx.cuda.is_available():
        backend = "CUDA"
    else:
        backend = "unknown backend"
    return devices + [(f"gpu ({backend})", mx.gpu)]


def _device_name(mx, device) -> str:
    try:
        info = mx.device_info(device)
    except _MLX_REFUSALS:
        return "unknown"
    return str(info.get("device_name", info.get("architecture", "unknown")))


class _Steps:
    """Runs MLX calls, evaluating them at once so a refusal surfaces here, and records refusals."""

    def __init__(self, mx):
        self.mx = mx
        self.refusals: list[str] = []
        self.dtypes: tuple[str, ...] = ()  # the MLX dtypes of the last result, before numpy widened them

    def attempt(self, step: str, call):
        """The call's result as numpy (a tuple for several arrays, a dict for a dict), or None if MLX refused.

        `call` holds MLX calls only. Only what they raise is recorded as a refusal: the lab's own
        errors (every LabError is a ValueError, one of the exception types MLX refuses with) and
        anything raised while the lab converts the result to numpy propagate as they are, so a
        lab bug is never reported as MLX refusing.
        """
        try:
            result = call()
            if isinstance(result, dict):  # mx.load: name -> array
                arrays = tuple(result.values())
            else:
                arrays = tuple(result) if isinstance(result, (tuple, list)) else (result,)
            self.mx.eval(*arrays)
        except _MLX_REFUSALS as error:
            if isinstance(error, LabError):
                raise
            self.refusals.append(f"{step}: {type(error).__name__}: {str(error).splitlines()[0]}")
            return None
        converted = tuple(mlx_layout.to_numpy(array) for array in arrays)
        self.dtypes = tuple(str(array.dtype).rsplit(".", 1)[-1] for array in arrays)
        if isinstance(result, dict):
            return dict(zip(result, converted, strict=True))
        return converted if isinstance(result, (tuple, list)) else converted[0]


def _learner_input(x, length: int) -> np.ndarray:
    """x as float32 [M, length]; without one, a row with varied signs and magnitudes."""
    if x is None:
        return varied_input(length).astype(np.float32)[None, :]
    inputs, _ = to_float32_input(x, what="x")
    inputs = inputs[None, :] if inputs.ndim == 1 else inputs
    if inputs.ndim != 2 or inputs.shape[-1] != length:
        raise ShapeError(f"x must be [{length}] or [M, {length}] to multiply these weights, got shape {inputs.shape}")
    return inputs


def _mlx_version(mx) -> str:
    return getattr(mx, "__version__", "unknown")


def _unavailable(kind: str, error: Exception) -> DeviceReport:
    return DeviceReport(available=False, kind=kind, message=str(error), install_hint=mlx_layout.install_hint())


# --------------------------------------------------------------------------------------------
# MXFP4, MXFP8, NVFP4 and affine
# --------------------------------------------------------------------------------------------

_TENSOR_TYPES = {"mxfp4": MXTensor, "mxfp8": MXTensor, "nvfp4": NVFP4Tensor, "affine": AffineTensor}


def _quantize_like_the_lab(kind: str, w, format_kwargs: dict):
    if kind == "mxfp4":
        return mxfp4.quantize(w, **format_kwargs)
    if kind == "mxfp8":
        return mxfp8.quantize(w, **format_kwargs)
    if kind == "nvfp4":
        return nvfp4.quantize(w, **format_kwargs)
    return affine.quantize(w, **format_kwargs)


def _mlx_parameters(kind: str, tensor) -> dict:
    if kind == "affine":
        return {"group_size": tensor.group_size, "bits": tensor.bits, "mode": "affine"}
    bits = 8 if kind == "mxfp8" else 4
    return {"group_size": tensor.group_size, "bits": bits, "mode": kind}


def run_block(kind: str, w=None, tensor=None, x=None, **format_kwargs) -> DeviceReport:
    """Run a block (or tensor) of an MLX mode through MLX on every device and compare with the lab.

    kind: "mxfp4", "mxfp8", "nvfp4" or "affine".
    w: the original float weights [..., K]. With w, mx.quantize runs on them and its bytes are
       compared with the lab's; without w there is nothing to quantize and only decoding runs.
    tensor: the lab's tensor; quantized from w with `format_kwargs` (rule=, global_scale=,
       bits=, group_size=) when not given. A given tensor already fixes those settings, so
       passing format_kwargs with it raises a LabError rather than ignoring them.
    x: the learner's input, [K] or [M, K]; a fixed row of varied signs and magnitudes if None.
       Both sides use x rounded to float32, the precision MLX receives it in.
    MLX decodes the lab's bytes, so a quantizer disagreement and a decoder disagreement show
    up separately.
    """
    if kind not in KINDS:
        raise LabError(f"unknown kind {kind!r} for the on-device pane; expected one of {KINDS} (Q4_K: run_q4k)")
    if w is None and tensor is None:
        raise LabError("run_block needs the float weights w, a lab tensor, or both")
    if tensor is not None and not isinstance(tensor, _TENSOR_TYPES[kind]):
        raise LabError(f"a {kind} run needs a {_TENSOR_TYPES[kind].__name__}, got {type(tensor).__name__}")
    if tensor is not None and format_kwargs:
        raise LabError(
            f"run_block got a tensor and the quantizer settings {sorted(format_kwargs)}; the settings apply only "
            "when run_block quantizes w itself, and the tensor already fixes them: pass one or the other"
        )
    try:
        mx = mlx_layout.mlx_core()
    except mlx_layout.MLXUnavailableError as error:
        return _unavailable(kind, error)
    try:
        weights = None if w is None else to_float32_input(w)
        # a huge block can overflow a scale to inf; the comparison shows it, a warning would not help
        with np.errstate(over="ignore", invalid="ignore"):
            lab_tensor = tensor if tensor is not None else _quantize_like_the_lab(kind, w, format_kwargs)
    except LabError as error:
        return DeviceReport(
            available=True,
            kind=kind,
            mlx_version=_mlx_version(mx),
            message=f"The lab could not quantize this input: {error}",
        )
    if weights is not None and weights[0].shape != lab_tensor.shape:
        raise ShapeError(f"w has shape {weights[0].shape} but the tensor holds {lab_tensor.shape}")
    inputs = _learner_input(x, lab_tensor.shape[-1])
    parameters = _mlx_parameters(kind, lab_tensor)
    runs = tuple(
        _run_block_on(mx, label, device, kind, lab_tensor, weights, inputs, parameters)
        for label, device in mlx_devices(mx)
    )
    shown = dict(parameters)
    if kind == "nvfp4":
        shown["global_scale"] = lab_tensor.global_scale
    if isinstance(lab_tensor, MXTensor):
        shown["rule"] = lab_tensor.rule
    return DeviceReport(
        available=True,
        kind=kind,
        message=" ".join(f"{run.device}: {run.verdict}." for run in runs),
        mlx_version=_mlx_version(mx),
        shape=tuple(lab_tensor.shape),
        parameters=shown,
        runs=runs,
    )


def _run_block_on(mx, label, device, kind, tensor, weights, inputs, parameters) -> DeviceRun:
    steps = _Steps(mx)
    shape = tensor.shape
    group_size, bits = parameters["group_size"], parameters["bits"]
    rows = int(np.prod(shape[:-1], dtype=np.int64))

    def as_rows(array):  # MLX quantizes matrices: every leading axis folds into rows
        return np.ascontiguousarray(array).reshape(rows, -1)

    lab_arrays = [as_rows(array) for array in tensor.mlx_layout()]
    if kind == "affine":
        lab_mx = [mx.array(lab_arrays[0])] + [mlx_layout.to_mx(array, tensor.dtype) for array in lab_arrays[1:]]
    else:
        lab_mx = [mx.array(array) for array in lab_arrays]
    global_scale = getattr(tensor, "global_scale", None)
    with_global = {} if global_scale is None else {"global_scale": mx.array(global_scale, dtype=mx.float32)}
    comparisons, notes = [], []
    group_label = "scale group"

    if weights is not None:
        values, dtype = weights
        w_mx = mx.array(as_rows(values)).astype(getattr(mx, dtype))
        quantized = steps.attempt("mx.quantize", lambda: mx.quantize(w_mx, **parameters, **with_global, stream=device))
        if quantized is not None:
            comparisons += _compare_quantized(kind, tensor, lab_arrays, quantized, shape, bits, group_size)

    with np.errstate(over="ignore", invalid="ignore"):  # inf and NaN weights are reported, not warned about
        lab_weights = tensor.dequantize()
    dequantized = steps.attempt(
        "mx.dequantize(dtype=float32)",
        lambda: mx.dequantize(*lab_mx, **parameters, **with_global, dtype=mx.float32, stream=device),
    )
    default_dtype, forgotten_factor = None, None
    if dequantized is not None:
        mlx_weights = dequantized.reshape(shape)
        comparisons.append(
            compare_values(
                "mx.dequantize(dtype=float32) vs lab dequantize()",
                lab_weights,
                mlx_weights,
                group_size=group_size,
                group_label=group_label,
                **_dequantize_allowance(tensor, lab_weights),
            )
        )
        default = steps.attempt(
            "mx.dequantize(default dtype)",
            lambda: mx.dequantize(*lab_mx, **parameters, **with_global, stream=device),
        )
        if default is not None:
            default_dtype = steps.dtypes[0]
            comparisons.append(
                _default_dtype_comparison(default_dtype, default.reshape(shape), mlx_weights, group_size)
            )
        if global_scale is not None:
            forgotten = steps.attempt(
                "mx.dequantize without global_scale",
                lambda: mx.dequantize(*lab_mx, **parameters, dtype=mx.float32, stream=device),
            )
            if forgotten is not None:
                forgotten_factor, note = _forgotten_global_scale(forgotten.reshape(shape), mlx_weights, global_scale)
                notes.append(note)
        nan_scales = _nan_scale_note(kind, tensor, lab_weights, mlx_weights)
        if nan_scales:
            notes.append(nan_scales)

    matmul = None
    y_mlx, note = _quantized_matmul(mx, steps, inputs, lab_mx, parameters, with_global, tensor, device)
    if y_mlx is not None:
        original = None if weights is None else as_rows(weights[0])
        matmul = compare_matmul(inputs, as_rows(lab_weights), y_mlx, original, note)
    return DeviceRun(
        device=label,
        device_name=_device_name(mx, device),
        comparisons=tuple(comparisons),
        matmul=matmul,
        default_dtype=default_dtype,
        forgotten_global_scale_factor=forgotten_factor,
        notes=tuple(notes),
        refusals=tuple(steps.refusals),
    )


def _dequantize_allowance(tensor, lab_weights: np.ndarray) -> dict:
    """The rounding a float32 decoder may add to the lab's exactly-rounded weights.

    MX and NVFP4 weights are code value times scale: one product, one rounding (NVFP4 with a
    tensor scale forms the combined scale first, so allow one ulp). Affine is scale·q + bias.
    """
    if isinstance(tensor, AffineTensor):
        return {
            "allowed": _product_and_sum_allowance(tensor.scales, tensor.codes, lab_weights),
            "rounding": "float32 rounding of scale·q and of the sum",
        }
    return {"allowed": _one_float32_ulp(lab_weights), "rounding": "one float32 rounding"}


def _one_float32_ulp(values: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return np.spacing(np.abs(values.astype(np.float32))).astype(np.float64)


def _compare_quantized(kind, tensor, lab_arrays, quantized, shape, bits, group_size) -> list[Comparison]:
    """mx.quantize's arrays against the lab's, byte for byte; differing codes listed per element."""
    group_label = "scale group"
    lab_packed, mlx_packed = lab_arrays[0].astype(np.uint32), quantized[0].astype(np.uint32)
    lab_bytes, mlx_bytes = lab_packed.view(np.uint8), mlx_packed.view(np.uint8)
    lab_codes = mlx_layout.unpack(lab_packed, bits).reshape(shape)
    mlx_codes = mlx_layout.unpack(mlx_packed, bits).reshape(shape)
    comparisons = [
        _compare_exact(
            "mx.quantize packed codes vs lab",
            "byte",
            lab_codes,
            mlx_codes,
            group_size=group_size,
            group_label=group_label,
            total=lab_bytes.size,
            identical=int((lab_bytes == mlx_bytes).sum()),
        )
    ]
    names = ["scales"] + (["biases"] if kind == "affine" else [])
    group_shape = shape[:-1] + (shape[-1] // group_size,)
    for name, lab_array, mlx_array in zip(names, lab_arrays[1:], quantized[1:], strict=True):
        comparisons.append(
            _compare_exact(
                f"mx.quantize {name} vs lab",
                "scale" if name == "scales" else "bias",
                lab_array.reshape(group_shape),
                mlx_array.reshape(group_shape),
                group_size=1,
                group_label="scale group",
            )
        )
    return comparisons


def _default_dtype_comparison(dtype_name: str, default_values, float32_values, group_size) -> Comparison:
    """What leaving out dtype= costs: MLX's default result against MLX's own float32 result."""
    comparison = compare_values(
        f"mx.dequantize default ({dtype_name}) vs dtype=float32",
        float32_values,
        default_values,
        group_size=group_size,
        group_label="scale group",
        allowed=_rounding_allowance(float32_values, dtype_name),
        rounding=f"{dtype_name} rounding",
        ulp_dtype=dtype_name if dtype_name in ("float16", "bfloat16") else "float32",
    )
    note = (
        f"Without dtype=, mx.dequantize returned {dtype_name}; pass dtype=mx.float32 to see the exact weights."
        if dtype_name != "float32"
        else "Without dtype=, mx.dequantize returned float32 (it follows the scales' dtype in this mode)."
    )
    return Comparison(**{**_fields_of(comparison), "note": note})


def _fields_of(comparison: Comparison) -> dict:
    return {item.name: getattr(comparison, item.name) for item in fields(comparison)}


def _rounding_allowance(values: np.ndarray, dtype_name: str) -> np.ndarray:
    """How far rounding a float32 result to `dtype_name` may move it: half a unit in the last
    place of that dtype, plus one float32 ulp for the float32 arithmetic before the rounding."""
    magnitude = np.abs(values.astype(np.float32))
    if dtype_name == "float32":
        return _one_float32_ulp(values)
    with np.errstate(over="ignore", invalid="ignore"):
        if dtype_name == "float16":
            half_ulp = np.spacing(magnitude.astype(np.float16)).astype(np.float64) / 2
        else:  # bfloat16 keeps 8 of float32's 24 significant bits: its unit is 2^16 float32 units
            half_ulp = np.spacing(magnitude).astype(np.float64) * 2.0**15
    return np.nan_to_num(half_ulp, nan=0.0, posinf=0.0) + _one_float32_ulp(values)


#: scale bytes that encode NaN: E8M0 0xFF for the MX formats, E4M3 0x7F and 0xFF for NVFP4
_NAN_SCALE_BYTES = {"mxfp4": (0xFF,), "mxfp8": (0xFF,), "nvfp4": (0x7F, 0xFF)}


def _nan_scale_note(kind: str, tensor, lab_weights: np.ndarray, mlx_weights: np.ndarray) -> str:
    """What each side makes of blocks whose scale byte is a NaN encoding, counted from the results."""
    nan_bytes = _NAN_SCALE_BYTES.get(kind)
    if nan_bytes is None:
        return ""
    nan_blocks = np.isin(tensor.scale_bytes, nan_bytes)
    if not nan_blocks.any():
        return ""
    in_nan_blocks = np.repeat(nan_blocks, tensor.group_size, axis=-1)

    def tally(values: np.ndarray) -> str:
        counts = {
            "NaN": int(np.isnan(values).sum()),
            "+inf": int(np.isposinf(values).sum()),
            "−inf": int(np.isneginf(values).sum()),
            "finite": int(np.isfinite(values).sum()),
        }
        return ", ".join(f"{count} {name}" for name, count in counts.items() if count)

    bytes_seen = ", ".join(f"0x{int(b):02X}" for b in np.unique(tensor.scale_bytes[nan_blocks]))
    return (
        f"{int(nan_blocks.sum())} block(s) have a NaN scale byte ({bytes_seen}): the lab decodes their "
        f"{int(in_nan_blocks.sum())} weights as {tally(lab_weights[in_nan_blocks])}; "
        f"MLX as {tally(mlx_weights[in_nan_blocks])}."
    )


def _forgotten_global_scale(
    without: np.ndarray, with_scale: np.ndarray, global_scale: float
) -> tuple[float | None, str]:
    """(factor, note): dequantizing NVFP4 without its tensor scale multiplies every weight by one factor."""
    usable = np.isfinite(without) & np.isfinite(with_scale) & (with_scale != 0)
    expected = float(np.float32(nvfp4.TENSOR_SCALE_RANGE) / np.float32(global_scale))
    if not usable.any():
        return None, (
            "Dequantizing without global_scale: no nonzero finite weights to compare "
            f"(2688 / global_scale = {expected:.9g})."
        )
    ratios = without[usable].astype(np.float64) / with_scale[usable].astype(np.float64)
    factor = float(np.median(ratios))
    spread = float(ratios.max() / ratios.min() - 1)
    return factor, (
        f"Forgetting global_scale on mx.dequantize multiplies every weight by {factor:.9g} "
        f"(relative spread {spread:.2g} across {int(usable.sum())} weights) = 2688 / global_scale = {expected:.9g}."
    )


def _quantized_matmul(mx, steps, inputs, lab_mx, parameters, with_global, tensor, device):
    """y = x @ ŵ.T from MLX; with a tensor scale MLX's matmul cannot take, the factor is applied after."""
    x_mx = mx.array(inputs)

    def call(**extra):
        return mx.quantized_matmul(x_mx, *lab_mx, transpose=True, **parameters, **extra, stream=device)

    if not with_global:
        return steps.attempt("mx.quantized_matmul", call), ""
    quiet = _Steps(mx)
    y_mlx = quiet.attempt("mx.quantized_matmul(global_scale=...)", lambda: call(**with_global))
    if y_mlx is not None:
        return y_mlx, "mx.quantized_matmul took global_scale itself."
    y_mlx = steps.attempt("mx.quantized_matmul", call)
    if y_mlx is None:
        return None, ""
    factor = np.float32(tensor.tensor_factor)
    return y_mlx * factor, (
        f"This MLX's quantized_matmul takes no global_scale ({quiet.refusals[0]}); its output was "
        f"multiplied by the tensor factor global_scale / 2688 = {float(factor):.9g} in float32 afterwards."
    )


# --------------------------------------------------------------------------------------------
# Q4_K
# --------------------------------------------------------------------------------------------


def run_q4k(raw, x=None) -> DeviceReport:
    """Run Q4_K bytes [..., 144k] through MLX's two paths on every device, against gguf-py's decoder.

    (a) the blocks as MLX affine groups of 32 (lab.q4k.to_mlx_affine) through mx.dequantize
        and mx.quantized_matmul;
    (b) a GGUF file written with gguf-py's GGUFWriter and read back with mx.load, whatever that
        returns, compared per element, per 32-lane subblock and per 256-weight block.
    """
    tensor = q4k.Q4KTensor(raw)
    try:
        mx = mlx_layout.mlx_core()
    except mlx_layout.MLXUnavailableError as error:
        return _unavailable("q4k", error)
    with np.errstate(over="ignore", invalid="ignore"):  # an inf or NaN d is the block's own answer
        reference = gguf.quants.dequantize(tensor.raw, Q4_K_TYPE)
        lab_weights = tensor.dequantize()
    inputs = _learner_input(x, tensor.shape[-1])
    lab_check = compare_values(
        "lab.q4k decode vs gguf-py",
        reference,
        lab_weights,
        group_size=q4k.SUBBLOCK_WEIGHTS,
        group_label="subblock",
        allowed=np.zeros(reference.shape),
        rounding="nothing",
        block_size=q4k.BLOCK_WEIGHTS,
    )
    runs = tuple(_run_q4k_on(mx, label, device, tensor, reference, inputs) for label, device in mlx_devices(mx))
    return DeviceReport(
        available=True,
        kind="q4k",
        message=" ".join(f"{run.device}: {run.verdict}." for run in runs),
        mlx_version=_mlx_version(mx),
        shape=tuple(tensor.shape),
        parameters={"group_size": q4k.SUBBLOCK_WEIGHTS, "bits": 4, "mode": "affine"},
        reference_checks=(lab_check,),
        runs=runs,
    )


def _run_q4k_on(mx, label, device, tensor, reference, inputs) -> DeviceRun:
    steps = _Steps(mx)
    shape = tensor.shape
    rows = int(np.prod(shape[:-1], dtype=np.int64))
    layout = tensor.to_mlx_affine()
    packed, scales, biases = (np.ascontiguousarray(a).reshape(rows, -1) for a in layout)
    affine_mx = [mx.array(packed), mx.array(scales), mx.array(biases)]
    parameters = {"group_size": q4k.SUBBLOCK_WEIGHTS, "bits": 4}
    comparisons, notes = [], []

    dequantized = steps.attempt(
        "mx.dequantize of the affine layout",
        lambda: mx.dequantize(*affine_mx, **parameters, dtype=mx.float32, stream=device),
    )
    if dequantized is not None:
        comparisons.append(
            compare_values(
                "affine path: mx.dequantize vs gguf-py",
                reference,
                dequantized.reshape(shape),
                group_size=q4k.SUBBLOCK_WEIGHTS,
                group_label="subblock",
                allowed=_product_and_sum_allowance(layout[1], tensor.codes, reference),
                rounding="float32 rounding of gain·q and of the sum",
                block_size=q4k.BLOCK_WEIGHTS,
            )
        )
    y_mlx = steps.attempt(
        "mx.quantized_matmul of the affine layout",
        lambda: mx.quantized_matmul(mx.array(inputs), *affine_mx, transpose=True, **parameters, stream=device),
    )
    # the reference is gguf-py's decode, as for every Q4_K comparison, not the lab's own decoder
    matmul = None if y_mlx is None else compare_matmul(inputs, reference.reshape(rows, -1), y_mlx)

    loaded = _load_gguf(mx, steps, tensor, device)
    if loaded is not None:
        notes.append(f"mx.load on a Q4_K GGUF file returned {loaded.description}.")
        comparison = _compare_loaded(mx, steps, loaded, reference, tensor, device)
        if comparison is None:
            notes.append("Nothing MLX returned could be set against gguf-py's weights.")
        else:
            comparisons.append(comparison)
    return DeviceRun(
        device=label,
        device_name=_device_name(mx, device),
        comparisons=tuple(comparisons),
        matmul=matmul,
        default_dtype=None,
        forgotten_global_scale_factor=None,
        notes=tuple(notes),
        refusals=tuple(steps.refusals),
    )


def _product_and_sum_allowance(scales: np.ndarray, codes: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """What float32 arithmetic may move scale·q + bias: one rounding of the product, one of the sum.

    MLX's CPU rounds both; a fused multiply-add, or the lab's exact arithmetic, skips the first.
    Where the product and the bias nearly cancel, one rounding of the product is many ulps of
    the small result, so the allowance is taken from the terms, not from the result.
    scales: [..., groups]; codes and reference: [..., groups * group_size].
    """
    group_size = codes.shape[-1] // scales.shape[-1]
    with np.errstate(invalid="ignore", over="ignore"):
        product = codes.astype(np.float32).reshape(*scales.shape, group_size) * scales.astype(np.float32)[..., None]
        allowance = np.spacing(np.abs(product.reshape(codes.shape))) + np.spacing(np.abs(reference.astype(np.float32)))
    return np.nan_to_num(allowance.astype(np.float64), nan=0.0)


@dataclass(frozen=True)
class _Loaded:
    arrays: dict[str, np.ndarray]  # as numpy; bfloat16 widened to float32
    dtypes: dict[str, str]  # the dtype MLX chose for each
    description: str


def _load_gguf(mx, steps: _Steps, tensor: q4k.Q4KTensor, device) -> _Loaded | None:
    """Write the bytes as a Q4_K tensor in a real GGUF file and mx.load it; None if MLX refused."""
    with tempfile.TemporaryDirectory(prefix="four-bit-lab-") as folder:
        path = pathlib.Path(folder) / "block.gguf"
        writer = gguf.GGUFWriter(str(path), arch="four-bit-lab")
        writer.add_tensor(GGUF_TENSOR_NAME, np.ascontiguousarray(tensor.raw), raw_dtype=Q4_K_TYPE)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()

        # mx.load maps the file lazily: attempt evaluates the arrays while the file still exists
        loaded = steps.attempt("mx.load of the GGUF file", lambda: mx.load(str(path), stream=device))
    if loaded is None:
        return None
    dtypes = dict(zip(loaded, steps.dtypes, strict=True))
    arrays = {name: loaded[name] for name in sorted(loaded)}
    description = ", ".join(f"'{name}' {dtypes[name]} {array.shape}" for name, array in arrays.items())
    return _Loaded(arrays=arrays, dtypes=dtypes, description=description or "no arrays")


def _compare_loaded(mx, steps: _Steps, loaded: _Loaded, reference, tensor: q4k.Q4KTensor, device) -> Comparison | None:
    """Whatever mx.load returned, set against gguf-py's decode of the same bytes.

    A float array is compared as it is; packed (weights, scales[, biases]) are decoded first
    with the group size and bits their shapes imply.
    """
    name = GGUF_TENSOR_NAME
    if name not in loaded.arrays:
        return None
    if f"{name}.scales" in loaded.arrays:
        packed, scales = loaded.arrays[name], loaded.arrays[f"{name}.scales"]
        biases = loaded.arrays.get(f"{name}.biases")
        implied = _implied_group_size_and_bits(packed, scales, reference.shape[-1])
        if implied is None:
            return None
        group_size, bits = implied
        values = steps.attempt(
            "mx.dequantize of the arrays mx.load returned",
            lambda: mx.dequantize(
                mx.array(packed),
                mx.array(scales),
                None if biases is None else mx.array(biases),
                group_size=group_size,
                bits=bits,
                dtype=mx.float32,
                stream=device,
            ),
        )
        returned = "float32"
    else:
        values, returned = loaded.arrays[name], loaded.dtypes[name]
    if values is None or values.size != reference.size or values.dtype.kind != "f":
        return None
    values = values.reshape(reference.shape).astype(np.float32)
    rounding_dtype = returned if returned in ("float16", "bfloat16") else "float32"
    comparison = compare_values(
        f"GGUF path: mx.load ({returned}) vs gguf-py",
        reference,
        values,
        group_size=q4k.SUBBLOCK_WEIGHTS,
        group_label="subblock",
        allowed=_rounding_allowance(reference, rounding_dtype),
        rounding=f"{rounding_dtype} rounding",
        ulp_dtype=rounding_dtype,
        block_size=q4k.BLOCK_WEIGHTS,
    )
    return Comparison(
        **{**_fields_of(comparison), "note": _diagnose_loaded(values, tensor, rounding_dtype, comparison)}
    )


def _implied_group_size_and_bits(packed: np.ndarray, scales: np.ndarray, length: int) -> tuple[int, int] | None:
    """The group size and bits the shapes of packed uint32 words and scales imply for rows of `length`.

    None when they imply no whole number of either, so nothing can be decoded.
    """
    if packed.ndim == 0 or scales.ndim == 0 or scales.shape[-1] == 0 or length % scales.shape[-1]:
        return None
    if (packed.shape[-1] * 32) % length:
        return None
    return length // scales.shape[-1], packed.shape[-1] * 32 // length


def _diagnose_loaded(values: np.ndarray, tensor: q4k.Q4KTensor, rounding_dtype: str, comparison: Comparison) -> str:
    """When MLX disagrees, name a deliberately broken decoder from lab.zoo that reproduces it exactly."""
    if comparison.within_rounding == comparison.total:
        return ""
    decoder = wrong_q4k_decoder_matching(tensor.raw, values, rounding_dtype)
    if decoder is None:
        return "None of lab.zoo's deliberately wrong decoders reproduces MLX's values."
    return (
        f"MLX's values equal, at every element, lab.zoo's deliberately wrong decoder "
        f"'{decoder.name}' rounded to {rounding_dtype}: {decoder.what_is_wrong}"
    )
