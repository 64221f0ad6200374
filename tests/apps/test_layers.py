"""The tree shows the architecture: imports in lab/ go down the layers only, no package reaches into
another's private module, and no module grows past what one reader holds in mind. Above lab, widgets
holds the figures; publish (the site, exports, explainers, handouts) and classroom (the server and
the teacher's view) sit above both, and nothing below imports them: lab and widgets never import
publish or classroom, and classroom never imports publish."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LAB = ROOT / "lab"
#: bottom first; the modules directly in lab/ (errors, text, numbers, files, _arrays) sit below them all
LAYERS = ("codes", "formats", "interop", "study", "device", "teach")
LONGEST_MODULE_LINES = 700
#: the rooms above lab, each with the top-level packages it must never import
ROOMS_ABOVE = {
    "lab": ("widgets", "publish", "classroom"),
    "widgets": ("publish", "classroom"),
    "classroom": ("publish",),
}


def _modules() -> list[Path]:
    return sorted(LAB.rglob("*.py"))


def _layer(module_name: str) -> int:
    """-1 for lab's own root modules, else the index of the layer the module belongs to."""
    parts = module_name.split(".")
    return LAYERS.index(parts[1]) if len(parts) > 1 and parts[1] in LAYERS else -1


def _package(path: Path) -> str:
    relative = path.relative_to(ROOT).with_suffix("")
    return ".".join(relative.parts[:2]) if len(relative.parts) > 2 else "lab"


def _imports(path: Path) -> list[str]:
    """Every lab module `path` imports, at the top or inside a function, as dotted names."""
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names if alias.name.startswith("lab")]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("lab"):
            names.append(node.module)
            names += [f"{node.module}.{alias.name}" for alias in node.names if alias.name.startswith("_")]
    return names


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_a_module_imports_only_its_own_layer_and_those_below(path):
    own = _layer(".".join(path.relative_to(ROOT).with_suffix("").parts))
    upward = [name for name in _imports(path) if _layer(name) > own]
    assert not upward, f"{path.relative_to(ROOT)} imports from a layer above it: {upward}"


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_imports_a_private_module_of_another_package(path):
    package = _package(path)
    foreign = [
        name
        for name in _imports(path)
        if any(part.startswith("_") for part in name.split(".")[2:])
        and not name.startswith(package + ".")
        and name.split(".")[1] not in ("_arrays",)
    ]
    assert not foreign, f"{path.relative_to(ROOT)} reaches into another package's private module: {foreign}"


def test_lab_root_modules_import_no_layer():
    for path in LAB.glob("*.py"):
        assert all(_layer(name) == -1 for name in _imports(path)), path.name


def test_every_package_says_what_it_holds_and_what_it_may_import():
    for init in LAB.rglob("__init__.py"):
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
        assert doc, f"{init.relative_to(ROOT)} has no docstring"
        if init.parent.parent == LAB:
            assert "import" in doc, f"{init.relative_to(ROOT)} does not say what it may import"


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_is_longer_than_a_reader_holds_in_mind(path):
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= LONGEST_MODULE_LINES, f"{path.relative_to(ROOT)} has {lines} lines"


def _top_level_imports(path: Path) -> set[str]:
    """The top-level package of every absolute import in `path`, at the top or inside a function."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize(
    "path",
    [path for room in ROOMS_ABOVE for path in sorted((ROOT / room).rglob("*.py"))],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_no_module_imports_a_room_above_its_own(path):
    room = path.relative_to(ROOT).parts[0]
    upward = sorted(_top_level_imports(path) & set(ROOMS_ABOVE[room]))
    assert not upward, f"{path.relative_to(ROOT)} imports {upward}, which sit above {room}/"


@pytest.mark.parametrize("room", ["publish", "classroom"])
def test_publishing_and_the_classroom_say_what_they_hold_and_may_import(room):
    doc = ast.get_docstring(ast.parse((ROOT / room / "__init__.py").read_text(encoding="utf-8")))
    assert doc and "May import:" in doc, f"{room}/__init__.py does not say what it may import"
