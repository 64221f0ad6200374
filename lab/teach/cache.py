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

import base64
import functools
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


def encode_array(array: np.ndarray) -> dict:
    """A JSON-able form of an array that gives back the same dtype, shape and bytes (decode_array)."""
    contiguous = np.ascontiguousarray(array)
    return {
        "dtype": contiguous.dtype.str,
        "shape": list(contiguous.shape),
        "bytes": base64.b64encode(memoryview(contiguous).cast("B")).decode("ascii"),
    }


def decode_array(entry: dict) -> np.ndarray:
    """The array encode_array() wrote, bit for bit (a writable copy)."""
    data = base64.b64decode(entry["bytes"])
    return np.frombuffer(data, dtype=np.dtype(entry["dtype"])).reshape(entry["shape"]).copy()


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
    """The digest of the named files' names and bytes."""
    parts: list[str | bytes] = []
    for path in sorted(paths):
        parts += [path.name, path.read_bytes()]
    return digest(*parts)


#: the lab package's folder: lab_source_digest() names files relative to it
LAB_ROOT = Path(lab.__file__).resolve().parent


@functools.cache
def lab_source_digest(names: tuple[str, ...]) -> str:
    """The digest of the lab's own source files named relative to the lab package (a folder
    stands for every .py below it), e.g. ("codes", "formats", "teach/model.py"). Worked out once
    per process, as the code a process runs does not change under it."""
    paths = []
    for name in names:
        path = LAB_ROOT / name
        paths += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    return source_digest(paths)


def _file_signature(path: Path) -> list:
    status = path.stat()
    return [str(path), status.st_size, status.st_mtime_ns, status.st_ctime_ns, status.st_ino]


#: files_digest's memo: digests of files already hashed, by their paths and stat signatures
_FILES_DIGESTS: dict[str, str] = {}


def files_digest(paths: list[Path]) -> str:
    """The digest of the named data files' names and bytes (a model's weights and configuration).

    Hashing 90 MB of weights takes a tenth of a second and reads every byte, so the digest is
    remembered, in the process and in the cache folder, under the files' paths and stat signatures
    (size, modification and change times, inode), as git's index remembers file contents: any
    write to a file changes its signature, and the files are hashed again.
    """
    paths = sorted(Path(path) for path in paths)
    signature = digest(json.dumps([_file_signature(path) for path in paths]))
    if signature not in _FILES_DIGESTS:
        store = ResultCache("file_digests")
        entry = store.load(signature)
        if isinstance(entry, dict) and isinstance(entry.get("digest"), str):
            _FILES_DIGESTS[signature] = entry["digest"]
        else:
            _FILES_DIGESTS[signature] = source_digest(paths)
            store.store(signature, {"digest": _FILES_DIGESTS[signature]})
    return _FILES_DIGESTS[signature]


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
