"""GGUF Q5_K against its two oracles: gguf-py's decoder bit for bit, and the bytes ggml's C reference writes.

gguf-py (`gguf.quants.dequantize`) decodes Q5_K but has no Q5_K quantizer, so the quantizer is
checked against ggml's own C, whose bytes for one input are pinned here as hex, made as
test_formats_cref.py says (ggml-org/ggml d99724f2b141fed9e1a9f402213506c081433465, src/ggml-quants.c
unmodified, gcc 12.2.0 -O0 -ffp-contract=off -fno-fast-math, x86-64): quantize_row_q5_K_ref, and
quantize_q5_K(src, dst, 1, 1280, NULL), which llama-quantize calls without an importance matrix,
wrote the same 880 bytes for q5_k_input() below, one row of 1280 float32 weights: the four
super-blocks of test_formats_cref.reference_input() and one more that plants Q5_K's own cases.
The same build agreed with the lab on every block of 100,000 random super-blocks (normal,
heavy-tailed, one-signed, constant, zero, sparse, tied and mixed-scale blocks at scales from 1e-8
to 1e4, and at 1e-30 to 1e-20 with NDEBUG, where the debug build stops on nearest_int's assert),
and its dequantize_row_q5_K agreed with the lab's decoder bit for bit on 60,000 random blocks.
"""

from __future__ import annotations

import gguf
import numpy as np
import pytest
from test_formats_cref import reference_input

from lab.errors import DTypeError, LabError, NonFiniteError, ShapeError
from lab.formats import FORMATS, by_gguf_type, q4k, q5_k
from lab.interop import gguf as gguf_tools

Q5_K = gguf.GGMLQuantizationType.Q5_K


def bits(array) -> np.ndarray:
    return np.asarray(array, np.float32).view(np.uint32)


def planted_block() -> np.ndarray:
    """One super-block of Q5_K's own cases, one per subblock."""
    rng = np.random.default_rng(20250822)
    w = np.empty((8, 32))
    w[0] = np.abs(rng.normal(0, 1, 32))  # one-signed: the best line meets zero, so m = 0
    w[1] = rng.integers(0, 32, 32) / 2  # half-integers from 0: ties on the 31-step grids
    w[2] = 0.3  # a positive constant: its grid still starts at 0, and its gain rounds to 0
    w[3] = -0.7  # a negative constant: no step, all offset
    w[4] = rng.normal(0, 3, 32)  # the super-block's largest step, with an outlier at code 31
    w[4, 7] = 40.0
    w[5] = rng.normal(0, 1, 32) * 1e-6  # a stored gain of 0: the search's own codes stay
    w[6] = -np.abs(rng.standard_t(3, 32))  # one-signed below zero
    w[7] = rng.normal(2, 0.5, 32)  # all above zero, far from it
    return w.astype(np.float32).ravel()


def q5_k_input() -> np.ndarray:
    return np.concatenate([reference_input(), planted_block()])


#: the bytes ggml's C reference writes for q5_k_input() (see the module docstring)
REFERENCE_HEX = (
    "d72f443f3f0000003f000000000000007152c8bc0a3a09311386e3bb948046cb1adb9b951759d81cc0822222dad41ddb"
    "bf9f1f7a270a6835d95937a197034003bd8efd2ae8d07f4bef57b04e1729d1f70fa1e0541c10fec5bdf86b5f9185e54b"
    "387b0f82f32a86056272d7fca74f91324255c015046af31561ef0ffc00380cf0927430e9461fa56b3aaf6a66c622e571"
    "d88436ffbb4f09cdbeb774721db1df932fe3df1afca642ea8640afba5043dfab9d00390a8050d0a68000cb3023b0ffe4"
    "5c7c58581c58585c5c587858584c585c7c5e70bc785c58587c78785a5c5c7c5c0060a000000000a00000002000002000"
    "90f00020000000008060406000000000eaa3ac8ca8c0add1a2cb7e698eb59bf2e8830cc6bbafeea5949cae6256e4b6a0"
    "f61ef272f45072a5a3a84856d7005fe476631453f1c9b3e361e3c4c362c435f546c375728f286075936295b437072534"
    "d4a486f06355f5c4277f756575a6d484a23aeb4bc000ea1ac000da15ff00bc22d0d0f0d1e0e0c0f0c0e0e0d0d0d0c0d0"
    "5e9c909093dc98db50d2909a585c925a9d9dc07fb6b2998db8689fbf95976c98c71f097b8019fe1009399439adba3bfc"
    "fcfcfcfcfcfcfcfcfcfcfcfcfcfcfcfc9158c226471af422ab7def4c005f0a59fdc3060f3009e505e213eee6dfe1fefe"
    "f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f34433424222333342342334433233331333f15644f0f94966b06f74f4e931127c"
    "382012303dfd7ff63fffbff600fd00fdccfed9e6ebff646fd1e1f675ed4554df27f2ccf44b5cdacf64c4d6d640de72ec"
    "b00bbcbeaeb32806824132651ba391e1a0f4153937f1fcc903cd3b670c3e0692a2461c5ea02e90d590576c1ecf6e53b5"
    "5bf54012f6f1cd6940d00e439c5f58a043851f7e4b2366eff4f9098dd1c5025453577d7826a6fcedc85645a2e03f710b"
    "7a8efc6c4ecb0c7baea80d7d8eeaa476d02f3ae5e789ecab896ae92ff8247e8cd025872cc3160000c000800aff00a415"
    "e665e4e6e467e7d4446645e5c7e6e6e646e786e5e6a465a644e4e7e5e7e6666752d82bddcc0cddfbcd25af3d7f231dc4"
    "94a8e9822b763872cf919add5f6e337d0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f"
    "b49689014273348fa3d6c310e6a52092f8660562859333d1f32482a4d315c4f147ee290a4ae25f1dcccfde4986bbda3e"
    "eb8c528e572beb20da68176f0a4fcfda"
)


def reference_tensor() -> q5_k.Q5KTensor:
    return q5_k.from_gguf(np.frombuffer(bytes.fromhex("".join(REFERENCE_HEX)), np.uint8))


# --------------------------------------------------------------------------------------------
# The quantizer against ggml's C
# --------------------------------------------------------------------------------------------


def test_the_quantizer_writes_the_bytes_ggml_s_c_reference_writes():
    expected = np.frombuffer(bytes.fromhex("".join(REFERENCE_HEX)), dtype=np.uint8)
    ours = FORMATS["q5_k"].to_gguf(q5_k_input())
    assert ours.shape == expected.shape == (5 * q5_k.BLOCK_BYTES,)
    differing = np.flatnonzero(ours != expected)
    assert differing.size == 0, (
        f"{differing.size} bytes differ, first at byte {differing[0]} "
        f"(block {differing[0] // q5_k.BLOCK_BYTES}, byte {differing[0] % q5_k.BLOCK_BYTES} in it)"
    )


def test_the_reference_bytes_hold_the_planted_cases():
    reference = reference_tensor()
    gain, _ = reference.gains_and_offsets()
    planted = 4
    assert reference.mins[planted, 0] == 0 < reference.scales[planted, 0]  # the line through zero
    assert reference.scales[planted, 3] == 0 < reference.mins[planted, 3]  # the negative constant
    assert (reference.scales[planted, 4], reference.mins[planted, 4]) == (63, 63)  # the largest
    assert reference.codes[planted * 256 + 4 * 32 + 7] == 31
    # zero gains whose codes are the search's, not zeros: the positive constant's and the tiny subblock's
    codes = reference.codes.reshape(5, 8, 32)
    assert gain[planted, 2] == gain[planted, 5] == 0 and codes[planted, 2].all() and codes[planted, 5].any()
    # fifth bits in every subblock: each of qh's eight bits is set somewhere in the C bytes
    qh = reference.to_gguf().reshape(5, 176)[:, q5_k.QH_OFFSET : q5_k.QS_OFFSET]
    assert np.bitwise_or.reduce(qh, axis=(0, 1)) == 0xFF


def test_rows_of_super_blocks_quantize_one_super_block_at_a_time():
    tensor = q5_k.quantize(q5_k_input().reshape(5, 256))
    assert (tensor.shape, tensor.d.shape, tensor.scales.shape) == ((5, 256), (5, 1), (5, 1, 8))
    assert np.array_equal(tensor.to_gguf().ravel(), reference_tensor().to_gguf())


# --------------------------------------------------------------------------------------------
# The decoder and the byte map against gguf-py
# --------------------------------------------------------------------------------------------


def random_blocks(n: int, seed: int) -> np.ndarray:
    """n random Q5_K blocks [n, 176]: random bytes, with finite float16 d and dmin of every size."""
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 256, (n, q5_k.BLOCK_BYTES), dtype=np.uint8)
    scales = rng.normal(0, 1, (n, 2)) * 10.0 ** rng.uniform(-7, 4, (n, 2))
    raw[:, :4] = scales.astype(np.float16).view(np.uint8).reshape(n, 4)
    return raw


def test_the_decoder_is_bit_identical_to_gguf_py_on_random_blocks():
    raw = random_blocks(2000, seed=31)
    reference = gguf.quants.dequantize(raw, Q5_K)
    tensor = q5_k.from_gguf(raw)
    assert np.array_equal(bits(tensor.dequantize()), bits(reference))
    assert np.array_equal(tensor.to_gguf(), raw)
    # random bytes hold every six-bit value of a scale and of a minimum
    assert np.unique(tensor.scales).size == np.unique(tensor.mins).size == 64


def test_every_code_reaches_its_own_weight_in_gguf_py():
    """Codes written by the lab, read by gguf-py: with dmin = 0 a weight is exactly d * s_j * q."""
    rng = np.random.default_rng(3)
    n = 16
    codes = np.concatenate([rng.permutation(32) for _ in range(n * 8)]).astype(np.uint8)
    scales = np.stack([rng.choice(np.arange(1, 64), 8, replace=False) for _ in range(n)]).astype(np.uint8)
    mins = np.stack([rng.choice(64, 8, replace=False) for _ in range(n)]).astype(np.uint8)
    d = (2.0 ** rng.integers(-12, 4, n)).astype(np.float16)
    tensor = q5_k.Q5KTensor(codes=codes, scales=scales, mins=mins, d=d, dmin=np.zeros(n, np.float16))
    reference = gguf.quants.dequantize(tensor.to_gguf(), Q5_K)
    gain = np.repeat(d.astype(np.float32)[:, None] * scales, 32, axis=-1).ravel()
    assert np.array_equal(reference / gain, codes)
    # and with every minimum in play, bit for bit as the lab decodes it
    dmin = (rng.normal(0, 1, n) * 10.0 ** rng.uniform(-4, 1, n)).astype(np.float16)
    with_mins = q5_k.Q5KTensor(codes=codes, scales=scales, mins=mins, d=d, dmin=dmin)
    assert np.array_equal(bits(gguf.quants.dequantize(with_mins.to_gguf(), Q5_K)), bits(with_mins.dequantize()))


def test_explain_says_where_each_bit_lives_and_gguf_py_agrees():
    """For each of the 256 lanes: a block of zeros with d = 1, every s_j = 1, dmin = 0 and only the
    bits explain names set (the fifth bit and the low nibble's bit 0) decodes to 17 at that lane alone."""
    lanes = np.arange(256)
    tensor = q5_k.quantize(np.zeros((1, 256), np.float32))
    raw = np.zeros((256, q5_k.BLOCK_BYTES), np.uint8)
    raw[:, :2] = np.array([1.0], np.float16).view(np.uint8)
    raw[:, 4:16] = q4k.pack_scale_min(np.ones(8, np.uint8), np.zeros(8, np.uint8))
    for lane in lanes:
        where = tensor.explain(int(lane))
        assert where["qh_byte"] == 16 + lane % 32 and where["qh_bit"] == lane // 32 == where["subblock"]
        assert where["qs_byte"] == 48 + 32 * (lane // 64) + lane % 32
        raw[lane, where["qh_byte"]] |= 1 << where["qh_bit"]
        raw[lane, where["qs_byte"]] |= 1 if where["qs_nibble"] == "low" else 16
    assert np.array_equal(gguf.quants.dequantize(raw, Q5_K), 17 * np.eye(256, dtype=np.float32))
    assert np.array_equal(q5_k.from_gguf(raw).codes, 17 * np.eye(256, dtype=np.uint8))


def test_explain_traces_a_weight_to_its_value():
    tensor = reference_tensor()
    decoded = tensor.dequantize()
    raw = tensor.to_gguf().reshape(5, 176)
    for index in (0, 37, 300, 4 * 256 + 4 * 32 + 7, 1279):
        explained = tensor.explain(index)
        block, lane = divmod(index, 256)
        j = lane // 32
        assert bits(explained["weight"]) == bits(decoded[index])
        assert (explained["block"], explained["subblock"], explained["position_in_block"]) == (block, j, lane)
        assert (explained["scale"], explained["min"]) == (tensor.scales[block, j], tensor.mins[block, j])
        assert explained["metadata"]["scale"] == explained["scale"] and explained["metadata"]["min"] == explained["min"]
        fifth = (raw[block, explained["qh_byte"]] >> explained["qh_bit"]) & 1
        nibble = raw[block, explained["qs_byte"]] >> (4 if explained["qs_nibble"] == "high" else 0) & 15
        assert (fifth, nibble) == (explained["fifth_bit"], explained["low_bits"])
        assert explained["code"] == 16 * fifth + nibble == tensor.codes[index]
        assert explained["code_formula"].endswith(f"= {explained['code']}")


def test_a_tensor_of_any_shape_explains_by_full_index():
    w = q5_k_input().reshape(5, 256)
    tensor = q5_k.quantize(w)
    explained = tensor.explain((4, 135))
    assert explained["position"] == (4, 135) and explained["block"] == 0 and explained["subblock"] == 4
    assert bits(explained["weight"]) == bits(tensor.dequantize()[4, 135])


# --------------------------------------------------------------------------------------------
# Quality, bad input
# --------------------------------------------------------------------------------------------


def test_the_fifth_bit_halves_q4_k_s_error():
    w = np.random.default_rng(2024).normal(0, 1, (16, 4096)).astype(np.float32)

    def rmse(name):
        return float(np.sqrt(np.mean((FORMATS[name].round_trip(w).astype(np.float64) - w) ** 2)))

    # twice the levels on the same grid of subblocks: about half the error (0.47 to 0.5 here)
    assert 0.4 < rmse("q5_k") / rmse("q4k") < 0.55


def test_tiny_weights_quantize_without_a_warning():
    # 63 / the largest step overflows float32 below about 1.9e-37, where C's own assert stops (its
    # release build then stores six-bit fields of 0; the lab's are those of the ratio taken the other
    # way, as Q4_K's, see lab.formats.q4k.quantize): d and dmin are 0 either way, and so is every weight
    w = np.random.default_rng(1).normal(0, 1, (2, 256)).astype(np.float32) * np.float32(1e-38)
    tensor = q5_k.quantize(w)
    assert not tensor.d.any() and not tensor.dmin.any() and not tensor.dequantize().any()


def test_infinite_and_nan_scales_decode_as_ggml_does_without_a_warning():
    raw = random_blocks(4, seed=9)
    raw[0, :2] = np.array([np.inf], np.float16).view(np.uint8)
    raw[1, 2:4] = np.array([np.nan], np.float16).view(np.uint8)
    with np.errstate(invalid="ignore", over="ignore"):  # gguf-py's own arithmetic warns
        reference = gguf.quants.dequantize(raw, Q5_K)
    ours = q5_k.from_gguf(raw).dequantize()
    assert np.array_equal(np.isnan(ours), np.isnan(reference)) and np.isnan(ours[1]).all()
    assert np.array_equal(ours[~np.isnan(ours)], reference[~np.isnan(reference)])


@pytest.mark.parametrize(
    ("w", "error", "message"),
    [
        (np.full((1, 256), np.nan, np.float32), NonFiniteError, "NaN"),
        (np.full((1, 256), 2e8, np.float32), NonFiniteError, "beyond what Q5_K can store"),
        # a depth of 1e7 needs dmin = 1e7 / 63, past float16's 65504
        (np.r_[np.full(255, 1.0), -1e7].astype(np.float32)[None], NonFiniteError, "d or dmin would overflow"),
        (np.ones((2, 100), np.float32), ShapeError, "divisible"),
        (np.ones((2, 0), np.float32), ShapeError, "divisible"),
        (np.ones((2, 256), np.int8) > 0, DTypeError, "float"),
    ],
)
def test_bad_weights_get_the_lab_s_typed_errors(w, error, message):
    with pytest.raises(error, match=message):
        q5_k.quantize(w)


def test_bad_fields_and_bytes_get_the_lab_s_typed_errors():
    good = dict(
        codes=np.zeros(256, np.uint8),
        scales=np.zeros((1, 8), np.uint8),
        mins=np.zeros((1, 8), np.uint8),
        d=np.zeros(1, np.float16),
        dmin=np.zeros(1, np.float16),
    )
    with pytest.raises(DTypeError, match="codes are 0..31; got 32"):
        q5_k.Q5KTensor(**{**good, "codes": np.full(256, 32, np.uint8)})
    with pytest.raises(DTypeError, match="scales are 0..63; got 64"):
        q5_k.Q5KTensor(**{**good, "scales": np.full((1, 8), 64, np.uint8)})
    with pytest.raises(DTypeError, match="float16 d"):
        q5_k.Q5KTensor(**{**good, "d": np.zeros(1, np.float32)})
    with pytest.raises(ShapeError, match="mins"):
        q5_k.Q5KTensor(**{**good, "mins": np.zeros((1, 7), np.uint8)})
    with pytest.raises(ShapeError, match="176-byte blocks"):
        q5_k.from_gguf(np.zeros(175, np.uint8))
    with pytest.raises(LabError):
        q5_k.from_gguf(np.zeros(176, np.float32))


# --------------------------------------------------------------------------------------------
# GGUF files: read, written, and what a recipe label means
# --------------------------------------------------------------------------------------------


def write_with_gguf_py(path, tensors, file_type) -> None:
    writer = gguf.GGUFWriter(path, "lab")
    writer.add_file_type(file_type)
    for name, (data, tensor_type) in tensors.items():
        writer.add_tensor(name, data, raw_dtype=gguf.GGMLQuantizationType[tensor_type])
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


@pytest.mark.parametrize(
    ("label", "main", "higher"),
    [("Q5_K_M", "Q5_K", {"Q6_K"}), ("Q4_K_M", "Q4_K", {"Q5_K", "Q6_K"})],
)
def test_the_lab_reads_q5_k_tensors_of_a_file_gguf_py_wrote(tmp_path, label, main, higher):
    rng = np.random.default_rng(8)
    weights = {name: rng.normal(0, 0.02, (8, 512)).astype(np.float32) for name in ("q", "k", "v", "down", "up")}
    types = {"q": main, "k": main, "up": main, "v": "Q6_K", "down": "Q5_K" if main == "Q4_K" else "Q6_K"}
    tensors = {
        f"blk.0.{name}.weight": (by_gguf_type(types[name]).to_gguf(w), types[name]) for name, w in weights.items()
    }
    path = tmp_path / "mixture.gguf"
    write_with_gguf_py(path, tensors, gguf.LlamaFileType[f"MOSTLY_{label}"].value)
    assert "Q5_K" in gguf_tools.DECODABLE_TYPES and "Q5_K" in gguf_tools.WRITABLE_TYPES
    with gguf_tools.open_gguf(path) as gf:
        for name, (data, tensor_type) in tensors.items():
            reference = gguf.quants.dequantize(data, gguf.GGMLQuantizationType[tensor_type])
            assert np.array_equal(bits(gf.decode(name)), bits(reference))
        recipe = gguf_tools.explain_recipe(gf)
        reasons = {row["type"]: row for row in gguf_tools.type_reasons(gf)}
    assert (recipe["label"], recipe["main_type"], set(recipe["higher_precision"])) == (label, main, higher)
    assert reasons["Q5_K"]["holds"] == FORMATS["q5_k"].summary
    assert reasons["Q5_K"]["named"] == (label == "Q5_K_M") == reasons["Q5_K"]["why"].startswith("the type the label")


def test_the_lab_writes_q5_k_tensors_gguf_py_reads(tmp_path):
    w = q5_k_input().reshape(5, 256)
    path = gguf_tools.write_gguf(tmp_path / "q5k.gguf", {"w": w}, {"w": "Q5_K"}, file_type="Q5_K_M")
    tensor = gguf.GGUFReader(path).tensors[0]
    assert tensor.tensor_type == Q5_K
    assert np.array_equal(np.asarray(tensor.data).reshape(-1), reference_tensor().to_gguf())
