"""The on-device pane (lab.device) against the installed MLX.

Every expectation here is recomputed in the test from MLX or gguf-py directly, so the pane's
report is checked against MLX, never the lab against itself. The data is asymmetric: scales
differ row by row and affine groups are shifted off zero.
"""

from __future__ import annotations

import json

import gguf
import numpy as np
import pytest

from lab import affine, device, mlx_bridge, mxfp4, nvfp4, q4k, zoo
from lab.errors import LabError, ShapeError

Q4_K = gguf.GGMLQuantizationType.Q4_K


def _asymmetric_weights(rows: int = 8, cols: int = 128, seed: int = 5) -> np.ndarray:
    rng = np.random.default_rng(seed)
    magnitudes = rng.uniform(0.01, 40, size=(rows, 1))
    offsets = rng.uniform(-3, 3, size=(rows, 1))
    return (rng.normal(0, 1, (rows, cols)) * magnitudes + offsets).astype(np.float32)


def _by_name(run) -> dict:
    return {comparison.name: comparison for comparison in run.comparisons}


def _cpu(report):
    assert report.available
    run = report.runs[0]
    assert run.device == "cpu"
    return run


def _mlx_arguments(mx, kind, w, kwargs):
    group_size, bits = {"mxfp4": (32, 4), "nvfp4": (16, 4), "affine": (kwargs.get("group_size", 64), 4)}[kind]
    extra = {}
    if kwargs.get("global_scale") is not None:
        extra["global_scale"] = mx.array(kwargs["global_scale"], dtype=mx.float32)
    return {"group_size": group_size, "bits": bits, "mode": kind, **extra}


BLOCK_CASES = [
    ("mxfp4", {}),
    ("nvfp4", {}),
    ("nvfp4", {"global_scale": "amax"}),
    ("affine", {"bits": 4, "group_size": 64}),
]


@pytest.mark.parametrize(("kind", "kwargs"), BLOCK_CASES, ids=["mxfp4", "nvfp4", "nvfp4-global-scale", "affine"])
def test_run_block_reports_what_mlx_does(mx, kind, kwargs):
    w = _asymmetric_weights()
    if kwargs.get("global_scale") == "amax":
        kwargs = {"global_scale": float(np.abs(w).max())}
    report = device.run_block(kind, w=w, **kwargs)
    run = _cpu(report)
    comparisons = _by_name(run)
    assert not run.refusals

    # mx.quantize, computed here: the report must count MLX's bytes and find them equal to the lab's
    arguments = _mlx_arguments(mx, kind, w, kwargs)
    mlx_arrays = mx.quantize(mx.array(w), **arguments)
    packed = comparisons["mx.quantize packed codes vs lab"]
    assert packed.total == np.array(mlx_arrays[0]).nbytes
    assert packed.identical == packed.total and packed.verdict == "bit-identical"
    assert comparisons["mx.quantize scales vs lab"].verdict == "bit-identical"
    if kind == "affine":
        assert comparisons["mx.quantize biases vs lab"].verdict == "bit-identical"

    # mx.dequantize of MLX's own bytes, as float32, against the lab tensor's weights
    mlx_weights = np.array(mx.dequantize(*mlx_arrays, **arguments, dtype=mx.float32))
    quantize = {"mxfp4": mxfp4.quantize, "nvfp4": nvfp4.quantize, "affine": affine.quantize}[kind]
    lab_weights = quantize(w, **kwargs).dequantize()
    dequantized = comparisons["mx.dequantize(dtype=float32) vs lab dequantize()"]
    assert dequantized.identical == int((lab_weights.view(np.uint32) == mlx_weights.view(np.uint32)).sum())
    if kind in ("mxfp4", "nvfp4") and "global_scale" not in kwargs:
        assert dequantized.verdict == "bit-identical"
    else:
        # MLX rounds twice (the combined NVFP4 scale, or scale*q before + bias); the lab once
        assert dequantized.within_rounding == dequantized.total
        assert dequantized.verdict.startswith(("bit-identical", "agrees within"))
    if kind == "nvfp4" and "global_scale" in kwargs:
        assert dequantized.max_ulps <= 1

    assert run.matmul is not None and run.matmul.verdict.startswith("agrees within float32 accumulation")
    assert run.matmul.quantization_error is not None


def test_default_dtype_is_what_mlx_returns(mx):
    w = _asymmetric_weights()
    run = _cpu(device.run_block("mxfp4", w=w))
    packed, scales = mx.quantize(mx.array(w), group_size=32, bits=4, mode="mxfp4")
    returned = mx.dequantize(packed, scales, group_size=32, bits=4, mode="mxfp4").dtype
    assert run.default_dtype == str(returned).rsplit(".", 1)[-1]
    default = _by_name(run)[f"mx.dequantize default ({run.default_dtype}) vs dtype=float32"]
    assert default.total == w.size


def test_forgotten_global_scale_is_a_constant_factor(mx):
    w = _asymmetric_weights()
    global_scale = float(np.abs(w).max())
    run = _cpu(device.run_block("nvfp4", w=w, global_scale=global_scale))
    packed, scales = mx.quantize(mx.array(w), group_size=16, bits=4, mode="nvfp4", global_scale=mx.array(global_scale))
    nvfp4_mode = {"group_size": 16, "bits": 4, "mode": "nvfp4", "dtype": mx.float32}
    with_scale = np.array(mx.dequantize(packed, scales, global_scale=mx.array(global_scale), **nvfp4_mode))
    without = np.array(mx.dequantize(packed, scales, **nvfp4_mode))
    nonzero = with_scale != 0
    ratios = without[nonzero].astype(np.float64) / with_scale[nonzero]
    assert run.forgotten_global_scale_factor == pytest.approx(float(np.median(ratios)), rel=1e-12)
    assert np.ptp(ratios) / ratios.min() < 1e-6  # one factor for every weight
    assert run.forgotten_global_scale_factor == pytest.approx(2688 / global_scale, rel=1e-5)


def test_input_x_is_used_and_checked(mx):
    w = _asymmetric_weights(rows=4, cols=64)
    x = np.linspace(-2, 3, 64)
    run = _cpu(device.run_block("mxfp4", w=w, x=x))
    packed, scales = mx.quantize(mx.array(w), group_size=32, bits=4, mode="mxfp4")
    x_mx = mx.array(x[None, :].astype(np.float32))
    y = np.array(mx.quantized_matmul(x_mx, packed, scales, mode="mxfp4", group_size=32, bits=4))
    assert np.array_equal(run.matmul.y_mlx, y)
    with pytest.raises(ShapeError):
        device.run_block("mxfp4", w=w, x=np.ones(63))
    with pytest.raises(LabError):
        device.run_block("mxfp4")


# --------------------------------------------------------------------------------------------
# Q4_K
# --------------------------------------------------------------------------------------------


def test_q4k_affine_path_agrees_with_gguf_py_within_float32_rounding(mx):
    raw = zoo.asymmetric_blocks(count=5).reshape(2, -1)
    report = device.run_q4k(raw)
    comparison = _by_name(_cpu(report))["affine path: mx.dequantize vs gguf-py"]
    assert comparison.within_rounding == comparison.total == raw.size // 144 * 256

    reference = gguf.quants.dequantize(raw, Q4_K)
    packed, scales, biases = q4k.to_mlx_affine(raw)
    mlx_weights = np.array(
        mx.dequantize(mx.array(packed), mx.array(scales), mx.array(biases), group_size=32, bits=4, dtype=mx.float32)
    )
    difference = np.abs(mlx_weights.astype(np.float64) - reference)
    assert comparison.max_abs_diff == pytest.approx(float(difference.max()))
    # one float32 rounding of gain*q and one of the sum, from the terms as gguf-py forms them
    gains = np.repeat(scales, 32, axis=-1)
    codes = np.round((reference - np.repeat(biases, 32, axis=-1)) / np.where(gains == 0, 1, gains))
    bound = np.spacing(np.abs(gains * codes).astype(np.float32)) + np.spacing(np.abs(reference))
    assert np.all(difference <= bound)
    assert _cpu(report).matmul.verdict.startswith("agrees within float32 accumulation")


def _load_through_mlx(mx, raw: np.ndarray, tmp_path) -> dict:
    path = tmp_path / "independent.gguf"
    writer = gguf.GGUFWriter(str(path), arch="test")
    writer.add_tensor("w", raw, raw_dtype=Q4_K)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return mx.load(str(path))


def test_gguf_path_reports_the_subblock_differences_mlx_really_has(mx, tmp_path):
    raw = zoo.asymmetric_blocks(count=3).reshape(2, -1)
    report = device.run_q4k(raw)
    run = _cpu(report)
    reference = gguf.quants.dequantize(raw, Q4_K).astype(np.float64)
    try:
        loaded = _load_through_mlx(mx, raw, tmp_path)
    except (ValueError, RuntimeError):
        assert any("mx.load" in refusal for refusal in run.refusals)
        return
    array = loaded["w"]
    if array.dtype not in (mx.float16, mx.bfloat16, mx.float32):
        assert not any(name.startswith("GGUF path") for name in _by_name(run))
        return
    values = np.array(array.astype(mx.float32)).astype(np.float64).reshape(reference.shape)
    (comparison,) = [c for name, c in _by_name(run).items() if name.startswith("GGUF path")]
    subblock, block = comparison.breakdowns
    assert (subblock.label, block.label) == ("subblock", "block")
    by_subblock = np.abs(values - reference).reshape(2, -1, 32).max(axis=-1)
    by_block = np.abs(values - reference).reshape(2, -1, 256).max(axis=-1)
    assert np.array_equal(subblock.max_abs_diff, by_subblock)
    assert np.array_equal(block.max_abs_diff, by_block)
    not_identical = (values != reference).reshape(2, -1, 32).sum(axis=-1)
    assert np.array_equal(subblock.not_identical, not_identical)
    returned = str(array.dtype).rsplit(".", 1)[-1]
    assert any(returned in note and "(2, 512)" in note for note in run.notes)
    if comparison.within_rounding < comparison.total:
        # the report names a deliberately wrong decoder; it must reproduce MLX's array exactly
        (named,) = [s for s in zoo.Q4K_DECODERS if s.deliberately_wrong and f"'{s.name}'" in comparison.note]
        rounded = named.function(raw).astype(np.float16 if returned == "float16" else np.float32)
        assert np.array_equal(rounded.astype(np.float64).reshape(values.shape), values)


# --------------------------------------------------------------------------------------------
# Blocks that push the formats to their edges still produce a report
# --------------------------------------------------------------------------------------------


def _degenerate_cases():
    rng = np.random.default_rng(3)
    signs = np.sign(rng.normal(size=(2, 64))).astype(np.float32)
    return {
        "zero": np.zeros((2, 64), dtype=np.float32),
        "tiny": (rng.normal(0, 1e-30, (2, 64))).astype(np.float32),
        "huge": (signs * 3e38).astype(np.float32),
        "saturating": (rng.normal(0, 1, (2, 64)) * np.array([[1e4], [7.0]])).astype(np.float32),
    }


@pytest.mark.parametrize("case", ["zero", "tiny", "huge", "saturating"])
@pytest.mark.parametrize("kind", ["mxfp4", "mxfp8", "nvfp4", "affine"])
def test_degenerate_blocks_produce_reports(mx, kind, case):
    kwargs = {"group_size": 32} if kind == "affine" else {}
    report = device.run_block(kind, w=_degenerate_cases()[case], **kwargs)
    assert report.available and report.runs
    assert report.to_markdown().startswith("###")
    json.dumps(report.as_dict())


def test_nan_scale_bytes_are_reported_per_side(mx):
    tensor = mxfp4.from_parts(np.arange(64, dtype=np.uint8).reshape(2, 32) % 16, np.array([[0xFF], [127]], dtype=np.uint8))
    run = _cpu(device.run_block("mxfp4", tensor=tensor))
    packed, scales = tensor.to_mlx()
    mlx_block = np.array(mx.dequantize(packed, scales, group_size=32, bits=4, mode="mxfp4", dtype=mx.float32))[0]
    (note,) = [note for note in run.notes if "NaN scale byte" in note]
    assert f"{int(np.isnan(mlx_block).sum())} NaN" in note.split("MLX as")[1]
    dequantized = _by_name(run)["mx.dequantize(dtype=float32) vs lab dequantize()"]
    assert dequantized.breakdowns[0].not_identical[1, 0] == 0  # the block with a real scale agrees


def test_degenerate_q4k_blocks_produce_reports(mx):
    blocks = np.zeros((3, 144), dtype=np.uint8)
    blocks[1, 0:2] = np.frombuffer(np.float16(np.inf).tobytes(), dtype=np.uint8)  # d = inf
    blocks[2, 2:4] = np.frombuffer(np.float16(np.nan).tobytes(), dtype=np.uint8)  # dmin = NaN
    blocks[1:, 4:] = 0xFF
    report = device.run_q4k(blocks.reshape(1, -1))
    assert report.available and report.runs
    json.dumps(report.as_dict())


def test_without_mlx_the_pane_says_how_to_get_it(monkeypatch):
    def unavailable():
        raise mlx_bridge.MLXUnavailableError("MLX is not installed (simulated)")

    monkeypatch.setattr(mlx_bridge, "mlx_core", unavailable)
    for report in (
        device.run_block("mxfp4", w=np.ones((1, 32), dtype=np.float32)),
        device.run_q4k(q4k.presentation_fixture()),
    ):
        assert report.available is False
        assert report.install_hint == mlx_bridge.install_hint()
        assert "not installed" in report.message
        assert report.install_hint in report.to_markdown()
        assert report.runs == ()


def test_gguf_path_decodes_packed_arrays_if_mlx_returns_them(mx, monkeypatch):
    """Other GGUF types come back from mx.load as (weights, scales, biases); the pane decodes those too."""
    raw = zoo.asymmetric_blocks(count=1).reshape(1, -1)
    packed, scales, biases = q4k.to_mlx_affine(raw)
    name = device.GGUF_TENSOR_NAME
    arrays = {name: mx.array(packed), f"{name}.scales": mx.array(scales), f"{name}.biases": mx.array(biases)}
    monkeypatch.setattr(mx, "load", lambda *args, **kwargs: dict(arrays))
    run = _cpu(device.run_q4k(raw))
    (comparison,) = [c for name, c in _by_name(run).items() if name.startswith("GGUF path")]
    assert comparison.within_rounding == comparison.total


def test_gguf_path_reports_a_refusing_mx_load(mx, monkeypatch):
    def refuse(*args, **kwargs):
        raise ValueError("[load] simulated refusal")

    monkeypatch.setattr(mx, "load", refuse)
    run = _cpu(device.run_q4k(q4k.presentation_fixture()))
    assert any("simulated refusal" in refusal for refusal in run.refusals)
    assert not any(name.startswith("GGUF path") for name in _by_name(run))
