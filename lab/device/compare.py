"""Comparing arrays: MLX's side against a reference, per element, per group and per block.

Pure numpy, no MLX: every function takes the arrays MLX returned already converted, so the
comparisons can be tested and reused without a device. Rounding allowances say, element by
element, what a float32 (or float16, bfloat16) decoder may add to an exactly rounded weight.
"""

from __future__ import annotations

import numpy as np

from lab._arrays import round_to
from lab.device.render import LISTED_DIFFERENCES, NAMED_GROUPS
from lab.device.report import (
    Breakdown,
    Comparison,
    Difference,
    LayerDifference,
    MatmulComparison,
    NonFinite,
    NonFiniteValue,
)
from lab.numbers import position_text

#: the unit roundoff of float32 accumulation, 2^-24
FLOAT32_UNIT_ROUNDOFF = 2.0**-24


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
            f"{len(groups)} {label}s: positions {', '.join(str(p) for p in positions)} within the block, "
            f"in {blocks_hit} of {by_position.shape[0]} blocks"
        )
    named = "; ".join(position_text(group, label) for group in groups[:NAMED_GROUPS])
    more = f" and {len(groups) - NAMED_GROUPS} more" if len(groups) > NAMED_GROUPS else ""
    return f"{named}{more}"


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


def compare_exact(
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


def one_float32_ulp(values: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return np.spacing(np.abs(values.astype(np.float32))).astype(np.float64)


def rounding_allowance(values: np.ndarray, dtype_name: str) -> np.ndarray:
    """How far rounding a float32 result to `dtype_name` may move it: half a unit in the last
    place of that dtype, plus one float32 ulp for the float32 arithmetic before the rounding."""
    magnitude = np.abs(values.astype(np.float32))
    if dtype_name == "float32":
        return one_float32_ulp(values)
    with np.errstate(over="ignore", invalid="ignore"):
        if dtype_name == "float16":
            half_ulp = np.spacing(magnitude.astype(np.float16)).astype(np.float64) / 2
        else:  # bfloat16 keeps 8 of float32's 24 significant bits: its unit is 2^16 float32 units
            half_ulp = np.spacing(magnitude).astype(np.float64) * 2.0**15
    return np.nan_to_num(half_ulp, nan=0.0, posinf=0.0) + one_float32_ulp(values)


def product_and_sum_allowance(scales: np.ndarray, codes: np.ndarray, reference: np.ndarray) -> np.ndarray:
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


def non_finite_values(source: str, values: np.ndarray, scales: np.ndarray, group_size: int) -> NonFinite | None:
    """Every NaN and infinity in an MLX result, the first few located with their group's scale.

    values: [..., K]; scales: [..., K / group_size] as MLX holds them (uint8 scale bytes, or
    float scales for affine). None when every value is finite.
    """
    bad = ~np.isfinite(values)
    if not bad.any():
        return None
    first = []
    for where in np.argwhere(bad)[:LISTED_DIFFERENCES]:
        index = tuple(int(i) for i in where)
        group = index[:-1] + (index[-1] // group_size,)
        scale = scales[group]
        words = f"scale byte 0x{int(scale):02X}" if scales.dtype == np.uint8 else f"scale {float(scale):.6g}"
        first.append(NonFiniteValue(index=index, value=float(values[index]), group=group, scale=words))
    return NonFinite(
        source=source,
        nan=int(np.isnan(values).sum()),
        positive_infinity=int(np.isposinf(values).sum()),
        negative_infinity=int(np.isneginf(values).sum()),
        first=tuple(first),
    )


#: roundings per term beyond the K − 1 of the sum: product, code·scale, + bias, a tensor factor
EXTRA_ROUNDINGS = 4


def accumulation_bound(x: np.ndarray, magnitude: np.ndarray) -> np.ndarray:
    """2·γ_{K+3}·|x|·mᵀ: how far two float32 evaluations of x·Ŵᵀ may differ, per output element
    (lab.device.model's docstring derives it).

    x: float [tokens, K]; magnitude: m [out, K], the per-weight size the roundings scale with.
    """
    k = x.shape[-1]
    n = (k - 1 + EXTRA_ROUNDINGS) * FLOAT32_UNIT_ROUNDOFF
    gamma = n / (1 - n)
    return 2 * gamma * (np.abs(x.astype(np.float64)) @ magnitude.astype(np.float64).T)


class LinearTally:
    """Per Linear of a model, over every call: MLX's product against the lab's on the same input.

    Keeps, for each Linear, its largest |y_MLX − y_lab| with that element's accumulation bound, the
    largest share of the bound used anywhere, and whether MLX refused it (the lab's product then
    stood in, so it adds no difference).
    """

    def __init__(self) -> None:
        self._seen: dict[str, dict] = {}

    def add(self, layer: str, path: str, y_mlx, y_lab: np.ndarray, bound: np.ndarray) -> None:
        """One call of `layer`: y_mlx as MLX returned it (None: refused), the lab's y, and its accumulation_bound."""
        refused = y_mlx is None
        diff = np.zeros(y_lab.shape) if refused else np.abs(y_mlx.astype(np.float64) - y_lab)
        worst = np.unravel_index(np.argmax(diff), diff.shape)
        with np.errstate(divide="ignore", invalid="ignore"):
            used = float(np.max(np.where(diff > 0, diff / bound, 0.0)))
        seen = self._seen.setdefault(layer, {"max": 0.0, "bound": 0.0, "used": 0.0, "refused": False, "path": path})
        if diff[worst] >= seen["max"]:
            seen["max"], seen["bound"] = float(diff[worst]), float(bound[worst])
        seen["used"] = max(seen["used"], used)
        seen["refused"] |= refused

    def layers(self) -> tuple[LayerDifference, ...]:
        """Every Linear seen, in the order of its first call."""
        return tuple(
            LayerDifference(
                layer=layer,
                path=seen["path"],
                max_abs_diff=seen["max"],
                bound_at_max=seen["bound"],
                bound_used=seen["used"],
                refused=seen["refused"],
            )
            for layer, seen in self._seen.items()
        )
