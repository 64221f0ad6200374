"""The article's "checks I want before trusting an optimized decoder", one test per item.

Each check uses a source other than the code under test: ml_dtypes, gguf-py, MLX, or arithmetic
written out here.
"""

from __future__ import annotations

import gguf
import ml_dtypes
import numpy as np
import pytest

from lab.codes import e2m1
from lab.errors import ShapeError
from lab.formats import q4k

Q4_K = gguf.GGMLQuantizationType.Q4_K


def _random_blocks(count: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 256, size=(count, 144), dtype=np.uint8)
    d = rng.uniform(1e-4, 0.1, count).astype(np.float16)
    dmin = rng.uniform(1e-4, 0.1, count).astype(np.float16)
    raw[:, 0:2] = d.view(np.uint8).reshape(count, 2)
    raw[:, 2:4] = dmin.view(np.uint8).reshape(count, 2)
    return raw


def test_check1_decode_individual_codes():
    """All sixteen E2M1 nibbles, both signed zeros, and integer nibble extraction on its own."""
    codes = np.arange(16, dtype=np.uint8)
    reference = codes.view(ml_dtypes.float4_e2m1fn).astype(np.float32)
    assert np.array_equal(e2m1.decode(codes).view(np.uint32), reference.view(np.uint32))
    assert not np.signbit(e2m1.decode(0)) and np.signbit(e2m1.decode(8))
    # Q4_K's integer codes: a block whose payload bytes are 0..127 with distinct nibbles
    block = q4k.presentation_fixture().copy()
    block[16:] = (np.arange(128) * 37 + 11) % 256
    tensor = q4k.Q4KTensor(block)
    for payload_index in range(128):
        byte = int(block[16 + payload_index])
        low_lane, high_lane = q4k.lanes(payload_index)
        assert tensor.codes[low_lane] == byte & 0x0F
        assert tensor.codes[high_lane] == byte >> 4


def test_check2_metadata_independently():
    """All eight scale/min pairs, especially j = 4..7, against gguf-py's own unpacking."""
    rng = np.random.default_rng(2)
    metadata = rng.integers(0, 256, size=(2000, 12), dtype=np.uint8)
    reference_scales, reference_mins = gguf.quants.Q4_K.get_scale_min(metadata)
    scales, mins = q4k.unpack_scale_min(metadata)
    assert np.array_equal(scales, reference_scales) and np.array_equal(mins, reference_mins)
    # and by the article's formula, written out for j = 4..7
    B = metadata[0].astype(int)
    for j in range(4, 8):
        assert scales[0, j] == (B[j + 4] & 15) | ((B[j - 4] >> 6) << 4)
        assert mins[0, j] == (B[j + 4] >> 4) | ((B[j] >> 6) << 4)


def test_check3_lane_placement_all_256_destinations():
    """Different nibbles, different metadata per subblock, every destination checked against gguf-py."""
    scales = np.array([3, 17, 29, 41, 50, 58, 63, 9], dtype=np.uint8)
    mins = np.array([60, 5, 33, 12, 47, 1, 26, 55], dtype=np.uint8)
    payload = ((np.arange(128) * 7 + 3) % 16 | (((np.arange(128) * 11 + 5) % 16) << 4)).astype(np.uint8)
    block = np.zeros(144, dtype=np.uint8)
    block[0:2] = np.array([0.0625], np.float16).view(np.uint8)
    block[2:4] = np.array([0.03125], np.float16).view(np.uint8)
    block[4:16] = q4k.pack_scale_min(scales, mins)
    block[16:] = payload
    reference = gguf.quants.dequantize(block, Q4_K)
    seen = set()
    for chunk in range(4):
        for position in range(32):
            byte = int(payload[32 * chunk + position])
            low_lane, high_lane = 64 * chunk + position, 64 * chunk + 32 + position
            low_j, high_j = 2 * chunk, 2 * chunk + 1
            assert reference[low_lane] == np.float32(0.0625 * scales[low_j] * (byte & 15) - 0.03125 * mins[low_j])
            assert reference[high_lane] == np.float32(0.0625 * scales[high_j] * (byte >> 4) - 0.03125 * mins[high_j])
            assert q4k.lanes(32 * chunk + position) == (low_lane, high_lane)
            seen.update((low_lane, high_lane))
    assert seen == set(range(256))
    assert np.array_equal(q4k.decode(block), reference)


def test_check4_compare_reconstructed_weights_with_an_independent_decoder():
    raw = _random_blocks(2000, seed=4)
    assert np.array_equal(q4k.decode(raw).view(np.uint32), gguf.quants.dequantize(raw, Q4_K).view(np.uint32))


def test_check5_compare_a_dot_product(mx):
    """Inputs of varied sign and magnitude; signed output error and max weight error both small."""
    rng = np.random.default_rng(5)
    raw = _random_blocks(16, seed=5).reshape(4, 4 * 144)  # 4 rows of 1024 weights
    weights = gguf.quants.dequantize(raw, Q4_K).astype(np.float64)
    x = (rng.normal(0, 1, (3, 1024)) * np.logspace(-2, 2, 1024)).astype(np.float32)
    packed, scales, biases = q4k.to_mlx_affine(raw)
    y_mlx = np.array(
        mx.quantized_matmul(
            mx.array(x), mx.array(packed), mx.array(scales), mx.array(biases), transpose=True, group_size=32, bits=4
        )
    ).astype(np.float64)
    y_exact = x.astype(np.float64) @ weights.T
    signed_error = y_mlx - y_exact
    magnitude = np.abs(x).astype(np.float64) @ np.abs(weights).T
    assert np.all(np.abs(signed_error) <= 1e-5 * magnitude)
    mlx_weights = np.array(mx.dequantize(mx.array(packed), mx.array(scales), mx.array(biases), group_size=32, bits=4))
    assert np.max(np.abs(mlx_weights - weights)) <= 1e-6 * np.max(np.abs(weights))


def test_check6_the_actual_optimized_path_boundaries_lengths_rejections(mx):
    raw = _random_blocks(6, seed=6).reshape(2, 3 * 144)  # rows of 768: three blocks, block boundaries inside
    packed, scales, biases = q4k.to_mlx_affine(raw)
    x = np.eye(768, dtype=np.float32)[[0, 31, 32, 255, 256, 511, 512, 767]]
    y = np.array(
        mx.quantized_matmul(
            mx.array(x), mx.array(packed), mx.array(scales), mx.array(biases), transpose=True, group_size=32, bits=4
        )
    )
    reference = gguf.quants.dequantize(raw, Q4_K)[:, [0, 31, 32, 255, 256, 511, 512, 767]].T
    np.testing.assert_allclose(y, reference, rtol=1e-6, atol=1e-7)
    with pytest.raises(ShapeError, match="256"):
        q4k.quantize(np.ones((2, 300), np.float32))
    with pytest.raises(ShapeError, match="144"):
        q4k.decode(np.zeros((2, 150), np.uint8))
    with pytest.raises(ValueError):  # MLX itself refuses a group size that does not divide the row
        mx.quantized_matmul(
            mx.array(x[:, :100]), mx.array(packed), mx.array(scales), mx.array(biases), group_size=32, bits=4
        )


def test_check7_measure_the_real_workload_records_what_was_measured():
    from bench.run import run

    results, info = run(rows=16, cols=256, repeat=1)
    for field in ("workload", "tensor_types", "machine", "processor", "cpu_count", "threads", "phase", "numpy", "mlx"):
        assert field in info
    assert {row.task for row in results} >= {
        "Q4_K decode",
        "MXFP4 quantize",
        "NVFP4 quantize",
        "MLX affine 4-bit g64 quantize",
    }
    assert all(row.lab_seconds > 0 for row in results)
