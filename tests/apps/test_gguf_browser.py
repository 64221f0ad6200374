"""Notebook 6's "your own GGUF": a file gguf-py's writer made, opened the ways the picker opens one.

The file holds Q4_K, MXFP4, Q8_0 and F16 tensors, an IQ2_XXS tensor the lab does not decode and a
150k-entry string array; a second holds a tensor of every type the block explorer opens, and the
real file (where its package is installed) is opened tensor by tensor. gguf-py's
`quants.dequantize` is the oracle for every block: a widget holds only the bytes it is given, so
the lab codec reads them back from its inputs (the golden vectors of tests/js/ hold the browser's
JS codec to it).
"""

from __future__ import annotations

import gguf
import numpy as np
import pytest
from gguf import GGMLQuantizationType
from support import require_shipped_gguf

from lab.errors import LabError, UnsupportedTypeError
from lab.formats import FORMATS, by_gguf_type, mxfp4, nvfp4, q4k
from lab.teach import gguf_browser
from widgets import BlockExplorer, OwnershipView, Q4KExplorer

VOCABULARY = 150_000
IQ2_XXS_BLOCK_BYTES = 66  # a GGUF type the lab has no decoder for


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    rng = np.random.default_rng(15)
    path = tmp_path_factory.mktemp("browser") / "own.gguf"
    writer = gguf.GGUFWriter(str(path), arch="four-bit-lab")
    writer.add_array("tokenizer.ggml.tokens", [f"tok{i}" for i in range(VOCABULARY)])
    writer.add_uint32("general.file_type", 15)
    q4k_weights = rng.normal(0, 0.02, (4, 512)).astype(np.float32)
    writer.add_tensor("q4k", FORMATS["q4k"].to_gguf(q4k_weights), raw_dtype=GGMLQuantizationType.Q4_K)
    mx_weights = rng.normal(0, 1, (2, 64)).astype(np.float32)
    writer.add_tensor(
        "mxfp4", gguf.quants.quantize(mx_weights, GGMLQuantizationType.MXFP4), raw_dtype=GGMLQuantizationType.MXFP4
    )
    q8_weights = rng.normal(0, 1, (3, 64)).astype(np.float32)
    writer.add_tensor(
        "q8_0", gguf.quants.quantize(q8_weights, GGMLQuantizationType.Q8_0), raw_dtype=GGMLQuantizationType.Q8_0
    )
    writer.add_tensor("f16", rng.normal(0, 1, (2, 40)).astype(np.float16))
    iq2 = rng.integers(0, 256, (2, IQ2_XXS_BLOCK_BYTES), dtype=np.uint8)
    writer.add_tensor("iq2_xxs", iq2, raw_shape=iq2.shape, raw_dtype=GGMLQuantizationType.IQ2_XXS)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


@pytest.fixture(params=["path", "upload"])
def browser(request, written):
    if request.param == "path":
        opened = gguf_browser.open_path(written)
    else:
        opened = gguf_browser.open_upload(written.read_bytes(), name="own.gguf")
    yield opened
    opened.close()


def test_lists_every_tensor_with_its_type_and_shape(browser):
    rows = {row.name: row for row in gguf_browser.tensor_rows(browser.file)}
    assert {name: (row.type_name, row.shape) for name, row in rows.items()} == {
        "q4k": ("Q4_K", (4, 512)),
        "mxfp4": ("MXFP4", (2, 64)),
        "q8_0": ("Q8_0", (3, 64)),
        "f16": ("F16", (2, 40)),
        "iq2_xxs": ("IQ2_XXS", (2, 256)),
    }
    assert (rows["q4k"].n_bytes, rows["q4k"].blocks, rows["q4k"].shape_text) == (8 * 144, 8, "4 × 512")
    assert (rows["mxfp4"].n_bytes, rows["q8_0"].n_bytes, rows["f16"].n_bytes) == (4 * 17, 6 * 34, 2 * 40 * 2)
    assert rows["f16"].blocks == 3  # 80 weights in blocks of 32: the last holds 16
    assert not rows["iq2_xxs"].supported and rows["q4k"].supported


def test_summarises_the_vocabulary_without_reading_it_all(browser):
    rows = {row.key: row for row in gguf_browser.metadata_rows(browser.file, items=5)}
    tokens = rows["tokenizer.ggml.tokens"]
    assert (tokens.type_label, tokens.length) == ("ARRAY of STRING", VOCABULARY)
    assert tokens.value_text == "['tok0', 'tok1', 'tok2', 'tok3', 'tok4', … 149,995 more]"
    (summary,) = [row for row in browser.file.metadata_summary(items=5) if row["key"] == "tokenizer.ggml.tokens"]
    assert len(summary["value"]) == 5
    assert rows["general.file_type"].value_text == "15"
    assert gguf_browser.recipe(browser.file)["label"] == "Q4_K_M"


def test_a_q4k_block_opens_in_the_explorer_with_gguf_pys_values(browser):
    pick = gguf_browser.pick_block(browser.file, "q4k", 5)
    reference = gguf.quants.dequantize(pick.raw.reshape(1, -1), GGMLQuantizationType.Q4_K).reshape(-1)
    on_disk = np.fromfile(browser.file.path, np.uint8)
    start = browser.file.tensor("q4k").offset + 5 * 144
    assert np.array_equal(pick.raw, on_disk[start : start + 144])
    assert pick.explorer == "q4k" and pick.first_weight == 5 * 256
    explorer = Q4KExplorer()
    explorer.show_block(pick.type_name, pick.raw)
    assert explorer.message == "" and np.array_equal(q4k.decode(np.array(explorer.block)), reference)
    assert np.array_equal(pick.weights, reference) and pick.check.matches and pick.check.max_abs_diff == 0.0
    assert pick.check.text == "matches gguf-py: yes, max difference 0 over 256 weights"


def test_an_mxfp4_block_opens_in_the_ownership_view(browser):
    pick = gguf_browser.pick_block(browser.file, "mxfp4", 3)
    reference = gguf.quants.dequantize(pick.raw.reshape(1, -1), GGMLQuantizationType.MXFP4).reshape(-1)
    view = OwnershipView()
    view.show_block(pick.type_name, pick.raw)
    assert pick.explorer == "ownership" and pick.check.matches
    shown = mxfp4.from_parts(np.array(view.codes), np.array([view.mx_scale_byte])).dequantize()
    assert view.message == "" and np.array_equal(shown, reference)


def test_a_float_tensor_decodes_to_a_checked_table(browser):
    pick = gguf_browser.pick_block(browser.file, "f16", 2)
    assert pick.explorer == "table"
    with pytest.raises(UnsupportedTypeError, match="F16"):  # no figure takes a float block
        Q4KExplorer().show_block(pick.type_name, pick.raw)
    with pytest.raises(UnsupportedTypeError, match="F16"):
        OwnershipView().show_block(pick.type_name, pick.raw)
    assert "F16" in BlockExplorer(type_name=pick.type_name, block=pick.raw.tolist()).message
    assert pick.weights.size == 16 and pick.check.matches
    header, rows = gguf_browser.block_table(pick)
    assert header == ["weight", "lab", "gguf-py"] and len(rows) == 16
    expected = browser.file.decode("f16").reshape(-1)[64:]
    assert np.array_equal(pick.weights, expected) and rows[0][0] == "64"


def test_a_q8_0_block_opens_in_the_block_explorer(browser):
    pick = gguf_browser.pick_block(browser.file, "q8_0", 4)
    on_disk = np.fromfile(browser.file.path, np.uint8)
    start = browser.file.tensor("q8_0").offset + 4 * 34
    assert np.array_equal(pick.raw, on_disk[start : start + 34])
    explorer = BlockExplorer()
    explorer.show_block(pick.type_name, pick.raw)
    assert pick.explorer == "block" and (explorer.type_name, explorer.block) == ("Q8_0", pick.raw.tolist())
    shown = by_gguf_type(explorer.type_name).decode_gguf(np.array(explorer.block)).reshape(-1)
    assert explorer.message == "" and np.array_equal(shown, pick.reference)
    assert pick.check.matches


def test_a_type_the_lab_does_not_decode_is_refused_by_name(browser):
    with pytest.raises(UnsupportedTypeError, match="IQ2_XXS"):
        gguf_browser.pick_block(browser.file, "iq2_xxs", 0)
    with pytest.raises(LabError, match="blocks 0 to 7"):
        gguf_browser.pick_block(browser.file, "q4k", 8)


def test_the_check_reports_a_difference():
    check = gguf_browser.check_against_gguf_py(np.array([1.0, np.nan, 2.0]), np.array([1.0, np.nan, 2.5]))
    assert (check.matches, check.max_abs_diff) == (False, 0.5)
    assert check.text.startswith("matches gguf-py: no, max difference 0.5")


def test_an_nvfp4_half_block_gives_the_ownership_views_codes_and_scales():
    weights = np.random.default_rng(4).normal(0, 1, (1, 64)).astype(np.float32)
    raw = FORMATS["nvfp4"].to_gguf(weights).reshape(-1)
    reference = gguf.quants.dequantize(raw.reshape(1, -1), GGMLQuantizationType.NVFP4).reshape(-1)
    view = OwnershipView()
    for half in (0, 1):
        view.show_block("NVFP4", raw, half)
        # the view's tensor scale is the multiplier on decode, MLX's global_scale / 2688
        shown = nvfp4.from_parts(
            np.array(view.codes),
            np.array(view.nv_scale_bytes),
            global_scale=view.tensor_scale * nvfp4.TENSOR_SCALE_RANGE,
        ).dequantize()
        assert view.message == "" and np.array_equal(shown, reference[32 * half : 32 * (half + 1)])
    with pytest.raises(LabError, match="two halves of 32 weights"):
        view.show_block("NVFP4", raw, 2)


def test_uploads_above_the_limit_are_refused_and_point_to_the_path_box():
    with pytest.raises(gguf_browser.UploadTooLargeError, match="path box"):
        gguf_browser.open_upload(b"\0" * 100, name="big.gguf", limit=99)


def test_an_upload_is_a_temporary_file_removed_on_close(written):
    opened = gguf_browser.open_upload(written.read_bytes(), name="../../etc/own.gguf")
    copy = opened.temporary_path
    assert copy.exists() and opened.source == "upload own.gguf"
    opened.close()
    assert not copy.exists() and not copy.parent.exists()


def test_a_malformed_upload_leaves_nothing_behind(tmp_path, monkeypatch):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    with pytest.raises(LabError):
        gguf_browser.open_upload(b"GGUF not really", name="broken.gguf")
    assert list(tmp_path.iterdir()) == []


@pytest.fixture(scope="module")
def every_block_type(tmp_path_factory):
    """A file holding one tensor of every GGUF type the block explorer opens (two blocks each,
    quantized by the lab as a GGUF writer would), named after its type."""
    rng = np.random.default_rng(16)
    path = tmp_path_factory.mktemp("block-types") / "every-type.gguf"
    writer = gguf.GGUFWriter(str(path), arch="four-bit-lab")
    for type_name in gguf_browser.block_explorer_types():
        fmt = next(fmt for fmt in FORMATS.values() if fmt.gguf_type == type_name)
        weights = rng.normal(0, 1, (1, 2 * fmt.block_size)).astype(np.float32)
        writer.add_tensor(type_name.lower(), fmt.to_gguf(weights), raw_dtype=GGMLQuantizationType[type_name])
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    opened = gguf_browser.open_path(path)
    yield opened
    opened.close()


def test_every_block_format_but_those_with_their_own_figure_opens_in_the_block_explorer():
    own = {"Q4_K": "q4k", "MXFP4": "ownership", "NVFP4": "ownership"}
    gguf_types = [fmt.gguf_type for fmt in FORMATS.values() if fmt.gguf_type is not None]
    assert gguf_browser.EXPLORERS == {name: own.get(name, "block") for name in gguf_types}
    assert gguf_browser.block_explorer_types() == [name for name in gguf_types if name not in own]
    assert list(BlockExplorer.types) == gguf_browser.block_explorer_types()
    assert {"Q5_0", "Q5_1", "Q5_K", "Q3_K", "Q2_K", "Q8_0", "Q6_K"} <= set(BlockExplorer.types)


@pytest.mark.parametrize(
    "type_name", ["Q5_0", "Q5_1", "Q5_K", "Q3_K", "Q2_K", "Q6_K", "Q4_0", "Q4_1", "IQ4_NL", "IQ4_XS"]
)
def test_a_block_of_each_type_opens_in_the_block_explorer_with_gguf_pys_values(every_block_type, type_name):
    pick = gguf_browser.pick_block(every_block_type.file, type_name.lower(), 1)
    assert pick.type_name == type_name and pick.explorer == "block"
    explorer = BlockExplorer(weight=5)  # a weight picked in an earlier block, which a new pick resets
    explorer.show_block(pick.type_name, pick.raw)
    assert (explorer.type_name, explorer.block) == (type_name, pick.raw.tolist())
    assert explorer.message == "" and explorer.weight == 1
    shown = by_gguf_type(explorer.type_name).decode_gguf(np.array(explorer.block)).reshape(-1)
    assert np.array_equal(shown, pick.reference)
    assert pick.check.matches and pick.check.max_abs_diff == 0.0


def test_every_tensor_of_the_real_file_opens_in_an_explorer():
    """Gemma 3 270M in Q4_K_M holds F32, Q5_0, Q4_K, Q8_0 and Q6_K tensors: every quantized one
    opens in a figure (its first block, checked against gguf-py), the F32 ones in the table."""
    with gguf_browser.open_path(require_shipped_gguf()) as real:
        seen = {}
        for row in gguf_browser.tensor_rows(real.file):
            pick = gguf_browser.pick_block(real.file, row.name, 0)
            seen[pick.type_name] = pick.explorer
            assert pick.check.matches, row.name
            if pick.explorer == "block":
                explorer = BlockExplorer()
                explorer.show_block(pick.type_name, pick.raw)
                assert explorer.message == "", row.name
                shown = by_gguf_type(explorer.type_name).decode_gguf(np.array(explorer.block)).reshape(-1)
                assert np.array_equal(shown, pick.reference), row.name
    assert seen == {"F32": "table", "Q5_0": "block", "Q4_K": "q4k", "Q8_0": "block", "Q6_K": "block"}
