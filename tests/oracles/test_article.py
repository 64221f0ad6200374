"""Every worked number in the article, worked by hand in the test and checked against the lab.

Section numbers follow ../shared/reference/000_f96d90ae89b05ed7.txt.
"""

from __future__ import annotations

import numpy as np
import pytest

from lab.codes import e2m1, e4m3, e8m0, nibble
from lab.formats import mxfp4, nvfp4, q4k
from lab.teach import scale, sizes

# --- 1. Start with 0101 -------------------------------------------------------------------------


def test_s1_0101_is_five_as_uint4_and_three_as_e2m1():
    assert nibble.as_uint4(0b0101) == 5
    sign, exponent, fraction = 0, 0b10, 1
    by_hand = (-1) ** sign * 2 ** (exponent - 1) * (1 + fraction / 2)
    assert by_hand == 3 == e2m1.decode(0b0101)


def test_s1_magnitude_table():
    assert e2m1.decode(np.arange(8)).tolist() == [0, 0.5, 1, 1.5, 2, 3, 4, 6]


def test_s1_code_7_is_six_and_code_8_is_negative_zero():
    assert e2m1.decode(7) == 6.0
    assert e2m1.decode(8) == 0.0 and np.signbit(e2m1.decode(8))
    assert nibble.as_int4(8) == -8  # what a two's-complement reading would wrongly give


def test_s1_gaps_half_near_zero_two_at_the_top():
    magnitudes = e2m1.decode(np.arange(8))
    assert magnitudes[1] - magnitudes[0] == 0.5
    assert magnitudes[7] - magnitudes[6] == 2.0


# --- 2. The scale changes the range and the spacing ---------------------------------------------


def test_s2_positive_values_at_scale_half_and_eighth():
    positive = lambda s: [v for v in scale.representable(s) if v >= 0]  # noqa: E731
    assert positive(0.5) == [0, 0.25, 0.5, 0.75, 1, 1.5, 2, 3]
    assert max(positive(0.125)) == 0.75


def test_s2_smaller_scale_helps_one_weight_and_hurts_another():
    assert scale.reconstruct([0.35, 1.7], 0.5).tolist() == [0.25, 1.5]
    assert scale.reconstruct([0.35, 1.7], 0.125).tolist() == [0.375, 0.75]


def test_s2_the_row_and_its_output():
    row = scale.analyse(scale.ARTICLE_W, scale.ARTICLE_X, 0.5)
    assert row.y == pytest.approx(-2 + 0.3 - 0.9 + 0.85) and row.y == pytest.approx(-1.75, abs=1e-15)


def test_s2_scale_half_gives_minus_quarter():
    row = scale.analyse(scale.ARTICLE_W, scale.ARTICLE_X, 0.5)
    assert row.w_hat.tolist() == [-1, 0.25, 1, 1.5]
    assert row.y_hat == -2.0
    assert row.delta_y == pytest.approx(-0.25, abs=1e-15)
    assert scale.output_error(scale.ARTICLE_W, scale.ARTICLE_X, 0.5) == pytest.approx(-0.25, abs=1e-15)


def test_s2_scale_eighth_gives_plus_eighth_despite_clipping():
    row = scale.analyse(scale.ARTICLE_W, scale.ARTICLE_X, 0.125)
    assert row.w_hat.tolist() == [-0.75, 0.25, 0.75, 0.75]
    assert row.y_hat == -1.625
    assert row.delta_y == pytest.approx(0.125, abs=1e-15)
    assert row.clipped.tolist() == [True, False, True, True]
    # some individual errors grew even though the output error shrank
    assert abs(row.weight_error[3]) > abs(scale.analyse(scale.ARTICLE_W, scale.ARTICLE_X, 0.5).weight_error[3])


def test_s2_delta_y_is_the_sum_of_weighted_errors():
    row = scale.analyse(scale.ARTICLE_W, scale.ARTICLE_X, 0.125)
    by_hand = (-0.75 + 1) * 2 + (0.25 - 0.3) * 1 + (0.75 - 0.9) * -1 + (0.75 - 1.7) * 0.5
    assert row.delta_y == pytest.approx(by_hand) and row.terms.sum() == pytest.approx(by_hand)


# --- 3. MXFP4 ---------------------------------------------------------------------------------------


def test_s3_0x7e_is_one_half():
    assert 0x7E == 126 and 126 - 127 == -1
    assert e8m0.decode(0x7E) == 0.5


def test_s3_code_three_times_half_is_one_and_a_half():
    codes = np.zeros(32, dtype=np.uint8)
    codes[4] = 0b0101  # E2M1 value 3
    block = mxfp4.from_parts(codes, np.array([0x7E], dtype=np.uint8))
    assert block.dequantize()[4] == 1.5
    assert block.explain(4)["formula"] == "3 \u00d7 0.5 = 1.5"


def test_s3_seventeen_bytes_and_4_25_bits_per_weight():
    block = mxfp4.quantize(np.linspace(-1, 1, 32, dtype=np.float32))
    assert len(block.to_gguf()) == 17 == 32 * 4 // 8 + 1
    assert block.bits_per_weight == 17 * 8 / 32 == 4.25


# --- 4. NVFP4 ---------------------------------------------------------------------------------------


def test_s4_e4m3_exponent_5_fraction_2():
    byte = (5 << 3) | 2
    assert 2 ** (5 - 7) * (1 + 2 / 8) == 0.3125 == e4m3.decode(byte)


def test_s4_weight_three_times_local_times_tensor_scale():
    codes = np.zeros(32, dtype=np.uint8)
    codes[0] = 0b0101
    tensor = nvfp4.from_parts(codes, np.array([(5 << 3) | 2, 0x38], dtype=np.uint8))
    assert tensor.tensor_factor == 1.0
    assert tensor.dequantize()[0] == 3 * 0.3125 * 1 == 0.9375
    assert tensor.block_scales.tolist() == [0.3125, 1.0]  # two groups of 16, two local rulers


def test_s4_bits_per_weight():
    assert nvfp4.from_parts(np.zeros(16, np.uint8), np.zeros(1, np.uint8)).bits_per_weight == (16 * 4 + 8) / 16 == 4.5
    n = 4096 * 4096
    with_tensor_scale = nvfp4.quantize(np.ones((1, n), np.float32), global_scale=1.0)
    assert with_tensor_scale.bits_per_weight == 4.5 + 32 / n
    assert sizes.nvfp4_bits_per_weight(n) == 4.5 + 32 / n


# --- 5. Q4_K ---------------------------------------------------------------------------------------


def test_s5_0xa5_into_lanes_0_and_32():
    block = q4k.presentation_fixture()
    traced = q4k.explain_byte(block, 0)
    assert traced["byte"] == 0xA5 and (traced["low"]["code"], traced["high"]["code"]) == (5, 10)
    assert (traced["low"]["lane"], traced["high"]["lane"]) == (0, 32)
    assert (traced["low"]["gain"], traced["low"]["offset"]) == (0.125 * 2, 0.0625 * 4) == (0.25, 0.25)
    assert (traced["high"]["gain"], traced["high"]["offset"]) == (0.125 * 3, 0.0625 * 8) == (0.375, 0.5)
    weights = q4k.decode(block)
    assert weights[0] == 0.25 * 5 - 0.25 == 1.0
    assert weights[32] == 0.375 * 10 - 0.5 == 3.25


def test_s5_lane_formula_for_every_chunk():
    for c in range(4):
        for lane in (0, 31):
            assert q4k.lanes(32 * c + lane) == (64 * c + lane, 64 * c + 32 + lane)
    assert q4k.lanes(32) == (64, 96)


def test_s5_byte_zero_and_byte_255_keep_their_offsets():
    block = q4k.presentation_fixture()
    weights = q4k.decode(block)
    zero_low, zero_high = q4k.lanes(q4k.PRESENTATION_BYTE_ZERO_INDEX)
    assert block[16 + q4k.PRESENTATION_BYTE_ZERO_INDEX] == 0x00
    assert (weights[zero_low], weights[zero_high]) == (-0.25, -0.5)
    ff_low, ff_high = q4k.lanes(q4k.PRESENTATION_BYTE_FF_INDEX)
    assert block[16 + q4k.PRESENTATION_BYTE_FF_INDEX] == 0xFF
    assert (weights[ff_low], weights[ff_high]) == (0.25 * 15 - 0.25, 0.375 * 15 - 0.5) == (3.5, 5.125)


# --- 6. The metadata packing ---------------------------------------------------------------------


def test_s6_eight_scales_and_mins_fit_twelve_bytes():
    assert 8 * 6 * 2 == 96 == 12 * 8


def test_s6_j4_scale_is_33_not_b4():
    block = q4k.presentation_fixture()
    metadata = block[4:16]
    assert metadata[8] == 33 and metadata[0] == 130
    assert (33 & 15) | ((130 >> 6) << 4) == 33
    scales, mins = q4k.unpack_scale_min(metadata)
    assert scales[4] == 33 and metadata[4] != 33
    assert (scales[0], mins[0], scales[1], mins[1]) == (2, 4, 3, 8)


# --- 9. Capacity arithmetic ------------------------------------------------------------------------


def test_s9_seven_billion_weights():
    table = sizes.seven_billion_table()
    assert table["BF16"] == 14.0
    assert table["ideal 4-bit"] == 3.5
    assert table["Q4_K"] == 3.9375 == 7e9 * 4.5 / 8 / 1e9
    assert q4k.BITS_PER_WEIGHT == 144 * 8 / 256 == 4.5
