"""The on-device pane (lab.device) against the installed MLX.

Every expectation here is recomputed in the test from MLX or gguf-py directly, so the pane's
report is checked against MLX, never the lab against itself. The data is asymmetric: scales
differ row by row and affine groups are shifted off zero.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re

import gguf
import numpy as np
import pytest

from lab import device
from lab.device.steps import Steps
from lab.errors import LabError, ShapeError
from lab.formats import affine, mlx_layout, mxfp4, mxfp8, nvfp4, q4k, registry
from lab.teach import zoo

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
    # NVFP4's tensor scale multiplies every weight by global_scale / (6 * 448): E2M1's largest
    # magnitude times E4M3's. Leaving it out multiplies every weight by the inverse, 2688 / global_scale.
    assert 6 * 448 == 2688
    factor = run.forgotten_global_scale_factor
    assert factor == pytest.approx(2688 / global_scale, rel=2**-22)
    # one factor for every weight MLX returned: each without-weight is that factor times the
    # with-weight, up to the float32 roundings on MLX's two paths (a few units of 2^-24 each)
    nonzero = with_scale != 0
    assert nonzero.sum() > w.size // 2
    np.testing.assert_allclose(without[nonzero], factor * with_scale[nonzero].astype(np.float64), rtol=2**-21)
    assert np.array_equal(without[~nonzero], with_scale[~nonzero])  # the zeros stay zero


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


#: the MLX release whose mx.load behaviour on Q4_K is pinned below
PINNED_MLX = "0.32.4"


def _q4k_fields_by_hand(block: np.ndarray):
    """d, dmin, the eight 6-bit scales and mins, and the 4-bit codes of one 144-byte Q4_K block,
    unpacked as llama.cpp's get_scale_min_k4 and dequantize_row_q4_K do, subblock by subblock."""
    d, dmin = (float(v) for v in block[:4].copy().view("<f2"))
    q = [int(b) for b in block[4:16]]
    scales = [q[j] & 63 if j < 4 else (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4) for j in range(8)]
    mins = [q[j + 4] & 63 if j < 4 else (q[j + 4] >> 4) | ((q[j] >> 6) << 4) for j in range(8)]
    chunks = block[16:].reshape(4, 32).astype(np.float64)  # 32 bytes per pair of subblocks
    codes = np.stack([np.floor(chunks[j // 2] / 16) if j % 2 else chunks[j // 2] % 16 for j in range(8)])
    return d, dmin, scales, mins, codes


def test_gguf_path_on_the_pinned_mlx_reads_odd_subblocks_with_the_even_subblocks_metadata(mx, tmp_path):
    """What MLX 0.32.4's mx.load does with a Q4_K tensor, pinned element by element.

    Another MLX version may behave differently (the generic test above covers any behaviour);
    this one is checked exactly so a change in MLX shows up here first.
    """
    if mx.__version__ != PINNED_MLX:
        pytest.skip(f"pins MLX {PINNED_MLX}'s mx.load behaviour; this is MLX {mx.__version__}")
    raw = q4k.presentation_fixture().reshape(1, 144)
    loaded = _load_through_mlx(mx, raw, tmp_path)
    assert list(loaded) == ["w"]
    array = loaded["w"]
    assert array.dtype == mx.float16 and array.shape == (1, 256)
    values = np.array(array.astype(mx.float32)).astype(np.float64).reshape(8, 32)
    reference = gguf.quants.dequantize(raw, Q4_K).astype(np.float64).reshape(8, 32)

    # by hand: subblock j holds d*scale_j*q - dmin*min_j, with the low nibbles of byte chunk j//2
    # for even j and the high nibbles for odd j (llama.cpp's layout)
    d, dmin, scales, mins, codes = _q4k_fields_by_hand(raw[0])
    own = np.stack([d * scales[j] * codes[j] - dmin * mins[j] for j in range(8)])
    even_metadata = np.stack([d * scales[j - j % 2] * codes[j] - dmin * mins[j - j % 2] for j in range(8)])
    assert np.array_equal(reference, own)  # gguf-py decodes by the layout
    as_float16 = even_metadata.astype(np.float16).astype(np.float64)
    # MLX: every lane in its place, each odd subblock scaled with the subblock before it
    assert np.array_equal(values, as_float16)
    assert np.array_equal(values[0::2], reference[0::2].astype(np.float16).astype(np.float64))
    assert np.all((values[1::2] != reference[1::2]).any(axis=1))
    assert (values[1, 0], reference[1, 0]) == (2.25, 3.25)  # lane 32
    assert (values[1, 1], reference[1, 1]) == (-0.25, -0.5)  # lane 33

    run = _cpu(device.run_q4k(raw))
    (comparison,) = [c for name, c in _by_name(run).items() if name.startswith("GGUF path")]
    assert comparison.name == "GGUF path: mx.load (float16) vs gguf-py"
    # the zoo decoder whose output, rounded to float16, is the hand computation above
    (matching,) = [
        decoder
        for decoder in zoo.Q4K_DECODERS
        if np.array_equal(decoder.function(raw).astype(np.float16).astype(np.float64).reshape(8, 32), as_float16)
    ]
    assert matching.deliberately_wrong
    assert f"'{matching.name}'" in comparison.note
    subblock_breakdown = comparison.breakdowns[0]
    assert subblock_breakdown.groups_with_differences() == [(0, 1), (0, 3), (0, 5), (0, 7)]


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


#: (group size, bits) of each MLX mode as the degenerate cases use it
DEGENERATE_MODES = {"mxfp4": (32, 4), "mxfp8": (32, 8), "nvfp4": (16, 4), "affine": (32, 4)}
QUANTIZERS = {"mxfp4": mxfp4.quantize, "mxfp8": mxfp8.quantize, "nvfp4": nvfp4.quantize, "affine": affine.quantize}


def _same_or_both_nan(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
    return (a.view(np.uint32) == b.view(np.uint32)) | (np.isnan(a) & np.isnan(b))


@pytest.mark.parametrize("case", ["zero", "tiny", "huge", "saturating"])
@pytest.mark.parametrize("kind", ["mxfp4", "mxfp8", "nvfp4", "affine"])
def test_degenerate_blocks_produce_reports(mx, kind, case):
    w = _degenerate_cases()[case]
    kwargs = {"group_size": 32} if kind == "affine" else {}
    x = np.linspace(-1.0, 1.0, w.shape[-1], dtype=np.float32)
    report = device.run_block(kind, w=w, x=x, **kwargs)
    run = _cpu(report)
    assert not run.refusals
    assert device.report_markdown(report).startswith("###")
    json.dumps(report.as_dict())
    comparisons = _by_name(run)

    # what MLX does, recomputed here from MLX itself: its own bytes, and its decode of the lab's
    group_size, bits = DEGENERATE_MODES[kind]
    mode = {"group_size": group_size, "bits": bits, "mode": kind}
    with np.errstate(over="ignore", invalid="ignore"):  # the huge case overflows to inf, as in the pane
        lab_tensor = QUANTIZERS[kind](w, **kwargs)
        lab_weights = lab_tensor.dequantize()
    lab_arrays = lab_tensor.to_mlx()
    mlx_packed = np.array(mx.quantize(mx.array(w), **mode)[0])
    lab_bytes, mlx_bytes = np.array(lab_arrays[0]).view(np.uint8), mlx_packed.view(np.uint8)
    packed = comparisons["mx.quantize packed codes vs lab"]
    assert (packed.total, packed.identical) == (mlx_bytes.size, int((lab_bytes == mlx_bytes).sum()))

    mlx_weights = np.array(mx.dequantize(*lab_arrays, **mode, dtype=mx.float32))
    dequantized = comparisons["mx.dequantize(dtype=float32) vs lab dequantize()"]
    assert dequantized.identical == int(_same_or_both_nan(lab_weights, mlx_weights).sum())

    y_mlx = np.array(mx.quantized_matmul(mx.array(x[None, :]), *lab_arrays, transpose=True, **mode))
    assert np.all(_same_or_both_nan(run.matmul.y_mlx, y_mlx))

    signs = np.sign(w)
    if case == "zero":
        # every scale is the smallest and every code 0: both sides decode exact zeros
        assert np.all(mlx_weights == 0) and np.all(lab_weights == 0)
        assert dequantized.verdict == "bit-identical" and packed.verdict == "bit-identical"
        assert np.all(y_mlx == 0)
    elif case == "huge" and kind == "mxfp4":
        # MLX's scale is 2^ceil(log2(amax / 6)) = 2^ceil(125.2) = 2^126; 3e38 / 2^126 = 3.53 rounds
        # to E2M1's 4, and 4 * 2^126 = 2^128 is past float32's largest: every weight is infinite
        assert math.ceil(math.log2(3e38 / 6)) == 126 and 3e38 / 2.0**126 == pytest.approx(3.526, abs=1e-3)
        assert np.array_equal(mlx_weights, signs * np.float32(np.inf))
        assert dequantized.verdict == "bit-identical"
    elif case == "huge" and kind == "mxfp8":
        # MLX's scale is 2^ceil(log2(amax / 448)) = 2^ceil(119.01) = 2^120; 3e38 / 2^120 = 225.7
        # rounds to 224, its E4M3 neighbour (the step there is 16): every weight is 224 * 2^120
        assert math.ceil(math.log2(3e38 / 448)) == 120 and 3e38 / 2.0**120 == pytest.approx(225.7, abs=0.1)
        assert np.array_equal(mlx_weights, (signs * 224 * 2.0**120).astype(np.float32))
        assert dequantized.verdict == "bit-identical"


def test_nan_scale_bytes_are_reported_per_side(mx):
    codes = np.arange(64, dtype=np.uint8).reshape(2, 32) % 16
    tensor = mxfp4.from_parts(codes, np.array([[0xFF], [127]], dtype=np.uint8))
    run = _cpu(device.run_block("mxfp4", tensor=tensor))
    packed, scales = tensor.to_mlx()
    mlx_block = np.array(mx.dequantize(packed, scales, group_size=32, bits=4, mode="mxfp4", dtype=mx.float32))[0]
    # By the rule for E8M0 byte 0xFF: the OCP reading (the lab's) makes the whole block NaN; MLX
    # reads the byte as 2^128 = inf, so code 0 and code 8 (+0 and -0) give 0 * inf = NaN and every
    # other code an infinity with its sign (codes 1-7 positive, 9-15 negative).
    block_codes = codes[0]
    zero_codes = int(np.isin(block_codes, (0, 8)).sum())
    positive, negative = int(((block_codes >= 1) & (block_codes <= 7)).sum()), int((block_codes >= 9).sum())
    assert (zero_codes, positive, negative) == (4, 14, 14)
    assert (int(np.isnan(mlx_block).sum()), int(np.isposinf(mlx_block).sum()), int(np.isneginf(mlx_block).sum())) == (
        zero_codes,
        positive,
        negative,
    )
    (note,) = [note for note in run.notes if "NaN scale byte" in note]
    lab_side, mlx_side = note.split("MLX as")
    assert lab_side.endswith(f"the lab decodes their 32 weights as {block_codes.size} NaN; ")
    assert mlx_side == f" {zero_codes} NaN, {positive} +inf, {negative} −inf."
    dequantized = _by_name(run)["mx.dequantize(dtype=float32) vs lab dequantize()"]
    assert dequantized.breakdowns[0].not_identical[1, 0] == 0  # the block with a real scale agrees
    # the NaN-scale block: bit-identical only where both sides are NaN, the zero codes
    assert dequantized.breakdowns[0].not_identical[0, 0] == positive + negative


def test_degenerate_q4k_blocks_produce_reports(mx, tmp_path):
    blocks = np.zeros((3, 144), dtype=np.uint8)
    blocks[1, 0:2] = np.frombuffer(np.float16(np.inf).tobytes(), dtype=np.uint8)  # d = inf
    blocks[2, 2:4] = np.frombuffer(np.float16(np.nan).tobytes(), dtype=np.uint8)  # dmin = NaN
    blocks[1:, 4:] = 0xFF  # every 6-bit scale and min 63, every code 15
    raw = blocks.reshape(1, -1)
    x = np.linspace(-1.0, 1.0, 768, dtype=np.float32)
    report = device.run_q4k(raw, x=x)
    assert report.available and report.runs
    json.dumps(report.as_dict())
    run = _cpu(report)
    assert not run.refusals

    # by hand, w = d*scale*q - dmin*min: block 0 is 0*0*0 - 0*0 = 0; block 1 is inf*63*15 - 0*63 = inf;
    # block 2 is 0*63*15 - NaN*63 = NaN
    expected = np.concatenate([np.zeros(256), np.full(256, np.inf), np.full(256, np.nan)])[None, :]
    assert np.all(_same_or_both_nan(gguf.quants.dequantize(raw, Q4_K), expected))
    (lab_check,) = report.reference_checks
    assert lab_check.identical == int(_same_or_both_nan(q4k.decode(raw), expected).sum()) == 768

    # the affine path, run here straight through MLX: scale = d*scale (inf in block 1), bias = -dmin*min
    packed, scales, biases = (mx.array(a) for a in q4k.to_mlx_affine(raw))
    affine = np.array(mx.dequantize(packed, scales, biases, group_size=32, bits=4, dtype=mx.float32))
    comparison = _by_name(run)["affine path: mx.dequantize vs gguf-py"]
    assert comparison.identical == int(_same_or_both_nan(affine, expected).sum()) == 768
    assert comparison.verdict == "bit-identical"

    loaded = np.array(_load_through_mlx(mx, raw, tmp_path)["w"].astype(mx.float32))
    gguf_path = _by_name(run)["GGUF path: mx.load (float16) vs gguf-py"]
    assert gguf_path.identical == int(_same_or_both_nan(loaded, expected).sum()) == 768

    # x has no zero, so one infinite or NaN weight makes every dot product NaN on both sides
    assert np.all(x != 0)
    y_mlx = np.array(mx.quantized_matmul(mx.array(x[None, :]), packed, scales, biases, group_size=32, bits=4))
    assert np.isnan(y_mlx).all() and np.isnan(run.matmul.y_mlx).all() and np.isnan(run.matmul.y_reference).all()


def test_q4k_matmul_is_measured_against_gguf_py_not_the_lab_decoder(mx, monkeypatch):
    raw = zoo.asymmetric_blocks(count=2).reshape(1, -1)
    x = np.linspace(-2.0, 3.0, raw.size // 144 * 256, dtype=np.float32)
    # break the lab's decoder: the matmul reference must not move with it
    monkeypatch.setattr(q4k.Q4KTensor, "dequantize", lambda self: np.zeros(self.shape, np.float32))
    report = device.run_q4k(raw, x=x)
    run = _cpu(report)
    (lab_check,) = report.reference_checks
    assert lab_check.verdict.startswith("differs")  # the broken decoder is caught there
    gguf_py = gguf.quants.dequantize(raw, Q4_K).astype(np.float64)
    assert np.array_equal(run.matmul.y_reference, x[None, :].astype(np.float64) @ gguf_py.T)
    assert run.matmul.verdict.startswith("agrees within float32 accumulation")


def test_only_mlx_failures_are_reported_as_mlx_refusing(mx, monkeypatch):
    steps = Steps(mx)
    # MLX's own refusal (a reshape to the wrong size) becomes a line in the report
    assert steps.attempt("mx.reshape", lambda: mx.reshape(mx.zeros(6), (4,))) is None
    (refusal,) = steps.refusals
    assert refusal.startswith("mx.reshape: ValueError: [reshape]")

    # a LabError is a ValueError too, but it is the lab's, so it propagates
    def lab_failure():
        raise ShapeError("simulated lab failure")

    with pytest.raises(ShapeError, match="simulated lab failure"):
        steps.attempt("a lab step", lab_failure)
    assert len(steps.refusals) == 1

    # so does a failure while the lab converts MLX's result to numpy, anywhere in the pane
    def broken_conversion(array):
        raise ValueError("simulated to_numpy failure")

    monkeypatch.setattr(mlx_layout, "to_numpy", broken_conversion)
    with pytest.raises(ValueError, match="simulated to_numpy failure"):
        device.run_block("mxfp4", w=_asymmetric_weights(rows=2, cols=32))
    with pytest.raises(ValueError, match="simulated to_numpy failure"):
        device.run_q4k(q4k.presentation_fixture())


def test_a_tensor_with_quantizer_settings_is_refused(mx):
    w = _asymmetric_weights(rows=2, cols=64)
    tensor = mxfp4.quantize(w)
    with pytest.raises(LabError, match=r"run_block got a tensor and the quantizer settings \['group_size', 'rule'\]"):
        device.run_block("mxfp4", w=w, tensor=tensor, rule="ocp", group_size=32)
    assert _cpu(device.run_block("mxfp4", w=w, tensor=tensor)).comparisons  # without settings it runs


def test_without_mlx_the_pane_says_how_to_get_it(monkeypatch):
    def unavailable():
        raise mlx_layout.MLXUnavailableError("MLX is not installed (simulated)")

    monkeypatch.setattr(mlx_layout, "mlx_core", unavailable)
    for report in (
        device.run_block("mxfp4", w=np.ones((1, 32), dtype=np.float32)),
        device.run_q4k(q4k.presentation_fixture()),
    ):
        assert report.available is False
        assert report.install_hint == mlx_layout.install_hint()
        assert "not installed" in report.message
        assert report.install_hint in device.report_markdown(report)
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


# --------------------------------------------------------------------------------------------
# The pane loops over the registry
# --------------------------------------------------------------------------------------------


@pytest.fixture
def toy_formats():
    """A copy of MXFP4 under another name, and one MLX has no mode for, registered for one test."""
    toys = (
        dataclasses.replace(registry.get("mxfp4"), name="toy_mxfp4", title="Toy MXFP4"),
        dataclasses.replace(registry.get("mxfp4"), name="toy_no_mlx", title="Toy without MLX", mlx=None),
    )
    for toy in toys:
        registry.register(toy)
    try:
        yield toys
    finally:
        for toy in toys:
            registry.unregister(toy.name)


def test_a_registered_format_shows_up_in_the_pane_unedited(mx, toy_formats):
    w = _asymmetric_weights(rows=4, cols=64)
    report = device.run_block("toy_mxfp4", w=w)
    assert (report.format, report.title) == ("toy_mxfp4", "Toy MXFP4")
    run = _cpu(report)
    assert not run.refusals
    comparisons = _by_name(run)
    # MLX's arrays, computed here, against the counts the report gives
    packed, scales = mx.quantize(mx.array(w), group_size=32, bits=4, mode="mxfp4")
    assert comparisons["mx.quantize packed codes vs lab"].total == np.array(packed).nbytes
    mlx_round_trip = np.array(mx.dequantize(packed, scales, group_size=32, bits=4, mode="mxfp4", dtype=mx.float32))
    for name in (
        "mx.quantize packed codes vs lab",
        "mx.quantize scales vs lab",
        "MLX round trip vs lab round trip",
        "mx.dequantize(dtype=float32) vs lab dequantize()",
    ):
        assert comparisons[name].verdict == "bit-identical", name
    assert np.array_equal(run.round_trip.mlx, mlx_round_trip)


def test_a_format_without_an_mlx_mode_gets_a_plain_report(mx, toy_formats):
    w = _asymmetric_weights(rows=2, cols=256)
    for name, title in (("toy_no_mlx", "Toy without MLX"), ("q4k", registry.get("q4k").title)):
        report = device.run_block(name, w=w)
        assert report.available and report.runs == ()
        assert report.message.startswith(f"MLX has no {title} mode")
        assert f"MLX has no {title} mode" in device.report_markdown(report)
        json.dumps(report.as_dict())


def test_affine_with_bits_and_group_size_maps_to_the_registry_or_the_affine_quantizer(mx):
    w = _asymmetric_weights(rows=2, cols=64)
    assert device.run_block("affine", w=w, bits=4, group_size=32).format == "affine4_g32"
    # 5 bits in groups of 32 is no registry entry: the pane quantizes with affine.quantize itself
    assert "affine5_g32" not in registry.FORMATS
    report = device.run_block("affine", w=w, bits=5, group_size=32)
    assert report.format == "affine5_g32" and report.parameters["bits"] == 5
    comparisons = _by_name(_cpu(report))
    packed, *_ = mx.quantize(mx.array(w), group_size=32, bits=5, mode="affine")
    assert comparisons["mx.quantize packed codes vs lab"].total == np.array(packed).nbytes
    assert comparisons["mx.quantize packed codes vs lab"].verdict == "bit-identical"


# --------------------------------------------------------------------------------------------
# MLX's own round trip
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("fmt", "mode"), [("mxfp4", (32, 4, "mxfp4")), ("affine4_g64", (64, 4, "affine"))])
def test_mlx_round_trip_beside_the_lab_round_trip_where_they_agree(mx, fmt, mode):
    w = _asymmetric_weights()
    run = _cpu(device.run_block(fmt, w=w))
    group_size, bits, mlx_mode = mode
    arrays = mx.quantize(mx.array(w), group_size=group_size, bits=bits, mode=mlx_mode)
    mlx_round_trip = np.array(mx.dequantize(*arrays, group_size=group_size, bits=bits, mode=mlx_mode, dtype=mx.float32))
    lab_round_trip = registry.get(fmt).round_trip(w)
    round_trip = run.round_trip
    assert np.array_equal(round_trip.original, w)
    assert np.array_equal(round_trip.lab, lab_round_trip) and np.array_equal(round_trip.mlx, mlx_round_trip)
    assert round_trip.comparison is _by_name(run)["MLX round trip vs lab round trip"]
    assert round_trip.comparison.within_rounding == round_trip.comparison.total
    assert round_trip.comparison.max_abs_diff == float(np.abs(mlx_round_trip.astype(np.float64) - lab_round_trip).max())
    assert round_trip.mlx_max_error == float(np.abs(mlx_round_trip.astype(np.float64) - w).max())
    assert round_trip.lab_max_error == float(np.abs(lab_round_trip.astype(np.float64) - w).max())
    assert run.non_finite == ()
    if fmt == "mxfp4":  # one product per weight: MLX's decoder and the lab's agree to the bit
        assert round_trip.comparison.verdict == "bit-identical"


def test_mlx_round_trip_where_the_scale_rules_part(mx):
    # amax 6.5: the OCP floor rule gives 2^(floor(log2 6.5) - 2) = 2^0 (byte 127), MLX's ceil rule
    # 2^ceil(log2(6.5 / 6)) = 2^1 (byte 128)
    rng = np.random.default_rng(9)
    w = rng.uniform(-6, 6, (1, 64)).astype(np.float32)
    w[0, 5] = 6.5
    assert (math.floor(math.log2(6.5)) - 2, math.ceil(math.log2(6.5 / 6))) == (0, 1)
    report = device.run_block("mxfp4", w=w, rule="ocp")
    run = _cpu(report)
    packed, scales = mx.quantize(mx.array(w), group_size=32, bits=4, mode="mxfp4")
    assert np.array(scales)[0, 0] == 128 and mxfp4.quantize(w, rule="ocp").scale_bytes[0, 0] == 127
    mlx_round_trip = np.array(mx.dequantize(packed, scales, group_size=32, bits=4, mode="mxfp4", dtype=mx.float32))
    lab_round_trip = mxfp4.quantize(w, rule="ocp").dequantize()
    differs = ~_same_or_both_nan(mlx_round_trip, lab_round_trip)  # bits, so -0 and +0 differ
    assert differs[0, :32].any() and not differs[0, 32:].any()  # only the group with amax 6.5 parts

    comparison = run.round_trip.comparison
    assert comparison.verdict.startswith("differs")
    assert comparison.identical == int((~differs).sum())
    assert comparison.max_abs_diff == float(np.abs(mlx_round_trip.astype(np.float64) - lab_round_trip).max())
    listed = [d.index for d in comparison.differences]
    assert listed and all(differs[index] for index in listed)
    for d in comparison.differences:
        assert (d.reference, d.mlx) == (lab_round_trip[d.index], mlx_round_trip[d.index])
    markdown = device.report_markdown(report)
    row, element = listed[0]
    # numbers are written with a real minus sign (U+2212), which never breaks a table cell on a phone
    original = f"{w[row, element]:.9g}".replace("-", "\u2212")
    assert f"| row {row}, element {element} | row 0, scale group 0 | {original} |" in markdown
    round_trip_table = markdown[markdown.index("MLX's own round trip") :]
    rows = [line for line in round_trip_table.splitlines() if line.startswith("| row ")]
    assert rows and re.findall(r"(?<=[\de])-|-(?=[\d.])", "\n".join(rows)) == []
    negative = [d for d in comparison.differences if d.signed_difference < 0]
    assert negative  # the ceil rule's round trip lands on both sides of the floor rule's
    for d in comparison.differences:
        cells = next(line for line in rows if line.startswith(f"| row {d.index[0]}, element {d.index[1]} |")).split(
            " | "
        )
        assert float(cells[-1].rstrip(" |").replace("\u2212", "-")) == pytest.approx(d.signed_difference, rel=5e-3)


def test_mlx_round_trip_flags_the_non_finite_values_mlx_returns(mx):
    signs = np.sign(np.random.default_rng(3).normal(size=(2, 64))).astype(np.float32)
    w = signs * np.float32(3e38)
    w[1, 32:] = np.linspace(-1, 1, 32)  # one ordinary group: MLX returns it finite
    report = device.run_block("mxfp4", w=w)
    run = _cpu(report)
    # measured here: what MLX's own round trip returns, and its scale bytes
    packed, scales = mx.quantize(mx.array(w), group_size=32, bits=4, mode="mxfp4")
    returned = np.array(mx.dequantize(packed, scales, group_size=32, bits=4, mode="mxfp4", dtype=mx.float32))
    scale_bytes = np.array(scales)
    bad = ~np.isfinite(returned)
    assert bad[:, :32].all() and bad[0, 32:].all() and not bad[1, 32:].any()
    (flag,) = [flag for flag in run.non_finite if flag.source == "MLX's round trip"]
    assert flag.count == int(bad.sum()) == 96
    assert (flag.nan, flag.positive_infinity, flag.negative_infinity) == (
        int(np.isnan(returned).sum()),
        int(np.isposinf(returned).sum()),
        int(np.isneginf(returned).sum()),
    )
    first_indices = [tuple(int(i) for i in where) for where in np.argwhere(bad)[: len(flag.first)]]
    assert [value.index for value in flag.first] == first_indices
    for value in flag.first:
        row, group = value.group
        assert value.scale == f"scale byte 0x{int(scale_bytes[row, group]):02X}"
    # 3e38 needs 2^ceil(log2(3e38 / 6)) = 2^126: byte 253
    assert scale_bytes[0, 0] == math.ceil(math.log2(3e38 / 6)) + 127 == 0xFD
    summary = "MLX's round trip holds 96 non-finite values"
    assert summary in report.message and summary in device.report_markdown(report)
    assert "first at row 0, element 0 (row 0, scale group 0, scale byte 0xFD)" in device.report_markdown(report)


def test_the_markdown_names_positions_in_words_not_tuples(mx):
    w = _asymmetric_weights(rows=1, cols=32)
    w[0, 3] = 6.5 * np.abs(w).max()
    markdown = device.report_markdown(device.run_block("mxfp4", w=w, rule="ocp"))
    assert "MXFP4, 1 × 32" in markdown and "x of shape 1 × 32" in markdown
    assert "row 0, element" in markdown and "row 0, scale group 0" in markdown
    assert not re.search(r"\(\d+(, \d+)*,?\)", markdown)


def test_a_refusal_quotes_mlx_without_the_signature_it_trails_off_into(mx):
    steps = Steps(mx)

    def refused_keyword():
        raise TypeError(
            "quantized_matmul(): incompatible function arguments. The following argument types are supported:\n"
            "    1. quantized_matmul(x: array, w: array, /, ...) -> array"
        )

    def refused_silently():
        raise RuntimeError("")

    assert steps.attempt("mx.quantized_matmul(global_scale=...)", refused_keyword) is None
    assert steps.attempt("mx.load", refused_silently) is None
    assert steps.refusals == [
        "mx.quantized_matmul(global_scale=...): TypeError: quantized_matmul(): incompatible function arguments.",
        "mx.load: RuntimeError: ",
    ]
