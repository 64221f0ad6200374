"""Reading a file the learner names, with the operating system's refusals in the lab's words.

An OSError from open, fstat, read or mmap becomes a FileReadError that names the path and the
reason (no such file, permission denied, a directory, an input/output error), so a reader never
ends in a bare traceback for a file it could not read.
"""

from __future__ import annotations

import contextlib
import mmap
import os
from collections.abc import Iterator
from pathlib import Path

from lab.errors import FileReadError


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
        raise FileReadError(f"cannot open {path}: {error.strerror or error}") from error
    with handle:
        try:
            size = os.fstat(handle.fileno()).st_size
            if size >= max(map_from, 1):
                return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
            return handle.read() if size == 0 and map_from <= 1 else handle.read(map_from)
        except OSError as error:
            raise FileReadError(f"cannot read {path}: {error.strerror or error}") from error


@contextlib.contextmanager
def read_only_map(path: str | os.PathLike) -> Iterator[mmap.mmap | bytes]:
    """map_or_read as a with block: the map is closed at its end.

    Only opening and reading are translated; an error raised inside the `with` body passes unchanged.
    """
    data = map_or_read(path)
    with data if isinstance(data, mmap.mmap) else contextlib.nullcontext(data) as buffer:
        yield buffer
