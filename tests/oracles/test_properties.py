"""Property tests: random bytes never crash a decoder, random floats stay within each format's
error bound, and bad input raises the lab's typed errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from lab.codes import e2m1, e4m3, e8m0
from lab.errors import LabError
from lab.formats import affine, mxfp4, mxfp8, nvfp4, q4k
from lab.teach import scale

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

finite_floats = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False, width=32)


def float_rows(multiple: int):
    return hnp.arrays(
        np.float32,
        st.tuples(st.integers(1, 3), st.integers(1, 4).map(lambda k: k * multiple)),
        elements=finite_floats,
    )


byte_blocks = lambda size: hnp.arrays(np.uint8, st.integers(1, 4).map(lambda k: k * size))  # noqa: E731


@SETTINGS
@given(byte_blocks(17))
def test_random_gguf_mxfp4_bytes_decode_without_crashing(raw):
    for decoder in ("ocp", "ggml"):
        assert mxfp4.dequantize_gguf(raw, decoder).shape == (raw.size // 17 * 32,)


@SETTINGS
@given(byte_blocks(36))
def test_random_gguf_nvfp4_bytes_decode_without_crashing(raw):
    for decoder in ("ocp", "ggml"):
        assert nvfp4.dequantize_gguf(raw, decoder).shape == (raw.size // 36 * 64,)


@SETTINGS
@given(byte_blocks(144))
def test_random_q4k_bytes_decode_without_crashing(raw):
    with np.errstate(all="ignore"):
        assert q4k.decode(raw).shape == (raw.size // 144 * 256,)


@SETTINGS
@given(hnp.arrays(np.uint8, st.integers(1, 64)))
def test_random_bytes_through_every_code_decoder(raw):
    assert e8m0.decode(raw).shape == raw.shape
    assert e4m3.decode(raw).shape == raw.shape
    assert e2m1.decode(raw & 0x0F).shape == raw.shape


@SETTINGS
@given(float_rows(32))
def test_mxfp4_error_bound(w):
    """Under the ceil rule nothing saturates: each element is within half an E2M1 gap (at most 1 step
    of 2 at the top, so 1 * scale) of its weight; zero-scale underflow aside."""
    tensor = mxfp4.quantize(w, rule="mlx")
    scales = np.repeat(tensor.scales, 32, axis=-1).astype(np.float64)
    error = np.abs(tensor.dequantize().astype(np.float64) - w)
    assert np.all(error <= 1.0 * scales + 1e-45)


@SETTINGS
@given(float_rows(32))
def test_mxfp8_error_bound(w):
    tensor = mxfp8.quantize(w, rule="mlx")
    scales = np.repeat(tensor.scales, 32, axis=-1).astype(np.float64)
    error = np.abs(tensor.dequantize().astype(np.float64) - w)
    # E4M3 steps are 1/8 of the binade: relative error 1/16, and subnormal steps 2^-9 in element units.
    assert np.all(error <= np.abs(w) / 16 + scales * 2.0**-10 + 1e-45)


def _nvfp4_error_within_bound(w, tensor, tensor_factor):
    block_scale = np.repeat(tensor.block_scales, 16, axis=-1).astype(np.float64) * tensor_factor
    amax = np.repeat(np.abs(w).reshape(*w.shape[:-1], -1, 16).max(-1), 16, axis=-1).astype(np.float64)
    error = np.abs(tensor.dequantize().astype(np.float64) - w)
    # Half the top E2M1 gap (1 scale unit), plus up to 1/16 of amax when E4M3 rounds amax/6 down
    # and the top element saturates, plus what a scale that underflows E4M3 throws away.
    return np.all(error <= block_scale + amax / 12 + 6 * 2.0**-10 * tensor_factor * 1.01)


@SETTINGS
@given(float_rows(16).filter(lambda w: np.abs(w).max() <= 2600))
def test_nvfp4_error_bound_within_range_without_tensor_scale(w):
    """Without a tensor scale the largest block NVFP4 can hold has amax 6 * 448 = 2688."""
    assert _nvfp4_error_within_bound(w, nvfp4.quantize(w), 1.0)


@SETTINGS
@given(float_rows(16).filter(lambda w: np.abs(w).max() > 1e-30))
def test_nvfp4_error_bound_with_tensor_scale_at_any_range(w):
    tensor = nvfp4.quantize(w, global_scale=nvfp4.tensor_amax(w))
    assert _nvfp4_error_within_bound(w, tensor, tensor.tensor_factor)


@SETTINGS
@given(float_rows(64), st.sampled_from([2, 3, 4, 5, 6, 8]))
def test_affine_error_bound(w, bits):
    """Within the range the codes can reach, error is at most half a step. MLX snaps the scale so the
    larger-magnitude edge is exact, which can leave the far edge outside that range (see
    test_blocks_mlx.test_affine_edge_snapping_clips_the_far_end), so compare with the clipped weight."""
    tensor = affine.quantize(w, bits=bits, group_size=64)
    step = np.repeat(tensor.scales, 64, axis=-1).astype(np.float64)
    bias = np.repeat(tensor.biases, 64, axis=-1).astype(np.float64)
    top = bias + (2**bits - 1) * step
    reachable = np.clip(w, np.minimum(bias, top), np.maximum(bias, top))
    error = np.abs(tensor.dequantize().astype(np.float64) - reachable)
    assert np.all(error <= np.abs(step) / 2 * (1 + 1e-5) + np.abs(w).max() * 1e-6 + 1e-6)


@SETTINGS
@given(float_rows(256))
def test_q4k_round_trip_error_bound(w):
    """A loose sanity bound (the quality test is the RMSE comparison in test_q4k): 15 levels per
    subblock, 6-bit scales and mins relative to the super-block's largest, fp16 d and dmin. The
    range always includes 0 because the quantizer never uses a positive minimum. d and dmin are
    float16, whose smallest step is 2^-24: a block whose largest gain d * 63 * 15 would be below
    that stores d = 0 and decodes to zeros, as llama.cpp's does (the last term)."""
    tensor = q4k.quantize(w)
    error = np.abs(tensor.dequantize().astype(np.float64) - w)
    blocks = w.reshape(*w.shape[:-1], -1, 256).astype(np.float64)
    span = np.maximum(blocks.max(-1), 0) - np.minimum(blocks.min(-1), 0)
    float16_floor = 63 * 15 * 2.0**-24
    bound = span[..., None] * 0.25 + np.abs(w).max() * 2**-9 + 1e-6 + float16_floor
    assert np.all(error.reshape(blocks.shape) <= bound)


@SETTINGS
@given(hnp.arrays(np.float32, st.integers(1, 16), elements=finite_floats), st.sampled_from(["rne", "mlx"]))
def test_e2m1_encode_picks_a_nearest_value(x, rule):
    decoded = e2m1.decode(e2m1.encode(x, rule)).astype(np.float64)
    clipped = np.clip(x, -6, 6).astype(np.float64)
    best = np.min(np.abs(clipped[:, None] - e2m1.VALUES[None, :]), axis=1)
    assert np.allclose(np.abs(decoded - clipped), best)


@SETTINGS
@given(hnp.arrays(np.float32, st.integers(1, 16), elements=st.floats(-448, 448, width=32)))
def test_e4m3_encode_error_bound(x):
    decoded = e4m3.decode(e4m3.encode(x)).astype(np.float64)
    assert np.all(np.abs(decoded - x) <= np.abs(x) / 16 + 2.0**-10)


@SETTINGS
@given(
    hnp.arrays(np.float64, 4, elements=st.floats(-5, 5)),
    hnp.arrays(np.float64, 4, elements=st.floats(-5, 5)),
    st.floats(1e-3, 10),
)
def test_scale_lab_output_error_is_the_sum_of_terms(w, x, s):
    row = scale.analyse(w, x, s)
    assert row.delta_y == pytest.approx(float(np.sum(row.terms)), abs=1e-9)
    assert np.all(np.abs(row.w_hat) <= 6 * s + 1e-12)


bad_arrays = st.one_of(
    hnp.arrays(np.float32, st.just((2, 33)), elements=finite_floats),  # wrong length
    hnp.arrays(np.float32, st.just((2, 32)), elements=st.just(np.nan)),
    hnp.arrays(np.float32, st.just((2, 32)), elements=st.just(np.inf)),
    hnp.arrays(np.bool_, st.just((2, 32))),
    st.just(np.array("not numbers")),
)


@SETTINGS
@given(bad_arrays)
def test_bad_input_raises_typed_errors(w):
    for quantize in (mxfp4.quantize, mxfp8.quantize, nvfp4.quantize, affine.quantize, q4k.quantize):
        with pytest.raises(LabError):
            quantize(w)
