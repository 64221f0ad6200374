"""The result cache in a folder it shares with other programs (LAB_CACHE_DIR set to ~/.cache): it
writes, reads, counts and deletes only the files it made, never another program's, not even in a
folder named as one of its namespaces; and `labctl.py open` does not promise to keep results in a
cache that cannot be written."""

from __future__ import annotations

import json
import os
import time

import pytest

from lab.study import behaviour, cache, real_weights
from lab.teach import prepare

pytestmark = pytest.mark.skipif(not cache.CAN_REFUSE_LINKS, reason="the cache keeps nothing on this system")

TWO_HOURS_AGO = time.time() - 2 * cache.STALE_TEMPORARY_SECONDS
#: the namespaces the lab's studies keep their results in
LAB_NAMESPACES = ("behaviour", "compare", "device_model", "device_chat", "chat_study", "real_weights", "file_digests")


@pytest.fixture(autouse=True)
def uncounted_folders(monkeypatch):
    monkeypatch.setattr(cache, "_FOLDER_BYTES", {})


@pytest.fixture
def shared_folder(tmp_path, monkeypatch):
    """A folder standing in for ~/.cache, given as the cache's folder."""
    folder = tmp_path / "dot-cache"
    folder.mkdir()
    monkeypatch.setenv(cache.CACHE_ENV, str(folder))
    return folder


def other_programs_files(folder) -> dict:
    """Another program's files in the shared folder, frozen (freeze()): stale-looking temporaries and JSON files one level down, in folders of its own and in folders
    named as the lab's namespaces (as older lab versions named them, and as this one does)."""
    folders = ["other-program", *LAB_NAMESPACES, "compare.lab-cache"]
    names = ["settings.json", "download.tmp", f"k.{'a' * 16}.lab-cache-tmp", "k.lab-cache.json"]
    for name in folders:
        (folder / name).mkdir()
        for file_name in names:
            (folder / name / file_name).write_text(json.dumps(f"not the cache's: {name}/{file_name} " * 100))
    (folder / "top.json").write_text('"not the cache\'s either"')
    return freeze(path for path in folder.rglob("*") if path.is_file())


def freeze(paths) -> dict:
    """The files as {path: (bytes, (atime_ns, mtime_ns))}, their times set two hours back. Read
    first and timed after: a read of its own would move a file's atime."""
    contents = {path: path.read_bytes() for path in sorted(paths)}
    for path in contents:
        os.utime(path, (TWO_HOURS_AGO, TWO_HOURS_AGO))
    return {path: (data, times(path)) for path, data in contents.items()}


def times(path) -> tuple[int, int]:
    status = path.stat()
    return status.st_atime_ns, status.st_mtime_ns


def assert_untouched(frozen: dict) -> None:
    """Every file is still there, neither read nor written: times looked at before the bytes."""
    assert {path: times(path) for path in frozen if path.exists()} == {path: at for path, (_, at) in frozen.items()}
    assert {path: path.read_bytes() for path in frozen} == {path: data for path, (data, _) in frozen.items()}


def test_a_shared_folder_keeps_every_other_programs_file_and_the_budget_counts_only_the_caches(shared_folder):
    theirs = other_programs_files(shared_folder)
    entry_bytes = len(json.dumps({"checksum": "0" * 32, "value": "v" * 900}))
    store = cache.ResultCache("behaviour", budget_bytes=3 * entry_bytes + 100)  # three entries fit
    store.store("k0", "v" * 900)
    own_stale = store.folder / f"k0.{'b' * 16}.lab-cache-tmp"  # a write that never finished
    own_stale.write_text("half an entry")
    os.utime(own_stale, (TWO_HOURS_AGO, TWO_HOURS_AGO))
    for i in range(1, 6):  # every store past the third prunes
        os.utime(store._path(f"k{i - 1}"), (TWO_HOURS_AGO + i, TWO_HOURS_AGO + i))
        store.store(f"k{i}", "v" * 900)
    assert_untouched(theirs)
    assert not own_stale.exists()
    # the other program's bytes are not counted: the three entries that fit are kept, not fewer
    own = sorted(path.name for path in store.folder.iterdir())
    assert own == [".four-bit-lab-cache", "k3.lab-cache.json", "k4.lab-cache.json", "k5.lab-cache.json"]
    assert cache._FOLDER_BYTES[store.root] == 3 * entry_bytes
    assert [store.load(f"k{i}") is not None for i in range(6)] == [False] * 3 + [True] * 3


def test_a_folder_named_as_a_namespace_but_not_made_by_the_cache_is_neither_read_nor_written(shared_folder, tmp_path):
    elsewhere = cache.ResultCache("compare", folder=tmp_path / "elsewhere")
    elsewhere.store("k", [1, 2])  # a valid entry: only where it lies makes it foreign
    store = cache.ResultCache("compare")
    store.folder.mkdir()
    store._path("k").write_bytes(elsewhere._path("k").read_bytes())
    theirs = freeze([store._path("k")])
    assert store.load("k") is None
    store.store("new", [3])
    store.prune()
    assert [path.name for path in store.folder.iterdir()] == [store._path("k").name]
    assert "did not make" in store.why_not_kept()
    assert_untouched(theirs)


def test_the_entries_of_an_older_lab_version_are_missed_and_left_alone(shared_folder):
    store = cache.ResultCache("real_weights")
    old = shared_folder / "real_weights" / "k.json"  # as lab versions before the marker kept an entry
    old.parent.mkdir()
    old.write_bytes(store._entry("k", b"[1, 2]"))
    theirs = freeze([old])
    assert store.load("k") is None
    store.budget_bytes = 1
    store.store("k", [1, 2])
    assert store.load("k") == [1, 2]
    assert_untouched(theirs)


def test_prepare_says_a_cache_that_cannot_be_written_keeps_nothing_and_computes_nothing(tmp_path, monkeypatch):
    def computed(*_, **__):
        raise AssertionError("notebook 10 was prepared into a cache that keeps nothing")

    monkeypatch.setattr(real_weights, "real_model_available", lambda: True)
    for name in ("study_formats", "retrieval_study", "format_similarity", "retrieval_answers", "layer_study"):
        monkeypatch.setattr(behaviour, name, computed)
    monkeypatch.setattr(prepare, "run_model", computed)
    not_a_folder = tmp_path / "file.txt"
    not_a_folder.write_text("a file, so nothing can be made below it, not even by root")
    unwritable = not_a_folder / "cache"
    monkeypatch.setenv(cache.CACHE_ENV, str(unwritable))
    lines = []
    assert prepare.prepare_notebook_10(lines.append) == []
    (line,) = lines
    assert f"the cache folder {unwritable} cannot be written (not a directory)" in line
    assert f"set {cache.CACHE_ENV} to a folder you can write" in line
    assert "read them back" not in line
    # a cache that keeps its results is prepared, and promises it
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "cache"))
    for name in ("retrieval_study", "format_similarity", "retrieval_answers", "layer_study"):
        monkeypatch.setattr(behaviour, name, lambda *_, **__: None)
    monkeypatch.setattr(behaviour, "study_formats", lambda: ["mxfp4"])
    monkeypatch.setattr(prepare, "run_model", lambda *_, **__: None)
    lines.clear()
    assert prepare.prepare_notebook_10(lines.append) == [
        "retrieval study",
        "similarity",
        "answers",
        "layer study",
        "MLX pane",
    ]
    assert "later runs read them back" in lines[0]
