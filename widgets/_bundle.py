"""Bundle a widget's ES module with the modules it imports into one module string.

anywidget loads `_esm` as a single module (no relative imports), and the standalone pages inline
it into one file. The sources are ordinary ES modules, so editors and node read them as they are:
a widget imports from the JS codec and from "./ui.js", and those import what they need in turn.
This follows those imports from the widget, orders the modules so each comes after everything it
imports, and joins them, each once, with the import lines removed and the `export` keywords of
everything but the widget dropped (they become module-private in the bundle).

Joining modules puts their top-level names into one scope, so the build checks what a module
loader would have checked, and what joining adds: an imported name must be exported by the
module named, imports must not form a cycle, and no two modules may declare the same top-level
name (one would silently shadow the other). Only relative imports are followed; a bare or URL
import is refused, because the lab must work offline. Nothing here computes anything.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

HERE = Path(__file__).resolve().parent

# One import statement, which may span lines: `import {\n  a,\n  b,\n} from "./x.js";`
_IMPORT_STATEMENT = re.compile(r"^import\b[^;]*;[ \t]*\n?", re.MULTILINE)
_NAMED_IMPORT = re.compile(r"import\s*\{(?P<names>[^}]*)\}\s*from\s*(?P<quote>[\"'])(?P<spec>[^\"']+)(?P=quote)\s*;\s*")
_SPECIFIER = re.compile(r"(?:from\s*|^import\s*)[\"'](?P<spec>[^\"']+)[\"']")
_DYNAMIC_IMPORT = re.compile(r"(?<![\w.$])import\s*\(")
_DECLARATION = re.compile(
    r"^(?P<export>export\s+)?(?:async\s+)?(?:function\s*\*?|class|const|let|var)\s+(?P<name>[A-Za-z_$][\w$]*)",
    re.MULTILINE,
)
_DESTRUCTURING = re.compile(r"^(?:export\s+)?(?:const|let|var)\s*[{\[]", re.MULTILINE)
_REEXPORT = re.compile(r"^export\s*(?:\*|\{[^}]*\})\s*from\b", re.MULTILINE)
_EXPORT_LIST = re.compile(r"^export\s*\{", re.MULTILINE)
_EXPORT_DEFAULT = re.compile(r"^export\s+default\b", re.MULTILINE)
_EXPORT = re.compile(r"^export\s+(?=(?:async\s+)?(?:function|class|const|let|var)\b)", re.MULTILINE)
_IDENTIFIER = re.compile(r"[A-Za-z_$][\w$]*")


class BundleError(ValueError):
    """A widget's modules cannot be joined into one module; the message names the file and why."""


@dataclass(frozen=True)
class _Module:
    path: Path
    body: str  # the source without its import statements
    imports: tuple[tuple[Path, tuple[str, ...]], ...]  # (module imported, names), in source order
    exports: frozenset[str]
    declared: tuple[str, ...]  # every top-level const/let/var/function/class name


def _name(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()


def _read(path: Path, root: Path, *, entry: bool) -> _Module:
    where = _name(path, root)
    source = path.read_text(encoding="utf-8")
    if _DYNAMIC_IMPORT.search(source):
        raise BundleError(f"{where} uses a dynamic import(); only static relative imports can be bundled")
    if _REEXPORT.search(source):
        raise BundleError(
            f"{where} re-exports from another module (export … from); import from the module that declares the name"
        )
    if not entry and (_EXPORT_LIST.search(source) or _EXPORT_DEFAULT.search(source)):
        raise BundleError(
            f"{where} is imported by another module, so it may only export declarations (export function …)"
        )
    if _DESTRUCTURING.search(source):
        raise BundleError(f"{where} declares top-level names by destructuring; declare each name on its own")
    imports = []
    for statement in _IMPORT_STATEMENT.finditer(source):
        text = statement.group().strip()
        spec = _SPECIFIER.search(text)
        if spec and not spec["spec"].startswith(("./", "../")):
            raise BundleError(
                f'{where} imports "{spec["spec"]}": only relative imports ("./", "../") are bundled, '
                "because the lab must work offline with no package or network import"
            )
        named = _NAMED_IMPORT.fullmatch(text)
        if named is None:
            raise BundleError(f'{where}: only `import {{ names }} from "./file.js";` can be bundled, got: {text}')
        names = tuple(name.strip() for name in named["names"].split(",") if name.strip())
        for name in names:
            if not _IDENTIFIER.fullmatch(name):
                raise BundleError(
                    f"{where} imports {name!r} from {named['spec']}: renaming imports cannot survive bundling"
                )
        target = (path.parent / named["spec"]).resolve()
        if not target.is_relative_to(root):
            raise BundleError(f"{where} imports {named['spec']}, which is outside {root}")
        if not target.is_file():
            raise BundleError(f"{where} imports {named['spec']}, which does not exist")
        imports.append((target, names))
    declarations = list(_DECLARATION.finditer(source))
    return _Module(
        path=path,
        body=_IMPORT_STATEMENT.sub("", source),
        imports=tuple(imports),
        exports=frozenset(match["name"] for match in declarations if match["export"]),
        declared=tuple(match["name"] for match in declarations),
    )


def _ordered(entry: Path, root: Path) -> list[_Module]:
    """The entry and every module it reaches, each after the modules it imports (depth first)."""
    modules: dict[Path, _Module] = {}
    order: list[_Module] = []
    open_stack: list[Path] = []

    def visit(path: Path) -> None:
        if path in open_stack:
            cycle = [*open_stack[open_stack.index(path) :], path]
            raise BundleError("import cycle: " + " -> ".join(_name(p, root) for p in cycle))
        if path in modules:
            return
        module = _read(path, root, entry=path == entry)
        open_stack.append(path)
        for target, names in module.imports:
            visit(target)
            missing = [name for name in names if name not in modules[target].exports]
            if missing:
                raise BundleError(
                    f"{_name(path, root)} imports {', '.join(missing)} from {_name(target, root)}, which does not export "
                    f"{'it' if len(missing) == 1 else 'them'}"
                )
        open_stack.pop()
        modules[path] = module
        order.append(module)

    visit(entry)
    return order


def _check_collisions(modules: list[_Module], root: Path) -> None:
    owner: dict[str, Path] = {}
    for module in modules:
        for name in module.declared:
            if name in owner:
                if owner[name] == module.path:
                    where = f"twice in {_name(module.path, root)}"
                else:
                    where = f"in {_name(owner[name], root)} and in {_name(module.path, root)}"
                raise BundleError(
                    f"top-level name {name!r} is declared {where}; in one bundle one would shadow the other, so rename one"
                )
            owner[name] = module.path


@cache
def bundle(widget_file: str, root: Path = HERE) -> str:
    """The widget module `widget_file` (relative to `root`) and everything it imports, as one module."""
    root = Path(root).resolve()
    entry = (root / widget_file).resolve()
    if not entry.is_file():
        raise BundleError(f"{widget_file} does not exist under {root}")
    modules = _ordered(entry, root)
    _check_collisions(modules, root)
    parts = []
    for module in modules:
        body = module.body if module.path == entry else _EXPORT.sub("", module.body)
        parts.append(f"// ---- {_name(module.path, root)} ----\n{body.strip()}\n")
    return "\n".join(parts)


@cache
def stylesheet() -> str:
    return (HERE / "lab.css").read_text(encoding="utf-8")
