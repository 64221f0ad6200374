"""The JS codec's copies of the Python registry, written from it rather than by hand.

    .venv/bin/python -m widgets.codec_tables     rewrites the generated rows of the three files below

widgets/codec/formats/registry.js holds the constants of every format of lab.formats.FORMATS,
widgets/codec/formats/gguf_blocks.js the codec of every GGUF type the block explorer opens (the
"block" entries of lab.teach.gguf_browser.EXPLORERS), each with its module's import, and
widgets/codec/index.js re-exports every format module the codec has. Each file has one generated
region, from the line GENERATED_HEAD to the line GENERATED_END; the JS around it (how the rows are
frozen and looked up, the codec's other modules) is written by hand and kept as it is.
tests/apps/test_codec_tables.py fails when a file is not what this module writes, so a format
added to, changed in or dropped from the registry fails until this has been run again.

The JS codec has one module per Python module it mirrors: a format's JS module is named after the
lab.formats module that registers it (lab.formats.FORMAT_MODULES), widgets/codec/formats/<module>.js,
so one module may hold several formats. A GGUF format's module exports <GGUF type>_BLOCK,
<prefix>DecodeBlock and <prefix>ExplainWeight, the prefix being what js_prefix makes of the
registry name. Writing refuses a module that is missing or lacks one of those exports, naming
them, rather than leave an import that fails only when the page loads. A format module with no JS
counterpart (MXFP8 and MLX affine, which no figure decodes) is left out of the index.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from lab.files import write_inside
from lab.formats import FORMAT_MODULES, FORMATS, Format
from lab.teach.gguf_browser import EXPLORERS

CODEC_FOLDER = Path(__file__).resolve().parent / "codec"
FORMATS_FOLDER_NAME = "formats"
CODEC_FORMATS_FOLDER = CODEC_FOLDER / FORMATS_FOLDER_NAME
REGISTRY_JS = "registry.js"
GGUF_BLOCKS_JS = "gguf_blocks.js"
INDEX_JS = "index.js"
GENERATED_HEAD = "// generated from lab.formats.FORMATS by python -m widgets.codec_tables; do not edit"
GENERATED_END = "// end of generated text"


class CodecTableError(ValueError):
    """The registry and the JS codec's files cannot be joined; the message names the file and what is missing."""


@dataclass(frozen=True)
class BlockCodecNames:
    """Where a GGUF block format's JS codec lives and the names its module exports."""

    module: str  # the file under widgets/codec/formats/, named after the format's Python module
    block: str
    decode_block: str
    explain_weight: str


def js_prefix(name: str) -> str:
    """The prefix of a format module's JS function names, made from its registry name: the parts
    after the first underscore are joined on, a number keeping its underscore (q4_0 -> q4_0, as
    "q40" would read as forty), the K-quants' "k" joined as it is (q6_k -> q6k, as the registry's
    own q4k), and any other word capitalized (iq4_nl -> iq4Nl)."""
    first, *rest = name.split("_")
    return first + "".join(
        f"_{part}" if part.isdigit() else part if part == "k" else part.capitalize() for part in rest
    )


def js_module(fmt: Format) -> str:
    """The file of the format's JS module under widgets/codec/formats/: its Python module's name."""
    return f"{FORMAT_MODULES[fmt.name]}.js"


def block_codec_names(fmt: Format) -> BlockCodecNames:
    prefix = js_prefix(fmt.name)
    return BlockCodecNames(
        module=js_module(fmt),
        block=f"{fmt.gguf_type}_BLOCK",
        decode_block=f"{prefix}DecodeBlock",
        explain_weight=f"{prefix}ExplainWeight",
    )


def missing_exports(module_text: str, names: BlockCodecNames) -> list[str]:
    """The names of `names` that the module's source does not export as a declaration."""
    wanted = (names.block, names.decode_block, names.explain_weight)
    return [
        name
        for name in wanted
        if not re.search(rf"^export\s+(?:const|function)\s+{re.escape(name)}\b", module_text, re.MULTILINE)
    ]


def block_explorer_formats() -> list[Format]:
    """The registry's formats whose GGUF type the block explorer opens, in the registry's order."""
    return [fmt for fmt in FORMATS.values() if fmt.gguf_type is not None and EXPLORERS.get(fmt.gguf_type) == "block"]


def _js_number(value: float) -> str:
    """A number as a JS literal; a whole float is written as JS prints it (5, not 5.0)."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def registry_region() -> str:
    rows = "".join(
        f"  {{ name: {json.dumps(fmt.name)}, title: {json.dumps(fmt.title)}, "
        f"blockSize: {_js_number(fmt.block_size)}, bitsPerWeight: {_js_number(fmt.bits_per_weight)}, "
        f"nanScaleBytes: [{', '.join(f'0x{byte:02x}' for byte in fmt.nan_scale_bytes)}] }},\n"
        for fmt in FORMATS.values()
    )
    return f"const REGISTRY_ROWS = [\n{rows}];\n"


def gguf_blocks_region(formats_folder: Path = CODEC_FORMATS_FOLDER) -> str:
    named = [block_codec_names(fmt) for fmt in block_explorer_formats()]
    for names in named:
        path = formats_folder / names.module
        if not path.is_file():
            raise CodecTableError(
                f"{path} is missing: the block explorer opens this GGUF type, so it needs its JS codec module"
            )
        missing = missing_exports(path.read_text(encoding="utf-8"), names)
        if missing:
            raise CodecTableError(f"{path} does not export {', '.join(missing)}")
    exports_by_module: dict[str, list[str]] = {}
    for names in named:
        exports_by_module.setdefault(names.module, []).extend((names.block, names.decode_block, names.explain_weight))
    imports = "".join(
        f'import {{ {", ".join(exports)} }} from "./{module}";\n'
        for module, exports in sorted(exports_by_module.items())
    )
    rows = "".join(f"  [{names.block}, {names.decode_block}, {names.explain_weight}],\n" for names in named)
    return f"{imports}\nconst GGUF_BLOCK_ROWS = [\n{rows}];\n"


def index_region(formats_folder: Path = CODEC_FORMATS_FOLDER) -> str:
    """index.js's re-exports of the format modules, one a Python format module, in the registry's order."""
    modules = dict.fromkeys(js_module(fmt) for fmt in FORMATS.values() if fmt.name in FORMAT_MODULES)
    return "".join(
        f'export * from "./{FORMATS_FOLDER_NAME}/{module}";\n'
        for module in modules
        if (formats_folder / module).is_file()
    )


def _with_region(text: str, region: str, path: Path) -> str:
    """`text` with its generated region's rows replaced by `region`."""
    before, head, after_head = text.partition(GENERATED_HEAD + "\n")
    _, end, after = after_head.partition(GENERATED_END + "\n")
    if not head or not end:
        raise CodecTableError(f"{path} has no region from the line {GENERATED_HEAD!r} to the line {GENERATED_END!r}")
    return f"{before}{GENERATED_HEAD}\n{region}{GENERATED_END}\n{after}"


def generated_texts(codec_folder: Path = CODEC_FOLDER) -> dict[Path, str]:
    """Each generated file's whole text as the registry has it now, by path."""
    formats_folder = codec_folder / FORMATS_FOLDER_NAME
    regions = {
        formats_folder / REGISTRY_JS: registry_region(),
        formats_folder / GGUF_BLOCKS_JS: gguf_blocks_region(formats_folder),
        codec_folder / INDEX_JS: index_region(formats_folder),
    }
    return {path: _with_region(path.read_text(encoding="utf-8"), region, path) for path, region in regions.items()}


def main() -> None:
    for path, text in generated_texts().items():
        if path.read_text(encoding="utf-8") == text:
            print(f"{path} is up to date")
        else:
            write_inside(path.parent, path.name, text)
            print(f"wrote {path}")


if __name__ == "__main__":
    main()
