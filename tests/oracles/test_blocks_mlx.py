"""Block formats against the installed MLX: the lab's quantizers must produce MLX's exact bytes.

MLX is the oracle for its own modes only. The data varies scales row by row and plants exact
midpoints, constant, zero, tiny and huge groups (see conftest.planted_weights).
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import planted_weights

from lab.formats import affine, mxfp4, mxfp8, nvfp4

DTYPES = ("float32", "float16", "bfloat16")


def _as_mlx(mx, w: np.ndarray, dtype: str):
    return mx.array(w).astype(getattr(mx, dtype))


def _float_bits(mx, array) -> np.ndarray:
    return np.array(array.astype(mx.float32)).view(np.uint32)


def _nonzero_fp16_safe(w: np.ndarray, dtype: str) -> np.ndarray:
    # float16 cannot hold the planted 1e30 group; keep that row within float16's range.
    if dtype == "float16":
        w = w.copy()
        w[4] = np.clip(w[4], -6e4, 6e4)
    return w


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("module", "mode", "bits"), [(mxfp4, "mxfp4", 4), (mxfp8, "mxfp8", 8)])
def test_mx_modes_bit_identical_to_mx_quantize(mx, weights_with_ties, dtype, module, mode, bits):
    w = _as_mlx(mx, _nonzero_fp16_safe(weights_with_ties, dtype), dtype)
    packed, scales = mx.quantize(w, group_size=32, bits=bits, mode=mode)
    lab_packed, lab_scales = module.quantize(w, rule="mlx").to_mlx()
    assert lab_packed.dtype == packed.dtype and lab_scales.dtype == scales.dtype
    assert np.array_equal(np.array(lab_packed), np.array(packed))
    assert np.array_equal(np.array(lab_scales), np.array(scales))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("with_global_scale", [False, True])
def test_nvfp4_bit_identical_to_mx_quantize(mx, weights_with_ties, dtype, with_global_scale):
    w_np = _nonzero_fp16_safe(weights_with_ties, dtype)
    w_np[4] = np.clip(w_np[4], -1e4, 1e4)  # keep amax/6 * 2688/g meaningful for the other rows
    w = _as_mlx(mx, w_np, dtype)
    kwargs, global_scale = {}, None
    if with_global_scale:
        global_scale = nvfp4.tensor_amax(w)
        kwargs["global_scale"] = mx.array(global_scale, dtype=mx.float32)
    packed, scales = mx.quantize(w, group_size=16, bits=4, mode="nvfp4", **kwargs)
    lab_packed, lab_scales = nvfp4.quantize(w, global_scale=global_scale).to_mlx()
    assert np.array_equal(np.array(lab_packed), np.array(packed))
    assert np.array_equal(np.array(lab_scales), np.array(scales))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("bits", [1, 2, 3, 4, 5, 6, 8])
@pytest.mark.parametrize("group_size", [32, 64, 128])
def test_affine_bit_identical_to_mx_quantize(mx, dtype, bits, group_size):
    w_np = planted_weights(12, 256, seed=bits * 1000 + group_size)
    w_np[4] = np.clip(w_np[4], -6e4, 6e4)
    w_np[5, :group_size] = np.linspace(-1, 1, group_size)  # zero and exact code midpoints in one group
    w = _as_mlx(mx, w_np, dtype)
    packed, scales, biases = mx.quantize(w, group_size=group_size, bits=bits)
    lab_packed, lab_scales, lab_biases = affine.quantize(w, bits=bits, group_size=group_size).to_mlx()
    assert lab_scales.dtype == scales.dtype
    assert np.array_equal(np.array(lab_packed), np.array(packed))
    assert np.array_equal(_float_bits(mx, lab_scales), _float_bits(mx, scales))
    assert np.array_equal(_float_bits(mx, lab_biases), _float_bits(mx, biases))


def test_affine_scale_is_negative_when_the_max_is_the_edge(mx):
    w = np.tile(np.linspace(-0.5, 2.0, 64, dtype=np.float32), (1, 1))
    lab_tensor = affine.quantize(w, bits=4, group_size=64)
    _, scales, biases = mx.quantize(mx.array(w), group_size=64, bits=4)
    assert float(np.array(scales)[0, 0]) < 0 and lab_tensor.scales[0, 0] < 0
    assert lab_tensor.biases[0, 0] == np.float32(2.0) == float(np.array(biases)[0, 0])


def test_affine_edge_snapping_clips_the_far_end(mx):
    """MLX makes -41 exact (scale 20.5 = -41 / -2), so three steps above it only reach 20.5, not 39."""
    w = np.array([[-41.0] + [39.0] * 63], np.float32)
    packed, scales, biases = mx.quantize(mx.array(w), group_size=64, bits=2)
    mlx_weights = np.array(mx.dequantize(packed, scales, biases, group_size=64, bits=2))
    assert (float(np.array(scales)[0, 0]), float(np.array(biases)[0, 0])) == (20.5, -41.0)
    assert mlx_weights[0, 1] == 20.5  # 39 clipped by 18.5
    lab_tensor = affine.quantize(w, bits=2, group_size=64)
    assert np.array_equal(lab_tensor.dequantize(), mlx_weights)


@pytest.mark.parametrize("module", [mxfp4, mxfp8])
def test_mx_dequantize_matches_mx_dequantize(mx, weights_with_ties, module):
    w = mx.array(weights_with_ties)
    tensor = module.quantize(w)
    packed, scales = tensor.to_mlx()
    mode = "mxfp4" if module is mxfp4 else "mxfp8"
    reference = mx.dequantize(packed, scales, group_size=32, bits=tensor.element.bits, mode=mode, dtype=mx.float32)
    assert np.array_equal(np.array(reference).view(np.uint32), tensor.dequantize().view(np.uint32))


def test_nvfp4_dequantize_matches_mx_dequantize(mx, weights_with_ties):
    w = mx.array(np.clip(weights_with_ties, -1e4, 1e4))
    for global_scale in (None, nvfp4.tensor_amax(w)):
        tensor = nvfp4.quantize(w, global_scale=global_scale)
        packed, scales = tensor.to_mlx()
        kwargs = {} if global_scale is None else {"global_scale": mx.array(global_scale, dtype=mx.float32)}
        reference = np.array(
            mx.dequantize(packed, scales, group_size=16, bits=4, mode="nvfp4", dtype=mx.float32, **kwargs)
        )
        np.testing.assert_allclose(tensor.dequantize(), reference, rtol=2**-23, atol=0)


def test_from_mlx_reads_mlx_arrays_back(mx, weights_with_ties):
    w = mx.array(weights_with_ties)
    packed, scales = mx.quantize(w, group_size=32, bits=4, mode="mxfp4")
    assert np.array_equal(mxfp4.from_mlx(packed, scales).codes, mxfp4.quantize(weights_with_ties).codes)
    packed, scales, biases = mx.quantize(w, group_size=64, bits=3)
    round_trip = affine.from_mlx(packed, scales, biases, bits=3, group_size=64)
    assert np.array_equal(round_trip.codes, affine.quantize(weights_with_ties, bits=3, group_size=64).codes)


def test_lab_and_mlx_accept_and_reject_the_same_shapes(mx):
    from lab.errors import GroupSizeError, ShapeError

    with pytest.raises(ValueError, match="at least 2 dimension") as mlx_error:
        mx.quantize(mx.array(np.ones(64, np.float32)), group_size=32, bits=4, mode="mxfp4")
    with pytest.raises(ShapeError, match="at least 2 dimension") as lab_error:
        mxfp4.quantize(np.ones(64, np.float32)).to_mlx()
    assert str(mlx_error.value) in str(lab_error.value)

    with pytest.raises(ValueError) as mlx_error:
        mx.quantize(mx.array(np.ones((2, 64), np.float32)), group_size=16, bits=4, mode="mxfp4")
    with pytest.raises(GroupSizeError) as lab_error:
        mxfp4.quantize(np.ones((2, 64), np.float32), group_size=16)
    assert str(lab_error.value) == str(mlx_error.value)

    with pytest.raises(ValueError) as mlx_error:
        mx.quantize(mx.array(np.ones((2, 64), np.float32)), group_size=64, bits=7)
    with pytest.raises(affine.BitsError) as lab_error:
        affine.quantize(np.ones((2, 64), np.float32), bits=7)
    assert str(lab_error.value) == str(mlx_error.value)

    with pytest.raises(ValueError) as mlx_error:
        mx.quantize(mx.array(np.ones((2, 64), np.float32)), group_size=128, bits=4)
    with pytest.raises(ShapeError) as lab_error:
        affine.quantize(np.ones((2, 64), np.float32), bits=4, group_size=128)
    assert str(lab_error.value) == str(mlx_error.value)
