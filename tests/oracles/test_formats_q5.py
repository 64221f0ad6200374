"""Q5_0 and Q5_1 against their oracles: ggml's C reference (its bytes pinned as hex), gguf-py's
decoder, and GGUF files gguf-py writes and reads; gguf-py's quantizer bytes and its decoder on
random blocks are rows of test_registry's battery (GGUF_PY_QUANTIZES, RANDOM_BLOCKS).

How the pinned bytes were made, so anyone can make them again: src/ggml-quants.c of ggml-org/ggml
at commit d99724f2b141fed9e1a9f402213506c081433465, unmodified, built as
tests/oracles/test_formats_cref.py describes (gcc 12.2.0 on x86-64, -O0 -ffp-contract=off
-fno-fast-math, a stub for the ggml symbols it links against and never reaches). The functions
are quantize_row_q5_0_ref and quantize_row_q5_1_ref, called on reference_input() below as one row
of k = 1024 float32 read from a file; quantize_q5_0 and quantize_q5_1 without an importance
matrix (what ggml_quantize_chunk writes into a GGUF file) wrote the same bytes. Each output is in
hex, 96 characters a line.

The same build agreed with the lab on every block of 147,456 random blocks per format (normal,
t(2) tails, one-signed, constant, zero, sparse, quarter-step ties and signed zeros, at scales
from 1e-8 to 1e4), and C's dequantize_row_q5_0 and dequantize_row_q5_1 with the lab's decoder on
every weight of as many random blocks. gguf-py's quantizer wrote the same bytes too, but for the
sign of a zero d or m: numpy's min and max return either zero of a block holding both, where C
keeps the first, and gguf-py's Q5_0 takes max = the first weight of a zero block where C keeps
+0. Block 0 of reference_input() is such a block: C's d is -0 (bytes 00 80), gguf-py's +0.
"""

from __future__ import annotations

import gguf
import numpy as np
import pytest

from lab.errors import DTypeError, NonFiniteError, ShapeError
from lab.formats import FORMATS, q5_0, q5_1
from lab.interop import gguf as gguf_tools

MODULES = {"q5_0": q5_0, "q5_1": q5_1}
QT = gguf.GGMLQuantizationType
#: where each block's qh starts (after d, and Q5_1's m)
QH_START = {"q5_0": 2, "q5_1": 4}


def bits(array: np.ndarray) -> np.ndarray:
    return np.asarray(array, np.float32).view(np.uint32)


def reference_input() -> np.ndarray:
    """32 blocks of 32 float32 weights, as the C functions read them (one row of 1024)."""
    rng = np.random.default_rng(20250905)
    w = rng.normal(0, 1, (32, 32)) * 10.0 ** rng.uniform(-3, 3, (32, 1)) + rng.normal(0, 2, (32, 1))
    # block 0: a group of signed zeros, -0 first (Q5_0's d and Q5_1's m are then -0)
    w[0] = np.where(np.arange(32) % 3 == 0, -0.0, 0.0)
    # block 1: one-signed and sparse, its zero minimum met first as +0 and later as -0 (Q5_1's m is +0)
    w[1] = np.abs(rng.normal(0, 1, 32)) * (rng.random(32) < 0.4)
    w[1][w[1] == 0] = 0.0
    w[1, 0], w[1, 9] = 0.0, -0.0
    # block 2: Q5_0 ties: the largest is -16, so d = 1, and every other weight is a half-integer
    w[2] = rng.integers(-16, 16, 32) + 0.5
    w[2, 3] = -16
    # block 3: Q5_0's far side: largest -2 (d = 1/8), and +2 and +1.9375 reach 16 and 15.5 steps: code 31
    w[3] = rng.uniform(-2, 2, 32)
    w[3, 0], w[3, 7], w[3, 20] = -2, 2, 1.9375
    # block 4: Q5_1 ties: minimum 0 and maximum 31, so d = 1, and half-integers between
    w[4] = rng.integers(0, 31, 32) + 0.5
    w[4, 5], w[4, 30] = 0, 31
    # block 5: a constant block (Q5_1's d is 0); block 6: +a and -a both largest, +a first
    w[5] = 0.7
    w[6] = rng.normal(0, 0.3, 32)
    w[6, 2], w[6, 11] = 2.5, -2.5
    # block 7: near 1e-9, where float16 d underflows; block 8: all negative, t(4) tails
    w[7] *= 1e-9 / np.abs(w[7]).max()
    w[8] = -np.abs(rng.standard_t(4, 32))
    # block 9: thousands, offset far from zero (Q5_1's m near 24000); blocks 10..31 t(3) tails, offset
    w[9] = 30000 + rng.normal(0, 3000, 32)
    w[10:] = rng.standard_t(3, (22, 32)) * 10.0 ** rng.uniform(-4, 2, (22, 1)) + rng.normal(0, 1, (22, 1))
    return w.astype(np.float32).ravel()


#: the C reference's bytes for reference_input() (see the module docstring)
REFERENCE_HEX = {
    "q5_0": (  # quantize_row_q5_0_ref, 704 bytes
        "0080ffffffff0000000000000000000000000000000028b1efaa0e9df00000009b9000c007600c000bd02f00003ca0d0"
        "def86ead77e038f8fab7d177bef649b381750030ba45bc03f0690338f6f9463f1abc1bfc97333f6bc0bf20000008b33f"
        "0b609f60b49dded5c70dfbde0c619aa9000000000000000000000000000000000000000000b1b87e05e12efd20d0f0f3"
        "bee11ff0f0efd021211f0080fe8342e8ee30ead0ade233d5e0e79b2e076e8f3101310040000057a41cf4b98fc6549e62"
        "fdfce40f80ef26e8000000003012204222320122222122153421422254c4bbe3b0f3c001fcf4049aef330231fffe1d15"
        "524326b92fd861b101f07282bd141bfb2bef9dd27710c322393d4735af230101163fee0ef01f400eb0fca010f0dca72d"
        "00000000110112411121024344261002020212129ea830034600e0083bee00f8b844f5939bee0c98ab7d39a800000000"
        "11111111111001211100111101111111533201112021887f7c475955a605a16bbd5cf212daa29f359bfc29a950f1d014"
        "e31efde02efdd041f151c0114729000000000000000000000000000000000000000018b0000000006435568237324232"
        "3441342433443303fda80000000000000000000000000000000000000000c6a600000000000000000000000000000000"
        "00000000ff3730000012ffcbb2fdc0b2c0d7eddc9eb70ac869fee8b410240800ccbabd0b80e7c9d7ced070ca9471b45a"
        "0039668e6cf4e093000fef0108beebf140e00f3e1a157db70014444176ab0898a5d90a444085d07f88d817cf632f0000"
        "000000010010001001100200010011111110b5b100000000101111120111111111110111011011105f2c000000000000"
        "000000000000000000000000000005b10000000000000000000000000000000000000000c7383a766a6b4a018f00a600"
        "10dd0e74f129c34123ba1b3142802092c21fdf2bda08f4c8740f40ac1bdb4810"
    ),
    "q5_1": (  # quantize_row_q5_1_ref, 768 bytes
        "000000800000000000000000000000000000000000000000532d00000001404230000000d9e0f080004007000a60a200"
        "df3b00cca0d0def86ead77e038f8fab7d177bef649b38175213000c0ba45bc03e0680327f6e9462f19ac1afb97333e6b"
        "003c000049862ec0a992fb3ff240b7f7747592172a64f94e00009a390000000000000000000000000000000000000000"
        "293100c15785fa1ed103df2f101c412ff00f00102fefeff100000080013cbd1700be031d400cab190d0764c0f8705fad"
        "1c2d01c134ed7a9dae4928d8610e8c982cc4d9e8b80effbdf75ce475ff2742afdd71ff72f3a1e9f2103a0390974b7e1e"
        "3d435ed1040003000cfbd0d7c710ed98ca9adddeafb66a78c937c9c4c0211c04a9b968571d9481c171cc3ee7019ff578"
        "8d3b39cdffbfffeb68677fa543645685b663f650e68750217224a7bd0003880174186b5676c4092e43af32092908683c"
        "f62730b6c7f490f6efc593fffdd305abe75942fef14532707e178a37b3d66fd746423d3ae22b7e041f6f25eb62fc4452"
        "3d3153c203152071ad828e497ba6d806f47ed06f25520cb3bb339fc5fbffffffe769309d4b856347a56327e969f92798"
        "2b0947b9202208482358364a77b2cb66f760b9001382f43703284d3ce8d2b2dd8f2da6052415e6162efb2d8e24ed44f2"
        "9107f538bd7fbfef23ab5b5555c6a0f44541c983b214949e5708b536bffeffffca9a9dd51b6890afef5a998da53798d8"
        "8d37ffc73100099200dcc20ed1c3c0e7fefd9fc71ac8790e7c317bb6e05210a4aacdb73b1363a082958f33acf720b85d"
        "cb3700c9febe7dff20b8455323565fe12e36a42543836d6bcc357bc3ff639b9a6820a53428f4a29a5f59eb7b50e4970c"
        "d41d63bf4061a810337d6709851391108f784b571ba0d2c67f210b41d3feffbd28345a10725c36361ef4f0347127f157"
        "e9005fbc3eecab7a1f02e23703369f36d5c3f9235e221f34da0c00416a976837df04df30db2f04cb642033de592efb31"
        "1637c7c8be77ea7f5e67b465de66801253fb479c19b79afe37311bc142802092c21fdf2ada08e3b8740f409c1bda3810"
    ),
}


def test_the_input_holds_the_planted_cases():
    blocks = reference_input().reshape(32, 32)
    assert np.signbit(blocks[0, 0]) and not blocks[0].any()  # signed zeros, -0 first
    zeros = np.signbit(blocks[1][blocks[1] == 0])
    assert blocks[1].min() == 0 and not zeros[0] and zeros.any()  # +0 first, a -0 later
    assert np.abs(blocks[2]).max() == 16 and (blocks[2] % 1 == 0.5).sum() == 31  # Q5_0's d = 1, and ties
    assert (blocks[4].min(), blocks[4].max()) == (0, 31) and (blocks[4] % 1 == 0.5).sum() == 30  # Q5_1's d = 1


@pytest.mark.parametrize("name", list(REFERENCE_HEX))
def test_the_quantizer_writes_the_bytes_ggml_s_c_reference_writes(name):
    block_bytes = MODULES[name].BLOCK_BYTES
    expected = np.frombuffer(bytes.fromhex(REFERENCE_HEX[name]), dtype=np.uint8)
    ours = np.asarray(FORMATS[name].to_gguf(reference_input()), dtype=np.uint8)
    assert ours.shape == expected.shape == (32 * block_bytes,)
    differing = np.nonzero(ours != expected)[0]
    assert differing.size == 0, (
        f"{name}: {differing.size} bytes differ, first at byte {differing[0]} "
        f"(block {differing[0] // block_bytes}, byte {differing[0] % block_bytes} in it)"
    )


def test_the_pinned_signed_zero_block_stores_minus_zero():
    # C's scans keep +0 as Q5_0's max (d = +0 / -16 = -0) and the first -0 as Q5_1's minimum m
    assert bytes.fromhex(REFERENCE_HEX["q5_0"][:4]) == b"\x00\x80"
    assert bytes.fromhex(REFERENCE_HEX["q5_1"][:8]) == b"\x00\x00\x00\x80"


@pytest.mark.parametrize("name", list(MODULES))
def test_bit_j_of_qh_is_the_fifth_bit_of_weight_j(name):
    fmt = FORMATS[name]
    # 32 blocks of codes 0 with d = 1 (and m = 0): block j sets qh bit j alone
    raw = np.zeros((32, MODULES[name].BLOCK_BYTES), np.uint8)
    raw[:, 0:2] = np.float16(1).reshape(1, 1).view(np.uint8)
    qh_start = QH_START[name]
    raw[:, qh_start : qh_start + 4] = (
        (np.uint32(1) << np.arange(32, dtype=np.uint32)).astype("<u4")[:, None].view(np.uint8)
    )
    without_qh = raw.copy()
    without_qh[:, qh_start : qh_start + 4] = 0
    moved = gguf.quants.dequantize(raw, QT[fmt.gguf_type]) - gguf.quants.dequantize(without_qh, QT[fmt.gguf_type])
    assert np.array_equal(moved, 16 * np.eye(32))  # gguf-py's reading: bit j adds 16 steps to weight j
    assert np.array_equal(fmt.from_gguf(raw).codes, 16 * np.eye(32, dtype=np.uint8))


@pytest.mark.parametrize("name", list(MODULES))
def test_explain_names_the_stored_bits_and_the_weight(name):
    fmt = FORMATS[name]
    w = np.random.default_rng(5).normal(0, 1, (2, 512)).astype(np.float32)
    tensor = fmt.quantize(w)
    decoded, raw = tensor.dequantize(), tensor.to_gguf().reshape(2, -1, MODULES[name].BLOCK_BYTES)
    seen_fifth_bits = set()
    for index in (0, 7, 8, 17, 31, 300, 511, 600, 1023):
        info = tensor.explain(index)
        row, column = divmod(index, 512)
        lane = column % 32
        assert info["weight"] == decoded[row, column] and info["position_in_block"] == lane
        assert "=" in info["formula"]
        block = raw[row, info["block"]]
        low = block[info["byte"]] >> (4 if info["nibble"] == "high" else 0) & 15
        fifth = block[info["qh_byte"]] >> info["qh_bit_in_byte"] & 1
        qh = int(block[QH_START[name] : QH_START[name] + 4].view("<u4")[0])
        assert fifth == qh >> info["qh_bit"] & 1 == info["fifth_bit"]
        assert (low, fifth << 4 | low) == (info["low_bits"], info["code"])
        assert info["code_bits"] == f"{fifth} {low:04b}"
        assert (info["qh_bit"], info["qh_byte"], info["qh_bit_in_byte"]) == (
            lane,
            QH_START[name] + lane // 8,
            lane % 8,
        )
        seen_fifth_bits.add(fifth)
    assert seen_fifth_bits == {0, 1}


def test_q5_0_explain_reads_as_its_layout_diagram():
    w = np.zeros(32, np.float32)
    w[0], w[19] = -16, 5  # d = 1: weight 19 is code 21 = 1 0101, its low bits high in byte 6 + 3
    info = q5_0.quantize(w).explain(19)
    assert info["code"] == 21 and info["value"] == 5 and info["d"] == 1
    assert (info["qh_bit"], info["qh_byte"], info["qh_bit_in_byte"], info["fifth_bit"]) == (19, 4, 3, 1)
    assert (info["byte"], info["nibble"], info["low_bits"], info["code_bits"]) == (9, "high", 5, "1 0101")
    assert info["formula"] == "1 \u00d7 (21 \u2212 16) = 5"


@pytest.mark.parametrize(
    ("fewer", "more", "name"), [("q4_0", "q8_0", "q5_0"), ("q4_1", "q8_0", "q5_1")], ids=["q5_0", "q5_1"]
)
def test_the_fifth_bit_lies_between_four_and_eight_bits(fewer, more, name):
    w = np.random.default_rng(2024).normal(0, 1, (16, 4096)).astype(np.float32)

    def error(fmt_name: str) -> float:
        decoded = FORMATS[fmt_name].round_trip(w).astype(np.float64)
        return float(np.sqrt(np.mean((decoded - w) ** 2) / np.mean(w.astype(np.float64) ** 2)))

    # one more bit halves the step, and the error with it; measured: Q4_0 0.0859, Q5_0 0.0427,
    # Q4_1 0.0779, Q5_1 0.0378, Q8_0 0.0054
    assert error(fewer) > 1.8 * error(name) > 1.8 * error(more)


@pytest.mark.parametrize("name", list(MODULES))
def test_bad_input_gets_the_lab_s_typed_errors(name):
    module, fmt = MODULES[name], FORMATS[name]
    with pytest.raises(NonFiniteError):
        fmt.quantize(np.full((1, 32), np.nan, np.float32))
    with pytest.raises(NonFiniteError, match="65504"):
        fmt.quantize(np.full((1, 32), 2e6, np.float32) * np.arange(32))  # beyond float16 d's reach
    with pytest.raises(ShapeError):
        fmt.quantize(np.ones((2, 48), np.float32))
    with pytest.raises(ShapeError, match=f"whole {module.BLOCK_BYTES}-byte blocks"):
        fmt.from_gguf(np.zeros(module.BLOCK_BYTES + 1, np.uint8))
    tensor = fmt.quantize(np.linspace(-1, 1, 64, dtype=np.float32))
    fields = {field.name: getattr(tensor, field.name) for field in tensor.fields}
    with pytest.raises(DTypeError, match="codes are 0..31; got 32"):
        type(tensor)(**{**fields, "codes": np.full(64, 32, np.uint8)})
    with pytest.raises(DTypeError, match="holds uint8 codes"):
        type(tensor)(**{**fields, "d": tensor.d.astype(np.float32)})


def test_q5_1_takes_the_whole_float16_reach_of_its_minimum():
    w = np.linspace(-65504, -65504 + 31 * 1000, 32, dtype=np.float32)
    tensor = q5_1.quantize(w)
    assert tensor.m[0] == -65504 and np.array_equal(tensor.codes, np.arange(32, dtype=np.uint8))
    with pytest.raises(NonFiniteError, match="Q5_1's float16 minimum m or step d"):
        q5_1.quantize(w - 64)


def test_gguf_py_s_own_q5_file_reads_back_and_decodes_as_gguf_py_decodes_it(tmp_path):
    rng = np.random.default_rng(22)
    path = tmp_path / "q5.gguf"
    writer = gguf.GGUFWriter(str(path), arch="four-bit-lab")
    weights = {name: rng.normal(0, 0.05, (6, 512)).astype(np.float32) for name in ("q50", "q51")}
    types = {"q50": QT.Q5_0, "q51": QT.Q5_1}
    for name, qtype in types.items():
        writer.add_tensor(name, gguf.quants.quantize(weights[name], qtype), raw_dtype=qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    reader = gguf.GGUFReader(path)
    with gguf_tools.open_gguf(path) as gf:
        for tensor in reader.tensors:
            assert gf.tensor(tensor.name).type_name == tensor.tensor_type.name
            theirs = gguf.quants.dequantize(tensor.data, tensor.tensor_type).reshape(6, 512)
            for decoder in ("ggml", "ocp"):
                assert np.array_equal(bits(gf.decode(tensor.name, decoder)), bits(theirs)), tensor.name


def test_the_lab_s_q5_file_reads_back_in_gguf_py(tmp_path):
    rng = np.random.default_rng(23)
    types = {"q50": "Q5_0", "q51": "Q5_1"}
    tensors = {name: rng.normal(0, 0.05, (6, 512)).astype(np.float32) for name in types}
    assert {"Q5_0", "Q5_1"} <= set(gguf_tools.DECODABLE_TYPES) & set(gguf_tools.WRITABLE_TYPES)
    path = gguf_tools.write_gguf(tmp_path / "lab_q5.gguf", tensors, types)
    reader = gguf.GGUFReader(path)
    assert {tensor.name: tensor.tensor_type.name for tensor in reader.tensors} == types
    for tensor in reader.tensors:
        fmt = FORMATS[types[tensor.name].lower()]
        assert np.array_equal(np.asarray(tensor.data).reshape(6, -1), fmt.to_gguf(tensors[tensor.name]))
        theirs = gguf.quants.dequantize(tensor.data, tensor.tensor_type).reshape(6, 512)
        assert np.array_equal(bits(fmt.round_trip(tensors[tensor.name])), bits(theirs))
        raw = np.asarray(tensor.data).reshape(6, -1)
        assert np.array_equal(bits(gguf_tools.decode_raw(raw, types[tensor.name])), bits(theirs))
