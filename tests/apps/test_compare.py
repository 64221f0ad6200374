"""lab.study.compare against independent computations: numpy on the registry's round trips, a
hand-made dominance check, and gguf-py's decoder as the oracle for where a byte lands."""

from __future__ import annotations

import gguf
import numpy as np
import pytest

from lab.formats import FORMATS
from lab.study import compare


def test_relative_error_is_numpy_on_the_round_trip():
    w = np.random.default_rng(7).standard_normal((8, 256)).astype(np.float32)
    rows = {row["format"]: row for row in compare.error_rows({"w": w})}
    for name, fmt in FORMATS.items():
        w_hat = fmt.round_trip(w).astype(np.float64)
        expected = np.sqrt(np.sum((w_hat - w) ** 2) / np.sum(w.astype(np.float64) ** 2))
        assert rows[name]["relative_error"] == pytest.approx(expected, rel=1e-12)
        assert rows[name]["bits_per_weight"] == fmt.bits_per_weight


def test_a_row_too_short_for_a_super_block_is_skipped_with_the_reason():
    rows = {row["format"]: row for row in compare.error_rows({"w": np.ones((2, 384), np.float32)})}
    for name in ("q4k", "q6_k", "iq4_xs"):
        assert rows[name]["relative_error"] is None and "not a multiple of 256" in rows[name]["skipped"]
    assert rows["q4_0"]["relative_error"] == 0.0  # all ones: d = -1/8 times code 0 is exact


def test_pareto_front_on_a_made_up_table():
    rows = [
        {"source": "s", "bits_per_weight": 4.0, "relative_error": 0.10},
        {"source": "s", "bits_per_weight": 4.5, "relative_error": 0.12},  # dominated by the first
        {"source": "s", "bits_per_weight": 8.0, "relative_error": 0.01},
        {"source": "s", "bits_per_weight": 8.0, "relative_error": 0.02},  # same cost, worse
        {"source": "s", "bits_per_weight": 2.0, "relative_error": None},  # skipped
        {"source": "t", "bits_per_weight": 9.0, "relative_error": 0.5},  # another source: alone, so on it
    ]
    assert [row["on_front"] for row in compare.pareto_front(rows)] == [True, False, True, False, False, True]


def test_outlier_rows_match_a_direct_computation():
    rows = {row["format"]: row for row in compare.outlier_rows(seed=3)}
    clean = np.random.default_rng(3).standard_normal(compare.OUTLIER_ROW).astype(np.float32)
    spiked = clean.copy()
    spiked[compare.OUTLIER_POSITION] = compare.OUTLIER_VALUE
    for name in ("q4_0", "nf4", "q4k"):
        fmt = FORMATS[name]
        block = slice(0, fmt.block_size)
        error = (fmt.round_trip(spiked)[block] - spiked[block]).astype(np.float64)
        others = np.delete(error, compare.OUTLIER_POSITION)
        assert rows[name]["others_rms_error"] == pytest.approx(np.sqrt(np.mean(others**2)), rel=1e-12)
    # one scale per 32 weights suffers more than Q4_K's per-subblock scales
    assert rows["q4_0"]["others_rms_error"] > 2 * rows["q4k"]["others_rms_error"]


@pytest.mark.parametrize("payload_index", [0, 7, 15])
def test_byte_trace_lanes_are_where_gguf_py_sees_the_byte_land(payload_index):
    trace = compare.byte_trace(0xA5, payload_index)
    for name, payload_start in compare.TRACED_TYPES.items():
        fmt = FORMATS[name]
        block = compare.trace_block(name)
        offset = payload_start + payload_index
        kind = gguf.GGMLQuantizationType[fmt.gguf_type]

        def gguf_py(value, block=block, offset=offset, kind=kind):
            raw = block.copy()
            raw[offset] = value
            return gguf.quants.dequantize(raw, kind).reshape(-1)

        lanes = np.flatnonzero(gguf_py(0xA5) != gguf_py(0x00)).tolist()
        traced = [row for row in trace if row["format"] == name]
        assert sorted(row["weight"] for row in traced) == lanes, name
        assert len(lanes) == 2 and {row["block_byte"] for row in traced} == {offset}
        # the weight value the trace reports is gguf-py's decode of the block holding 0xA5
        for row in traced:
            assert row["value"] == pytest.approx(float(gguf_py(0xA5)[row["weight"]]), rel=1e-6, abs=1e-12)


def test_byte_trace_q4_0_and_q4k_agree_with_their_layouts():
    rows = {(row["format"], row["nibble"]): row for row in compare.byte_trace(0xA5, 3)}
    assert (rows[("q4_0", "low")]["weight"], rows[("q4_0", "high")]["weight"]) == (3, 19)
    assert (rows[("q4k", "low")]["weight"], rows[("q4k", "high")]["weight"]) == (3, 35)
    assert (rows[("q4_0", "low")]["code"], rows[("q4_0", "high")]["code"]) == (5, 10)


@pytest.mark.parametrize("payload_index", [0, 5, 15])
def test_byte_trace_q5_codes_take_their_fifth_bit_from_qh(payload_index):
    """A Q5 code is the traced nibble plus 16 times its fifth bit, which sits in qh: for Q5_0 and
    Q5_1 bit j of the little-endian uint32 after the scales, for Q5_K bit j (the subblock) of qh
    byte l. Worked here from the block's bytes, not from the format's explain."""
    rows = compare.byte_trace(0xA5, payload_index)
    for name, qh_start in (("q5_0", 2), ("q5_1", 4), ("q5_k", 16)):
        block = compare.trace_block(name)
        traced = {row["nibble"]: row for row in rows if row["format"] == name}
        assert set(traced) == {"low", "high"}, name
        for nibble, row in traced.items():
            lane = row["weight"]
            if name == "q5_k":
                assert lane == payload_index + (32 if nibble == "high" else 0)
                qh_byte, bit = qh_start + payload_index, lane // 32
            else:
                assert lane == payload_index + (16 if nibble == "high" else 0)
                qh_byte, bit = qh_start + lane // 8, lane % 8
            fifth = (int(block[qh_byte]) >> bit) & 1
            assert row["code"] == 16 * fifth + row["nibble_value"], (name, nibble)
            assert f"fifth bit {fifth} from qh byte {qh_byte}, bit {bit}" in row["owner"], row["owner"]


def test_byte_trace_leaves_out_the_layouts_with_four_codes_a_byte():
    """Q3_K's and Q2_K's bytes hold four 2-bit codes, not two nibbles; the block explorer traces them."""
    assert not {"q3_k", "q2_k"} & set(compare.TRACED_TYPES)
    assert {"q5_0", "q5_1", "q5_k"} <= set(compare.TRACED_TYPES)
