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

The folder may be shared with other programs (LAB_CACHE_DIR set to ~/.cache or /tmp), so the
cache touches only what it made, by names no other program uses: a namespace's folder is
`<namespace>.lab-cache`, marked when the cache makes it by an empty file `.four-bit-lab-cache`,
and holds entries `<key>.lab-cache.json` and temporaries `<key>.<16 hex digits>.lab-cache-tmp`.
Only such files in such folders are written, read, counted against the budget or deleted; a
folder of that name without the marker is not the cache's, and its namespace keeps nothing
there. The entries of older lab versions (`<namespace>/<key>.json`, with no marker) are left
alone: nothing shows them to be the cache's own, so they are neither read nor deleted.

What the folder holds is not trusted. Each entry carries a checksum of its namespace, key and
value, and one that does not match (an edited number, an entry copied under another key) is a
miss, written again by the next store; an array is read back only in the dtype and shape its
caller asks for. The cache never follows a link: the folder itself may be one (a cache kept on
another disk), resolved once when a ResultCache is made, but a link inside it, in place of a
namespace folder or an entry, is never read, written through, touched or deleted, and nothing
outside the folder is. That needs files opened relative to an open folder (POSIX); where the
system has no such calls (Windows) the cache keeps nothing, and every load is a miss.
"""

from __future__ import annotations

import base64
import contextlib
import errno
import functools
import hashlib
import inspect
import json
import math
import os
import re
import secrets
import stat
import sys
import time
from pathlib import Path
from types import ModuleType

import numpy as np
from numpy.typing import DTypeLike

import lab
from lab.errors import DTypeError, LabError, ShapeError

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


def decode_array(entry: dict, dtype: DTypeLike, shape: tuple[int | None, ...]) -> np.ndarray:
    """The array encode_array() wrote, bit for bit (a writable copy), if it is of the caller's
    dtype (booleans or numbers, in this machine's byte order) and shape (None: any length along
    that axis). Anything else raises DTypeError or ShapeError, ValueErrors both, which
    ResultCache.load_as() takes for a miss: an entry is read only as what its caller wrote."""
    asked = np.dtype(dtype)
    if asked.kind not in "biuf":
        raise DTypeError(f"a cached array is read back as booleans or numbers, not as {asked}")
    if entry["dtype"] != asked.str:
        raise DTypeError(f"the cached array is of dtype {entry['dtype']!r}, not the {asked.str!r} asked for")
    stored = entry["shape"]
    if not (
        isinstance(stored, list)
        and len(stored) == len(shape)
        and all(
            type(length) is int and length >= 0 and want in (None, length)
            for length, want in zip(stored, shape, strict=True)
        )
    ):
        raise ShapeError(f"the cached array is of shape {stored!r}, not the {shape} asked for")
    data = base64.b64decode(entry["bytes"], validate=True)
    if len(data) != asked.itemsize * math.prod(stored):
        raise ShapeError(f"the cached array holds {len(data)} bytes, not those of shape {stored} in {asked}")
    return np.frombuffer(data, dtype=asked).reshape(stored).copy()


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
    stands for every .py below it), e.g. ("codes", "formats", "study/model.py"). Worked out once
    per process, as the code a process runs does not change under it."""
    paths = []
    for name in names:
        path = LAB_ROOT / name
        if not path.exists():  # a module moved and its key would silently stop covering it
            raise LabError(f"lab source {name!r} named in a cache key does not exist under {LAB_ROOT}")
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

#: whether this system opens, lists, renames and deletes files relative to an open folder, and
#: opens without following a link: without all of it a link could be followed, so nothing is kept
CAN_REFUSE_LINKS = (
    all(hasattr(os, flag) for flag in ("O_NOFOLLOW", "O_DIRECTORY", "O_NONBLOCK"))
    and {os.open, os.mkdir, os.rename, os.unlink, os.stat} <= os.supports_dir_fd
    and os.stat in os.supports_follow_symlinks
    and {os.scandir, os.utime} <= os.supports_fd
)
_FOLDER_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
# O_NONBLOCK: opening a named pipe put in an entry's place returns at once, instead of waiting
# for a writer, and is then refused as not a regular file
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)

#: an entry's file is one JSON document, {"checksum": "<digest>", "value": <the value's JSON>}:
#: the checksum comes first and has a fixed length, so the value's bytes are checked as they lie
#: in the file, not as json would write them again
_ENTRY_HEAD, _ENTRY_MIDDLE, _ENTRY_TAIL = b'{"checksum": "', b'", "value": ', b"}"
_VALUE_OFFSET = len(_ENTRY_HEAD) + len(digest()) + len(_ENTRY_MIDDLE)

#: what a namespace or a key may be: a plain file name, so that an entry never lies outside its
#: namespace's folder (no separator, no "..", no hidden name)
_PLAIN_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]*")

#: the names that mark a folder or a file as the cache's own (see the module's docstring)
NAMESPACE_SUFFIX = ".lab-cache"
MARKER_NAME = ".four-bit-lab-cache"
ENTRY_SUFFIX = ".lab-cache.json"
TEMPORARY_SUFFIX = ".lab-cache-tmp"
_NAMESPACE_FOLDER_NAME = re.compile(_PLAIN_NAME.pattern + re.escape(NAMESPACE_SUFFIX))
_ENTRY_NAME = re.compile(_PLAIN_NAME.pattern + re.escape(ENTRY_SUFFIX))
_TEMPORARY_NAME = re.compile(_PLAIN_NAME.pattern + r"\.[0-9a-f]{16}" + re.escape(TEMPORARY_SUFFIX))


def _checked_name(name: str, what: str) -> str:
    if not (isinstance(name, str) and _PLAIN_NAME.fullmatch(name)):
        raise LabError(f"a cache {what} is a plain name of letters, digits, '_', '-' and '.'; got {name!r}")
    return name


@contextlib.contextmanager
def _open_folder(name: str | Path, parent: int | None = None):
    """A folder's descriptor, opened relative to `parent`'s, never through a link (OSError if it is one)."""
    descriptor = os.open(name, _FOLDER_FLAGS, dir_fd=parent)
    try:
        yield descriptor
    finally:
        os.close(descriptor)


def _is_marked(folder: int) -> bool:
    """Whether the open folder carries the marker the cache puts in each folder it makes."""
    try:
        status = os.stat(MARKER_NAME, dir_fd=folder, follow_symlinks=False)
    except OSError:
        return False
    return stat.S_ISREG(status.st_mode)


def _namespace_folders_in(root: int, opened: contextlib.ExitStack):
    """(name, descriptor) of each namespace folder the cache made in the open folder `root`,
    kept open by `opened`; another program's folders are not opened, and links are not followed."""
    with os.scandir(root) as listing:
        for found in listing:
            if not (_NAMESPACE_FOLDER_NAME.fullmatch(found.name) and found.is_dir(follow_symlinks=False)):
                continue
            try:
                descriptor = opened.enter_context(_open_folder(found.name, root))
            except OSError:
                continue  # deleted meanwhile, or replaced by a link
            if _is_marked(descriptor):
                yield found.name, descriptor


def _files_in(folder: int):
    """(name, status) of each regular file in the open folder; links and anything else are passed over."""
    with os.scandir(folder) as listing:
        for found in listing:
            if not found.is_file(follow_symlinks=False):
                continue
            try:
                status = found.stat(follow_symlinks=False)
            except OSError:
                continue  # deleted meanwhile by another process
            yield found.name, status


class ResultCache:
    """JSON entries under cache_dir()/<namespace>.lab-cache/, one file per key; every namespace in
    the same folder shares one budget of `budget_bytes` (CACHE_BUDGET_BYTES unless given). The
    folder is resolved once, here: a link given as the folder is followed now, and never again."""

    def __init__(self, namespace: str, folder: Path | None = None, budget_bytes: int | None = None):
        self.namespace = _checked_name(namespace, "namespace")
        self.root = Path(os.path.realpath(cache_dir() if folder is None else folder))
        self.folder = self.root / f"{namespace}{NAMESPACE_SUFFIX}"
        self.budget_bytes = CACHE_BUDGET_BYTES if budget_bytes is None else budget_bytes

    def _path(self, key: str) -> Path:
        return self.folder / f"{key}{ENTRY_SUFFIX}"

    def _entry(self, key: str, payload: bytes) -> bytes:
        # The checksum finds an edited or damaged entry, and one copied under another key or
        # namespace. It is not a secret: whoever can write the folder can write a valid entry,
        # as they could write the lab's own code.
        checksum = digest(self.namespace, key, payload).encode("ascii")
        return _ENTRY_HEAD + checksum + _ENTRY_MIDDLE + payload + _ENTRY_TAIL

    @contextlib.contextmanager
    def _namespace_folder(self, create: bool = False):
        """The namespace's folder, opened below the cache folder without following a link; an
        OSError when it is not one the cache made. `create` makes it, marked, if there is none."""
        if create:
            os.makedirs(self.root, exist_ok=True)
        with _open_folder(self.root) as root:
            made = False
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(self.folder.name, dir_fd=root)
                    made = True
            with _open_folder(self.folder.name, root) as folder:
                if made:  # O_EXCL: only the folder this call made gets a marker
                    os.close(os.open(MARKER_NAME, _WRITE_FLAGS, 0o600, dir_fd=folder))
                elif not _is_marked(folder):
                    raise OSError(errno.EEXIST, f"a folder the cache did not make stands at {self.folder}")
                yield folder

    def load(self, key: str):
        """The value stored under key, or None when there is none, it cannot be read, it is not a
        regular file of one name (a link, a hard link, a pipe) or its checksum does not match. A
        hit marks the entry as used now, so pruning takes it last."""
        name = f"{_checked_name(key, 'key')}{ENTRY_SUFFIX}"
        if not CAN_REFUSE_LINKS:
            return None
        try:
            with self._namespace_folder() as folder, open(os.open(name, _READ_FLAGS, dir_fd=folder), "rb") as handle:
                status = os.fstat(handle.fileno())
                # a hard link's other name may lie outside the folder, and os.utime would touch it
                if not stat.S_ISREG(status.st_mode) or status.st_nlink > 1:
                    return None
                data = handle.read()
                payload = data[_VALUE_OFFSET : -len(_ENTRY_TAIL)]
                if data != self._entry(key, payload):
                    return None
                value = json.loads(payload)
                with contextlib.suppress(OSError):  # a read-only cache still serves its entries
                    os.utime(handle.fileno())
        except (OSError, ValueError, RecursionError):
            return None
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

    def _write(self, key: str, entry: bytes) -> None:
        """Write the entry's bytes under key, atomically; OSError when the cache cannot."""
        name = f"{key}{ENTRY_SUFFIX}"
        temporary = f"{key}.{secrets.token_hex(8)}{TEMPORARY_SUFFIX}"
        with self._namespace_folder(create=True) as folder:
            try:
                with open(os.open(temporary, _WRITE_FLAGS, 0o600, dir_fd=folder), "wb") as handle:
                    handle.write(entry)
                # Renamed over the entry: a reader never sees half a file, and a link in the
                # entry's place is itself replaced, its target left as it was.
                os.replace(temporary, name, src_dir_fd=folder, dst_dir_fd=folder)
            except OSError:
                with contextlib.suppress(OSError):
                    os.unlink(temporary, dir_fd=folder)
                raise

    def store(self, key: str, value) -> None:
        """Store a JSON-able value under key, then prune the folder to its budget. A cache that
        cannot be written (a read-only home, a full disk, a link in its way) only costs the next
        run its speed, so such errors are not raised (why_not_kept() says what they are)."""
        _checked_name(key, "key")
        if not CAN_REFUSE_LINKS:
            return
        entry = self._entry(key, json.dumps(value).encode("ascii"))
        try:
            self._write(key, entry)
        except OSError:
            return
        counted = _FOLDER_BYTES.get(self.root)
        if counted is None or counted + len(entry) > self.budget_bytes:
            self.prune(keep=self._path(key))
        else:
            _FOLDER_BYTES[self.root] = counted + len(entry)

    def why_not_kept(self) -> str | None:
        """Why what this cache stores would not be kept, in a few words, or None when it would be:
        a probe entry is written, read back and deleted. A long job asks first, so that it can say
        so rather than promise that the next run reads its results back."""
        if not CAN_REFUSE_LINKS:
            return "this system cannot refuse links, so the cache keeps nothing"
        key = f"probe-{secrets.token_hex(8)}"
        try:
            self._write(key, self._entry(key, b"true"))
        except OSError as error:
            reason = error.strerror or str(error)
            return reason[:1].lower() + reason[1:]
        kept = self.load(key) is True
        with contextlib.suppress(OSError), self._namespace_folder() as folder:
            os.unlink(self._path(key).name, dir_fd=folder)
        return None if kept else "what it writes is not read back"

    def prune(self, keep: Path | None = None) -> None:
        """Delete the entries used longest ago, in every namespace, until the folder fits the
        budget, and temporary files left by writes that never finished. Only this cache's own
        files (regular files named as its entries and temporaries, in the namespace folders it
        made and marked) are counted or ever deleted; links, and whatever they point at, are left
        alone. `keep`, the entry just written, stays even if it alone is over the budget."""
        if not CAN_REFUSE_LINKS:
            return
        entries, now = [], time.time()
        try:
            with _open_folder(self.root) as root, contextlib.ExitStack() as opened:
                for namespace, folder in _namespace_folders_in(root, opened):
                    for name, status in _files_in(folder):
                        if _TEMPORARY_NAME.fullmatch(name) and now - status.st_mtime > STALE_TEMPORARY_SECONDS:
                            with contextlib.suppress(OSError):
                                os.unlink(name, dir_fd=folder)
                        elif _ENTRY_NAME.fullmatch(name):
                            path = self.root / namespace / name
                            entries.append((status.st_mtime_ns, status.st_size, folder, name, path))
                total = sum(size for _, size, _, _, _ in entries)
                # Deleted by name in the folder opened above: a name swapped for a link since is
                # unlinked as a link, and a namespace folder swapped for one is not followed.
                for _, size, folder, name, path in sorted(entries, key=lambda entry: entry[0]):
                    if total <= self.budget_bytes:
                        break
                    if path == keep:
                        continue
                    try:
                        os.unlink(name, dir_fd=folder)
                    except FileNotFoundError:
                        pass  # deleted meanwhile by another process: its bytes are gone all the same
                    except OSError:
                        continue
                    total -= size
        except OSError:
            return  # no folder yet, or one that cannot be listed
        _FOLDER_BYTES[self.root] = total
