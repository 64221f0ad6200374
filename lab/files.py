"""Reading a file the learner names, and writing inside a folder the lab was given, with the
operating system's refusals in the lab's words.

An OSError from open, fstat, read or mmap becomes a FileReadError that names the path and the
reason (no such file, permission denied, a directory, an input/output error, a name too long), so
a reader never ends in a bare traceback for a file it could not read. The path is named as
`shown_path` writes it: a pasted page of text is not echoed whole, and control characters show.

Every file the lab writes goes through write_inside (or copy_inside): the one safe write. It never
leaves the folder it was given and never writes through a link, and a file is whole or not there:

    write_inside(folder, relative, data, replace=...)   write `relative` inside `folder`, atomically
    copy_inside(folder, relative, source, replace=...)  the same with a file's bytes
    check_inside(folder, relative, replace=...)          every refusal write_inside would give, writing nothing
    check_folder_inside(folder, relative)               the same for a folder the writes go into
    exists_inside(folder, relative)                     whether anything, a link included, has that name
    names_inside(folder)                                what the folder holds, links included, none followed
    remove_inside(folder, relative)                     delete a file or a whole folder, links unlinked, never followed

`folder` is the place the caller was given (an -o argument): a link given as the folder is followed
once, when it is opened, as the cache folder is. Below it nothing is followed: each part of
`relative` is opened relative to the folder opened before it with O_NOFOLLOW, so a link in place of
a subfolder or of the file is refused (UnsafeWriteError), whatever it points at, dangling or not,
and so is a name that is there but not a regular file (a folder, a pipe). Missing subfolders are
made. The bytes go to a new temporary file in the target's folder (O_EXCL | O_NOFOLLOW), renamed
over the name only once whole, and removed when anything fails, so a failed or interrupted write
leaves neither half a file nor a stray temporary one. That needs files opened relative to an open
folder (POSIX); where the system has no such calls (Windows) each part is checked for a link and
then written, which refuses the same links but leaves a moment between the check and the write.
"""

from __future__ import annotations

import contextlib
import errno
import mmap
import os
import secrets
import shutil
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import BinaryIO

from lab.errors import FileReadError, LabError
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


class UnsafeWriteError(LabError):
    """A write refused so that nothing outside the folder the lab was given is touched: a link or
    something other than a folder or a regular file where the path goes, a path that climbs out of
    the folder, or a file already there that the writer may not replace."""


#: whether this system opens, makes, renames, lists and deletes names relative to an open folder,
#: and opens without following a link; without all of it writes fall back to check-then-write
CAN_REFUSE_LINKS = (
    all(hasattr(os, flag) for flag in ("O_NOFOLLOW", "O_DIRECTORY", "O_NONBLOCK"))
    and {os.open, os.mkdir, os.stat, os.rename, os.unlink} <= os.supports_dir_fd
    and os.scandir in os.supports_fd
    and shutil.rmtree.avoids_symlink_attacks
)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
#: the folder given is opened following a link (it was named by the caller); a folder below it is not
_GIVEN_FOLDER_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _CLOEXEC
_FOLDER_FLAGS = _GIVEN_FOLDER_FLAGS | _NOFOLLOW
# O_NONBLOCK: a named pipe in a file's place opens at once, instead of waiting for a writer, and is
# then refused as not a regular file
_READ_FLAGS = os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | _CLOEXEC
_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC | getattr(os, "O_BINARY", 0)
#: how much of an existing file a `replace` test is shown: a mark that says who wrote the file sits in its head
HEAD_BYTES = 1024

#: may a file already there be replaced: always, never, or as a test of its first HEAD_BYTES says
Replace = bool | Callable[[bytes], bool]


@dataclass(frozen=True)
class _Folder:
    """An open folder: its path, for messages, and its descriptor (None where the system cannot open
    names relative to a folder, and the path is used instead)."""

    path: Path
    descriptor: int | None

    def at(self, name: str) -> tuple[str, int | None]:
        """What an os call takes for `name` in this folder: the name and the folder's descriptor."""
        return (name, self.descriptor) if self.descriptor is not None else (os.fspath(self.path / name), None)

    def status(self, name: str) -> os.stat_result | None:
        """`name`'s own status, a link's and not its target's; None when there is nothing of that name."""
        where, folder = self.at(name)
        try:
            return os.stat(where, dir_fd=folder, follow_symlinks=False)
        except FileNotFoundError:
            return None


def _parts(relative: str | os.PathLike) -> tuple[str, ...]:
    path = PurePath(relative)
    if path.anchor or not path.parts or ".." in path.parts:
        raise UnsafeWriteError(f"{shown_path(relative)} is not a name inside the folder written into")
    return path.parts


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a link"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISREG(mode):
        return "a file"
    return "a pipe, socket or device"


def _refusal(path: Path, mode: int, wanted: str) -> UnsafeWriteError:
    if stat.S_ISLNK(mode):
        return UnsafeWriteError(
            f"{shown_path(path)} is a link, and the lab never writes through one: remove it or write somewhere else"
        )
    return UnsafeWriteError(f"{shown_path(path)} is {_kind(mode)}, not {wanted}, so nothing is written there")


def _open_folder(path: Path, parent: _Folder | None, opened: contextlib.ExitStack) -> _Folder:
    """The folder at `path`, `parent`/its name opened without following a link (the folder given,
    with no parent, is opened as named). Closed by `opened`."""
    if not CAN_REFUSE_LINKS:
        if not stat.S_ISDIR(os.stat(path).st_mode):
            raise UnsafeWriteError(f"{shown_path(path)} is not a folder, so nothing is written inside it")
        return _Folder(path, None)
    try:
        if parent is None:
            descriptor = os.open(path, _GIVEN_FOLDER_FLAGS)
        else:
            descriptor = os.open(path.name, _FOLDER_FLAGS, dir_fd=parent.descriptor)
    except OSError as error:
        if error.errno not in (errno.ENOTDIR, errno.ELOOP):
            raise
        if parent is None:
            raise UnsafeWriteError(f"{shown_path(path)} is not a folder, so nothing is written inside it") from None
        raise _refusal(path, stat.S_IFLNK, "a folder") from None  # a folder swapped for a link since it was looked at
    opened.callback(os.close, descriptor)
    return _Folder(path, descriptor)


@contextlib.contextmanager
def _opened(folder: str | os.PathLike, parts: tuple[str, ...], *, create: bool) -> Iterator[_Folder | None]:
    """The folder `folder`/`parts`, every part below `folder` opened without following a link and
    made when missing if `create`; None when a part, or `folder`, is missing and not to be made."""
    with contextlib.ExitStack() as opened:
        try:
            current = _open_folder(Path(folder), None, opened)
        except FileNotFoundError:
            if create:
                raise
            yield None
            return
        for part in parts:
            status = current.status(part)
            if status is None and create:
                where, parent = current.at(part)
                with contextlib.suppress(FileExistsError):  # made meanwhile by another writer
                    os.mkdir(where, dir_fd=parent)
                status = current.status(part)
            if status is None:
                yield None
                return
            if not stat.S_ISDIR(status.st_mode):
                raise _refusal(current.path / part, status.st_mode, "a folder")
            current = _open_folder(current.path / part, current, opened)
        yield current


def _head(folder: _Folder, name: str) -> bytes:
    where, parent = folder.at(name)
    with open(os.open(where, _READ_FLAGS, dir_fd=parent), "rb") as handle:
        mode = os.fstat(handle.fileno()).st_mode
        if not stat.S_ISREG(mode):
            raise _refusal(folder.path / name, mode, "a regular file")
        return handle.read(HEAD_BYTES)


def _check_entry(folder: _Folder, name: str, replace: Replace) -> None:
    """Raise UnsafeWriteError unless `name` in `folder` is free, or a regular file `replace` allows replacing."""
    status = folder.status(name)
    if status is None:
        return
    path = folder.path / name
    if not stat.S_ISREG(status.st_mode):
        raise _refusal(path, status.st_mode, "a regular file")
    if replace is True or (replace is not False and replace(_head(folder, name))):
        return
    raise UnsafeWriteError(
        f"{shown_path(path)} is already there and this command did not write it, so it is left as it is: "
        "move it or write somewhere else"
    )


def _write(
    folder: str | os.PathLike, relative: str | os.PathLike, fill: Callable[[BinaryIO], object], replace: Replace
):
    parts = _parts(relative)
    with _opened(folder, parts[:-1], create=True) as place:
        name = parts[-1]
        _check_entry(place, name, replace)
        temporary, parent = place.at(f".lab-{secrets.token_hex(8)}.tmp")
        # 0o666 less the umask, as any file the user makes: a built page is for others to read
        descriptor = os.open(temporary, _WRITE_FLAGS, 0o666, dir_fd=parent)
        try:
            with open(descriptor, "wb") as handle:
                fill(handle)
            # the name itself is replaced: a link put there since is replaced too, its target untouched
            os.replace(temporary, place.at(name)[0], src_dir_fd=parent, dst_dir_fd=parent)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary, dir_fd=parent)
            raise
    return Path(folder, *parts)


def write_inside(
    folder: str | os.PathLike, relative: str | os.PathLike, data: bytes | str, *, replace: Replace = True
) -> Path:
    """Write `data` (a str as UTF-8) as `folder`/`relative` and return that path, making missing
    subfolders below `folder` (which must exist). A file already there is replaced if `replace` is
    True, or a test of its first HEAD_BYTES bytes that answers True; otherwise, and for a link or
    anything not a regular file in the way, UnsafeWriteError. OSError for what the system refuses."""
    body = data.encode("utf-8") if isinstance(data, str) else data
    return _write(folder, relative, lambda handle: handle.write(body), replace)


def copy_inside(
    folder: str | os.PathLike, relative: str | os.PathLike, source: str | os.PathLike, *, replace: Replace = True
) -> Path:
    """write_inside with the bytes of the file `source` (read as the caller names it), streamed."""
    with open(source, "rb") as original:
        return _write(folder, relative, lambda handle: shutil.copyfileobj(original, handle), replace)


def check_inside(folder: str | os.PathLike, relative: str | os.PathLike, *, replace: Replace = True) -> None:
    """Raise the UnsafeWriteError write_inside would raise for `relative`, writing nothing: so a
    command that writes many files can refuse before its first."""
    parts = _parts(relative)
    with _opened(folder, parts[:-1], create=False) as place:
        if place is not None:
            _check_entry(place, parts[-1], replace)


def check_folder_inside(folder: str | os.PathLike, relative: str | os.PathLike) -> None:
    """Raise UnsafeWriteError unless each part of `relative` below `folder` is a real folder or missing."""
    with _opened(folder, _parts(relative), create=False):
        pass


def exists_inside(folder: str | os.PathLike, relative: str | os.PathLike) -> bool:
    """Whether anything has the name `relative` in `folder`: a link counts, dangling or not."""
    parts = _parts(relative)
    with _opened(folder, parts[:-1], create=False) as place:
        return place is not None and place.status(parts[-1]) is not None


def names_inside(folder: str | os.PathLike) -> list[str]:
    """The names in `folder`, links among them, sorted; [] when there is no such folder."""
    with _opened(folder, (), create=False) as place:
        if place is None:
            return []
        with os.scandir(place.descriptor if place.descriptor is not None else place.path) as listing:
            return sorted(found.name for found in listing)


def remove_inside(folder: str | os.PathLike, relative: str | os.PathLike) -> None:
    """Delete `folder`/`relative`, a file or a folder and all it holds; nothing when it is not there.
    A link, there or anywhere inside, is deleted as a link: what it points at is never touched."""
    parts = _parts(relative)
    with _opened(folder, parts[:-1], create=False) as place:
        status = None if place is None else place.status(parts[-1])
        if status is None:
            return
        where, parent = place.at(parts[-1])
        if stat.S_ISDIR(status.st_mode):
            # with a folder's descriptor rmtree opens each level without following links, and
            # refuses a link swapped in for the folder itself
            shutil.rmtree(where, dir_fd=parent)
        else:
            os.unlink(where, dir_fd=parent)
