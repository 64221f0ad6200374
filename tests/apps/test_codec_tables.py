"""The JS codec's registry table and GGUF block rows are the Python registry's: the committed
files are what widgets.codec_tables writes from lab.formats.FORMATS, and writing is reproducible."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lab.formats import FORMATS
from widgets.codec_tables import (
    CODEC_FORMATS_FOLDER,
    GENERATED_HEAD,
    GGUF_BLOCKS_JS,
    REGISTRY_JS,
    BlockCodecNames,
    CodecTableError,
    block_codec_names,
    block_explorer_formats,
    generated_texts,
    gguf_blocks_region,
    js_prefix,
    missing_exports,
)

REGENERATE = ".venv/bin/python -m widgets.codec_tables"


def _copy_codec_files(folder: Path) -> None:
    """The two generated files and every module they import, copied into `folder` as they are."""
    names = [REGISTRY_JS, GGUF_BLOCKS_JS, *(block_codec_names(fmt).module for fmt in block_explorer_formats())]
    for name in names:
        (folder / name).write_bytes((CODEC_FORMATS_FOLDER / name).read_bytes())


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
    _copy_codec_files(tmp_path)
    (tmp_path / "q8_0.js").unlink()
    with pytest.raises(CodecTableError, match=r"q8_0\.js is missing"):
        gguf_blocks_region(tmp_path)


def test_a_file_without_its_generated_region_is_refused(tmp_path):
    _copy_codec_files(tmp_path)
    (tmp_path / REGISTRY_JS).write_text("export const FORMATS = [];\n", encoding="utf-8")
    with pytest.raises(
        CodecTableError, match=rf"registry\.js has no region from the line .*{re.escape(GENERATED_HEAD)}"
    ):
        generated_texts(tmp_path)
