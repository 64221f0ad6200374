"""Bad input gets a typed error whose message names the problem and the expected value."""

from __future__ import annotations

import sys

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


# --- issue #12, item 5: every public entry point names bad input in the lab's words ---------


@pytest.mark.parametrize("quantize", [mxfp4.quantize, mxfp8.quantize, nvfp4.quantize, affine.quantize, q4k.quantize])
def test_complex_weights_are_refused_not_silently_made_real(quantize):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's ComplexWarning must not be what the learner sees
        with pytest.raises(DTypeError, match="complex numbers.*imaginary part"):
            quantize(np.full((1, 256), 1 + 2j))


@pytest.mark.parametrize("quantize", [mxfp4.quantize, nvfp4.quantize, affine.quantize, q4k.quantize])
def test_ragged_lists_are_a_shape_error(quantize):
    with pytest.raises(ShapeError, match="ragged"):
        quantize([[1.0] * 256, [1.0] * 3])


def test_a_bool_is_not_a_bit_width_and_a_float_is_not_a_group_size():
    w = np.ones((1, 64), np.float32)
    with pytest.raises(BitsError):
        affine.quantize(w, bits=True)
    with pytest.raises(BitsError):
        affine.quantize(w, bits=4.0)
    with pytest.raises(GroupSizeError):
        affine.quantize(w, group_size=64.0)
    with pytest.raises(GroupSizeError, match="requires group size 32 but got 32.0"):
        mxfp4.quantize(w, group_size=32.0)
    with pytest.raises(GroupSizeError):
        mxfp8.quantize(w, group_size=32.0)
    with pytest.raises(GroupSizeError):
        nvfp4.quantize(w, group_size=16.0)


def test_a_list_is_not_a_global_scale_or_a_scale():
    with pytest.raises(ShapeError, match="global_scale must be a single number"):
        nvfp4.quantize(np.ones((1, 16), np.float32), global_scale=[1.0])
    with pytest.raises(ShapeError, match="scale must be a single number"):
        scale.reconstruct([1.0], [0.5])
    with pytest.raises(ShapeError, match="scale must be a single number"):
        scale.analyse([1.0], [1.0], [0.5, 1.0])


@pytest.mark.parametrize("index", [2.0, True, None, (0, 1.5)])
def test_explain_takes_integer_indices_only(index):
    tensors = [
        mxfp4.quantize(np.ones((1, 32), np.float32)),
        nvfp4.quantize(np.ones((1, 16), np.float32)),
        affine.quantize(np.ones((1, 64), np.float32)),
        q4k.quantize(np.ones((1, 256), np.float32)),
    ]
    for tensor in tensors:
        with pytest.raises(DTypeError, match="integer"):
            tensor.explain(index)


@pytest.mark.parametrize(
    ("decode", "raw"),
    [
        (mxfp4.dequantize_gguf, np.zeros(17, np.uint8)),
        (nvfp4.dequantize_gguf, np.zeros(36, np.uint8)),
        (mxfp4.FORMAT.decode_gguf, np.zeros(17, np.uint8)),
        (nvfp4.FORMAT.decode_gguf, np.zeros(36, np.uint8)),
        (q4k.FORMAT.decode_gguf, np.zeros(144, np.uint8)),
    ],
)
@pytest.mark.parametrize("decoder", ["torch", None, "OCP"])
def test_unknown_decoders_are_named_at_every_decoder_entry_point(decode, raw, decoder):
    with pytest.raises(RuleError, match=r"decoder .*expected one of \('ocp', 'ggml'\)"):
        decode(raw, decoder)
    with pytest.raises(RuleError):  # named before the bytes are looked at
        decode(np.zeros(3, np.uint8), decoder)


def test_q8_0_has_the_registry_decoder_check():
    from lab.formats import q8_0

    with pytest.raises(RuleError):
        q8_0.FORMAT.decode_gguf(np.zeros(34, np.uint8), "ggml-ish")


@pytest.mark.parametrize("quantize", [mxfp4.quantize, nvfp4.quantize, affine.quantize, q4k.quantize])
def test_finite_float64_beyond_float32_is_named_as_such(quantize):
    w = np.ones((1, 256))
    w[0, 3] = 1e39
    with pytest.raises(NonFiniteError, match=r"1e\+39 .*beyond float32's largest finite value, about 3\.4e38"):
        quantize(w)


def test_huge_and_subnormal_weights_raise_no_runtime_warnings():
    import warnings

    huge = np.array([3.4e38, -3.4e38] * 128, np.float32).reshape(1, 256)
    tiny = np.full((1, 256), 1e-45, np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for w in (huge, tiny):
            for quantize in (mxfp4.quantize, mxfp8.quantize, nvfp4.quantize, affine.quantize):
                assert quantize(w).dequantize().shape == w.shape
            if w is tiny:
                assert q4k.quantize(w).dequantize().shape == w.shape
        with pytest.raises(NonFiniteError, match="float16 d or dmin"):
            q4k.quantize(huge)
        # a constant group beyond 3.4e31 snaps MLX's scale to -0; its codes are 0, as MLX stores them
        constant = affine.quantize(np.full((1, 64), 1e32, np.float32))
        assert np.all(constant.codes == 0) and np.all(constant.dequantize() == np.float32(1e32))


# --- issue #12, item 4: the scale lab saturates far beyond ±6·scale ---------------------------


def test_scale_lab_saturates_huge_weights_instead_of_storing_zero():
    # 1e17 − 6 and 1e17 − 0 are the same float64, so every distance ties; the rule is ŵ = 6·scale
    assert 1e17 - 6 == 1e17 - 0
    assert scale.reconstruct([1e17], 1.0).tolist() == [6.0]
    assert scale.reconstruct([-1e17], 1.0).tolist() == [-6.0]
    # at scale 2^-60, w = −1 is 2^60 scale units out: ŵ = −6 · 2^-60
    assert scale.reconstruct([-1.0], 2.0**-60).tolist() == [-6 * 2.0**-60]
    assert scale.quantize_codes([1.0, -1.0], 2.0**-60).tolist() == [7, 15]
    row = scale.analyse([1e17, -1.0], [1.0, 1.0], 1.0)
    assert row.w_hat.tolist() == [6.0, -1.0] and row.clipped.tolist() == [True, False]


def test_scale_lab_just_inside_and_just_outside_six_scale():
    s = 0.5  # 6·s = 3
    inside, outside = np.nextafter(3.0, 0.0), np.nextafter(3.0, 4.0)
    row = scale.analyse([inside, outside, -inside, -outside], [1.0] * 4, s)
    assert row.w_hat.tolist() == [3.0, 3.0, -3.0, -3.0]
    assert row.clipped.tolist() == [False, True, False, True]
    # halfway between 4·s = 2 and 6·s = 3 is 2.5: a tie, and the lower code (4·s) wins
    assert scale.reconstruct([2.5, 2.5000000001], s).tolist() == [2.0, 3.0]


# --- files: OS errors become FileReadError naming the path -------------------------------------


def test_read_only_map_reads_a_file_and_an_empty_one(tmp_path):
    from lab.files import read_only_map

    (tmp_path / "data.bin").write_bytes(b"GGUF\x03")
    (tmp_path / "empty.bin").write_bytes(b"")
    with read_only_map(tmp_path / "data.bin") as data:
        assert bytes(data[:4]) == b"GGUF" and len(data) == 5
    with read_only_map(tmp_path / "empty.bin") as data:
        assert len(data) == 0


def test_read_only_map_names_the_path_of_what_it_cannot_read(tmp_path):
    import sys

    from lab.errors import FileReadError, LabError
    from lab.files import read_only_map

    assert issubclass(FileReadError, LabError)
    with pytest.raises(FileReadError, match=r"cannot open .*missing\.gguf: No such file"):
        with read_only_map(tmp_path / "missing.gguf"):
            pass
    with pytest.raises(FileReadError, match=f"cannot open {tmp_path}"):
        with read_only_map(tmp_path):
            pass
    if sys.platform.startswith("linux"):
        # a regular file by stat, yet reading it from offset 0 fails with EIO
        with pytest.raises(FileReadError, match=r"cannot read /proc/self/mem: Input/output error"):
            with read_only_map("/proc/self/mem"):
                pass


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/mem is Linux's")
def test_the_gguf_reader_names_a_file_it_cannot_read():
    from lab.errors import FileReadError
    from lab.interop import gguf as gguf_tools

    with pytest.raises(FileReadError, match=r"cannot read /proc/self/mem: Input/output error"):
        gguf_tools.open_gguf("/proc/self/mem")


def test_read_only_map_leaves_errors_from_its_body_alone(tmp_path):
    from lab.files import read_only_map

    (tmp_path / "data.bin").write_bytes(b"x")
    with pytest.raises(OSError, match="from the body"):
        with read_only_map(tmp_path / "data.bin"):
            raise OSError("from the body")


# Paths a learner can type or paste into notebook 6's path box, and the refusal each gets: the
# lab's own error class, a message that says why, never the whole of a pasted page.
TYPED_PATHS = [
    ("x" * 5000, "FileReadError", r"^cannot open x{59}…x{59}: File name too long$"),
    ("/" + "d/" * 3000, "FileReadError", r"^cannot open /d/d.*….*d/d: File name too long$"),
    ("~no-such-user-of-this-lab/model.gguf", "FileReadError", "this machine has no such home directory"),
    ("a\x00b.gguf", "FileReadError", r"^cannot open a\\x00b\.gguf: a file name cannot hold a NUL character$"),
    ("/etc/passwd/model.gguf", "FileReadError", r"^cannot open /etc/passwd/model\.gguf: Not a directory$"),
    ("/dev/null", "GGUFFormatError", r"^/dev/null is not a regular file$"),
    ("café\n.gguf", "FileReadError", r"^cannot open .*café\\n\.gguf: No such file"),
]


@pytest.mark.parametrize(("typed", "error", "message"), TYPED_PATHS)
def test_a_typed_path_is_refused_in_the_labs_words(typed, error, message):
    import re

    from lab.errors import LabError
    from lab.teach import gguf_browser

    with pytest.raises(LabError) as refusal:
        gguf_browser.open_path(typed)
    assert type(refusal.value).__name__ == error
    assert re.search(message, str(refusal.value)), str(refusal.value)
    assert len(str(refusal.value)) < 300
