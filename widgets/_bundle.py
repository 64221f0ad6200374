"""Bundle a widget's ES module with the shared codec and UI helpers into one module string.

anywidget loads `_esm` as a single module (no relative imports), and the standalone pages inline
it into one file, so the widget sources import from "./codec.js" and "./ui.js" for editors and
node, and this joins them in dependency order with those import lines removed. The codec exists
once, in codec.js; nothing here computes anything.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHARED = ("codec.js", "ui.js")
_LOCAL_IMPORT = re.compile(r'^import\s*\{[^}]*\}\s*from\s*"\./[a-z_]+\.js";\s*$', re.MULTILINE)
_EXPORT = re.compile(r"^export (?=(const|function|let|class) )", re.MULTILINE)


@cache
def bundle(widget_file: str) -> str:
    parts = []
    for name in (*SHARED, widget_file):
        source = (HERE / name).read_text(encoding="utf-8")
        source = _LOCAL_IMPORT.sub("", source)
        if name != widget_file:
            source = _EXPORT.sub("", source)  # the shared pieces become module-private
        parts.append(f"// ---- {name} ----\n{source.strip()}\n")
    return "\n".join(parts)


@cache
def stylesheet() -> str:
    return (HERE / "lab.css").read_text(encoding="utf-8")
