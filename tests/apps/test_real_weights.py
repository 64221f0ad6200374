"""Real weights through every format, checked against independent computations: MLX's own
mx.quantize/mx.dequantize for its modes, ml_dtypes for the OCP rule, gguf-py decoding the lab's
Q4_K bytes. The real-model tests run on a small slice of all-MiniLM-L6-v2 and skip only where
its packages are not installed, and fail in CI (CI=true), which must install them; the
scale-search tests also run on synthetic weights."""

from __future__ import annotations

import gguf
import numpy as np
import pytest
from support import require_real_model

from lab.errors import LabError, RuleError
from lab.formats import mxfp4, nvfp4, scale_search
from lab.study import real_weights

SLICE = {
    "embeddings.word_embeddings.weight": 48,
    "encoder.layer.0.attention.self.query.weight": 32,
    "encoder.layer.5.output.dense.weight": 16,  # rows of 1536: the only shape Q4_K takes
    "encoder.layer.0.attention.self.query.bias": None,
}

MLX_MODES = {
    "MXFP4 (mlx)": {"mode": "mxfp4"},
    "NVFP4": {"mode": "nvfp4"},
    "NVFP4 + tensor scale": {"mode": "nvfp4", "tensor_scale": True},
    "MXFP8 (mlx)": {"mode": "mxfp8"},
    **{
        f"MLX affine {bits}-bit g{group}": {"mode": "affine", "bits": bits, "group_size": group}
        for bits in (4, 8)
        for group in (32, 64, 128)
    },
}


@pytest.fixture(scope="module")
def model_slice():
    require_real_model()
    weights = real_weights.load_weights(names=SLICE, rows=max(r for r in SLICE.values() if r))
    return {name: array[: SLICE[name]] if SLICE[name] else array for name, array in weights.items()}


@pytest.fixture(scope="module")
def report(model_slice):
    return real_weights.evaluate_model(model_slice)


def relative_rmse(w, reconstructed) -> float:
    w = np.asarray(w, dtype=np.float64)
    return float(np.linalg.norm(np.asarray(reconstructed, dtype=np.float64) - w) / np.linalg.norm(w))


def mlx_round_trip(mx, w: np.ndarray, mode: str, bits=None, group_size=None, tensor_scale=False) -> np.ndarray:
    w_mx = mx.array(w)
    options = {"mode": mode}
    if mode == "affine":
        options.update(bits=bits, group_size=group_size)
    if tensor_scale:
        options["global_scale"] = mx.array(np.abs(w).max(), dtype=mx.float32)
    parts = mx.quantize(w_mx, **options)
    biases = parts[2] if mode == "affine" else None
    return np.array(mx.dequantize(parts[0], parts[1], biases, dtype=mx.float32, **options))


# --------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------


def test_the_model_loads_as_float32_without_its_integer_buffers(model_slice):
    weights = real_weights.load_weights()
    assert "embeddings.position_ids" not in weights  # an int64 index buffer, not weights
    assert sum(w.size for w in weights.values()) == 22_713_728 - 512
    assert all(w.dtype == np.float32 for w in weights.values())
    assert model_slice["encoder.layer.5.output.dense.weight"].shape == (16, 1536)


def test_unknown_tensor_names_are_refused(model_slice):
    with pytest.raises(LabError, match=r"no tensors named \['nope'\]"):
        real_weights.load_weights(names=["nope"])


# --------------------------------------------------------------------------------------------
# The report against independent computations
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("format_name", sorted(MLX_MODES))
def test_mlx_formats_match_mlx_own_quantize_and_dequantize(mx, model_slice, report, format_name):
    for name, w in model_slice.items():
        if w.ndim != 2:
            continue
        expected = mlx_round_trip(mx, w, **MLX_MODES[format_name])
        result = report.result(name, format_name)
        assert result.relative_rmse == pytest.approx(relative_rmse(w, expected), rel=1e-6)
        # The lab forms scale*q + bias in float64 and rounds once; MLX rounds in float32: one ulp apart at most.
        one_ulp = float(np.spacing(np.abs(w).max()))
        assert result.max_abs_error == pytest.approx(np.abs(expected - w.astype(np.float64)).max(), abs=one_ulp)


def test_mxfp4_ocp_matches_ml_dtypes_rounding_under_the_floor_rule(model_slice, report):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    for name, w in model_slice.items():
        if w.ndim != 2:
            continue
        blocks = w.reshape(w.shape[0], -1, 32).astype(np.float64)
        amax = np.abs(blocks).max(axis=-1, keepdims=True)
        scale = np.ldexp(1.0, np.floor(np.log2(amax)).astype(int) - 2)  # OCP: floor(log2 amax) - emax(E2M1)
        elements = (blocks / scale).astype(np.float32).astype(ml_dtypes.float4_e2m1fn).astype(np.float64)
        expected = (elements * scale).reshape(w.shape)
        assert report.result(name, "MXFP4 (ocp)").relative_rmse == pytest.approx(relative_rmse(w, expected), rel=1e-9)


def test_q4_k_error_matches_gguf_py_decoding_the_lab_bytes(model_slice, report):
    from lab.formats import q4k

    w = model_slice["encoder.layer.5.output.dense.weight"]
    decoded = gguf.quants.dequantize(q4k.quantize(w).raw, gguf.GGMLQuantizationType.Q4_K)
    result = report.result("encoder.layer.5.output.dense.weight", "Q4_K")
    assert result.relative_rmse == pytest.approx(relative_rmse(w, decoded), rel=1e-9)
    assert result.bits_per_weight == 4.5


def test_rows_q4_k_cannot_take_are_skipped_with_what_a_converter_does(report):
    result = report.result("encoder.layer.0.attention.self.query.weight", "Q4_K")
    assert result.skipped.startswith("skipped: row length 384 not a multiple of 256; a GGUF converter")
    assert "Q5_0 in place of Q4_K" in result.skipped
    assert np.isnan(result.relative_rmse)
    summary = report.summaries["Q4_K"]
    assert summary.tensors_quantized == 1 and summary.tensors_skipped == 2
    assert summary.coverage == pytest.approx(16 * 1536 / (16 * 1536 + 32 * 384 + 48 * 384))


def test_one_dimensional_tensors_are_listed_not_evaluated(report):
    reason = report.not_evaluated["encoder.layer.0.attention.self.query.bias"]
    assert reason.startswith("1-D tensor")
    assert all(r.tensor != "encoder.layer.0.attention.self.query.bias" for r in report.results)


def test_overall_numbers_pool_the_tensors_by_size(model_slice, report):
    matrices = {name: w for name, w in model_slice.items() if w.ndim == 2}
    rows = [report.result(name, "NVFP4 + tensor scale") for name in matrices]
    summary = report.summaries["NVFP4 + tensor scale"]
    sizes = np.array([r.n_weights for r in rows])
    assert summary.bits_per_weight == pytest.approx(
        float((np.array([4.5 + 32 / n for n in sizes]) * sizes).sum() / sizes.sum())
    )
    squared_error = sum((r.relative_rmse * np.linalg.norm(matrices[r.tensor].astype(np.float64))) ** 2 for r in rows)
    squared_norm = sum(np.square(w.astype(np.float64)).sum() for w in matrices.values())
    assert summary.relative_rmse == pytest.approx(np.sqrt(squared_error / squared_norm), rel=1e-9)
    affine = report.summaries["MLX affine 4-bit g64"]
    assert affine.bits_per_weight == 5.0  # float32 checkpoint: 32-bit scale and bias per 64 weights


def test_outlier_share_follows_its_definition(model_slice, report):
    w = model_slice["embeddings.word_embeddings.weight"].astype(np.float64)
    rms = np.sqrt(np.mean(w**2))
    expected = np.mean(np.abs(w) > 6 * rms)
    assert report.result("embeddings.word_embeddings.weight", "Q4_K").skipped
    assert report.result("embeddings.word_embeddings.weight", "NVFP4").outlier_share == expected


def test_scale_search_beats_or_equals_the_mlx_rule_on_every_real_tensor(report):
    for rule_format, searched_format in (
        ("MXFP4 (mlx)", "MXFP4 (mlx) + scale search"),
        ("NVFP4", "NVFP4 + scale search"),
    ):
        for rule_result in (r for r in report.results if r.format == rule_format):
            searched = report.result(rule_result.tensor, searched_format)
            assert searched.relative_rmse <= rule_result.relative_rmse
        assert report.summaries[searched_format].relative_rmse < report.summaries[rule_format].relative_rmse


# --------------------------------------------------------------------------------------------
# Behaviour that needs no real model
# --------------------------------------------------------------------------------------------


def synthetic(rows: int, cols: int, seed: int = 5) -> np.ndarray:
    rng = np.random.default_rng(seed)
    w = rng.standard_t(3, size=(rows, cols)) * 0.02  # heavy tails, like real weight matrices
    return w.astype(np.float32)


def test_mlx_groups_a_row_does_not_divide_are_skipped_as_mlx_converter_does(mx):
    w = synthetic(4, 96)
    report = real_weights.evaluate_model({"w": w}, formats=["MLX affine 4-bit g64", "MLX affine 4-bit g32"])
    assert report.result("w", "MLX affine 4-bit g64").skipped == "skipped: row length 96 not a multiple of group 64"
    assert report.result("w", "MLX affine 4-bit g32").skipped is None
    with pytest.raises(ValueError, match="divisible by the quantization group size 64"):
        mx.quantize(mx.array(w), group_size=64, bits=4)


def test_progress_is_reported_after_every_step():
    calls = []
    weights = {"a": synthetic(2, 256), "b": synthetic(3, 512), "bias": np.zeros(8, np.float32)}
    real_weights.evaluate_model(weights, formats=["NVFP4", "Q4_K"], progress=lambda *step: calls.append(step))
    assert [done for done, _, _ in calls] == [1, 2, 3, 4]
    assert {total for _, total, _ in calls} == {4}
    assert calls[0][2] == "a · NVFP4"
    report = real_weights.evaluate_model(weights, formats=["NVFP4", "Q4_K"])
    assert [row["format"] for row in report.summary_records()] == ["NVFP4", "Q4_K"]
    assert [(row["tensor"], row["format"]) for row in report.records()] == [
        ("a", "NVFP4"),
        ("a", "Q4_K"),
        ("b", "NVFP4"),
        ("b", "Q4_K"),
    ]


def test_unknown_formats_are_refused():
    with pytest.raises(RuleError, match=r"unknown formats \['MXFP5'\]"):
        real_weights.evaluate_model({"a": synthetic(2, 64)}, formats=["MXFP5"])


def test_scale_search_with_only_offset_zero_is_the_rule_itself():
    w = synthetic(8, 256)
    rule = mxfp4.quantize(w, rule="mlx")
    searched = scale_search.mxfp4_scale_search(w, offsets=(0,))
    assert np.array_equal(searched.codes, rule.codes) and np.array_equal(searched.scale_bytes, rule.scale_bytes)
    for global_scale in (None, nvfp4.tensor_amax(w)):
        rule = nvfp4.quantize(w, global_scale=global_scale)
        searched = scale_search.nvfp4_scale_search(w, global_scale=global_scale, offsets=(0,))
        assert np.array_equal(searched.codes, rule.codes) and np.array_equal(searched.scale_bytes, rule.scale_bytes)


@pytest.mark.parametrize("rule", ["mlx", "ocp"])
def test_mxfp4_scale_search_never_loses_to_its_rule_and_moves_some_blocks(rule):
    w = synthetic(16, 512)
    base = mxfp4.quantize(w, rule=rule)
    searched = scale_search.mxfp4_scale_search(w, rule=rule)
    block_error = lambda t: np.square(t.dequantize().astype(np.float64) - w).reshape(16, -1, 32).sum(-1)  # noqa: E731
    assert np.all(block_error(searched) <= block_error(base))
    moved = searched.scale_bytes.astype(int) - base.scale_bytes
    assert np.any(moved != 0) and np.all(np.abs(moved) <= 2)


def test_nvfp4_scale_search_never_loses_to_the_mlx_rule_and_moves_some_blocks():
    w = synthetic(16, 512)
    for global_scale in (None, nvfp4.tensor_amax(w)):
        base = nvfp4.quantize(w, global_scale=global_scale)
        searched = scale_search.nvfp4_scale_search(w, global_scale=global_scale)
        block_error = lambda t: np.square(t.dequantize().astype(np.float64) - w).reshape(16, -1, 16).sum(-1)  # noqa: E731
        assert np.all(block_error(searched) <= block_error(base))
        moved = searched.scale_bytes.astype(int) - base.scale_bytes
        assert np.any(moved != 0) and np.all(np.abs(moved) <= 2)
        assert searched.global_scale == base.global_scale


def test_searched_blocks_are_valid_mlx_arrays_that_mlx_decodes_like_the_lab(mx):
    w = synthetic(8, 256, seed=9)
    searched = scale_search.mxfp4_scale_search(w)
    packed, scales = searched.to_mlx()
    decoded = np.array(mx.dequantize(packed, scales, mode="mxfp4", dtype=mx.float32))
    assert np.array_equal(decoded.view(np.uint32), searched.dequantize().view(np.uint32))
    searched = scale_search.nvfp4_scale_search(w)
    packed, scales = searched.to_mlx()
    decoded = np.array(mx.dequantize(packed, scales, mode="nvfp4", dtype=mx.float32))
    assert np.array_equal(decoded.view(np.uint32), searched.dequantize().view(np.uint32))
    amax = nvfp4.tensor_amax(w)
    searched = scale_search.nvfp4_scale_search(w, global_scale=amax)
    packed, scales = searched.to_mlx()
    decoded = np.array(
        mx.dequantize(packed, scales, mode="nvfp4", dtype=mx.float32, global_scale=mx.array(amax, dtype=mx.float32))
    )
    # With a tensor scale MLX multiplies in another order than the lab: at most one float32 ulp apart.
    np.testing.assert_allclose(decoded, searched.dequantize(), rtol=2**-23, atol=0)
