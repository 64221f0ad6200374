"""GGUF Q3_K and Q2_K against two oracles: gguf-py's decoders bit for bit, and the bytes ggml's C reference writes.

The decoders on random blocks are rows of test_registry's battery (RANDOM_BLOCKS).

gguf-py (`gguf.quants.dequantize`) decodes both types but has no quantizer for either, so the
quantizers are checked against ggml's own C, whose bytes for one input are pinned here as hex,
made as test_formats_cref.py says (ggml-org/ggml d99724f2b141fed9e1a9f402213506c081433465,
src/ggml-quants.c unmodified, gcc 12.2.0 -O0 -ffp-contract=off -fno-fast-math, x86-64):
quantize_row_q3_K_ref and quantize_row_q2_K_ref, and quantize_q3_K / quantize_q2_K(src, dst, 1,
1536, NULL), which llama-quantize calls without an importance matrix, wrote the same 660 and 504
bytes for q3_k_q2_k_input() below, one row of 1536 float32 weights: the four super-blocks of
test_formats_cref.reference_input(), one that plants the two formats' own cases, and one of zeros.
The same build agreed with the lab on every block of some 200,000 random super-blocks per format
(normal, heavy-tailed, one-signed, constant, zero, sparse, tied, offset and mixed-scale blocks at
scales from 1e-8 to 1e4, a tenth of them from 1e-16 to 1e6), and its dequantize_row_q3_K and
dequantize_row_q2_K agreed bit for bit with the lab's decoders and gguf-py's on those blocks and on
20,000 blocks of random bytes each. Left out: the few blocks the lab refuses (a float16 d or dmin
beyond 65504), where the debug build stops on nearest_int's assert.
"""

from __future__ import annotations

import gguf
import numpy as np
import pytest
from test_formats_cref import reference_input

from lab.errors import DTypeError, NonFiniteError, ShapeError
from lab.formats import FORMATS, by_gguf_type, q2_k, q3_k
from lab.interop import gguf as gguf_tools

MODULES = {"q3_k": q3_k, "q2_k": q2_k}
QT = gguf.GGMLQuantizationType


def bits(array) -> np.ndarray:
    return np.asarray(array, np.float32).view(np.uint32)


def planted_block() -> np.ndarray:
    """One super-block of the two formats' own cases, one per 16-weight subblock."""
    rng = np.random.default_rng(20250823)
    w = np.empty((16, 16))
    w[0] = np.abs(rng.normal(0, 1, 16))  # one-signed: Q2_K's best line meets zero, so m = 0
    w[1] = rng.integers(-4, 4, 16) / 2  # half-integers: ties on the 3- and 2-bit grids
    w[2] = 0.3  # a positive constant: Q2_K's grid still starts at 0
    w[3] = -0.7  # a negative constant: no Q2_K step, all offset
    w[4] = rng.normal(0, 3, 16)  # the super-block's largest scale, with an outlier
    w[4, 7] = 40.0
    w[5] = rng.normal(0, 1, 16) * 1e-6  # a stored gain of 0: the fit's own codes stay
    w[6] = -np.abs(rng.standard_t(3, 16))  # one-signed below zero
    w[7] = rng.normal(2, 0.5, 16)  # all above zero, far from it
    w[8] = 0.0
    w[9] = rng.normal(0, 1, 16) * 1e-16  # below GROUP_MAX_EPS: Q3_K's fit stores it as zero
    w[10] = rng.normal(0, 1, 16)
    w[10, 2], w[10, 9] = -2.5, 2.5  # -a and +a both largest: the first sets Q3_K's sign
    w[11] = 0.0
    w[11, 4], w[11, 13] = 0.8, -0.05  # sparse
    w[12:] = rng.normal(0, 1, (4, 16)) * np.array([[1e-3], [1e-2], [0.1], [1.0]])
    return w.astype(np.float32).ravel()


def q3_k_q2_k_input() -> np.ndarray:
    return np.concatenate([reference_input(), planted_block(), np.zeros(256, np.float32)])


#: the bytes ggml's C reference writes for q3_k_q2_k_input() (see the module docstring)
REFERENCE_HEX = {
    "q3_k": (  # quantize_row_q3_K_ref, 660 bytes
        "183fa5916317405c7adb9ed379ed2b84078692684a05a5419dff3f77a7892096f8783095f2f136233e0582b86a5317cf"
        "8844fc712ecc54e59ca61bc412c23faed9a520bd897b1d8d845c6c23c87acb7c3fafb4d6ca9423d95530be9e3227b74c"
        "0002000000000000a8a8aaaa103c76bc789ebe4216d49e12fed87e46587648f8d61adeea7e7ed8dccef4f2fa4aea3018"
        "30403080c05010b080fc40e03c106c301020100040203c1c00f4e070203090b6d0280077c80c7cfd5984a1205640ca08"
        "0c080200c4c14b2107010900cf03f040b47c8a079558462a5ae22986f85ab99a2161e3ba616be8f0b923ea73d112afae"
        "2c4bb4549f7d0b35dec2bce4cf43024804c94047440c0fc70dc08f40b5d568d3d4142de8488833c822c3cbd272eca187"
        "94d22171f0d07f8123f31312cd0c1019471e2cd8bcf3d65b5dc30de100000000e017001d4a2eaaaa33c79cee89b6fbaf"
        "343fe1b1a625fd95048fbb6e142897826613bc1c0a4a9c02fe74dc533f7fdf7d82d29964b435f3b958dc983dc5f63630"
        "5f9fc04fc7f593c7a188a78af07845f336bc83ae32b88f2ec39747c6f43a72ba017cbeb636cb3ff0c881070a68a4b039"
        "5b67606c00cc13ada4ec4c6cec246ca024e4ac2da4a46c64252421e1c06065a1a4a124e42165a0a5c000030200c202c1"
        "03c30000c1c002831a9bba5a7a998a49a9b9a9a97959b9b964449444005418b8c05c78a06068c4d41050c01054d0c020"
        "5020f090f0c030700f0230f1000006eda1aaaa5600350000000000000000000000000000000000000000000000000000"
        "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
        "000000000000000000000000000000000000000000000000000000000000000000000000"
    ),
    "q2_k": (  # quantize_row_q2_K_ref, 504 bytes
        "fffd0000000000000000000000000000274dc1b5a989e6526e7d5aae6550789a9ddb9f236f96c2a106095c5ad931d68f"
        "6a62a4da501b145a56d6aa8f92c171e425e6e19a5263a657b0856c5ca6a16af56645ce4700000204332422b988123223"
        "44ff3328f0b4a860b0c0a0e8a0e0601060f0a0e0e49c10e0d0b0d080a4949088a0e0e0906eefae9a8e364aaaaa9aaee6"
        "7e30276e6a6169c92c276564283d2d2520656a66ac0e8c120000000000690057ff00000011de00013575bc73f8b8f575"
        "f9b0b5b9b4b471f5adb341161f71ca8b5119649946b51a9eb7769a835869b49a7468bda6976665272646080d49651e26"
        "163b014f26110e390d505453edcaddffff9c9ade0000cebc3173fd8be4a9973dcfbe61ea46123832f33624ee7e4c9021"
        "cbd4ddaf1055392951ba4894f0faf3f9b9fa387df6edb77bfcb442d2487ab1ea7136f7b53db1f27674633ab587356538"
        "004100100f00f2010000510000000021cfcecdcdcfcdcdae0d8dcfccce8ecd8dd25163b2a07063b240a28080a2926042"
        "2c08809858bccc1c780c1ca8282c5c4ce1a173410c4342616062530052435012553d4e38000000000000000000000000"
        "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
        "000000000000000000000000000000000000000000000000"
    ),
}


def reference_tensor(name: str):
    return MODULES[name].from_gguf(np.frombuffer(bytes.fromhex("".join(REFERENCE_HEX[name])), np.uint8))


@pytest.mark.parametrize("name", list(MODULES))
def test_the_quantizer_writes_the_bytes_ggml_s_c_reference_writes(name):
    expected = np.frombuffer(bytes.fromhex("".join(REFERENCE_HEX[name])), np.uint8)
    ours = FORMATS[name].to_gguf(q3_k_q2_k_input())
    assert ours.shape == expected.shape == (6 * MODULES[name].BLOCK_BYTES,)
    differing = np.nonzero(ours != expected)[0]
    assert differing.size == 0, (
        f"{name}: {differing.size} bytes differ, first at byte {differing[0]} "
        f"(block {differing[0] // MODULES[name].BLOCK_BYTES}, byte {differing[0] % MODULES[name].BLOCK_BYTES} in it)"
    )


def test_the_reference_bytes_hold_the_planted_cases():
    q3, q2 = reference_tensor("q3_k"), reference_tensor("q2_k")
    planted = slice(4 * 256, 5 * 256)
    # subblock 5 (1e-6) gets a stored gain of 0 in both, and keeps the codes its fit chose
    assert q3.gains()[4, 5] == 0 and np.unique(q3.codes[planted][80:96]).size > 1
    assert q2.gains_and_offsets()[0][4, 5] == 0 and np.unique(q2.codes[planted][80:96]).size > 1
    # the loudest subblock stores Q3_K's scale -32; the zero subblocks keep code 0 (level -4)
    assert q3.scales[4, 4] == -32 and not q3.codes[planted][128:160].any()
    # Q2_K: the negative constant is all offset, the one-signed positive subblocks have m = 0
    assert (q2.scales[4, 3], q2.mins[4, 0], q2.mins[4, 7]) == (0, 0, 0) and q2.mins[4, 3] > 0 and q2.scales[4, 7] > 0
    # an all-zero super-block: every byte 0, which Q3_K reads as scales -32 under d = 0
    assert (q3.scales[5] == -32).all() and q3.d[5] == 0 and not q3.to_gguf()[-q3_k.BLOCK_BYTES :].any()
    assert not q2.to_gguf()[-q2_k.BLOCK_BYTES :].any()


def asymmetric_block(name: str) -> np.ndarray:
    """One block's bytes in which every subblock's gain (and offset) differs and none is zero."""
    rng = np.random.default_rng(8)
    codes = rng.integers(0, 8 if name == "q3_k" else 4, 256).astype(np.uint8)
    if name == "q3_k":
        scales = rng.choice(np.r_[-32:0, 1:32], (1, 16), replace=False).astype(np.int8)
        tensor = q3_k.Q3KTensor(codes=codes, scales=scales, d=np.array([0.5], np.float16))
    else:
        scales = np.r_[rng.permutation(np.arange(1, 16)), 7].astype(np.uint8)[None]
        mins = rng.permutation(16).astype(np.uint8)[None]
        half = np.array([0.25], np.float16), np.array([0.125], np.float16)
        tensor = q2_k.Q2KTensor(codes=codes, scales=scales, mins=mins, d=half[0], dmin=half[1])
    return tensor.to_gguf()


def _changed_lanes(name: str, raw: np.ndarray, byte: int, mask: int) -> list[int]:
    """The weights gguf-py decodes differently once `mask`'s bits of block byte `byte` are flipped."""
    flipped = raw.copy()
    flipped[byte] ^= mask
    qtype = QT[FORMATS[name].gguf_type]
    return np.flatnonzero(gguf.quants.dequantize(flipped, qtype) != gguf.quants.dequantize(raw, qtype)).tolist()


@pytest.mark.parametrize("name", list(MODULES))
def test_every_weight_s_bits_are_where_explain_says_as_gguf_py_reads_them(name):
    raw = asymmetric_block(name)
    tensor = FORMATS[name].from_gguf(raw)
    decoded = tensor.dequantize()
    for lane in range(256):
        info = tensor.explain(lane)
        assert info["weight"] == decoded[lane] and "=" in info["formula"]
        assert (raw[info["qs_byte"]] >> info["qs_shift"]) & 3 == info["code"] & 3
        assert _changed_lanes(name, raw, info["qs_byte"], 3 << info["qs_shift"]) == [lane]
        subblock = range(16 * (lane // 16), 16 * (lane // 16) + 16)
        # a scale moves every weight of its subblock but those at level 0
        scaled = [other for other in subblock if tensor.codes[other] != (4 if name == "q3_k" else 0)]
        if name == "q3_k":
            assert (raw[info["hmask_byte"]] >> info["hmask_bit"]) & 1 == info["high_bit"] == info["code"] >> 2
            assert _changed_lanes(name, raw, info["hmask_byte"], 1 << info["hmask_bit"]) == [lane]
            nibble = 4 if info["scale_low_nibble"] == "high" else 0
            low = (raw[info["scale_low_byte"]] >> nibble) & 15
            top = (raw[info["scale_high_byte"]] >> info["scale_high_bits"][1]) & 3
            assert low | top << 4 == info["stored_scale"] == info["scale"] + 32
            assert _changed_lanes(name, raw, info["scale_low_byte"], 1 << nibble) == scaled
            assert _changed_lanes(name, raw, info["scale_high_byte"], 1 << info["scale_high_bits"][1]) == scaled
        else:
            assert raw[info["scale_byte"]] & 15 == info["scale"] and raw[info["scale_byte"]] >> 4 == info["min"]
            assert _changed_lanes(name, raw, info["scale_byte"], 0x01) == scaled  # the scale's nibble
            assert _changed_lanes(name, raw, info["scale_byte"], 0x10) == list(subblock)  # the minimum's


def test_a_set_hmask_bit_means_no_subtraction_of_4():
    # d = 1, every u_j = 33 (s_j = 1), every low pair 0b10: level 2 where the hmask bit is set, -2 where clear
    block = np.zeros(q3_k.BLOCK_BYTES, np.uint8)
    block[: q3_k.HMASK_BYTES] = 0b01010101  # set for weights 32b + l with b even
    block[q3_k.QS_OFFSET : q3_k.SCALES_OFFSET] = 0b10101010
    block[q3_k.SCALES_OFFSET : q3_k.SCALES_OFFSET + 8] = 0x11  # low nibbles of u = 33 = 0b10_0001
    block[q3_k.SCALES_OFFSET + 8 : q3_k.D_OFFSET] = 0b10101010  # their top bits, 0b10, four a byte
    block[q3_k.D_OFFSET :] = np.array([1.0], "<f2").view(np.uint8)
    expected = np.where(np.arange(256) // 32 % 2 == 0, 2.0, -2.0)
    assert np.array_equal(gguf.quants.dequantize(block, QT.Q3_K), expected)
    tensor = q3_k.from_gguf(block)
    assert np.array_equal(tensor.dequantize(), expected) and (tensor.scales == 1).all()
    assert tensor.explain(0)["value_formula"] == "2 \u2212 0 = 2 (hmask bit 1)"
    assert tensor.explain(32)["value_formula"] == "2 \u2212 4 = \u22122 (hmask bit 0)"
    assert tensor.explain(32)["formula"] == "1 \u00d7 (2 \u2212 4) = \u22122"


def test_q3_k_scales_sit_in_the_bytes_the_diagram_draws():
    stored = np.array([5, 60, 17, 33, 48, 2, 63, 0, 31, 44, 9, 26, 55, 12, 39, 21], np.uint8)  # u_j, all different
    tensor = q3_k.Q3KTensor(
        codes=np.full(256, 5, np.uint8),  # level 1: each weight is its subblock's gain
        scales=(stored.astype(np.int16) - 32).astype(np.int8)[None],
        d=np.array([1.0], np.float16),
    )
    packed = tensor.to_gguf()[q3_k.SCALES_OFFSET : q3_k.D_OFFSET]
    for j, u in enumerate(stored.tolist()):
        assert (packed[j % 8] >> (4 if j >= 8 else 0)) & 15 == u & 15
        assert (packed[8 + j % 4] >> (2 * (j // 4))) & 3 == u >> 4
    decoded = gguf.quants.dequantize(tensor.to_gguf(), QT.Q3_K).reshape(16, 16)
    assert np.array_equal(decoded[:, 0], stored.astype(np.float32) - 32)


def test_fewer_bits_cost_accuracy_in_order():
    w = np.random.default_rng(2024).normal(0, 1, (32, 4096)).astype(np.float32)

    def relative_rmse(name: str) -> float:
        decoded = FORMATS[name].round_trip(w).astype(np.float64)
        return float(np.sqrt(np.mean((decoded - w) ** 2) / np.mean(w.astype(np.float64) ** 2)))

    # measured: Q4_K 0.0715, Q3_K 0.151, Q2_K 0.297
    errors = {name: relative_rmse(name) for name in ("q4k", "q3_k", "q2_k")}
    assert errors["q4k"] < errors["q3_k"] < errors["q2_k"] < 0.35, errors


def test_weights_beyond_reach_and_bad_fields_are_refused():
    with pytest.raises(NonFiniteError, match="beyond what Q3_K can store"):
        q3_k.quantize(np.full(256, 8.4e6, np.float32))
    # within reach, but the fit's scale for (8.3e6, -7e6) is 2.15e6 and d = scale / 32 is past 65504
    w = np.zeros(256, np.float32)
    w[:2] = 8.3e6, -7.0e6
    with pytest.raises(NonFiniteError, match="Q3_K's float16 d would overflow"):
        q3_k.quantize(w)
    with pytest.raises(NonFiniteError, match="beyond what Q2_K can store"):
        q2_k.quantize(np.full(256, 3e6, np.float32))
    with pytest.raises(NonFiniteError, match="Q2_K's float16 d or dmin would overflow"):
        q2_k.quantize(np.full(256, -1e6, np.float32))  # all offset: dmin = 1e6 / 15
    for module in (q3_k, q2_k):
        with pytest.raises(ShapeError):
            module.quantize(np.ones((2, 100), np.float32))
        with pytest.raises(ShapeError, match="whole"):
            module.from_gguf(np.zeros(module.BLOCK_BYTES + 1, np.uint8))
    with pytest.raises(DTypeError, match="codes are 0..7"):
        q3_k.Q3KTensor(codes=np.full(256, 8, np.uint8), scales=np.zeros((1, 16), np.int8), d=np.ones(1, np.float16))
    with pytest.raises(DTypeError, match="scales are -32..31"):
        q3_k.Q3KTensor(codes=np.zeros(256, np.uint8), scales=np.full((1, 16), 40, np.int8), d=np.ones(1, np.float16))
    with pytest.raises(DTypeError, match="mins are 0..15"):
        zeros, one = np.zeros((1, 16), np.uint8), np.ones(1, np.float16)
        q2_k.Q2KTensor(codes=np.zeros(256, np.uint8), scales=zeros, mins=zeros + 16, d=one, dmin=one)


@pytest.mark.parametrize("name", list(MODULES))
def test_tiny_and_subnormal_weights_quantize_without_a_warning(name):
    # spans so small that 3 / span or 15 / largest overflow float32 (C asserts there); every d is 0
    w = np.array([1e-45, -1e-45, 0.0, -0.0, 1e-40, 3e-39] * 42 + [1e-45] * 4, np.float32)
    decoded = FORMATS[name].round_trip(w)
    assert np.isfinite(decoded).all() and np.abs(decoded).max() <= 3e-39


def test_a_gguf_file_of_q3_k_and_q2_k_reads_back_as_gguf_py_reads_it(tmp_path):
    rng = np.random.default_rng(22)
    types = {"three": "Q3_K", "two": "Q2_K"}
    tensors = {name: rng.normal(0, 0.05, (6, 512)).astype(np.float32) for name in types}
    path = gguf_tools.write_gguf(tmp_path / "low.gguf", tensors, types)
    reader = gguf.GGUFReader(path)
    assert {tensor.name: tensor.tensor_type.name for tensor in reader.tensors} == types
    with gguf_tools.open_gguf(path) as gf:
        for tensor in reader.tensors:
            theirs = gguf.quants.dequantize(tensor.data, tensor.tensor_type).reshape(6, 512)
            ours = gf.decode(tensor.name)
            assert np.array_equal(bits(ours), bits(theirs)), tensor.name
            assert np.array_equal(bits(ours), bits(by_gguf_type(types[tensor.name]).round_trip(tensors[tensor.name])))
