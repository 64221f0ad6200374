"""GGUF tools: the lab writes files with gguf-py's GGUFWriter, gguf-py reads them back, and every
tensor decodes to the same values in both; the inventory and the recipe summary say what is in
the file."""

from __future__ import annotations

import re

import gguf
import numpy as np
import pytest
from support import require_real_model

from lab.errors import DTypeError, GGUFFormatError, LabError, NonFiniteError, ShapeError, UnsupportedTypeError
from lab.formats import q4k
from lab.interop import gguf as gguf_tools
from lab.study import real_weights

LLAMA_NAMES = {
    "token_embd.weight": (64, 512),
    "blk.0.attn_norm.weight": (512,),
    "blk.0.attn_q.weight": (32, 512),
    "blk.0.attn_v.weight": (16, 512),
    "blk.0.ffn_down.weight": (8, 768),
    "blk.1.attn_v.weight": (16, 512),
    "blk.1.ffn_down.weight": (8, 768),
    "blk.1.ffn_up.weight": (24, 384),  # a row Q4_K cannot take, but Q5_0 can
    "blk.1.odd.weight": (2, 40),  # a row neither can take
    "output_norm.weight": (512,),
}


def bits(values) -> np.ndarray:
    return np.asarray(values, dtype=np.float32).view(np.uint32)


@pytest.fixture(scope="module")
def llama_like():
    rng = np.random.default_rng(3)
    return {name: (rng.standard_t(4, size=shape) * 0.02).astype(np.float32) for name, shape in LLAMA_NAMES.items()}


@pytest.fixture(scope="module")
def written(tmp_path_factory, llama_like):
    path = tmp_path_factory.mktemp("gguf") / "mixture.gguf"
    plan = gguf_tools.q4_k_m_style_plan(llama_like)
    gguf_tools.write_gguf(path, llama_like, plan, name="lab mixture", file_type="Q4_K_M", metadata={"lab.seed": 3})
    return path, plan


def test_the_q4_k_m_style_plan(llama_like):
    plan = gguf_tools.q4_k_m_style_plan(llama_like)
    assert plan == {
        "token_embd.weight": "Q4_K",
        "blk.0.attn_norm.weight": "F32",
        "blk.0.attn_q.weight": "Q4_K",
        "blk.0.attn_v.weight": "Q6_K",  # promoted, as in llama.cpp's Q4_K_M
        "blk.0.ffn_down.weight": "Q4_K",
        "blk.1.attn_v.weight": "Q6_K",
        "blk.1.ffn_down.weight": "Q6_K",  # the last layer's FFN down
        "blk.1.ffn_up.weight": "Q5_0",  # row 384: not a multiple of 256, llama.cpp's fallback for Q4_K
        "blk.1.odd.weight": "F16",  # row 40: not even a multiple of 32
        "output_norm.weight": "F32",
    }


def test_default_promotions_read_minilm_names_too():
    parts = ("attention.self.value", "attention.output.dense", "output.dense")
    names = [f"encoder.layer.{i}.{part}.weight" for i in range(6) for part in parts]
    values = {f"encoder.layer.{i}.attention.self.value.weight" for i in range(6)}
    assert gguf_tools.default_promotions(names) == values | {"encoder.layer.5.output.dense.weight"}


def test_round_trip_gguf_py_reads_the_lab_file_and_decodes_the_same_values(written, llama_like):
    path, plan = written
    reader = gguf.GGUFReader(path)
    assert {t.name: t.tensor_type.name for t in reader.tensors} == plan
    with gguf_tools.open_gguf(path) as gf:
        for tensor in reader.tensors:
            theirs = gguf.quants.dequantize(tensor.data, tensor.tensor_type)
            ours = gf.decode(tensor.name)
            assert ours.shape == llama_like[tensor.name].shape == theirs.shape
            assert np.array_equal(bits(ours), bits(theirs)), tensor.name
            if plan[tensor.name] == "Q4_K":
                assert np.array_equal(np.asarray(tensor.data), q4k.quantize(llama_like[tensor.name]).raw)
            if plan[tensor.name] == "F32":
                assert np.array_equal(ours, llama_like[tensor.name])


def test_the_inventory_lists_every_tensor_with_its_storage(written, llama_like):
    path, plan = written
    with gguf_tools.open_gguf(path) as gf:
        rows = {row["name"]: row for row in gf.inventory()}
        assert list(rows) == list(llama_like)
        q = rows["blk.0.attn_q.weight"]
        assert (q["type"], q["shape"], q["n_elements"]) == ("Q4_K", (32, 512), 16384)
        assert (q["bytes"], q["bits_per_weight"]) == (32 * 2 * 144, 4.5)
        assert rows["blk.0.attn_v.weight"]["bits_per_weight"] == 6.5625
        assert rows["output_norm.weight"]["bits_per_weight"] == 32.0
        assert rows["blk.1.odd.weight"]["type"] == "F16"
        assert gf.metadata("general.name") == "lab mixture"
        assert gf.metadata("lab.seed") == 3
        assert gf.metadata("general.alignment", default="absent") == "absent"


def test_explain_recipe_reads_the_label_against_the_contents(written):
    path, _ = written
    with gguf_tools.open_gguf(path) as gf:
        recipe = gguf_tools.explain_recipe(gf)
        summary = {row["type"]: row for row in gguf_tools.type_summary(gf)}
    assert recipe["label"] == "Q4_K_M"
    assert recipe["main_type"] == "Q4_K"
    # Q5_0 (5.5 bits) is llama.cpp's fallback for a Q4_K row of 384: more bits than the main type
    assert set(recipe["higher_precision"]) == {"Q6_K", "Q5_0", "F16", "F32"}
    assert sorted(recipe["higher_precision"]["Q6_K"]) == [
        "blk.0.attn_v.weight",
        "blk.1.attn_v.weight",
        "blk.1.ffn_down.weight",
    ]
    assert recipe["higher_precision"]["Q5_0"] == ["blk.1.ffn_up.weight"]
    assert summary["F32"]["tensors"] == summary["F32"]["one_dimensional"] == 2
    assert sum(row["share_of_bytes"] for row in summary.values()) == pytest.approx(1.0)
    assert summary["Q4_K"]["bytes"] == (64 * 2 + 32 * 2 + 8 * 3) * 144
    assert "Q4_K_M (general.file_type)" in recipe["text"] and "Q6_K: 3 tensors" in recipe["text"]
    total_bytes = sum(row["bytes"] for row in summary.values())
    total_weights = sum(row["weights"] for row in summary.values())
    assert recipe["bits_per_weight"] == pytest.approx(8 * total_bytes / total_weights)


def test_a_file_without_a_label_says_so(tmp_path):
    path = gguf_tools.write_gguf(tmp_path / "plain.gguf", {"w": np.ones((2, 32), np.float32)}, {"w": "F32"})
    with gguf_tools.open_gguf(path) as gf:
        assert gguf_tools.recipe_label(gf) is None
        assert gguf_tools.explain_recipe(gf)["text"].startswith("The file carries no general.file_type label.")


@pytest.mark.parametrize("decoder", ["ocp", "ggml"])
def test_mxfp4_and_nvfp4_tensors_decode_with_the_lab_gguf_layout_decoders(tmp_path, decoder):
    rng = np.random.default_rng(11)
    tensors = {"mx": rng.normal(0, 1, (4, 128)).astype(np.float32), "nv": rng.normal(0, 1, (4, 128)).astype(np.float32)}
    tensors["mx"][0, :32] = 0.0  # a zero block: the "ggml" preset stores scale byte 0
    path = gguf_tools.write_gguf(tmp_path / "fp4.gguf", tensors, {"mx": "MXFP4", "nv": "NVFP4"})
    reader = gguf.GGUFReader(path)
    in_file = {tensor.name: np.asarray(tensor.data).reshape(4, -1).view(np.uint8) for tensor in reader.tensors}
    # MXFP4 under the "ggml" preset: the very bytes gguf-py's own quantizer (ggml's rule) writes
    assert np.array_equal(in_file["mx"], gguf.quants.quantize(tensors["mx"], gguf.GGMLQuantizationType.MXFP4))
    # NVFP4: gguf-py has no quantizer, so its decoder checks the bytes. Each 16-weight group's UE4M3
    # scale is amax/6 rounded to 3 mantissa bits (at most 1/16 up), and E2M1's widest gap is 2 scale
    # units, so every weight decodes within amax/6 * 17/16 of the original.
    nv_decoded = gguf.quants.dequantize(in_file["nv"], gguf.GGMLQuantizationType.NVFP4)
    group_amax = np.repeat(np.abs(tensors["nv"]).reshape(4, -1, 16).max(axis=-1), 16, axis=-1)
    assert np.all(np.abs(nv_decoded - tensors["nv"]) <= group_amax / 6 * 17 / 16)
    with gguf_tools.open_gguf(path) as gf:
        for name, file_bytes in in_file.items():
            assert np.array_equal(gf.raw(name), file_bytes)  # the same bytes gguf-py's reader finds
        for tensor in reader.tensors:
            theirs = gguf.quants.dequantize(tensor.data, tensor.tensor_type)
            # The quantizers never store -0 codes or NaN scales, so both readings agree with ggml here.
            assert np.array_equal(bits(gf.decode(tensor.name, decoder)), bits(theirs))


def test_bf16_and_f16_tensors_decode(tmp_path):
    rng = np.random.default_rng(12)
    w = rng.normal(0, 1, (3, 64)).astype(np.float32)
    path = tmp_path / "half.gguf"
    writer = gguf.GGUFWriter(path, "lab")
    bf16 = gguf.GGMLQuantizationType.BF16
    writer.add_tensor("bf", gguf.quants.quantize(w, bf16), raw_dtype=bf16)
    writer.add_tensor("f16", w.astype(np.float16))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    reader = gguf.GGUFReader(path)
    with gguf_tools.open_gguf(path) as gf:
        for tensor in reader.tensors:
            theirs = gguf.quants.dequantize(tensor.data, tensor.tensor_type)
            assert np.array_equal(bits(gf.decode(tensor.name)), bits(theirs))
        assert gf.decode("bf").shape == (3, 64)


def test_raw_bytes_are_a_read_only_view_of_the_mapped_file(written):
    path, _ = written
    with gguf_tools.open_gguf(path) as gf:
        raw = gf.raw("blk.0.attn_q.weight")
        assert raw.shape == (32, 2 * 144) and raw.dtype == np.uint8
        assert not raw.flags.writeable
    with pytest.raises(LabError, match="is closed"):
        gf.decode("blk.0.attn_q.weight")


def test_unknown_tensor_names_and_unwritable_types_are_refused(written, tmp_path):
    path, _ = written
    with gguf_tools.open_gguf(path) as gf, pytest.raises(LabError, match="no tensor named 'nope'"):
        gf.decode("nope")
    w = np.ones((2, 256), np.float32)
    # IQ2_XXS is a GGUF type the lab has no quantizer for; the message lists every type it writes
    with pytest.raises(
        UnsupportedTypeError,
        match=re.escape("the lab does not write type IQ2_XXS; supported: " + ", ".join(gguf_tools.WRITABLE_TYPES)),
    ):
        gguf_tools.write_gguf(tmp_path / "x.gguf", {"w": w}, {"w": "IQ2_XXS"})
    assert gguf_tools.WRITABLE_TYPES[:11] == (
        "F32",
        "F16",
        "MXFP4",
        "NVFP4",
        "Q4_K",
        "Q8_0",
        "Q4_0",
        "Q4_1",
        "Q6_K",
        "IQ4_NL",
        "IQ4_XS",
    )
    assert {"Q5_0", "Q5_1", "Q5_K", "Q3_K", "Q2_K"} <= set(gguf_tools.WRITABLE_TYPES)
    with pytest.raises(LabError, match=r"no type given for tensors \['w'\]"):
        gguf_tools.write_gguf(tmp_path / "y.gguf", {"w": w}, {})
    with pytest.raises(ShapeError, match="Q8_0 needs rows that are a multiple of 32"):
        gguf_tools.encode_tensor(np.ones((2, 40), np.float32), "Q8_0")
    with pytest.raises(DTypeError, match="metadata 'k' must be a str, int or float"):
        gguf_tools.write_gguf(tmp_path / "z.gguf", {"w": w}, {"w": "F32"}, metadata={"k": [1]})


def test_decode_q8_0_checks_its_input():
    with pytest.raises(ShapeError, match="whole 34-byte blocks"):
        gguf_tools.decode_raw(np.zeros(35, np.uint8), "Q8_0")
    with pytest.raises(DTypeError, match="uint8"):
        gguf_tools.decode_raw(np.zeros(34, np.int16), "Q8_0")


def test_decode_raw_refuses_bytes_that_are_not_whole_elements_or_blocks():
    with pytest.raises(ShapeError, match=r"F32 rows must be whole 4-byte elements, got shape \(2, 5\)"):
        gguf_tools.decode_raw(np.zeros((2, 5), np.uint8), "F32")
    with pytest.raises(ShapeError, match="F16 rows must be whole 2-byte elements"):
        gguf_tools.decode_raw(np.zeros(3, np.uint8), "F16")
    with pytest.raises(ShapeError, match="Q4_K rows must be whole 144-byte blocks of 256 weights"):
        gguf_tools.decode_raw(np.zeros((1, 143), np.uint8), "Q4_K")
    with pytest.raises(ShapeError, match="MXFP4 rows must be whole 17-byte blocks of 32 weights"):
        gguf_tools.decode_raw(np.zeros((1, 0), np.uint8), "MXFP4")
    with pytest.raises(DTypeError, match="F32 data must be uint8 bytes, got dtype float32"):
        gguf_tools.decode_raw(np.zeros((1, 4), np.float32), "F32")  # floats would be cast, not reinterpreted
    with pytest.raises(UnsupportedTypeError, match="type IQ2_XXS is not one the lab decodes"):
        gguf_tools.decode_raw(np.zeros((1, 66), np.uint8), "IQ2_XXS")
    # whole elements decode: 0x3FC00000 is 1.5 and 0xC0000000 is -2.0 in IEEE binary32
    row = np.array([[0x00, 0x00, 0xC0, 0x3F, 0x00, 0x00, 0x00, 0xC0]], np.uint8)
    assert gguf_tools.decode_raw(row, "F32").tolist() == [[1.5, -2.0]]


def test_an_unknown_file_type_label_names_the_valid_ones(tmp_path):
    path = tmp_path / "label.gguf"
    w = {"w": np.ones((2, 32), np.float32)}
    message = r"unknown file_type label 'Q4_K_X'; valid labels: ALL_F32, F16, .*Q4_K_M"
    with pytest.raises(LabError, match=message) as caught:
        gguf_tools.write_gguf(path, w, {"w": "F32"}, file_type="Q4_K_X")
    assert not isinstance(caught.value, KeyError)
    assert not path.exists()
    # every llama.cpp file type but gguf-py's GUESSED is a label, spelled as recipe_label reads it back
    expected = [member.name.removeprefix("MOSTLY_") for member in gguf.LlamaFileType if member.name != "GUESSED"]
    assert list(gguf_tools.file_type_labels()) == expected
    gguf_tools.write_gguf(path, w, {"w": "F32"}, file_type="ALL_F32")
    assert gguf.GGUFReader(path).fields["general.file_type"].contents() == 0  # LLAMA_FTYPE_ALL_F32 = 0


def test_f16_refuses_weights_that_would_overflow_to_infinity(tmp_path):
    # float16's largest finite value is (2 - 2^-10) * 2^15 = 65504; halfway to the next step (65520)
    # rounds to infinity, anything below rounds to 65504
    assert (2 - 2**-10) * 2**15 == 65504
    with pytest.raises(NonFiniteError, match=r"tensor 'big' holds weights up to 70000 .* largest finite value 65504"):
        gguf_tools.encode_tensor(np.array([[1.0, -70000.0]], np.float32), "F16", "big")
    path = tmp_path / "f16.gguf"
    with pytest.raises(NonFiniteError, match="tensor 'edge'"):
        gguf_tools.write_gguf(path, {"edge": np.full((1, 4), 65520.0, np.float32)}, {"edge": "F16"})
    assert not path.exists()
    gguf_tools.write_gguf(path, {"edge": np.array([[65519.0, -65519.0, 1.0, 0.5]], np.float32)}, {"edge": "F16"})
    (tensor,) = gguf.GGUFReader(path).tensors
    assert np.asarray(tensor.data).astype(np.float32).tolist() == [[65504.0, -65504.0, 1.0, 0.5]]


def _raw_gguf_with(path, add_metadata) -> None:
    """A file written by gguf-py's writer alone, with metadata write_gguf would refuse."""
    writer = gguf.GGUFWriter(path, "lab")
    add_metadata(writer)
    writer.add_tensor("w", np.ones((2, 32), np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


@pytest.mark.parametrize(
    ("metadata", "error", "message", "as_gguf_py_writes_it", "reader_message"),
    [
        (
            {"GGUF.version": 3},
            LabError,
            r"metadata key 'GGUF.version' is in the 'GGUF.' namespace",
            lambda writer: writer.add_int64("GGUF.version", 3),
            "metadata key 'GGUF.version' clashes",
        ),
        (
            {"GGUF.kv_count": "x"},
            LabError,
            r"metadata key 'GGUF.kv_count' is in the 'GGUF.' namespace",
            lambda writer: writer.add_string("GGUF.kv_count", "x"),
            "metadata key 'GGUF.kv_count' clashes",
        ),
        (
            {"general.alignment": 48},
            LabError,
            r"general.alignment must be a power of two that fits a UINT32 \(1 to 2\^31\), got 48",
            lambda writer: writer.add_uint32("general.alignment", 48),
            "general.alignment must be a non-zero power of two, got 48",
        ),
        (
            {"general.alignment": 0},
            LabError,
            r"got 0",
            lambda writer: writer.add_uint32("general.alignment", 0),
            "general.alignment must be a non-zero power of two, got 0",
        ),
        (
            {"general.alignment": 64.0},
            DTypeError,
            r"general.alignment must be an int \(written as a UINT32\), got float",
            lambda writer: writer.add_float64("general.alignment", 64.0),
            "general.alignment must be a UINT32, got a FLOAT64",
        ),
    ],
    ids=["GGUF.version", "GGUF.kv_count", "alignment-48", "alignment-0", "alignment-float"],
)
def test_write_gguf_refuses_metadata_its_own_reader_refuses(
    tmp_path, metadata, error, message, as_gguf_py_writes_it, reader_message
):
    path = tmp_path / "refused.gguf"
    with pytest.raises(error, match=message):
        gguf_tools.write_gguf(path, {"w": np.ones((2, 32), np.float32)}, {"w": "F32"}, metadata=metadata)
    assert not path.exists()  # refused before anything was written
    # the same metadata written by gguf-py's writer alone: the lab's reader refuses the file
    _raw_gguf_with(path, as_gguf_py_writes_it)
    with pytest.raises(GGUFFormatError, match=reader_message):
        gguf_tools.open_gguf(path)


def test_write_gguf_refuses_other_metadata_it_cannot_write_faithfully(tmp_path):
    path = tmp_path / "refused.gguf"
    w, types = {"w": np.ones((2, 32), np.float32)}, {"w": "F32"}
    refused = [
        ({"GGUF.anything": 1}, LabError, r"'GGUF.anything' is in the 'GGUF.' namespace"),
        ({"general.alignment": 2**32}, LabError, r"got 4294967296"),
        ({"general.architecture": "other"}, LabError, r"'general.architecture' is one write_gguf sets itself"),
        ({"lab.big": 2**63}, LabError, r"'lab.big' = 9223372036854775808 does not fit the INT64"),
        ({"bad\ud800key": 1}, LabError, r"metadata key .* cannot be written as UTF-8"),
        ({"lab.text": "bad\udfff"}, LabError, r"metadata 'lab.text' value .* cannot be written as UTF-8"),
    ]
    for metadata, error, message in refused:
        with pytest.raises(error, match=message):
            gguf_tools.write_gguf(path, w, types, metadata=metadata)
        assert not path.exists()
    with pytest.raises(ShapeError, match=r"tensor 'w5' has shape \(1, 1, 1, 1, 32\); a GGUF tensor has 1 to 4"):
        gguf_tools.write_gguf(path, {"w5": np.ones((1, 1, 1, 1, 32), np.float32)}, {"w5": "F32"})
    with pytest.raises(ShapeError, match=r"tensor 'empty' has shape \(0, 32\)"):
        gguf_tools.write_gguf(path, {"empty": np.ones((0, 32), np.float32)}, {"empty": "F32"})
    assert not path.exists()


def test_a_power_of_two_alignment_is_written_as_a_uint32_and_used(tmp_path):
    path = tmp_path / "aligned.gguf"
    tensors = {"a": np.ones((1, 8), np.float32), "b": np.full((2, 32), 0.5, np.float32)}
    gguf_tools.write_gguf(path, tensors, {"a": "F32", "b": "F32"}, metadata={"general.alignment": 256})
    reader = gguf.GGUFReader(path)
    field = reader.fields["general.alignment"]
    assert field.types == [gguf.GGUFValueType.UINT32] and field.contents() == 256
    assert all(tensor.data_offset % 256 == 0 for tensor in reader.tensors)
    with gguf_tools.open_gguf(path) as gf:
        assert gf.layout.alignment == 256
        assert gf.decode("b").tolist() == [[0.5] * 32] * 2


def test_the_real_model_as_a_q4_k_m_style_file(tmp_path):
    require_real_model()
    layer_five = [
        "encoder.layer.5.attention.self.value.weight",
        "encoder.layer.5.attention.self.value.bias",
        "encoder.layer.5.intermediate.dense.weight",
        "encoder.layer.4.output.dense.weight",
        "encoder.layer.5.output.dense.weight",
    ]
    weights = real_weights.load_weights(names=layer_five)
    plan = gguf_tools.q4_k_m_style_plan(weights)
    assert plan["encoder.layer.4.output.dense.weight"] == "Q4_K"  # 384 x 1536: rows of 1536
    assert plan["encoder.layer.5.output.dense.weight"] == "Q6_K"  # the last FFN down, promoted
    assert plan["encoder.layer.5.intermediate.dense.weight"] == "Q5_0"  # rows of 384: Q4_K cannot
    path = gguf_tools.write_gguf(tmp_path / "minilm.gguf", weights, plan, arch="bert", file_type="Q4_K_M")
    with gguf_tools.open_gguf(path) as gf:
        decoded = gf.decode("encoder.layer.4.output.dense.weight")
        original = weights["encoder.layer.4.output.dense.weight"]
        assert np.linalg.norm(decoded - original) / np.linalg.norm(original) < 0.1
        assert gguf_tools.explain_recipe(gf)["main_type"] == "Q5_0"  # the label says Q4_K_M; the bytes disagree
