"""Q4_K: decoding, metadata packing, lane placement, the article's fixture, the quantizer and the MLX bridge.

The oracles are independent of lab.q4k: gguf-py's dequantizer and its own metadata unpacker,
MLX's affine kernels, and expected values written out by hand from the article's formulas
(w = d * s_j * q - dmin * m_j; payload byte 32c + l -> lanes 64c + l and 64c + 32 + l).
"""

from __future__ import annotations

import gguf
import numpy as np
import pytest
from conftest import require_mlx
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.errors import CodeRangeError, DTypeError, NonFiniteError, ShapeError
from lab.formats import q4k

Q4_K = gguf.GGMLQuantizationType.Q4_K


def gguf_decode(raw) -> np.ndarray:
    return gguf.quants.dequantize(np.asarray(raw, dtype=np.uint8), Q4_K)


def gguf_scale_min(b12) -> tuple[np.ndarray, np.ndarray]:
    """gguf-py's own reading of the twelve metadata bytes (an independent implementation)."""
    metadata = np.asarray(b12, dtype=np.uint8).reshape(-1, 12)
    return gguf.quants.Q4_K.get_scale_min(metadata)


def fp16_bytes(value) -> bytes:
    return np.array(value, dtype="<f2").tobytes()


def make_block(d, dmin, metadata, payload) -> np.ndarray:
    """144 bytes assembled by hand: d, dmin (little-endian fp16), 12 metadata bytes, 128 payload bytes."""
    raw = fp16_bytes(d) + fp16_bytes(dmin) + bytes(metadata) + bytes(payload)
    assert len(raw) == 144
    return np.frombuffer(raw, dtype=np.uint8).copy()


# Crafted metadata bytes and their fields, worked out by hand from the article's formulas:
#   j < 4:  s_j = B[j] & 63,   m_j = B[j+4] & 63
#   j >= 4: s_j = (B[j+4] & 15) | ((B[j-4] >> 6) << 4),  m_j = (B[j+4] >> 4) | ((B[j] >> 6) << 4)
CRAFTED_B = [0xC1, 0x42, 0x83, 0x04, 0x85, 0x06, 0xC7, 0x48, 0x9A, 0xEB, 0x3C, 0x7D]
CRAFTED_FIELDS = [
    # (s_j, m_j, how)
    (1, 5, "0xC1 & 63 = 1; 0x85 & 63 = 5"),
    (2, 6, "0x42 & 63 = 2; 0x06 & 63 = 6"),
    (3, 7, "0x83 & 63 = 3; 0xC7 & 63 = 7"),
    (4, 8, "0x04 & 63 = 4; 0x48 & 63 = 8"),
    (58, 41, "s: 0xA | (0xC1>>6=3)<<4 = 10+48; m: 0x9 | (0x85>>6=2)<<4 = 9+32"),
    (27, 14, "s: 0xB | (0x42>>6=1)<<4 = 11+16; m: 0xE | (0x06>>6=0)<<4 = 14"),
    (44, 51, "s: 0xC | (0x83>>6=2)<<4 = 12+32; m: 0x3 | (0xC7>>6=3)<<4 = 3+48"),
    (13, 23, "s: 0xD | (0x04>>6=0)<<4 = 13; m: 0x7 | (0x48>>6=1)<<4 = 7+16"),
]

# Which field bit each metadata bit carries, bit 7 first, written from the article's layout.
BIT_LAYOUT = {
    0: "s4.5 s4.4 s0.5 s0.4 s0.3 s0.2 s0.1 s0.0",
    1: "s5.5 s5.4 s1.5 s1.4 s1.3 s1.2 s1.1 s1.0",
    2: "s6.5 s6.4 s2.5 s2.4 s2.3 s2.2 s2.1 s2.0",
    3: "s7.5 s7.4 s3.5 s3.4 s3.3 s3.2 s3.1 s3.0",
    4: "m4.5 m4.4 m0.5 m0.4 m0.3 m0.2 m0.1 m0.0",
    5: "m5.5 m5.4 m1.5 m1.4 m1.3 m1.2 m1.1 m1.0",
    6: "m6.5 m6.4 m2.5 m2.4 m2.3 m2.2 m2.1 m2.0",
    7: "m7.5 m7.4 m3.5 m3.4 m3.3 m3.2 m3.1 m3.0",
    8: "m4.3 m4.2 m4.1 m4.0 s4.3 s4.2 s4.1 s4.0",
    9: "m5.3 m5.2 m5.1 m5.0 s5.3 s5.2 s5.1 s5.0",
    10: "m6.3 m6.2 m6.1 m6.0 s6.3 s6.2 s6.1 s6.0",
    11: "m7.3 m7.2 m7.1 m7.0 s7.3 s7.2 s7.1 s7.0",
}


def random_finite_fp16_bits(rng, size) -> np.ndarray:
    sign = rng.integers(0, 2, size=size)
    exponent = rng.integers(0, 31, size=size)  # 31 would be inf/NaN
    mantissa = rng.integers(0, 1024, size=size)
    return ((sign << 15) | (exponent << 10) | mantissa).astype(np.uint16)


def random_blocks(rng, n_blocks) -> np.ndarray:
    raw = rng.integers(0, 256, size=(n_blocks, 144), dtype=np.uint8)
    for offset in (0, 2):
        bits = random_finite_fp16_bits(rng, n_blocks)
        raw[:, offset] = bits & 0xFF
        raw[:, offset + 1] = bits >> 8
    return raw


def same_bits(a, b) -> bool:
    a, b = np.asarray(a, dtype=np.float32), np.asarray(b, dtype=np.float32)
    return a.shape == b.shape and np.array_equal(a.view(np.uint32), b.view(np.uint32))


# ---------------------------------------------------------------------------------------------
# Decoding against gguf-py
# ---------------------------------------------------------------------------------------------


def test_constants_match_gguf_py():
    block_weights, block_bytes = gguf.constants.GGML_QUANT_SIZES[Q4_K]
    assert (q4k.BLOCK_WEIGHTS, q4k.BLOCK_BYTES) == (block_weights, block_bytes) == (256, 144)
    assert block_weights == gguf.constants.QK_K
    assert q4k.BITS_PER_WEIGHT == 8 * block_bytes / block_weights == 4.5
    # the field layout: two float16 factors, gguf-py's K_SCALE_SIZE metadata bytes, then one
    # nibble per weight; together they fill gguf-py's block exactly
    assert q4k.METADATA_OFFSET == 2 * np.dtype(np.float16).itemsize
    assert q4k.METADATA_BYTES == gguf.quants.Q4_K.K_SCALE_SIZE
    assert q4k.PAYLOAD_OFFSET == q4k.METADATA_OFFSET + q4k.METADATA_BYTES
    assert q4k.PAYLOAD_BYTES == block_weights // 2
    assert q4k.PAYLOAD_OFFSET + q4k.PAYLOAD_BYTES == block_bytes


def test_decode_is_bit_identical_to_gguf_on_random_blocks():
    rng = np.random.default_rng(20240501)
    raw = random_blocks(rng, 12_000)
    ours = q4k.decode(raw.reshape(-1))
    theirs = gguf_decode(raw.reshape(-1))
    assert ours.dtype == np.float32 and ours.shape == (12_000 * 256,)
    assert np.all(np.isfinite(theirs))
    assert same_bits(ours, theirs)


def test_decode_multi_dimensional_input_and_bytes():
    rng = np.random.default_rng(7)
    raw = random_blocks(rng, 3 * 5 * 2).reshape(3, 5, 2 * 144)
    ours = q4k.decode(raw)
    assert ours.shape == (3, 5, 512)
    assert same_bits(ours, gguf_decode(raw))
    assert same_bits(q4k.decode(raw[1, 2].tobytes()), gguf_decode(raw[1, 2]))
    assert same_bits(q4k.Q4KTensor(raw).dequantize(), gguf_decode(raw))


def test_decode_extreme_fp16_factors():
    # Largest finite, smallest subnormal, negative and signed-zero d/dmin.
    rng = np.random.default_rng(3)
    payload = rng.integers(0, 256, size=128, dtype=np.uint8)
    for d, dmin in [(65504.0, 65504.0), (2.0**-24, -(2.0**-24)), (-0.0, 0.0), (-1.5, 0.001)]:
        block = make_block(d, dmin, rng.integers(0, 256, size=12, dtype=np.uint8), payload)
        assert same_bits(q4k.decode(block), gguf_decode(block))


# ---------------------------------------------------------------------------------------------
# Metadata: eight 6-bit pairs in twelve bytes
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("j", range(8))
def test_scale_min_pair_from_crafted_bytes(j):
    expected_scale, expected_min, _how = CRAFTED_FIELDS[j]
    scales, mins = q4k.unpack_scale_min(np.array(CRAFTED_B, dtype=np.uint8))
    assert (int(scales[j]), int(mins[j])) == (expected_scale, expected_min)
    gguf_scales, gguf_mins = gguf_scale_min(CRAFTED_B)
    assert (int(gguf_scales[0, j]), int(gguf_mins[0, j])) == (expected_scale, expected_min)


def test_crafted_fields_are_all_different():
    fields = [f for s, m, _ in CRAFTED_FIELDS for f in (s, m)]
    assert len(set(fields)) == 16


@pytest.mark.parametrize("j", range(8))
def test_each_subblock_decodes_with_its_own_pair(j):
    # All codes 0 -> every lane of subblock j is -dmin*m_j; all codes 1 -> d*s_j - dmin*m_j.
    expected_scale, expected_min, _ = CRAFTED_FIELDS[j]
    zero_codes = make_block(1.0, 1.0, CRAFTED_B, bytes(128))
    one_codes = make_block(1.0, 1.0, CRAFTED_B, bytes([0x11]) * 128)
    for block, expected in [(zero_codes, -expected_min), (one_codes, expected_scale - expected_min)]:
        theirs = gguf_decode(block)[32 * j : 32 * j + 32]
        ours = q4k.decode(block)[32 * j : 32 * j + 32]
        assert np.all(theirs == expected)
        assert np.all(ours == expected)


def test_every_metadata_bit_lands_in_the_documented_field():
    for byte_index, layout in BIT_LAYOUT.items():
        for position, name in enumerate(layout.split()):
            bit = 7 - position
            field, field_bit = name.split(".")
            metadata = np.zeros(12, dtype=np.uint8)
            metadata[byte_index] = 1 << bit
            scales, mins = q4k.unpack_scale_min(metadata)
            expected_scales = np.zeros(8, dtype=int)
            expected_mins = np.zeros(8, dtype=int)
            target = expected_scales if field[0] == "s" else expected_mins
            target[int(field[1])] = 1 << int(field_bit)
            assert scales.tolist() == expected_scales.tolist(), (byte_index, bit)
            assert mins.tolist() == expected_mins.tolist(), (byte_index, bit)


def test_unpack_is_vectorised_over_leading_dimensions():
    rng = np.random.default_rng(11)
    metadata = rng.integers(0, 256, size=(4, 3, 12), dtype=np.uint8)
    scales, mins = q4k.unpack_scale_min(metadata)
    assert scales.shape == mins.shape == (4, 3, 8)
    assert scales.dtype == mins.dtype == np.uint8
    gguf_scales, gguf_mins = gguf_scale_min(metadata)
    assert np.array_equal(scales.reshape(-1, 8), gguf_scales)
    assert np.array_equal(mins.reshape(-1, 8), gguf_mins)


six_bit_fields = st.lists(st.integers(0, 63), min_size=8, max_size=8)


@settings(max_examples=200, deadline=None)
@given(scales=six_bit_fields, mins=six_bit_fields)
def test_pack_then_unpack_round_trips(scales, mins):
    packed = q4k.pack_scale_min(scales, mins)
    assert packed.shape == (12,) and packed.dtype == np.uint8
    gguf_scales, gguf_mins = gguf_scale_min(packed)
    assert gguf_scales[0].tolist() == scales and gguf_mins[0].tolist() == mins
    back_scales, back_mins = q4k.unpack_scale_min(packed)
    assert back_scales.tolist() == scales and back_mins.tolist() == mins


@settings(max_examples=200, deadline=None)
@given(metadata=st.binary(min_size=12, max_size=12))
def test_unpack_then_pack_round_trips(metadata):
    # 96 bits <-> sixteen 6-bit fields is a bijection, so every byte pattern comes back.
    scales, mins = q4k.unpack_scale_min(metadata)
    assert q4k.pack_scale_min(scales, mins).tobytes() == metadata


def test_explain_metadata_spells_out_split_fields():
    text = q4k.explain_metadata(np.array(CRAFTED_B, dtype=np.uint8), 4)
    assert text["scale"] == 58 and text["min"] == 41 and text["split"]
    assert (
        text["scale_formula"] == "s4 = (B[8] & 15) | ((B[0] >> 6) << 4) = (154 & 15) | ((193 >> 6) << 4) = 10 | 48 = 58"
    )
    assert text["min_formula"] == "m4 = (B[8] >> 4) | ((B[4] >> 6) << 4) = (154 >> 4) | ((133 >> 6) << 4) = 9 | 32 = 41"
    assert [(p["byte"], p["byte_bits"], p["field_bits"]) for p in text["scale_sources"]] == [
        (8, (0, 3), (0, 3)),
        (0, (6, 7), (4, 5)),
    ]
    assert [(p["byte"], p["byte_bits"], p["field_bits"]) for p in text["min_sources"]] == [
        (8, (4, 7), (0, 3)),
        (4, (6, 7), (4, 5)),
    ]
    plain = q4k.explain_metadata(np.array(CRAFTED_B, dtype=np.uint8), 2)
    assert plain["scale_formula"] == "s2 = B[2] & 63 = 131 & 63 = 3" and not plain["split"]


# ---------------------------------------------------------------------------------------------
# Lane placement: all 256 destinations
# ---------------------------------------------------------------------------------------------

LANE_D, LANE_DMIN = 0.5, 0.25


def lane_test_block() -> np.ndarray:
    # Low nibble p % 16 and high nibble (7p + 3) % 16 differ in every byte (6p + 3 is odd).
    payload = [(p % 16) | (((7 * p + 3) % 16) << 4) for p in range(128)]
    return make_block(LANE_D, LANE_DMIN, CRAFTED_B, payload)


def test_all_256_lane_destinations_against_gguf():
    block = lane_test_block()
    theirs = gguf_decode(block)
    ours = q4k.decode(block)
    codes = q4k.Q4KTensor(block).codes
    scales = [s for s, _, _ in CRAFTED_FIELDS]
    mins = [m for _, m, _ in CRAFTED_FIELDS]
    seen = []
    for p in range(128):
        chunk, position = divmod(p, 32)
        byte = int(block[16 + p])
        for nibble, code, lane, subblock in [
            ("low", byte & 15, 64 * chunk + position, 2 * chunk),
            ("high", byte >> 4, 64 * chunk + 32 + position, 2 * chunk + 1),
        ]:
            # Exact in float32: small multiples of 1/4.
            expected = LANE_D * scales[subblock] * code - LANE_DMIN * mins[subblock]
            assert theirs[lane] == expected, (p, nibble)
            assert ours[lane] == expected, (p, nibble)
            assert codes[lane] == code, (p, nibble)
            seen.append(lane)
        assert tuple(int(v) for v in q4k.lanes(p)) == (64 * chunk + position, 64 * chunk + 32 + position)
        assert tuple(int(v) for v in q4k.subblocks(p)) == (2 * chunk, 2 * chunk + 1)
    assert sorted(seen) == list(range(256))


def test_lanes_examples_and_vectorised():
    assert tuple(int(v) for v in q4k.lanes(0)) == (0, 32)
    assert tuple(int(v) for v in q4k.lanes(31)) == (31, 63)
    assert tuple(int(v) for v in q4k.lanes(32)) == (64, 96)
    assert tuple(int(v) for v in q4k.lanes(127)) == (223, 255)
    low, high = q4k.lanes(np.arange(128))
    assert sorted(np.concatenate([low, high]).tolist()) == list(range(256))
    assert q4k.subblocks(np.array([0, 31, 32, 127]))[0].tolist() == [0, 0, 2, 6]
    payload_index, is_high = q4k.payload_of_lane(np.arange(256))
    assert np.array_equal(np.where(is_high, high[payload_index], low[payload_index]), np.arange(256))


def test_explain_one_lane():
    block = lane_test_block()
    theirs = gguf_decode(block)
    for lane in (0, 31, 32, 63, 64, 100, 255):
        info = q4k.explain(block, lane)
        chunk, within = divmod(lane, 64)
        assert info["payload_index"] == 32 * chunk + within % 32
        assert info["nibble"] == ("high" if within >= 32 else "low")
        assert info["subblock"] == lane // 32
        assert info["weight"] == theirs[lane]
        assert info["partner_lane"] == (lane + 32 if within < 32 else lane - 32)


# ---------------------------------------------------------------------------------------------
# The article's presentation fixture
# ---------------------------------------------------------------------------------------------


def test_presentation_fixture_numbers():
    block = q4k.presentation_fixture()
    assert block.shape == (144,) and block.dtype == np.uint8
    assert np.frombuffer(block[0:2].tobytes(), dtype="<f2")[0] == 0.125
    assert np.frombuffer(block[2:4].tobytes(), dtype="<f2")[0] == 0.0625
    metadata = block[4:16]
    assert metadata[0] == 130 and metadata[8] == 33 and metadata[4] != 33
    assert block[16] == 0xA5

    theirs = gguf_decode(block)
    ours = q4k.decode(block)
    assert same_bits(ours, theirs)
    # 0xA5: low nibble 5 -> lane 0: 0.125*2*5 - 0.0625*4 = 1; high nibble 10 -> lane 32: 0.375*10 - 0.5.
    assert (theirs[0], theirs[32]) == (1.0, 3.25)

    zero_at, ff_at = q4k.PRESENTATION_BYTE_ZERO_INDEX, q4k.PRESENTATION_BYTE_FF_INDEX
    assert zero_at < 32 and ff_at < 32  # chunk 0, so subblocks 0 and 1
    assert block[16 + zero_at] == 0x00 and block[16 + ff_at] == 0xFF
    assert (theirs[zero_at], theirs[32 + zero_at]) == (-0.25, -0.5)
    assert (theirs[ff_at], theirs[32 + ff_at]) == (3.5, 5.125)  # 0.25*15 - 0.25, 0.375*15 - 0.5

    gguf_scales, gguf_mins = gguf_scale_min(metadata)
    assert gguf_scales[0, 4] == 33
    assert (gguf_scales[0, 0], gguf_mins[0, 0], gguf_scales[0, 1], gguf_mins[0, 1]) == (2, 4, 3, 8)
    fields = gguf_scales[0].tolist() + gguf_mins[0].tolist()
    assert len(set(fields)) == 16
    # The split fields really use their top bits.
    assert all(f >= 16 for f in gguf_scales[0, 4:].tolist() + gguf_mins[0, 4:].tolist())


def test_presentation_fixture_other_bytes_have_two_different_nibbles():
    payload = q4k.presentation_fixture()[16:]
    special = {q4k.PRESENTATION_BYTE_ZERO_INDEX, q4k.PRESENTATION_BYTE_FF_INDEX}
    for p, byte in enumerate(payload.tolist()):
        if p not in special:
            assert byte & 15 != byte >> 4, p


def test_explain_byte_on_the_fixture():
    block = q4k.presentation_fixture()
    info = q4k.explain_byte(block, 0)
    assert (info["byte"], info["hex"], info["low_nibble"], info["high_nibble"]) == (165, "0xA5", 5, 10)
    assert (info["low_lane"], info["high_lane"], info["low_subblock"], info["high_subblock"]) == (0, 32, 0, 1)
    assert (info["d"], info["dmin"]) == (0.125, 0.0625)
    low, high = info["low"], info["high"]
    assert (low["scale"], low["min"], high["scale"], high["min"]) == (2, 4, 3, 8)
    assert (low["gain"], low["offset"], high["gain"], high["offset"]) == (0.25, 0.25, 0.375, 0.5)
    assert info["weights"] == (1.0, 3.25)
    assert low["formula"] == "0.25 \u00d7 5 \u2212 0.25 = 1"
    assert high["formula"] == "0.375 \u00d7 10 \u2212 0.5 = 3.25"
    assert low["gain_formula"] == "0.125 \u00d7 2 = 0.25"
    assert high["offset_formula"] == "0.0625 \u00d7 8 = 0.5"

    zero = q4k.explain_byte(block, q4k.PRESENTATION_BYTE_ZERO_INDEX)
    assert zero["weights"] == (-0.25, -0.5)
    assert zero["low"]["formula"] == "0.25 \u00d7 0 \u2212 0.25 = \u22120.25"

    # Payload byte 64 is chunk 2: its low nibble uses subblock 4, whose scale is split.
    split = q4k.explain_byte(block, 64)["low"]["metadata"]
    assert (
        split["scale_formula"] == "s4 = (B[8] & 15) | ((B[0] >> 6) << 4) = (33 & 15) | ((130 >> 6) << 4) = 1 | 32 = 33"
    )

    high_lane = q4k.explain(block, 32)
    assert (high_lane["payload_index"], high_lane["nibble"], high_lane["weight"]) == (0, "high", 3.25)


# ---------------------------------------------------------------------------------------------
# Building blocks from parts
# ---------------------------------------------------------------------------------------------


def test_from_parts_decodes_to_the_formula():
    rng = np.random.default_rng(5)
    n_rows, n_blocks = 3, 2
    d = rng.integers(1, 64, size=(n_rows, n_blocks)) / 64  # exact in fp16 and products exact in fp32
    dmin = rng.integers(0, 64, size=(n_rows, n_blocks)) / 128
    scales = rng.integers(0, 64, size=(n_rows, n_blocks, 8))
    mins = rng.integers(0, 64, size=(n_rows, n_blocks, 8))
    codes = rng.integers(0, 16, size=(n_rows, n_blocks * 256))
    tensor = q4k.from_parts(d, dmin, scales, mins, codes)
    assert tensor.raw.shape == (n_rows, n_blocks * 144)
    lane_subblock = np.arange(n_blocks * 256) // 32
    expected = (
        np.repeat(d, 256, axis=-1) * scales.reshape(n_rows, -1)[:, lane_subblock] * codes
        - np.repeat(dmin, 256, axis=-1) * mins.reshape(n_rows, -1)[:, lane_subblock]
    )
    assert np.array_equal(gguf_decode(tensor.raw), expected)
    # and the accessors read the same parts back
    assert np.array_equal(tensor.d, d) and np.array_equal(tensor.dmin, dmin)
    assert np.array_equal(tensor.subblock_scales, scales) and np.array_equal(tensor.subblock_mins, mins)
    assert np.array_equal(tensor.codes, codes)
    assert tensor.bits_per_weight == 4.5
    assert tensor.shape == (n_rows, n_blocks * 256)


def test_tensor_explain_uses_flat_index():
    rng = np.random.default_rng(9)
    raw = random_blocks(rng, 6).reshape(2, 3 * 144)
    tensor = q4k.Q4KTensor(raw)
    theirs = gguf_decode(raw)
    for flat in (0, 255, 256, 700, 1535):
        info = tensor.explain(flat)
        row, column = divmod(flat, 768)
        assert info["position"] == (row, column)
        assert info["block"] == flat // 256
        assert info["lane"] == flat % 256
        assert same_bits(info["weight"], theirs[row, column])
    with pytest.raises(CodeRangeError):
        tensor.explain(1536)


# ---------------------------------------------------------------------------------------------
# The quantizer
# ---------------------------------------------------------------------------------------------

LLAMA_CPP_RELATIVE_RMSE = 0.0714  # quantize_row_q4_K_ref on N(0, 0.02) weights


def relative_rmse(w, decoded) -> float:
    w = np.asarray(w, dtype=np.float64)
    return float(np.linalg.norm(w - decoded) / np.linalg.norm(w))


def test_quantizer_reaches_llama_cpp_quality_on_gaussian_weights():
    w = np.random.default_rng(1234).normal(0.0, 0.02, size=(1024, 1024)).astype(np.float32)
    tensor = q4k.quantize(w)
    assert tensor.raw.shape == (1024, 4 * 144)
    error = relative_rmse(w, gguf_decode(tensor.raw))
    assert abs(error - LLAMA_CPP_RELATIVE_RMSE) / LLAMA_CPP_RELATIVE_RMSE < 0.01, error


# How these bytes were made, so anyone can make them again (no llama.cpp code is in this repo):
#   algorithm  llama.cpp's quantize_row_q4_K_ref (ggml/src/ggml-quants.c), with the helpers it
#              calls from the same file, nearest_int, make_qkx2_quants (called with nmax=15,
#              rmin=-1, rdelta=0.1, nstep=20, use_mad=false) and get_scale_min_k4; checked
#              against commit 01243c587feceaa5d6a6c2305535ef2f549c48b8 of ggml-org/llama.cpp.
#              Those four functions were copied into one C file, with GGML_FP32_TO_FP16 and
#              GGML_FP16_TO_FP32 as casts to and from _Float16 (round to nearest even, as ggml's).
#   compiler   gcc 12.2 (Debian 12.2.0-14) -O2 -ffp-contract=off on x86-64, built as a shared
#              library; the contraction flag keeps a*b+c as two roundings, as written.
#   input      reference_input() below, no random seed: 1024 exactly representable sawtooth
#              values and two blocks of constant subblocks, passed as one float32 row of
#              k = 1536 (six blocks) to quantize_row_q4_K_ref through ctypes.
#   output     the 6 * 144 bytes of block_q4_K written out in hex, 96 characters a line.
# They pin details the RMSE check is too coarse to see: each search grid is anchored at the
# best minimum found so far, a candidate must be strictly better to win, sums run left to right
# (constant subblocks are near-ties decided by rounding), and a subblock whose 6-bit scale
# rounds to 0 keeps the codes the search chose.
REFERENCE_BYTES_HEX = (
    "de0a8016ffffffc0fff8fac0ceafbfbcc2278dd3499e055ab1167cc2388de449af056bb1277cd3389ee45aa0166bc227"
    "48ad0469c0157bd1379cf358be046ac0268be2379df359be157ad1268ce248ada0156bc1278cd3489e045ab0167bc237"
    "8de349ae056ab1267cd2389de459af15268ce248ad0459b0157bd1379ce348ae046ac0267bd2379df359be156ac1268c"
    "e20a2b16c03cfffec03dffffef00cfde9df359be157ac1268ce248ad0459b0157bd1379ce348ae046ac0267bd2379df3"
    "156ac1268cd2489df459b0157bc1378ce348ae046ab0267bd2379de359ae156a7bd2379de359ae156ac1268cd2489d04"
    "59b0157bc1378ce348ae046ab0267bd2e348ae046ab0267bd2379de359ae156ac1268cd2489d0459b0157bc1378ce348"
    "d90aae1dffffc03efefeedbfdfdafcd06ab0267bd2379de359ae156ac1268cd2489df459b0157bc1378ce348ae045ab0"
    "d2379de359ae156ac1268cd2489df459bf157bc1378ce348ae046ab0267bd23748ad0469b0157bd1379cf348ae046ac0"
    "268be2379df359be156ac1268ce248adb0167cd2288de349af056bc1177cd2389ef45aaf056bc1278de3399ef45ab016"
    "e20a30163ffcfcfc3cfdfffb00ffcfdf268ce248ad0459b0157bd1379ce348ae046ac0267bd2379df359be156ac1268c"
    "9ef45ab0166bc1278de349ae045ab0167cd2388de349af056bc1267cd2389ef4156ac1268cd2489d0459b0157bc1378c"
    "e348ae046ab0267bd2379de359ae156a7bd2379de359ae156ac1268cd2489d0459b0157bc1378ce348ae046ab0267bd2"
    "79165021001789cfcf000000f0c0010ff0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0"
    "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff00000000000000000000000000000000"
    "00000000000000000000000000000000ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"
    "2d171224c04010013f3380800f0750200000000000000000000000000000000000000000000000000000000000000000"
    "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"
    "ffffffffffffffffffffffffffffffff0000000000000000000000000000000000000000000000000000000000000000"
)

# Two blocks of constant subblocks (float32 values written out exactly).
CONSTANT_SUBBLOCKS = [
    [
        -0.15922501683235168,
        0.5408455729484558,
        0.21465912461280823,
        0.35537269711494446,
        -0.6538286209106445,
        -0.12961363792419434,
        0.7839754819869995,
        1.4934310913085938,
    ],
    [
        -1.0017222166061401,
        -0.8094269037246704,
        0.40909597277641296,
        0.03645624220371246,
        1.6554975509643555,
        0.6033328771591187,
        -0.5950585603713989,
        -0.5391156673431396,
    ],
]


def reference_input() -> np.ndarray:
    i = np.arange(1024)
    w = (((i * 37 + 11) % 101) - 50) / 512.0  # a sawtooth of exact dyadic values
    w = w * np.where((i // 32) % 5 == 3, 1 / 1024, 1.0)  # a few subblocks far smaller than the rest
    w = w - np.where((i // 256) == 2, 0.25, 0.0)  # one block shifted below zero
    constants = np.repeat(np.array(CONSTANT_SUBBLOCKS, dtype=np.float32).ravel(), 32)
    return np.concatenate([w.astype(np.float32), constants])


def test_quantizer_bytes_match_the_c_reference():
    ours = q4k.quantize(reference_input()).raw
    expected = np.frombuffer(bytes.fromhex("".join(REFERENCE_BYTES_HEX)), dtype=np.uint8)
    assert ours.shape == expected.shape == (6 * 144,)
    differing = np.nonzero(ours != expected)[0]
    assert differing.size == 0, (
        f"{differing.size} bytes differ, first at {differing[:1]} (block {differing[:1] // 144})"
    )


def test_quantizer_all_zero_block():
    tensor = q4k.quantize(np.zeros((2, 256), dtype=np.float32))
    assert np.all(gguf_decode(tensor.raw) == 0)
    assert np.all(tensor.d == 0) and np.all(tensor.dmin == 0)


def test_quantizer_planted_constant_blocks():
    rng = np.random.default_rng(2)
    w = rng.normal(0, 1, size=(4, 256)).astype(np.float32)
    w[1] = 0.7  # positive constant: a grid from 0 with the top code on the value
    w[2] = -0.3  # negative constant: carried entirely by the offset dmin*m
    decoded = gguf_decode(q4k.quantize(w.reshape(-1)).raw).reshape(4, 256)
    assert np.allclose(decoded[1], 0.7, rtol=2e-3)
    assert np.allclose(decoded[2], -0.3, rtol=2e-3)
    assert np.all(decoded[1] == decoded[1][0]) and np.all(decoded[2] == decoded[2][0])
    assert relative_rmse(w[[0, 3]], decoded[[0, 3]]) < 0.1


def test_quantizer_all_negative_block():
    w = -np.abs(np.random.default_rng(4).normal(0, 1, size=(8, 256))).astype(np.float32)
    decoded = gguf_decode(q4k.quantize(w).raw)
    assert relative_rmse(w, decoded) < 0.06
    assert decoded.max() < 0.1 * np.abs(w).max()  # nothing drifts far above zero


def test_quantizer_keeps_leading_dimensions_and_accepts_float16():
    w = np.random.default_rng(6).normal(0, 1, size=(2, 3, 512)).astype(np.float16)
    tensor = q4k.quantize(w)
    assert tensor.raw.shape == (2, 3, 288)
    assert tensor.shape == (2, 3, 512)
    assert relative_rmse(w, gguf_decode(tensor.raw)) < 0.1


# ---------------------------------------------------------------------------------------------
# MLX affine bridge
# ---------------------------------------------------------------------------------------------


def test_mlx_affine_layout_matches_mlx_dequantize():
    mx = require_mlx()
    rng = np.random.default_rng(8)
    tensor = q4k.quantize(rng.normal(0, 0.05, size=(64, 512)).astype(np.float32))
    packed, scales, biases = tensor.to_mlx_affine()
    assert packed.dtype == np.uint32 and packed.shape == (64, 64)
    assert scales.dtype == biases.dtype == np.float32 and scales.shape == biases.shape == (64, 16)
    theirs = np.array(mx.dequantize(mx.array(packed), mx.array(scales), mx.array(biases), group_size=32, bits=4))
    ours = tensor.dequantize()
    # MLX may fuse scale*q + bias; the lab rounds the product first. Allow that much.
    codes = tensor.codes.astype(np.float32)
    gain = np.repeat(scales, 32, axis=-1)
    bound = 4 * np.finfo(np.float32).eps * (np.abs(gain * codes) + np.abs(np.repeat(biases, 32, axis=-1)))
    assert np.all(np.abs(theirs - ours) <= bound)


def test_mlx_affine_on_the_fixture_is_exact():
    mx = require_mlx()
    packed, scales, biases = q4k.to_mlx_affine(q4k.presentation_fixture().reshape(1, 144))
    theirs = np.array(mx.dequantize(mx.array(packed), mx.array(scales), mx.array(biases), group_size=32, bits=4))[0]
    assert (theirs[0], theirs[32]) == (1.0, 3.25)
    assert scales[0, :2].tolist() == [0.25, 0.375] and biases[0, :2].tolist() == [-0.25, -0.5]
    # lane 0 holds code 5 and lane 32 code 10: the first word's low nibble, the fifth word's low nibble
    assert packed[0, 0] & 0xF == 5 and packed[0, 4] & 0xF == 10


def test_mlx_quantized_matmul_matches_a_float64_dot():
    mx = require_mlx()
    rng = np.random.default_rng(10)
    tensor = q4k.quantize(rng.normal(0, 0.05, size=(96, 512)).astype(np.float32))
    packed, scales, biases = tensor.to_mlx_affine()
    # Varied signs and magnitudes in the activations.
    x = (rng.normal(0, 1, size=(5, 512)) * rng.choice([0.01, 1.0, 30.0], size=(5, 512))).astype(np.float32)
    theirs = np.array(
        mx.quantized_matmul(
            mx.array(x), mx.array(packed), mx.array(scales), mx.array(biases), transpose=True, group_size=32, bits=4
        )
    ).astype(np.float64)
    weights = tensor.dequantize().astype(np.float64)
    exact = x.astype(np.float64) @ weights.T
    magnitude = np.abs(x).astype(np.float64) @ np.abs(weights).T
    assert np.all(np.abs(theirs - exact) <= 1e-5 * magnitude)


# ---------------------------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------------------------


def test_wrong_length_names_144():
    with pytest.raises(ShapeError, match="144"):
        q4k.decode(np.zeros(143, dtype=np.uint8))
    with pytest.raises(ShapeError, match="144"):
        q4k.decode(b"")
    with pytest.raises(ShapeError, match="144"):
        q4k.explain_byte(np.zeros(288, dtype=np.uint8), 0)
    with pytest.raises(ShapeError, match="12"):
        q4k.unpack_scale_min(np.zeros(11, dtype=np.uint8))


def test_float_raw_bytes_are_rejected():
    with pytest.raises(DTypeError, match="float"):
        q4k.decode(np.zeros(144, dtype=np.float32))


def test_field_and_code_ranges():
    with pytest.raises(CodeRangeError, match="63"):
        q4k.pack_scale_min([64, 0, 0, 0, 0, 0, 0, 0], [0] * 8)
    with pytest.raises(CodeRangeError, match="63"):
        q4k.pack_scale_min([0] * 8, [0, 0, 0, 0, 0, 0, 0, 200])
    with pytest.raises(CodeRangeError, match="127"):
        q4k.lanes(128)
    with pytest.raises(CodeRangeError):
        q4k.lanes(-1)
    with pytest.raises(CodeRangeError, match="255"):
        q4k.explain(q4k.presentation_fixture(), 256)
    with pytest.raises(CodeRangeError, match="15"):
        q4k.from_parts(1.0, 0.0, [1] * 8, [0] * 8, [16] + [0] * 255)
    with pytest.raises(CodeRangeError, match="63"):
        q4k.from_parts(1.0, 0.0, [64] * 8, [0] * 8, [0] * 256)


def test_non_finite_and_misshapen_weights():
    w = np.zeros(256, dtype=np.float32)
    w[17] = np.nan
    with pytest.raises(NonFiniteError, match="NaN"):
        q4k.quantize(w)
    w[17] = np.inf
    with pytest.raises(NonFiniteError):
        q4k.quantize(w)
    with pytest.raises(ShapeError, match="256"):
        q4k.quantize(np.zeros(300, dtype=np.float32))
    with pytest.raises(NonFiniteError, match="float16"):
        q4k.quantize(np.linspace(-1e9, 1e9, 256, dtype=np.float32))
    with pytest.raises(NonFiniteError, match="d"):
        q4k.from_parts(1e6, 0.0, [1] * 8, [0] * 8, [0] * 256)


# ---------------------------------------------------------------------------------------------
# Robustness
# ---------------------------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # gguf-py on NaN/inf d
@settings(max_examples=200, deadline=None)
@given(raw=st.integers(1, 3).flatmap(lambda n: st.binary(min_size=144 * n, max_size=144 * n)))
def test_random_bytes_never_crash_and_agree_with_gguf(raw):
    ours = q4k.decode(raw)
    assert ours.shape == (len(raw) // 144 * 256,) and ours.dtype == np.float32
    theirs = gguf_decode(np.frombuffer(raw, dtype=np.uint8))
    assert np.array_equal(ours, theirs, equal_nan=True)
    byte = q4k.explain_byte(raw[:144], 77)
    assert byte["payload_index"] == 77
