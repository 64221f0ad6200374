"""The JS codec's registry table, GGUF block rows and format re-exports are the Python registry's:
the committed files are what widgets.codec_tables writes from lab.formats.FORMATS, and writing is
reproducible."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lab.formats import FORMAT_MODULES, FORMATS
from widgets.codec_tables import (
    CODEC_FOLDER,
    CODEC_FORMATS_FOLDER,
    FORMATS_FOLDER_NAME,
    GENERATED_HEAD,
    GGUF_BLOCKS_JS,
    INDEX_JS,
    REGISTRY_JS,
    BlockCodecNames,
    CodecTableError,
    block_codec_names,
    block_explorer_formats,
    generated_texts,
    gguf_blocks_region,
    index_region,
    js_module,
    js_prefix,
    missing_exports,
)

REGENERATE = ".venv/bin/python -m widgets.codec_tables"


def _copy_codec_files(folder: Path) -> Path:
    """The three generated files and every format module, copied into `folder` (a codec folder)
    as they are; the copy's formats folder."""
    formats_folder = folder / FORMATS_FOLDER_NAME
    formats_folder.mkdir()
    (folder / INDEX_JS).write_bytes((CODEC_FOLDER / INDEX_JS).read_bytes())
    names = [REGISTRY_JS, GGUF_BLOCKS_JS, *(path.name for path in CODEC_FORMATS_FOLDER.glob("*.js"))]
    for name in dict.fromkeys(names):
        (formats_folder / name).write_bytes((CODEC_FORMATS_FOLDER / name).read_bytes())
    return formats_folder


def test_the_committed_js_tables_are_the_python_registrys():
    for path, text in generated_texts().items():
        assert GENERATED_HEAD in text
        assert path.read_text(encoding="utf-8") == text, (
            f"{path.name} differs from the Python registry (lab.formats.FORMATS); run {REGENERATE}"
        )


def test_generating_twice_gives_the_same_bytes(tmp_path):
    _copy_codec_files(tmp_path)
    first = generated_texts(tmp_path)
    for path, text in first.items():
        path.write_text(text, encoding="utf-8")
    second = generated_texts(tmp_path)
    assert {path.name: text.encode("utf-8") for path, text in second.items()} == {
        path.name: text.encode("utf-8") for path, text in first.items()
    }


@pytest.mark.parametrize(
    ("name", "prefix"),
    [("q4_0", "q4_0"), ("q8_0", "q8_0"), ("q6_k", "q6k"), ("q4k", "q4k"), ("iq4_nl", "iq4Nl"), ("tq1_0", "tq1_0")],
)
def test_a_format_modules_function_prefix_follows_its_registry_name(name, prefix):
    assert js_prefix(name) == prefix


def test_a_block_formats_js_names_come_from_its_registry_name_and_gguf_type():
    assert block_codec_names(FORMATS["iq4_xs"]) == BlockCodecNames(
        module="iq4_xs.js", block="IQ4_XS_BLOCK", decode_block="iq4XsDecodeBlock", explain_weight="iq4XsExplainWeight"
    )


def test_a_module_without_an_export_the_rows_import_is_named():
    names = block_codec_names(FORMATS["q5_1"])
    source = (CODEC_FORMATS_FOLDER / names.module).read_text(encoding="utf-8")
    assert missing_exports(source, names) == []
    unexported = source.replace("export function q5_1ExplainWeight", "function q5_1ExplainWeight")
    assert missing_exports(unexported, names) == ["q5_1ExplainWeight"]


def test_a_block_format_without_its_js_module_is_refused(tmp_path):
    formats_folder = _copy_codec_files(tmp_path)
    (formats_folder / "q8_0.js").unlink()
    with pytest.raises(CodecTableError, match=r"q8_0\.js is missing"):
        gguf_blocks_region(formats_folder)


def test_a_formats_js_module_is_named_after_the_python_module_that_registers_it():
    assert js_module(FORMATS["affine4_g64"]) == "affine.js"
    assert js_module(FORMATS["q4k"]) == "q4k.js"  # Q4_K's package
    assert {js_module(fmt) for fmt in block_explorer_formats()} <= {
        path.name for path in CODEC_FORMATS_FOLDER.iterdir()
    }


def test_the_index_re_exports_each_format_module_once_in_registry_order(tmp_path):
    exported = re.findall(rf'^export \* from "\./{FORMATS_FOLDER_NAME}/(.+)";$', index_region(), re.MULTILINE)
    in_order = [f"{FORMAT_MODULES[name]}.js" for name in FORMATS if name in FORMAT_MODULES]
    assert exported == [module for module in dict.fromkeys(in_order) if (CODEC_FORMATS_FOLDER / module).is_file()]
    # a Python format module with no JS counterpart (MXFP8's, MLX affine's) has no line
    assert {"mxfp4.js", "q4k.js", "nf4.js"} <= set(exported) and not {"mxfp8.js", "affine.js"} & set(exported)
    formats_folder = _copy_codec_files(tmp_path)
    (formats_folder / "nf4.js").unlink()
    assert "nf4.js" not in index_region(formats_folder)


def test_a_file_without_its_generated_region_is_refused(tmp_path):
    formats_folder = _copy_codec_files(tmp_path)
    (formats_folder / REGISTRY_JS).write_text("export const FORMATS = [];\n", encoding="utf-8")
    with pytest.raises(
        CodecTableError, match=rf"registry\.js has no region from the line .*{re.escape(GENERATED_HEAD)}"
    ):
        generated_texts(tmp_path)
