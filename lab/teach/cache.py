"""An on-disk cache of computed results, keyed by everything that decides them.

The real-model study quantizes 22.7 M weights in every format; its numbers depend only on the
weights, the format (its registry name and rounding preset), the lab's version and the source
code that computes them. A key built from hashes of all of those names one result exactly, so
a second look at the same weights reads the numbers back instead of working them out again,
and any change to an input (a different tensor, an edited format module) simply misses.

The folder is `$LAB_CACHE_DIR` when set (the tests point it at a temporary folder), else
`$XDG_CACHE_HOME/four-bit-lab`, else `~/.cache/four-bit-lab`. Entries are small JSON files,
written atomically; a damaged or unreadable one counts as a miss. Deleting the folder is always
safe.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import sys
import tempfile
from pathlib import Path
from types import ModuleType

import numpy as np

import lab

CACHE_ENV = "LAB_CACHE_DIR"
CACHE_FOLDER_NAME = "four-bit-lab"


def cache_dir() -> Path:
    """Where cached results live: $LAB_CACHE_DIR, else $XDG_CACHE_HOME/four-bit-lab, else ~/.cache/four-bit-lab."""
    override = os.environ.get(CACHE_ENV)
    if override:
        return Path(override)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / CACHE_FOLDER_NAME


def digest(*parts: str | bytes | memoryview) -> str:
    """A hex digest of the parts, each length-prefixed so that ("ab", "c") and ("a", "bc") differ.

    SHA-256 rather than BLAKE2: CPUs with SHA instructions hash the model's 90 MB about half as
    fast again, and the parts are hashed in place (a memoryview is not copied).
    """
    hasher = hashlib.sha256()
    for part in parts:
        data = memoryview(part.encode() if isinstance(part, str) else part)
        hasher.update(data.nbytes.to_bytes(8, "little"))
        hasher.update(data)
    return hasher.hexdigest()[:32]


def array_digest(array: np.ndarray) -> str:
    """The digest of an array's dtype, shape and bytes: equal digests mean equal arrays."""
    contiguous = np.ascontiguousarray(array)
    return digest(contiguous.dtype.str, repr(contiguous.shape), memoryview(contiguous).cast("B"))


def source_files(module: ModuleType) -> list[Path]:
    """The source files behind a module: every .py of its package when it lives in one below
    lab.formats (a format such as Q4_K is split over several files), else its own file; [] when
    it has none (a module made at run time)."""
    source = inspect.getsourcefile(module)
    if source is None:
        return []
    path = Path(source)
    package = sys.modules.get(module.__name__.rpartition(".")[0])
    if package is not None and package.__name__.startswith("lab.formats."):
        return sorted(path.parent.glob("*.py"))
    return [path]


def source_digest(paths: list[Path]) -> str:
    """The digest of the named source files' names and bytes."""
    parts: list[str | bytes] = []
    for path in sorted(paths):
        parts += [path.name, path.read_bytes()]
    return digest(*parts)


def lab_version() -> str:
    return lab.__version__


class ResultCache:
    """JSON entries under cache_dir()/<namespace>/, one file per key."""

    def __init__(self, namespace: str, folder: Path | None = None):
        self.folder = (cache_dir() if folder is None else Path(folder)) / namespace

    def _path(self, key: str) -> Path:
        return self.folder / f"{key}.json"

    def load(self, key: str):
        """The value stored under key, or None when there is none (or it cannot be read)."""
        try:
            return json.loads(self._path(key).read_text())
        except (OSError, ValueError):
            return None

    def store(self, key: str, value) -> None:
        """Store a JSON-able value under key. A cache that cannot be written (a read-only home,
        a full disk) only costs the next run its speed, so such errors are not raised."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            # Written beside the entry and renamed over it: a reader never sees half a file.
            with tempfile.NamedTemporaryFile("w", dir=self.folder, suffix=".tmp", delete=False) as handle:
                json.dump(value, handle)
            os.replace(handle.name, self._path(key))
        except OSError:
            return
