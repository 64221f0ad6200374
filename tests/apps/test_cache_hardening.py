"""The result cache against a hostile or damaged folder: it never follows a link, never deletes or
touches a file outside its own folder, takes an edited entry for a miss and writes it again, and
reads an array back only in the dtype and shape its caller asks for."""

from __future__ import annotations

import json
import os
import shutil
import threading
import time

import numpy as np
import pytest

from lab.errors import DTypeError, LabError, ShapeError
from lab.study import cache, real_weights

pytestmark = pytest.mark.skipif(not cache.CAN_REFUSE_LINKS, reason="the cache keeps nothing on this system")

AN_HOUR_AGO = time.time() - 3600


@pytest.fixture(autouse=True)
def uncounted_folders(monkeypatch):
    monkeypatch.setattr(cache, "_FOLDER_BYTES", {})


def outside_files(folder, names=("a.json", "b.tmp", "c.txt")) -> dict:
    """Files outside the cache, as freeze() leaves them."""
    folder.mkdir(exist_ok=True)
    for name in names:
        (folder / name).write_text(json.dumps(f"not the cache's: {name} " * 50))
    return freeze(folder)


def freeze(folder) -> dict:
    """The folder's files as {path: (bytes, (atime_ns, mtime_ns))}, their times set an hour back.
    Read first and timed after: a read of its own would move a file's atime."""
    contents = {path: path.read_bytes() for path in sorted(folder.iterdir())}
    for path in contents:
        os.utime(path, (AN_HOUR_AGO, AN_HOUR_AGO))
    return {path: (data, times(path)) for path, data in contents.items()}


def times(path) -> tuple[int, int]:
    status = path.stat()
    return status.st_atime_ns, status.st_mtime_ns


def assert_untouched(folder, frozen: dict) -> None:
    """Nothing in the folder was read, written, touched, added or deleted since freeze(): the
    times are looked at before the bytes, whose reading moves them (so this is a test's last look)."""
    assert {path: times(path) for path in sorted(folder.iterdir())} == {path: at for path, (_, at) in frozen.items()}
    assert {path: path.read_bytes() for path in frozen} == {path: data for path, (data, _) in frozen.items()}


def test_pruning_never_follows_a_linked_folder_and_still_keeps_the_budget(tmp_path):
    outside = tmp_path / "outside"
    before = outside_files(outside)
    root = tmp_path / "cache"
    root.mkdir()
    (root / "linked.lab-cache").symlink_to(outside, target_is_directory=True)  # named as a namespace's folder
    store = cache.ResultCache("one", folder=root, budget_bytes=3000)
    assert store.why_not_kept() is None  # which makes the namespace's folder, marked as the cache's
    store._path("linked").symlink_to(outside / "a.json")  # a linked entry is no entry either
    for i in range(6):
        store.store(f"k{i}", "v" * 900)
        os.utime(store._path(f"k{i}"), (AN_HOUR_AGO + i, AN_HOUR_AGO + i))
    store.store("k6", "v" * 900)
    assert_untouched(outside, before)  # not deleted, not read, not touched
    assert (root / "linked.lab-cache").is_symlink() and store._path("linked").is_symlink()
    kept = [f"k{i}" for i in range(7) if store.load(f"k{i}") is not None]
    assert kept == ["k4", "k5", "k6"]  # the budget still holds, least recently used out first
    assert sum(path.lstat().st_size for path in store.folder.glob("k*.json")) <= 3000


def test_a_linked_entry_is_a_miss_and_its_target_is_neither_read_nor_touched(tmp_path):
    # the target is a valid entry of the same key in another cache: only the link makes it foreign
    elsewhere = cache.ResultCache("one", folder=tmp_path / "elsewhere")
    elsewhere.store("k", {"relative_rmse": 0.122})
    target = elsewhere._path("k")
    before = freeze(target.parent)
    store = cache.ResultCache("one", folder=tmp_path / "cache")
    assert store.why_not_kept() is None  # which makes the namespace's folder, marked as the cache's
    store._path("k").symlink_to(target)
    assert store.load("k") is None
    assert store.load_as("k", lambda entry: entry["relative_rmse"]) is None
    # a store replaces the link itself with an entry of its own, and never writes through it
    store.store("k", {"relative_rmse": 0.5})
    assert not store._path("k").is_symlink() and store.load("k") == {"relative_rmse": 0.5}
    assert_untouched(target.parent, before)


def test_a_hard_linked_entry_is_a_miss_and_its_other_name_is_not_touched(tmp_path):
    elsewhere = cache.ResultCache("one", folder=tmp_path / "elsewhere")
    elsewhere.store("k", [1, 2])
    store = cache.ResultCache("one", folder=tmp_path / "cache")
    assert store.why_not_kept() is None
    os.link(elsewhere._path("k"), store._path("k"))  # before freeze(): a new link changes ctime
    before = freeze(elsewhere.folder)
    assert store.load("k") is None
    assert_untouched(elsewhere.folder, before)


def test_a_linked_namespace_folder_is_neither_read_nor_written(tmp_path):
    elsewhere = cache.ResultCache("one", folder=tmp_path / "elsewhere")
    elsewhere.store("k", [1, 2])
    before = freeze(elsewhere.folder)
    root = tmp_path / "cache"
    root.mkdir()
    store = cache.ResultCache("one", folder=root)
    store.folder.symlink_to(elsewhere.folder, target_is_directory=True)
    assert store.load("k") is None
    store.store("new", [3])  # the folder is not the cache's: nothing is written, and nothing raised
    store.prune()
    assert store.folder.is_symlink()
    assert_untouched(elsewhere.folder, before)


def test_an_entry_that_is_not_a_regular_file_is_a_miss_without_waiting(tmp_path):
    store = cache.ResultCache("one", folder=tmp_path)
    assert store.why_not_kept() is None
    os.mkfifo(store._path("pipe"))
    store._path("folder").mkdir()
    found = []
    reader = threading.Thread(target=lambda: found.append(store.load("pipe")), daemon=True)
    reader.start()
    reader.join(5)
    if reader.is_alive():  # open() waits for a writer: be one, so that the thread ends
        os.close(os.open(store._path("pipe"), os.O_WRONLY))
        pytest.fail("loading a named pipe waited for a writer")
    assert found == [None] and store.load("folder") is None


def test_the_cache_folder_given_as_a_link_is_resolved_once_when_the_cache_is_made(tmp_path, monkeypatch):
    real, other, link = tmp_path / "real", tmp_path / "other", tmp_path / "link"
    real.mkdir()
    other.mkdir()
    link.symlink_to(real, target_is_directory=True)
    monkeypatch.setenv(cache.CACHE_ENV, str(link))
    store = cache.ResultCache("one")
    assert store.root == real.resolve()
    store.store("k", 1)
    assert (real / "one.lab-cache" / "k.lab-cache.json").is_file()
    # the link now points elsewhere: this cache keeps to the folder it resolved, a new one follows
    link.unlink()
    link.symlink_to(other, target_is_directory=True)
    store.store("k2", 2)
    assert store.load("k") == 1 and (real / "one.lab-cache" / "k2.lab-cache.json").is_file()
    assert not any(other.iterdir())
    assert cache.ResultCache("one").load("k") is None


@pytest.mark.parametrize("name", ["../outside", "a/b", "..", ".hidden", "", "k\x00"])
def test_a_key_or_namespace_that_is_not_a_plain_name_is_refused(tmp_path, name):
    (tmp_path / "outside.json").write_text('"outside"')
    (tmp_path / "cache" / "one").mkdir(parents=True)
    store = cache.ResultCache("one", folder=tmp_path / "cache")
    with pytest.raises(LabError, match="plain name"):
        store.load(name)
    with pytest.raises(LabError, match="plain name"):
        store.store(name, 1)
    with pytest.raises(LabError, match="plain name"):
        cache.ResultCache(name, folder=tmp_path / "cache")


def _replace_once(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, (old, text)
    return text.replace(old, new)


def _without_checksum(text: str) -> str:
    entry = json.loads(text)
    del entry["checksum"]
    return json.dumps(entry)


def _other_checksum(text: str) -> str:
    entry = json.loads(text)
    entry["checksum"] = format(int(entry["checksum"], 16) ^ 1, "032x")
    return json.dumps(entry)


EDITS = {
    "a number changed": lambda text: _replace_once(text, "0.122", "1e-06"),
    "NaN inserted": lambda text: _replace_once(text, "0.122", "NaN"),
    "a field renamed": lambda text: _replace_once(text, '"relative_rmse"', '"relative_rmsf"'),
    "the checksum removed": _without_checksum,
    "the checksum changed": _other_checksum,
    "the bare value, as entries were once kept": lambda text: json.dumps(json.loads(text)["value"]),
}
VALUE = {"relative_rmse": 0.122, "bits_per_weight": 4.5, "unmeasured": float("nan")}


@pytest.mark.parametrize("edit", EDITS.values(), ids=EDITS.keys())
def test_an_edited_entry_is_a_miss_and_the_next_store_writes_it_again(tmp_path, edit):
    store = cache.ResultCache("real_weights", folder=tmp_path)
    store.store("k", VALUE)
    assert json.dumps(store.load("k")) == json.dumps(VALUE)  # NaN is a value a result may hold
    path = store._path("k")
    path.write_text(edit(path.read_text()))
    assert store.load("k") is None
    assert store.load_as("k", lambda entry: entry["relative_rmse"]) is None
    store.store("k", VALUE)
    assert json.dumps(store.load("k")) == json.dumps(VALUE)


def test_an_entry_moved_to_another_key_or_namespace_is_a_miss(tmp_path):
    store = cache.ResultCache("one", folder=tmp_path)
    other_namespace = cache.ResultCache("two", folder=tmp_path)
    store.store("a", VALUE)
    shutil.copy(store._path("a"), store._path("b"))
    assert other_namespace.why_not_kept() is None
    shutil.copy(store._path("a"), other_namespace._path("a"))
    assert store.load("b") is None and other_namespace.load("a") is None
    assert json.dumps(store.load("a")) == json.dumps(VALUE)


def test_an_edited_error_in_the_study_is_computed_again_not_shown(tmp_path, monkeypatch):
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path))
    weights = {"w": np.random.default_rng(0).normal(0, 0.02, (4, 512)).astype(np.float32)}
    first = real_weights.evaluate_model(weights, formats=["NVFP4"], cache=True)
    (entry,) = cache.ResultCache("real_weights").folder.glob("*.json")
    shown = repr(first.results[0].relative_rmse)
    entry.write_text(_replace_once(entry.read_text(), f'"relative_rmse": {shown}', '"relative_rmse": 1e-06'))
    again = real_weights.evaluate_model(weights, formats=["NVFP4"], cache=True)
    assert json.dumps(again.records()) == json.dumps(first.records())
    assert shown in entry.read_text()  # written again


FLOAT32_3x4 = np.arange(12, dtype=np.float32).reshape(3, 4)
REFUSED = {
    "float64": FLOAT32_3x4.astype(np.float64),
    "int32": FLOAT32_3x4.astype(np.int32),
    "void of the same bytes": FLOAT32_3x4.view("V4"),
    "structured": np.zeros(3, dtype=[("a", "<f4"), ("b", "<f4"), ("c", "<f4"), ("d", "<f4")]),
    "big-endian float32": FLOAT32_3x4.astype(">f4"),
    "shape (4, 3)": FLOAT32_3x4.reshape(4, 3),
    "shape (12,)": FLOAT32_3x4.reshape(12),
    "shape (1, 3, 4)": FLOAT32_3x4.reshape(1, 3, 4),
}


@pytest.mark.parametrize("array", REFUSED.values(), ids=REFUSED.keys())
def test_an_array_of_another_dtype_or_shape_than_asked_is_refused(tmp_path, array):
    entry = json.loads(json.dumps(cache.encode_array(array)))
    with pytest.raises((DTypeError, ShapeError)):
        cache.decode_array(entry, np.float32, (3, 4))
    store = cache.ResultCache("one", folder=tmp_path)
    store.store("k", entry)
    assert store.load_as("k", lambda found: cache.decode_array(found, np.float32, (3, 4))) is None


def test_an_array_whose_shape_and_bytes_disagree_is_refused_and_a_free_axis_takes_any_length():
    entry = cache.encode_array(FLOAT32_3x4)
    back = cache.decode_array(entry, np.float32, (None, 4))
    assert back.shape == (3, 4) and back.tobytes() == FLOAT32_3x4.tobytes()
    short = {**entry, "bytes": cache.encode_array(FLOAT32_3x4[:, :3])["bytes"]}
    for damaged in (short, {**entry, "shape": [3, -4]}, {**entry, "shape": [3.0, 4]}, {**entry, "shape": "3,4"}):
        with pytest.raises(ShapeError):
            cache.decode_array(damaged, np.float32, (None, 4))
    with pytest.raises(ValueError):  # not base64: binascii.Error, a ValueError, so a miss
        cache.decode_array({**entry, "bytes": "not base64!"}, np.float32, (3, 4))
    with pytest.raises(DTypeError):  # only numbers and booleans are read back, even when asked
        cache.decode_array(cache.encode_array(FLOAT32_3x4.view("V4")), "V4", (3, 4))
