"""lab.files.write_inside, the one write every command's output goes through: it never leaves the
folder it was given, never writes through a link (in place of a subfolder or of the file, dangling
or not), replaces only what its caller allows, and leaves a file whole or not there at all. The
same refusals hold where the system cannot open names relative to a folder (the fallback)."""

from __future__ import annotations

import os
import shutil

import pytest

from lab import files
from lab.errors import LabError
from lab.files import UnsafeWriteError


@pytest.fixture(params=["relative to an open folder", "check then write"])
def mode(request, monkeypatch):
    """Each test once as POSIX runs it and once as a system without dir_fd calls (Windows) would."""
    if request.param == "check then write":
        monkeypatch.setattr(files, "CAN_REFUSE_LINKS", False)
    return request.param


@pytest.fixture
def outside(tmp_path):
    """A folder beside the one written into, holding a file: whatever a link points at."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "theirs.txt").write_bytes(b"not the lab's")
    return folder


@pytest.fixture
def out(tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    return folder


def _listing(folder):
    return sorted(str(path.relative_to(folder)) for path in folder.rglob("*"))


def test_a_file_is_written_with_its_missing_subfolders_made(mode, out):
    assert files.write_inside(out, "a/b/page.html", "<p>é</p>") == out / "a" / "b" / "page.html"
    assert (out / "a" / "b" / "page.html").read_bytes() == "<p>é</p>".encode()
    files.write_inside(out, "a/b/page.html", b"again")
    assert (out / "a" / "b" / "page.html").read_bytes() == b"again"
    assert _listing(out) == ["a", "a/b", "a/b/page.html"]  # no temporary file left behind


def test_a_link_in_place_of_a_subfolder_is_never_written_through(mode, out, outside):
    (out / "@file").symlink_to(outside, target_is_directory=True)
    with pytest.raises(UnsafeWriteError, match=r"@file is a link, and the lab never writes through one"):
        files.write_inside(out, "@file/lab-widget-0.js", b"code")
    with pytest.raises(UnsafeWriteError, match="is a link"):
        files.check_inside(out, "@file/lab-widget-0.js")
    with pytest.raises(UnsafeWriteError, match="is a link"):
        files.check_folder_inside(out, "@file/deeper")
    assert _listing(outside) == ["theirs.txt"]


@pytest.mark.parametrize("dangling", [False, True])
def test_a_link_in_place_of_the_file_is_refused_and_its_target_left_alone(mode, out, outside, dangling):
    target = outside / ("nothing-yet.txt" if dangling else "theirs.txt")
    (out / "page.html").symlink_to(target)
    for write in (
        lambda: files.write_inside(out, "page.html", b"page"),
        lambda: files.copy_inside(out, "page.html", outside / "theirs.txt"),
        lambda: files.check_inside(out, "page.html"),
    ):
        with pytest.raises(UnsafeWriteError) as refused:
            write()
        assert str(refused.value) == (
            f"{out / 'page.html'} is a link, and the lab never writes through one: remove it or write somewhere else"
        )
    assert (out / "page.html").is_symlink()
    assert _listing(outside) == ["theirs.txt"] and (outside / "theirs.txt").read_bytes() == b"not the lab's"
    assert files.exists_inside(out, "page.html")


def test_a_folder_or_a_pipe_in_place_of_the_file_is_refused(mode, out):
    (out / "page.html").mkdir()
    with pytest.raises(UnsafeWriteError, match=r"page.html is a folder, not a regular file, so nothing is written"):
        files.write_inside(out, "page.html", b"page")
    os.mkfifo(out / "pipe")
    with pytest.raises(UnsafeWriteError, match="is a pipe, socket or device, not a regular file"):
        files.write_inside(out, "pipe", b"x", replace=lambda head: True)
    (out / "file").write_text("mine")
    with pytest.raises(UnsafeWriteError, match="file is a file, not a folder"):
        files.write_inside(out, "file/inside.txt", b"x")


@pytest.mark.parametrize("relative", ["../escape.txt", "a/../../escape.txt", "/tmp/escape.txt", "", "."])
def test_a_name_that_climbs_out_of_the_folder_is_refused(mode, out, relative):
    with pytest.raises(UnsafeWriteError, match="is not a name inside the folder written into"):
        files.write_inside(out, relative, b"x")
    assert _listing(out.parent) == ["out"]


def test_a_file_already_there_is_replaced_only_as_the_caller_allows(mode, out):
    (out / "own.html").write_bytes(b"<head><meta mark>old page")
    (out / "hand.html").write_bytes(b"written by hand")
    files.write_inside(out, "own.html", b"<head><meta mark>new page", replace=lambda head: b"<meta mark>" in head)
    assert (out / "own.html").read_bytes() == b"<head><meta mark>new page"
    with pytest.raises(UnsafeWriteError) as refused:
        files.write_inside(out, "hand.html", b"page", replace=lambda head: b"<meta mark>" in head)
    assert str(refused.value) == (
        f"{out / 'hand.html'} is already there and this command did not write it, so it is left as it is: "
        "move it or write somewhere else"
    )
    with pytest.raises(UnsafeWriteError, match="is already there"):
        files.check_inside(out, "own.html", replace=False)
    assert (out / "hand.html").read_bytes() == b"written by hand"
    assert issubclass(UnsafeWriteError, LabError)


def test_the_replace_test_sees_only_the_head(mode, out):
    (out / "long.html").write_bytes(b"x" * (files.HEAD_BYTES + 10) + b"mark")
    seen = []
    files.write_inside(out, "long.html", b"new", replace=lambda head: seen.append(head) or True)
    assert seen == [b"x" * files.HEAD_BYTES]


def test_a_write_that_fails_midway_leaves_the_old_file_whole_and_no_temporary_file(mode, out, monkeypatch):
    (out / "page.html").write_bytes(b"the old page")
    source = out / "source.bin"
    source.write_bytes(b"y" * 100_000)

    def half_then_fail(original, handle):
        handle.write(original.read(50_000))
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(shutil, "copyfileobj", half_then_fail)
    with pytest.raises(OSError, match="No space left"):
        files.copy_inside(out, "page.html", source)
    with pytest.raises(OSError, match="No space left"):
        files.copy_inside(out, "new/page.html", source)
    assert (out / "page.html").read_bytes() == b"the old page"
    assert _listing(out) == ["new", "page.html", "source.bin"]


def test_checking_writes_nothing(mode, out):
    files.check_inside(out, "a/b/page.html")
    files.check_inside(out / "missing", "page.html")
    files.check_folder_inside(out, "a/b")
    assert _listing(out) == [] and not (out / "missing").exists()


def test_a_link_given_as_the_folder_itself_is_followed_once(mode, tmp_path, out):
    """The folder is what the caller named (an -o argument): a link there is its choice."""
    (tmp_path / "via-link").symlink_to(out, target_is_directory=True)
    files.write_inside(tmp_path / "via-link", "page.html", b"page")
    assert (out / "page.html").read_bytes() == b"page"


def test_removing_deletes_links_as_links_and_never_what_they_point_at(mode, out, outside):
    (out / "assets" / "marimo").mkdir(parents=True)
    (out / "assets" / "marimo" / "old.js").write_bytes(b"old")
    (out / "assets" / "to-outside").symlink_to(outside, target_is_directory=True)
    (out / "assets" / "file-outside").symlink_to(outside / "theirs.txt")
    (out / "explainers").symlink_to(outside, target_is_directory=True)
    (out / "old.html").symlink_to(outside / "theirs.txt")
    assert files.names_inside(out) == ["assets", "explainers", "old.html"]
    for name in files.names_inside(out):
        files.remove_inside(out, name)
    files.remove_inside(out, "not-there")
    assert _listing(out) == [] and files.names_inside(out / "missing") == []
    assert _listing(outside) == ["theirs.txt"] and (outside / "theirs.txt").read_bytes() == b"not the lab's"


def test_removing_below_a_linked_subfolder_is_refused(mode, out, outside):
    (out / "assets").symlink_to(outside, target_is_directory=True)
    with pytest.raises(UnsafeWriteError, match="assets is a link"):
        files.remove_inside(out, "assets/theirs.txt")
    assert (outside / "theirs.txt").exists()
