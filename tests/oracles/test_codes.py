"""Element and scale codes against ml_dtypes, exhaustively, plus each named rounding rule."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from lab.codes import e2m1, e4m3, e8m0, nibble
from lab.errors import CodeRangeError, DTypeError, NonFiniteError, RuleError

ALL_NIBBLES = np.arange(16, dtype=np.uint8)
ALL_BYTES = np.arange(256, dtype=np.uint8)


def _bits(values) -> np.ndarray:
    return np.asarray(values, dtype=np.float32).view(np.uint32)


def _same_floats(mine, reference) -> bool:
    """Bit-identical, except that any NaN matches any NaN (ml_dtypes' NaN carries a sign bit)."""
    mine, reference = np.asarray(mine, np.float32), np.asarray(reference, np.float32)
    nan = np.isnan(reference)
    return bool(np.array_equal(np.isnan(mine), nan) and np.array_equal(_bits(mine[~nan]), _bits(reference[~nan])))


# --- E2M1 -------------------------------------------------------------------------------------


def test_e2m1_all_sixteen_codes_match_ml_dtypes():
    reference = ALL_NIBBLES.view(ml_dtypes.float4_e2m1fn).astype(np.float32)
    assert _same_floats(e2m1.decode(ALL_NIBBLES), reference)


def test_e2m1_keeps_negative_zero():
    assert e2m1.decode(8) == 0 and np.signbit(e2m1.decode(8))
    assert not np.signbit(e2m1.decode(0))


def test_e2m1_rne_encode_matches_ml_dtypes_on_random_values_and_every_midpoint():
    rng = np.random.default_rng(7)
    midpoints = (e2m1.MAGNITUDES[:-1] + e2m1.MAGNITUDES[1:]) / 2
    values = np.concatenate([rng.uniform(-8, 8, 20000), midpoints, -midpoints, [0.0, -0.0, 7.0, -100.0]])
    reference = values.astype(np.float32).astype(ml_dtypes.float4_e2m1fn).view(np.uint8)
    assert np.array_equal(e2m1.encode(values, "rne"), reference)


def test_e2m1_round_trip_under_both_rules():
    values = e2m1.decode(ALL_NIBBLES)
    assert np.array_equal(e2m1.encode(values, "rne"), ALL_NIBBLES)
    # Ties-toward-zero stores every zero as +0, so 1000 comes back as 0000.
    expected_mlx = np.where(ALL_NIBBLES == 8, 0, ALL_NIBBLES)
    assert np.array_equal(e2m1.encode(values, "mlx"), expected_mlx)


@pytest.mark.parametrize(
    ("value", "rne_code", "mlx_code"),
    [
        (0.25, 0b0000, 0b0000),
        (0.75, 0b0010, 0b0001),  # rne -> 1.0, mlx -> 0.5
        (1.25, 0b0010, 0b0010),
        (1.75, 0b0100, 0b0011),  # rne -> 2.0, mlx -> 1.5
        (2.5, 0b0100, 0b0100),
        (3.5, 0b0110, 0b0101),  # rne -> 4.0, mlx -> 3.0
        (5.0, 0b0110, 0b0110),
        (-0.25, 0b1000, 0b0000),  # mlx stores +0, rne keeps the sign
        (-0.1, 0b1000, 0b0000),
        (-1.75, 0b1100, 0b1011),
        (9.0, 0b0111, 0b0111),  # saturates
    ],
)
def test_e2m1_tie_cases(value, rne_code, mlx_code):
    assert e2m1.encode(value, "rne") == rne_code
    assert e2m1.encode(value, "mlx") == mlx_code


def test_e2m1_mlx_rule_matches_installed_mlx(mx):
    """A block pinned to scale 1 by a 6.0, so MLX's element rule alone decides each code."""
    midpoints = (e2m1.MAGNITUDES[:-1] + e2m1.MAGNITUDES[1:]) / 2
    probe = np.concatenate(
        [
            [6.0],
            midpoints,
            -midpoints,
            [-0.0, -0.1, 0.1, 5.9, -5.9, 2.2, -2.2, 0.0, 1.0, -3.0, 0.3, -0.3, 4.5, -4.5, 1.1, -1.1, 0.6],
        ]
    )
    block = probe.astype(np.float32).reshape(1, 32)
    packed, scales = mx.quantize(mx.array(block), group_size=32, bits=4, mode="mxfp4")
    assert int(np.array(scales)[0, 0]) == 127
    words = np.array(packed)[0]
    mlx_codes = np.array([(int(words[k // 8]) >> (4 * (k % 8))) & 15 for k in range(32)])
    assert np.array_equal(e2m1.encode(probe, "mlx"), mlx_codes)


def test_e2m1_explain_shows_the_article_arithmetic():
    parts = e2m1.explain(0b0101)
    assert (parts["sign"], parts["exponent_field"], parts["fraction"]) == (0, 2, 1)
    assert parts["value"] == 3.0 and parts["kind"] == "normal"
    assert parts["formula"] == "(+1) \u00d7 2^(2 \u2212 1) \u00d7 (1 + 1/2) = 3"
    assert e2m1.explain(1)["kind"] == "subnormal" and e2m1.explain(1)["value"] == 0.5
    assert e2m1.explain(8)["kind"] == "zero" and e2m1.explain(8)["formula"].endswith("\u22120")


def test_e2m1_is_vectorised_and_keeps_shape():
    codes = np.arange(16, dtype=np.uint8).reshape(2, 2, 4)
    assert e2m1.decode(codes).shape == (2, 2, 4)
    assert e2m1.encode(e2m1.decode(codes), "rne").shape == (2, 2, 4)


# --- one nibble, three decoders ------------------------------------------------------------------


def test_nibble_uint4_and_int4_against_numpy_integer_views():
    as_int4 = (ALL_NIBBLES << 4).view(np.int8) >> 4  # sign-extend the nibble with numpy's arithmetic shift
    assert np.array_equal(nibble.as_int4(ALL_NIBBLES), as_int4)
    assert np.array_equal(nibble.as_uint4(ALL_NIBBLES), ALL_NIBBLES)


def test_0101_under_three_decoders():
    assert nibble.three_decoders(0b0101) == {"bits": "0101", "uint4": 5, "int4": 5, "e2m1": 3.0}
    assert nibble.three_decoders(0b1000) == {"bits": "1000", "uint4": 8, "int4": -8, "e2m1": -0.0}
    assert nibble.three_decoders(0b1111)["int4"] == -1


# --- E8M0 ---------------------------------------------------------------------------------------


def test_e8m0_all_256_bytes_match_ml_dtypes():
    reference = ALL_BYTES.view(ml_dtypes.float8_e8m0fnu).astype(np.float32)
    assert _same_floats(e8m0.decode(ALL_BYTES), reference)
    assert np.isnan(e8m0.decode(0xFF))


def test_e8m0_has_no_zero():
    assert np.all(e8m0.decode(ALL_BYTES[:-1]) > 0)


@pytest.mark.parametrize(("amax", "mlx_exponent", "ocp_exponent"), [(7, 1, 0), (12.5, 2, 1), (3.1, 0, -1), (6, 0, 0)])
def test_e8m0_scale_rules_for_mxfp4(amax, mlx_exponent, ocp_exponent):
    assert int(e8m0.encode(amax, "mlx")) - 127 == mlx_exponent
    assert int(e8m0.encode(amax, "ocp")) - 127 == ocp_exponent


def test_e8m0_mlx_rule_matches_installed_mlx_across_binades(mx):
    rng = np.random.default_rng(11)
    amax = np.concatenate(
        [
            np.ldexp(rng.uniform(0.5, 1, 200), rng.integers(-100, 100, 200)),
            6 * np.ldexp(1.0, np.arange(-20, 20)),
            [7, 12.5, 3.1],
        ]
    ).astype(np.float32)
    block = np.zeros((amax.size, 32), dtype=np.float32)
    block[:, 5] = amax
    _, scales = mx.quantize(mx.array(block), group_size=32, bits=4, mode="mxfp4")
    assert np.array_equal(e8m0.encode(amax, "mlx"), np.array(scales)[:, 0])


def test_e8m0_ocp_rule_agrees_with_ml_dtypes_floor_of_amax():
    """floor(log2 amax) is the exponent ml_dtypes' E8M0 cast keeps after truncating toward a power of two."""
    rng = np.random.default_rng(3)
    amax = np.ldexp(rng.uniform(0.5, 1, 500), rng.integers(-60, 60, 500))
    exponent_of_amax = np.frexp(amax)[1] - 1
    assert np.array_equal(e8m0.encode(amax, "ocp").astype(int) - 127, exponent_of_amax - 2)
    assert np.array_equal(e8m0.encode(amax, "ocp", element_max=448).astype(int) - 127, exponent_of_amax - 8)


def test_e8m0_exponent_is_clamped_never_wrapped():
    assert int(e8m0.encode(2.0**-140, "ocp")) == 0  # floor rule gives -142; a uint8 would wrap to 241
    assert int(e8m0.encode(2.0**-140, "mlx")) == 0
    assert int(e8m0.encode(3e38, "ocp")) == 252  # floor(log2 3e38) = 127, minus 2
    assert int(e8m0.encode(2.0**200, "ocp")) == 254  # exponent 198 clamps to 127
    assert int(e8m0.encode(0.0, "ocp")) == 127


def test_e8m0_explain_0x7e():
    parts = e8m0.explain(0x7E)
    assert parts["exponent"] == -1 and parts["value"] == 0.5
    assert parts["formula"] == "2^(126 \u2212 127) = 2^\u22121 = 0.5"
    assert e8m0.explain(0xFF)["kind"] == "NaN"


# --- E4M3 ---------------------------------------------------------------------------------------


def test_e4m3_all_256_bytes_match_ml_dtypes():
    reference = ALL_BYTES.view(ml_dtypes.float8_e4m3fn).astype(np.float32)
    assert _same_floats(e4m3.decode(ALL_BYTES), reference)
    assert np.isnan(e4m3.decode(0x7F)) and np.isnan(e4m3.decode(0xFF))
    assert e4m3.decode(0x7E) == 448.0 and e4m3.decode(0x01) == 2.0**-9


def test_e4m3_encode_matches_ml_dtypes_rne_including_every_midpoint():
    finite = e4m3.decode(ALL_BYTES)
    finite = np.unique(finite[np.isfinite(finite)])
    midpoints = (finite[:-1] + finite[1:]) / 2
    rng = np.random.default_rng(5)
    values = np.concatenate([midpoints, rng.normal(0, 30, 20000), rng.normal(0, 0.003, 20000), [0.0, -0.0]])
    values = values[np.abs(values) <= 448]
    reference = values.astype(np.float32).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    assert np.array_equal(e4m3.encode(values), reference)


def test_e4m3_saturates_where_ml_dtypes_would_give_nan():
    assert e4m3.encode(465.0) == 0x7E and e4m3.encode(1e9) == 0x7E and e4m3.encode(-1e9) == 0xFE


def test_e4m3_explain_exponent_5_fraction_2():
    parts = e4m3.explain(0b0_0101_010)
    assert parts["value"] == 0.3125
    assert parts["formula"] == "(+1) \u00d7 2^(5 \u2212 7) \u00d7 (1 + 2/8) = 0.3125"


def test_ggml_unsigned_e4m3_matches_gguf_py_for_all_256_bytes():
    import gguf

    # gguf-py folds a factor 1/2 into its scale (its E2M1 table is doubled); undo it.
    reference = gguf.quants.NVFP4.ue4m3_to_fp32(ALL_BYTES).astype(np.float32) * np.float32(2)
    assert _same_floats(e4m3.decode_ggml_unsigned(ALL_BYTES), reference)
    assert e4m3.decode_ggml_unsigned(0x7F) == 0.0 and np.isnan(e4m3.decode(0x7F))
    assert e4m3.decode_ggml_unsigned(0xFF) == 480.0 and np.isnan(e4m3.decode(0xFF))


# --- bad input ------------------------------------------------------------------------------------


@pytest.mark.parametrize("decode", [e2m1.decode, nibble.as_int4])
def test_nibble_decoders_reject_codes_above_15(decode):
    with pytest.raises(CodeRangeError, match="0..15, got 16"):
        decode(16)


def test_decoders_reject_float_codes():
    with pytest.raises(DTypeError, match="integers"):
        e8m0.decode(1.5)


def test_encoders_reject_nan_and_unknown_rules():
    with pytest.raises(NonFiniteError, match="NaN or infinity"):
        e2m1.encode([1.0, np.nan])
    with pytest.raises(NonFiniteError):
        e4m3.encode(np.inf)
    with pytest.raises(RuleError, match="expected one of"):
        e2m1.encode(1.0, "stochastic")
    with pytest.raises(RuleError):
        e8m0.encode(1.0, "round")
