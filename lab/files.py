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


@contextlib.contextmanager
def read_only_map(path: str | os.PathLike) -> Iterator[mmap.mmap | bytes]:
    """The file's bytes, read-only: a memory map, or the bytes read whole when the file reports size 0.

    A size of 0 cannot be mapped, and it is also what /proc and other pseudo-files report whatever
    they hold, so those are read instead (which is where /proc/self/mem fails, with EIO). Only
    opening and reading are translated; an error raised inside the `with` body passes unchanged.
    """
    path = Path(path)
    try:
        handle = open(path, "rb")  # closed by the with block below, outside this try
    except OSError as error:
        raise FileReadError(f"cannot open {path}: {error.strerror or error}") from error
    with handle:
        try:
            if os.fstat(handle.fileno()).st_size == 0:
                data: mmap.mmap | bytes = handle.read()
            else:
                data = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        except OSError as error:
            raise FileReadError(f"cannot read {path}: {error.strerror or error}") from error
        with data if isinstance(data, mmap.mmap) else contextlib.nullcontext(data) as buffer:
            yield buffer
