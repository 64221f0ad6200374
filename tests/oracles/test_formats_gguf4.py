"""Q4_0, Q4_1, IQ4_NL, IQ4_XS and Q6_K against gguf-py: the quality of the lab's reimplemented
searches, explain, and GGUF files. Its quantizer's bytes and its decoder bit for bit on random
blocks are rows of test_registry's battery (GGUF_PY_QUANTIZES, RANDOM_BLOCKS)."""

from __future__ import annotations

import gguf
import numpy as np
import pytest

from lab.formats import FORMATS, by_gguf_type, iq4_nl, iq4_xs, q4_0, q4_1, q6_k
from lab.interop import gguf as gguf_tools

MODULES = {"q4_0": q4_0, "q4_1": q4_1, "iq4_nl": iq4_nl, "iq4_xs": iq4_xs, "q6_k": q6_k}
QT = gguf.GGMLQuantizationType


def bits(array: np.ndarray) -> np.ndarray:
    return np.asarray(array, np.float32).view(np.uint32)


def relative_rmse(name: str, w: np.ndarray) -> float:
    decoded = FORMATS[name].round_trip(w).astype(np.float64)
    return float(np.sqrt(np.mean((decoded - w) ** 2) / np.mean(w.astype(np.float64) ** 2)))


@pytest.fixture(scope="module")
def normal_weights() -> np.ndarray:
    return np.random.default_rng(2024).normal(0, 1, (64, 4096)).astype(np.float32)


def test_iq4_codebook_is_gguf_py_s():
    assert iq4_nl.KVALUES.tolist() == list(gguf.quants.IQ4_NL.kvalues)
    assert iq4_nl.KVALUES.tolist() == [-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113]


def test_iq4_quantizers_reach_q4_0_quality_on_normal_weights(normal_weights):
    q4_0_error = relative_rmse("q4_0", normal_weights)
    for name in ("iq4_nl", "iq4_xs"):
        # measured: Q4_0 0.0859, IQ4_NL 0.0761, IQ4_XS 0.0767
        assert relative_rmse(name, normal_weights) <= q4_0_error, name


def test_q6_k_quality_lies_between_q4_k_and_q8_0(normal_weights):
    # measured: Q4_K 0.0712, Q6_K 0.0177, Q8_0 0.0053
    errors = {name: relative_rmse(name, normal_weights) for name in ("q4k", "q6_k", "q8_0")}
    assert errors["q4k"] > errors["q6_k"] > errors["q8_0"], errors


#: two Q6_K super-blocks for t(5) weights at two spreads. First written by the lab's quantizer,
#: they are also exactly what ggml's C quantize_row_q6_K_ref writes for the same input (ggml-org/ggml
#: d99724f2b141fed9e1a9f402213506c081433465, gcc 12.2 -O0 -ffp-contract=off; see
#: tests/test_formats_cref.py for the build), so they pin the reference's bytes, not only the lab's
Q6_K_PINNED = (
    "6ae0f02cd2917602d493e84f00612d3b47c3b98081f2aa1950975b90dccf51a803e7248eb63a7ad76f148721321a3ef8ed13b49f08347e"
    "65c059ebefd033421a4416bf860f7fbf47f38241550dfbb6792c6c27935066be8f52241a874f1d0a4e1fc142de041c9147a671d2bfa311"
    "95dfeb2c03be62e7feea2d44ef67099101f72a0852695292e04a5699aaa1aa97a6619aa609f4297a4589e1596a54d88d6955e68aa95a2"
    "955ddaa5a52a826d99be6967876aa66a8a71126939aae6aaa510c995037dc89c420bed780ccb44e56c5d63fd201",
    "3d2b80f2653b2d27f7062a29bf1f063c80c1b53f06a28d181c1dd6e51fd008310076560bf4373c05d36ca90fd82d47478e06ffdd2d3436"
    "b574b4024af04b108d8f424f6e7368491eb311b9640791133f1a9ec3485fd1275b15f10969e18bb1f7e77e4171151632ced38f7e341d1"
    "6184d5b7f07b667b1f643a59e08710b84716bf2d1a41e969d258968e926e5aa4479f510da9a65c2d92752adad1d55a191e5a65551917"
    "ea2959e554688919a9d8a2ab4899655e6691e6999a554e965165b529aadc7dc35c8942d27a1c6d2bad980683d6f9c",
)


def test_q6_k_pinned_blocks():
    rng = np.random.default_rng(14)
    w = (rng.standard_t(5, (2, 256)) * [[0.02], [3.0]]).astype(np.float32)
    raw = q6_k.quantize(w).to_gguf()
    assert [row.tobytes().hex() for row in raw] == list(Q6_K_PINNED)


def test_q6_k_stores_the_largest_subblock_at_scale_minus_128():
    w = np.random.default_rng(3).normal(0, 1, (4, 512)).astype(np.float32)
    tensor = q6_k.quantize(w)
    # d = -scale/128 for the subblock scale of largest magnitude, so that subblock stores -128
    assert (tensor.scales.min(axis=-1) == -128).all()


@pytest.mark.parametrize("name", list(MODULES))
def test_explain_names_the_stored_bits_and_the_weight(name):
    fmt = FORMATS[name]
    w = np.random.default_rng(5).normal(0, 1, (2, 512)).astype(np.float32)
    tensor = fmt.quantize(w)
    decoded, raw = tensor.dequantize(), tensor.to_gguf().reshape(2, -1, MODULES[name].BLOCK_BYTES)
    for index in (0, 17, 300, 511, 600):
        info = tensor.explain(index)
        row, column = divmod(index, 512)
        assert info["weight"] == decoded[row, column]
        assert "=" in info["formula"]
        block = raw[row, info["block"]]
        if name == "q6_k":
            low = block[info["ql_byte"]] >> (4 if info["ql_nibble"] == "high" else 0) & 15
            high = block[info["qh_byte"]] >> info["qh_bits"][1] & 3
            assert low | high << 4 == info["code"]
        else:
            assert block[info["byte"]] >> (4 if info["nibble"] == "high" else 0) & 15 == info["code"]


def test_iq4_xs_scales_round_trip_through_their_split_bits():
    w = np.random.default_rng(9).normal(0, 1, (3, 768)).astype(np.float32)
    w[0, :32] *= 40  # one loud subblock: the others get small scales, some near -32..31's ends
    tensor = iq4_xs.quantize(w)
    again = iq4_xs.from_gguf(tensor.to_gguf())
    assert np.array_equal(again.scales, tensor.scales) and np.array_equal(again.codes, tensor.codes)
    assert tensor.scales.min() == -32


def test_a_gguf_file_of_the_new_types_reads_back_as_gguf_py_reads_it(tmp_path):
    rng = np.random.default_rng(21)
    types = {"q40": "Q4_0", "q41": "Q4_1", "nl": "IQ4_NL", "xs": "IQ4_XS", "q6": "Q6_K"}
    tensors = {name: rng.normal(0, 0.05, (6, 512)).astype(np.float32) for name in types}
    path = gguf_tools.write_gguf(tmp_path / "four.gguf", tensors, types)
    reader = gguf.GGUFReader(path)
    assert {tensor.name: tensor.tensor_type.name for tensor in reader.tensors} == types
    with gguf_tools.open_gguf(path) as gf:
        for tensor in reader.tensors:
            theirs = gguf.quants.dequantize(tensor.data, tensor.tensor_type).reshape(6, 512)
            ours = gf.decode(tensor.name, "ggml")
            assert np.array_equal(bits(ours), bits(theirs)), tensor.name
            fmt = by_gguf_type(types[tensor.name])
            assert np.array_equal(bits(ours), bits(fmt.round_trip(tensors[tensor.name])))
