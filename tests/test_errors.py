"""Bad input gets a typed error whose message names the problem and the expected value."""

from __future__ import annotations

import numpy as np
import pytest

from lab.codes import e8m0
from lab.errors import (
    BitsError,
    CodeRangeError,
    DTypeError,
    GroupSizeError,
    NonFiniteError,
    ReservedCodeError,
    RuleError,
    ShapeError,
)
from lab.formats import affine, mxfp4, mxfp8, nvfp4, q4k, rounding
from lab.teach import scale


@pytest.mark.parametrize(
    ("quantize", "length", "multiple"),
    [(mxfp4.quantize, 48, 32), (mxfp8.quantize, 40, 32), (nvfp4.quantize, 24, 16), (affine.quantize, 96, 64)],
)
def test_wrong_length_names_the_group_size(quantize, length, multiple):
    with pytest.raises(ShapeError, match=f"divisible by the quantization group size {multiple}"):
        quantize(np.ones((2, length), np.float32))


def test_q4k_wrong_length_names_256_and_144():
    with pytest.raises(ShapeError, match="256"):
        q4k.quantize(np.ones(100, np.float32))
    with pytest.raises(ShapeError, match="144"):
        q4k.decode(np.zeros(143, np.uint8))


def test_group_size_and_bits_are_checked_with_mlx_wording():
    with pytest.raises(GroupSizeError, match=r"nvfp4 quantization requires group size 16 but got 32\."):
        nvfp4.quantize(np.ones((1, 64), np.float32), group_size=32)
    with pytest.raises(GroupSizeError, match="supported group sizes are 32, 64, and 128"):
        affine.quantize(np.ones((1, 64), np.float32), group_size=16)
    with pytest.raises(BitsError, match="supported bits are 1, 2, 3, 4, 5, 6 and 8"):
        affine.quantize(np.ones((1, 64), np.float32), bits=7)


def test_one_dimensional_rows_are_fine_for_the_lab_but_not_for_mlx():
    tensor = mxfp4.quantize(np.ones(64, np.float32))
    assert tensor.dequantize().shape == (64,)
    with pytest.raises(ShapeError, match="must have at least 2 dimension but it has only 1"):
        tensor.to_mlx()


def test_nan_and_inf_weights_are_named():
    w = np.ones((1, 32), np.float32)
    w[0, 5] = np.nan
    with pytest.raises(NonFiniteError, match=r"NaN or infinity \(first at index \(0, 5\)\)"):
        mxfp4.quantize(w)


def test_wrong_dtype_is_named():
    with pytest.raises(DTypeError, match="float array"):
        mxfp4.quantize(np.array(["a"] * 32))
    with pytest.raises(DTypeError, match="integers"):
        q4k.decode(np.zeros(144, np.float32))


def test_nan_scale_byte_is_reserved_where_a_number_is_needed():
    with pytest.raises(ReservedCodeError, match="0xFF is the NaN encoding"):
        e8m0.decode_finite([0x7E, 0xFF])
    block = mxfp4.from_parts(np.full(32, 5, np.uint8), np.array([0xFF], np.uint8))
    assert np.all(np.isnan(block.dequantize()))  # decoding it is allowed, and shows NaN


def test_codes_out_of_range():
    with pytest.raises(CodeRangeError, match=r"0\.\.15, got 16"):
        mxfp4.from_parts(np.full(32, 16), np.array([127]))
    with pytest.raises(CodeRangeError, match="63"):
        q4k.pack_scale_min(np.full(8, 64, np.uint8), np.zeros(8, np.uint8))
    with pytest.raises(CodeRangeError):
        q4k.lanes(128)


def test_scale_lab_rejects_bad_scales_and_mismatched_rows():
    with pytest.raises(NonFiniteError, match="positive finite"):
        scale.reconstruct([1.0], 0.0)
    with pytest.raises(NonFiniteError):
        scale.reconstruct([1.0], float("nan"))
    with pytest.raises(ShapeError, match="same length"):
        scale.analyse([1, 2], [1], 0.5)


def test_unknown_presets_list_the_known_ones():
    with pytest.raises(RuleError, match=r"expected one of \('mlx', 'ggml', 'ocp'\)"):
        rounding.preset("torch")
    with pytest.raises(RuleError):
        mxfp4.quantize(np.ones(32, np.float32), rule="floor")


def test_global_scale_must_be_positive():
    with pytest.raises(NonFiniteError, match="global_scale"):
        nvfp4.quantize(np.ones((1, 16), np.float32), global_scale=0.0)


def test_global_scale_so_small_that_its_reciprocal_overflows():
    with pytest.raises(NonFiniteError, match="overflows float32"):
        nvfp4.quantize(np.full((1, 16), 1e-45, np.float32), global_scale=1e-45)


def test_q4k_quantize_of_weights_too_small_for_fp16_gives_zeros_without_warnings():
    """d = max_scale / 63 underflows float16; 63 / max_scale would overflow float32 on the way."""
    import warnings

    import gguf

    w = np.full((2, 256), 1e-40, np.float32)
    w[1] = np.linspace(-1e-38, 1e-38, 256, dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        raw = q4k.quantize(w).raw
    decoded = gguf.quants.dequantize(raw, gguf.GGMLQuantizationType.Q4_K)
    assert np.all(decoded == 0)
