"""GGUF's own byte layouts of MXFP4 and NVFP4, against gguf-py 0.19 (`gguf.quants`)."""

from __future__ import annotations

import gguf
import numpy as np
import pytest

from lab.codes import e2m1
from lab.errors import ShapeError
from lab.formats import mxfp4, nvfp4

MXFP4 = gguf.GGMLQuantizationType.MXFP4
NVFP4 = gguf.GGMLQuantizationType.NVFP4


def _bits(values) -> np.ndarray:
    return np.asarray(values, dtype=np.float32).view(np.uint32)


@pytest.fixture
def random_mxfp4_blocks():
    rng = np.random.default_rng(17)
    raw = rng.integers(0, 256, size=(64, 17 * 16), dtype=np.uint8)
    raw.reshape(64, 16, 17)[:, :, 0] = rng.integers(0, 256, size=(64, 16))  # every scale byte, 0xFF included
    return raw


def test_gguf_mxfp4_ggml_decoder_bit_identical_to_gguf_py(random_mxfp4_blocks):
    with np.errstate(over="ignore"):
        reference = gguf.quants.dequantize(random_mxfp4_blocks, MXFP4)
    assert np.array_equal(_bits(mxfp4.dequantize_gguf(random_mxfp4_blocks, decoder="ggml")), _bits(reference))


def test_gguf_mxfp4_ocp_decoder_differs_only_at_negative_zero_and_the_nan_byte(random_mxfp4_blocks):
    with np.errstate(over="ignore"):
        reference = gguf.quants.dequantize(random_mxfp4_blocks, MXFP4)
    ocp = mxfp4.dequantize_gguf(random_mxfp4_blocks, decoder="ocp")
    tensor = mxfp4.from_gguf(random_mxfp4_blocks)
    nan_block = np.repeat(tensor.scale_bytes == 0xFF, 32, axis=-1)
    negative_zero = (tensor.codes == 8) & ~nan_block
    assert np.all(np.isnan(ocp[nan_block])) and not np.any(np.isnan(reference))
    assert np.all(np.signbit(ocp[negative_zero])) and not np.any(np.signbit(reference[negative_zero]))
    same = ~nan_block & ~negative_zero
    assert np.array_equal(_bits(ocp[same]), _bits(reference[same]))
    assert nan_block.any() and negative_zero.any()


def test_gguf_mxfp4_pairs_element_j_with_element_j_plus_16():
    codes = np.arange(32, dtype=np.uint8) % 16
    codes[16:] = (np.arange(16) * 7 + 3) % 16  # high nibbles differ from low ones
    tensor = mxfp4.from_parts(codes, np.array([0x7E], dtype=np.uint8))
    raw = tensor.to_gguf()
    assert raw.shape == (17,) and raw[0] == 0x7E
    for j in range(16):
        assert raw[1 + j] == codes[j] | (codes[j + 16] << 4)
    reference = gguf.quants.dequantize(raw, MXFP4)
    expected = e2m1.decode(codes).astype(np.float32) * np.float32(0.5) + np.float32(0.0)
    assert np.array_equal(_bits(reference), _bits(expected))


def test_ggml_preset_produces_gguf_py_quantize_bytes():
    rng = np.random.default_rng(23)
    w = (rng.normal(0, 1, (32, 512)) * rng.uniform(1e-3, 1e3, (32, 1))).astype(np.float32)
    midpoints = (e2m1.MAGNITUDES[:-1] + e2m1.MAGNITUDES[1:]) / 2
    w[0, :16] = np.concatenate([midpoints, -midpoints, [4.0, -0.0]])  # amax 4 -> scale 1, pure ties
    w[1, :32] = 0.0
    reference = gguf.quants.quantize(w, MXFP4)
    assert np.array_equal(mxfp4.quantize(w, rule="ggml").to_gguf(), reference)


def test_ggml_wraps_a_tiny_scale_where_the_lab_clamps():
    w = np.full((1, 32), 2.0**-130, dtype=np.float32)
    with np.errstate(invalid="ignore"):
        reference_byte = int(gguf.quants.quantize(w, MXFP4)[0, 0])
    lab_byte = int(mxfp4.quantize(w, rule="ggml").scale_bytes[0, 0])
    assert lab_byte == 0
    assert reference_byte != lab_byte  # floor(log2) - 2 + 127 = -5 does not fit a byte


def test_gguf_nvfp4_ggml_decoder_bit_identical_to_gguf_py():
    rng = np.random.default_rng(29)
    raw = rng.integers(0, 256, size=(128, 36 * 4), dtype=np.uint8)
    reference = gguf.quants.dequantize(raw, NVFP4)
    assert np.array_equal(_bits(nvfp4.dequantize_gguf(raw, decoder="ggml")), _bits(reference))


def test_gguf_nvfp4_layout_pairs_j_with_j_plus_8_and_round_trips_through_gguf_py():
    rng = np.random.default_rng(31)
    w = (rng.normal(0, 1, (8, 256)) * rng.uniform(0.01, 10, (8, 1))).astype(np.float32)
    tensor = nvfp4.quantize(w)
    raw = tensor.to_gguf()
    assert raw.shape == (8, 4 * 36)
    block = raw[0, :36]
    assert np.array_equal(block[:4], tensor.scale_bytes[0, :4])
    for group in range(4):
        for j in range(8):
            byte = block[4 + 8 * group + j]
            assert byte & 0x0F == tensor.codes[0, 16 * group + j]
            assert byte >> 4 == tensor.codes[0, 16 * group + j + 8]
    reference = gguf.quants.dequantize(raw, NVFP4)
    # MLX's element rule never stores -0, so gguf-py's +0-only table reads the same values.
    assert np.array_equal(_bits(reference), _bits(tensor.dequantize()))
    assert np.array_equal(nvfp4.from_gguf(raw).codes, tensor.codes)


def test_gguf_layouts_reject_partial_blocks():
    with pytest.raises(ShapeError, match="17-byte blocks"):
        mxfp4.from_gguf(np.zeros(18, np.uint8))
    with pytest.raises(ShapeError, match="36-byte blocks"):
        nvfp4.from_gguf(bytes(35))
