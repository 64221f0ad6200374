"""Reading a file the learner names, with the operating system's refusals in the lab's words.

An OSError from open, fstat, read or mmap becomes a FileReadError that names the path and the
reason (no such file, permission denied, a directory, an input/output error, a name too long), so
a reader never ends in a bare traceback for a file it could not read. The path is named as
`shown_path` writes it: a pasted page of text is not echoed whole, and control characters show.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from lab.errors import FileReadError
from lab.text import visible

#: the longest path a message repeats whole; a longer one keeps its start and its end
SHOWN_PATH_CHARS = 120


def shown_path(path: str | os.PathLike) -> str:
    """`path` as a message names it: hidden characters spelt out (lab.text.visible: a NUL shows as \\x00), and a
    path longer than SHOWN_PATH_CHARS cut in the middle, where an ellipsis says so."""
    text = visible(os.fspath(path))
    if len(text) <= SHOWN_PATH_CHARS:
        return text
    half = (SHOWN_PATH_CHARS - 1) // 2
    return f"{text[:half]}…{text[-half:]}"


def is_regular_file(path: str | os.PathLike) -> bool:
    """Whether `path` names a regular file rather than a folder, a device or a pipe. Where there is
    nothing to name, FileReadError says why: no such file, a NUL in the name, a name too long for
    the file system, no permission to look (Path.is_file answers False or lets an OSError out)."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except ValueError as error:  # a NUL: no file system has such a name, so nothing to stat
        raise FileReadError(f"cannot open {shown_path(path)}: a file name cannot hold a NUL character") from error
    except OSError as error:
        raise FileReadError(f"cannot open {shown_path(path)}: {error.strerror or error}") from error


def map_or_read(path: str | os.PathLike, *, map_from: int = 1) -> mmap.mmap | bytes:
    """The file's bytes, read-only: a memory map the caller closes, or bytes read for a file that
    reports fewer than `map_from` bytes (an empty file cannot be mapped, and a file too short for
    what the caller looks for needs no map).

    Bytes read are at most `map_from`, except with the default `map_from=1`, where a file reporting
    size 0 is read whole: /proc and other pseudo-files report 0 whatever they hold. Reading is where
    /proc/self/mem fails, with EIO; that becomes a FileReadError naming the path.
    """
    path = Path(path)
    try:
        handle = open(path, "rb")  # closed by the with block below, outside this try
    except OSError as error:
        raise FileReadError(f"cannot open {shown_path(path)}: {error.strerror or error}") from error
    with handle:
        try:
            size = os.fstat(handle.fileno()).st_size
            if size >= max(map_from, 1):
                return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
            return handle.read() if size == 0 and map_from <= 1 else handle.read(map_from)
        except OSError as error:
            raise FileReadError(f"cannot read {shown_path(path)}: {error.strerror or error}") from error


@contextlib.contextmanager
def read_only_map(path: str | os.PathLike) -> Iterator[mmap.mmap | bytes]:
    """map_or_read as a with block: the map is closed at its end.

    Only opening and reading are translated; an error raised inside the `with` body passes unchanged.
    """
    data = map_or_read(path)
    with data if isinstance(data, mmap.mmap) else contextlib.nullcontext(data) as buffer:
        yield buffer
