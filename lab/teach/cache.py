"""An on-disk cache of computed results, keyed by everything that decides them.

The real-model study quantizes 22.7 M weights in every format; its numbers depend only on the
weights, the format (its registry name and rounding preset), the lab's version and the source
code that computes them. A key built from hashes of all of those names one result exactly, so
a second look at the same weights reads the numbers back instead of working them out again,
and any change to an input (a different tensor, an edited format module) simply misses.

The folder is `$LAB_CACHE_DIR` when set (the tests point it at a temporary folder), else
`$XDG_CACHE_HOME/four-bit-lab`, else `~/.cache/four-bit-lab`. Entries are small JSON files,
written atomically; a damaged or unreadable one counts as a miss. Deleting the folder is always
safe. Every edit of the lab's code starts a new generation of keys and leaves the old entries
behind, so the folder is kept under a size budget: after each write the entries read or written
longest ago are deleted until it fits.
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
import time
from pathlib import Path
from types import ModuleType

import numpy as np

import lab

CACHE_ENV = "LAB_CACHE_DIR"
CACHE_FOLDER_NAME = "four-bit-lab"
#: the most the whole cache folder holds, every namespace together. One generation of every
#: notebook's results is about 8 MB, so this keeps a few dozen generations.
CACHE_BUDGET_BYTES = 256 * 2**20
#: a temporary file this old is left over from a write that never finished
STALE_TEMPORARY_SECONDS = 3600


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


#: the bytes in each cache folder as this process last counted them, plus what it wrote since:
#: the folder is listed again only when that reaches the budget, not on every write
_FOLDER_BYTES: dict[Path, int] = {}


class ResultCache:
    """JSON entries under cache_dir()/<namespace>/, one file per key; every namespace in the same
    folder shares one budget of `budget_bytes` (CACHE_BUDGET_BYTES unless given)."""

    def __init__(self, namespace: str, folder: Path | None = None, budget_bytes: int | None = None):
        self.root = cache_dir() if folder is None else Path(folder)
        self.folder = self.root / namespace
        self.budget_bytes = CACHE_BUDGET_BYTES if budget_bytes is None else budget_bytes

    def _path(self, key: str) -> Path:
        return self.folder / f"{key}.json"

    def load(self, key: str):
        """The value stored under key, or None when there is none (or it cannot be read). A hit
        marks the entry as used now, so pruning takes it last."""
        path = self._path(key)
        try:
            value = json.loads(path.read_text())
        except (OSError, ValueError):
            return None
        try:
            os.utime(path)
        except OSError:
            pass  # a read-only cache still serves its entries
        return value

    def load_as(self, key: str, decode):
        """decode(the value stored under key), or None when there is none or decode finds it
        damaged (KeyError, TypeError or ValueError): a damaged entry is a miss, and the caller
        computes the result again and stores it over the entry."""
        entry = self.load(key)
        if entry is None:
            return None
        try:
            return decode(entry)
        except (KeyError, TypeError, ValueError):
            return None

    def store(self, key: str, value) -> None:
        """Store a JSON-able value under key, then prune the folder to its budget. A cache that
        cannot be written (a read-only home, a full disk) only costs the next run its speed, so
        such errors are not raised."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            # Written beside the entry and renamed over it: a reader never sees half a file.
            with tempfile.NamedTemporaryFile("w", dir=self.folder, suffix=".tmp", delete=False) as handle:
                json.dump(value, handle)
            os.replace(handle.name, self._path(key))
            written = self._path(key).stat().st_size
        except OSError:
            return
        counted = _FOLDER_BYTES.get(self.root)
        if counted is None or counted + written > self.budget_bytes:
            self.prune(keep=self._path(key))
        else:
            _FOLDER_BYTES[self.root] = counted + written

    def prune(self, keep: Path | None = None) -> None:
        """Delete the entries used longest ago, in every namespace, until the folder fits the
        budget, and temporary files left by writes that never finished. Only this cache's own
        files (*.json and *.tmp one folder down) are ever deleted; `keep`, the entry just
        written, stays even if it alone is over the budget."""
        entries, now = [], time.time()
        for pattern in ("*/*.json", "*/*.tmp"):
            for path in self.root.glob(pattern):
                try:
                    status = path.stat()
                except OSError:
                    continue  # deleted meanwhile by another process
                if path.suffix == ".tmp":
                    if now - status.st_mtime > STALE_TEMPORARY_SECONDS:
                        path.unlink(missing_ok=True)
                    continue
                entries.append((status.st_mtime_ns, status.st_size, path))
        total = sum(size for _, size, _ in entries)
        for _, size, path in sorted(entries, key=lambda entry: entry[0]):
            if total <= self.budget_bytes:
                break
            if path == keep:
                continue
            try:
                path.unlink(missing_ok=True)
            except OSError:
                continue
            total -= size
        _FOLDER_BYTES[self.root] = total
