"""ARCHITECTURE.md's "adding a format" checklist is true of every registered format: each item the
checklist names is a check here, each check is an item there, and every registered format passes
every check that applies to it. A format added without one of its pieces fails here, naming it."""

from __future__ import annotations

import functools
import inspect
import re
from pathlib import Path

import pytest

from lab.formats import FORMAT_MODULES, FORMATS
from lab.formats._tensor import BLOCKS

ROOT = Path(__file__).resolve().parents[2]
CHECKLIST = re.compile(r"<!-- checklist: adding a format -->\n(.*?)<!-- end checklist -->", re.DOTALL)
ITEM = re.compile(r"^- \[ \] \*\*(?P<key>[a-z-]+)\*\*: (?P<text>.*)$", re.MULTILINE)


def _text(relative: str) -> str:
    return (ROOT / relative).read_text(encoding="utf-8")


def _checklist() -> dict[str, str]:
    found = CHECKLIST.search(_text("ARCHITECTURE.md"))
    assert found, "ARCHITECTURE.md has no 'adding a format' checklist between its markers"
    return {item["key"]: item["text"] for item in ITEM.finditer(found.group(1))}


def _source_of(fmt) -> Path:
    quantize = fmt.quantize
    while isinstance(quantize, functools.partial):
        quantize = quantize.func
    return Path(inspect.getsourcefile(quantize)).resolve()


def _names(fmt) -> list[str]:
    """How a test may name the format: its registry name, its GGUF type, its MLX mode, or a call of
    its module's quantize (MLX affine's every bits and group size are one parametrized test)."""
    module = _source_of(fmt).stem
    return [
        f'"{fmt.name}"',
        *([fmt.gguf_type] if fmt.gguf_type else []),
        *([f'"{fmt.mlx.mode}"'] if fmt.mlx else []),
        f"{module}.quantize(",
    ]


def _oracle_files() -> dict[str, str]:
    return {path.name: path.read_text(encoding="utf-8") for path in (ROOT / "tests" / "oracles").glob("test_*.py")}


# key -> (applies to the format?, holds for it?)
CHECKS = {
    "module": (
        lambda fmt: True,
        lambda fmt: (
            _source_of(fmt).is_relative_to(ROOT / "lab" / "formats")
            # a format split over a package (Q4_K) registers in the package's __init__
            and any(
                "register(" in path.read_text(encoding="utf-8")
                for path in (_source_of(fmt), _source_of(fmt).parent / "__init__.py")
                if path.is_file()
            )
        ),
    ),
    "blocks": (
        lambda fmt: True,
        lambda fmt: fmt.title in BLOCKS or (fmt.mlx is not None and fmt.mlx.mode == "affine"),
    ),
    "js-registry": (lambda fmt: True, lambda fmt: f'name: "{fmt.name}"' in _text("widgets/codec/formats/registry.js")),
    "golden": (lambda fmt: True, lambda fmt: f'"{fmt.name}"' in _text("tests/js/golden.json")),
    "battery": (
        lambda fmt: True,
        lambda fmt: (
            re.search(rf'^\s+\("{re.escape(fmt.name)}",', _text("tests/oracles/test_registry.py"), re.MULTILINE)
            is not None
            or f'"{fmt.name}"' in _text("tests/oracles/test_registry.py")
        ),
    ),
    "oracle": (
        lambda fmt: True,
        lambda fmt: (
            any(
                any(name in text for name in _names(fmt))
                for file, text in _oracle_files().items()
                if file != "test_registry.py"
            )
            # or its gguf-py rows in the registry's batteries
            or re.search(
                rf'^\s+"{re.escape(fmt.name)}": (?:RandomBlocks\(|[A-Z_]+_TIES\b)',
                _text("tests/oracles/test_registry.py"),
                re.MULTILINE,
            )
            is not None
        ),
    ),
    "js-module": (
        lambda fmt: fmt.gguf_type is not None,
        # named after the Python module that registers the format: one module may hold several
        lambda fmt: (
            (ROOT / "widgets" / "codec" / "formats" / f"{FORMAT_MODULES[fmt.name]}.js").is_file()
            and fmt.gguf_type in _text("widgets/codec/formats/gguf_blocks.js")
        ),
    ),
}


def test_the_checklist_and_the_checks_name_the_same_items():
    assert set(_checklist()) == set(CHECKS)


def test_every_file_the_checklist_names_exists():
    for key, text in _checklist().items():
        for named in re.findall(r"`([^`]+)`", text):
            if "/" in named and " " not in named and "<" not in named:
                path = named.split()[-1]
                assert (ROOT / path).exists(), f"the checklist's {key!r} item names {path}, which does not exist"


@pytest.mark.parametrize("name", list(FORMATS))
def test_every_registered_format_meets_the_checklist(name):
    fmt = FORMATS[name]
    missing = [key for key, (applies, holds) in CHECKS.items() if applies(fmt) and not holds(fmt)]
    assert not missing, f"{name} lacks these items of ARCHITECTURE.md's checklist: {missing}"
