"""The on-disk result cache: where it lives, that a cached study is identical to a computed one,
and that each input of the key (weights, format, source code) is enough to miss."""

from __future__ import annotations

import dataclasses
import json
import os
import time

import numpy as np
import pytest
from support import require_real_model

from lab.study import cache, real_weights


@pytest.fixture
def cache_folder(tmp_path, monkeypatch):
    folder = tmp_path / "lab-cache"
    monkeypatch.setenv(cache.CACHE_ENV, str(folder))
    return folder


def synthetic(rows: int, cols: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(0, 0.02, (rows, cols)).astype(np.float32)


WEIGHTS = {"a.weight": synthetic(4, 512), "b.weight": synthetic(3, 64, seed=1), "a.bias": synthetic(1, 8)[0]}
FORMATS = ["MXFP4 (mlx)", "MXFP4 (mlx) + scale search", "NVFP4", "Q4_K", "MLX affine 4-bit g64"]


def as_json(report) -> str:
    """The report's every number as text: NaN compares equal to NaN here, unlike in a dataclass."""
    return json.dumps([report.records(), report.summary_records(), report.not_evaluated])


def test_the_folder_follows_lab_cache_dir_then_xdg_then_home(monkeypatch, tmp_path):
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "own"))
    assert cache.cache_dir() == tmp_path / "own"
    monkeypatch.delenv(cache.CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.cache_dir() == tmp_path / "xdg" / "four-bit-lab"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache.cache_dir() == tmp_path / "home" / ".cache" / "four-bit-lab"


def test_a_cached_study_is_identical_to_the_computed_one_and_computes_nothing(cache_folder, monkeypatch):
    uncached = real_weights.evaluate_model(WEIGHTS, formats=FORMATS)
    first = real_weights.evaluate_model(WEIGHTS, formats=FORMATS, cache=True)
    assert any(cache_folder.rglob("*.json"))
    steps = []

    def refuse(*args, **kwargs):
        raise AssertionError("a cached step was computed again")

    monkeypatch.setattr(real_weights, "_measure", refuse)
    second = real_weights.evaluate_model(WEIGHTS, formats=FORMATS, cache=True, progress=lambda *s: steps.append(s))
    # The numbers are the computed ones, bit for bit; seconds are those of the computing run.
    assert as_json(second) == as_json(first)
    for computed, cached in zip(uncached.records(), second.records(), strict=True):
        assert json.dumps(computed) == json.dumps(cached)
    assert len(steps) == 2 * len(FORMATS)  # the progress bar still moves


def test_changed_weights_miss_and_equal_weights_under_another_name_hit(cache_folder):
    real_weights.evaluate_model(WEIGHTS, formats=["NVFP4"], cache=True)
    entries = set(cache_folder.rglob("*.json"))
    renamed = real_weights.evaluate_model({"other": WEIGHTS["a.weight"]}, formats=["NVFP4"], cache=True)
    assert set(cache_folder.rglob("*.json")) == entries
    assert renamed.results[0].tensor == "other"
    changed = WEIGHTS["a.weight"].copy()
    changed[0, 0] += 0.01
    real_weights.evaluate_model({"a.weight": changed}, formats=["NVFP4"], cache=True)
    assert len(set(cache_folder.rglob("*.json"))) == len(entries) + 1


def test_formats_added_later_join_the_same_tensor_file(cache_folder, monkeypatch):
    first = real_weights.evaluate_model(WEIGHTS, formats=["NVFP4"], cache=True)
    both = real_weights.evaluate_model(WEIGHTS, formats=["NVFP4", "Q4_K"], cache=True)
    monkeypatch.setattr(real_weights, "_measure", lambda *a: pytest.fail("computed again"))
    again = real_weights.evaluate_model(WEIGHTS, formats=["NVFP4", "Q4_K"], cache=True)
    assert as_json(again) == as_json(both)
    nvfp4_rows = [row for row in both.records() if row["format"] == "NVFP4"]
    assert json.dumps(first.records()) == json.dumps(nvfp4_rows)


def test_the_key_names_format_preset_version_and_source(cache_folder, monkeypatch):
    rows = real_weights.study_rows()
    keys = {real_weights._row_key(rows[name]) for name in ("MXFP4 (mlx)", "MXFP4 (ocp)", "Q4_K", "NVFP4")}
    assert len(keys) == 4
    tensor = cache.array_digest(WEIGHTS["a.weight"])
    before = real_weights._tensor_key(tensor)
    monkeypatch.setattr(cache, "lab_version", lambda: "0.0.0-other")
    assert real_weights._tensor_key(tensor) != before
    other_version = real_weights._tensor_key(tensor)
    monkeypatch.setattr(np, "__version__", "0.0.0-other")
    assert real_weights._tensor_key(tensor) != other_version


def test_a_format_module_edit_changes_its_source_digest(tmp_path):
    module_file = tmp_path / "toy.py"
    module_file.write_text("X = 1\n")
    first = cache.source_digest([module_file])
    module_file.write_text("X = 2\n")
    assert cache.source_digest([module_file]) != first


def test_q4k_is_hashed_as_its_whole_package():
    import importlib

    files = cache.source_files(importlib.import_module("lab.formats.q4k.quantize"))
    assert {path.name for path in files} >= {"decode.py", "layout.py", "quantize.py", "tensor.py"}


def test_a_damaged_entry_is_a_miss_and_is_rewritten(cache_folder):
    first = real_weights.evaluate_model(WEIGHTS, formats=["Q4_K"], cache=True)
    for entry in cache_folder.rglob("*.json"):
        entry.write_text("{not json")
    again = real_weights.evaluate_model(WEIGHTS, formats=["Q4_K"], cache=True)
    assert json.dumps(again.records()) == json.dumps(first.records())
    for entry in cache_folder.rglob("*.json"):
        json.loads(entry.read_text())


def test_without_cache_nothing_is_written(cache_folder):
    real_weights.evaluate_model(WEIGHTS, formats=["NVFP4"])
    assert not cache_folder.exists()


# --------------------------------------------------------------------------------------------
# The other cached results: arrays, data files, notebook 10's model study, notebook 11's errors
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "array",
    [
        np.array([[1.5, -0.0], [np.nan, np.inf]], np.float32),
        np.arange(12, dtype=np.int64).reshape(3, 2, 2),
        np.array([True, False]),
        np.float64(0.1) * np.ones(0),
    ],
    ids=["float32 specials", "int64 3-D", "bool", "empty"],
)
def test_an_encoded_array_decodes_to_the_same_dtype_shape_and_bytes(array):
    back = cache.decode_array(json.loads(json.dumps(cache.encode_array(array))), array.dtype, array.shape)
    assert back.dtype == array.dtype and back.shape == array.shape and back.tobytes() == array.tobytes()
    assert back.flags.writeable


def test_a_data_file_digest_follows_its_bytes_and_is_remembered_on_disk(cache_folder, tmp_path, monkeypatch):
    data = tmp_path / "weights.bin"
    data.write_bytes(b"\x00" * 64)
    first = cache.files_digest([data])
    assert first == cache.source_digest([data])
    assert any(cache.ResultCache("file_digests").folder.glob("*.json"))
    # a second process (an empty memo) reads the digest back instead of hashing the file again
    with monkeypatch.context() as patched:
        patched.setattr(cache, "_FILES_DIGESTS", {})
        patched.setattr(cache, "source_digest", lambda paths: pytest.fail("hashed again"))
        assert cache.files_digest([data]) == first
    # the same size, other bytes: the file's signature changes, so it is hashed again
    data.write_bytes(b"\x01" * 64)
    assert cache.files_digest([data]) != first


def test_compare_errors_read_back_are_the_computed_ones(cache_folder, monkeypatch):
    from lab.study import compare

    sources = {"w": synthetic(4, 1536), "short": synthetic(2, 384, seed=1)}
    computed = compare.error_rows(sources)
    assert compare.error_rows(sources, cache=True) == computed
    entries = cache.ResultCache(compare.CACHE_NAMESPACE).folder
    assert len(list(entries.glob("*.json"))) == 2
    with monkeypatch.context() as patched:
        patched.setattr(compare, "relative_error", lambda *a: pytest.fail("computed again"))
        assert json.dumps(compare.error_rows(sources, cache=True)) == json.dumps(computed)
    changed = sources["w"].copy()
    changed[0, 0] += 0.01
    compare.error_rows({"w": changed}, cache=True)
    assert len(list(entries.glob("*.json"))) == 3


def test_the_model_study_read_back_is_the_computed_one_bit_for_bit(cache_folder, monkeypatch):
    require_real_model()
    from lab.study import behaviour
    from lab.study import model as sentence_model

    behaviour.clear_caches()
    names = ("fp32", "nvfp4")
    computed = behaviour.retrieval_study(names, cache=True)
    embedded = {name: behaviour.embeddings(name) for name in names}
    layers = behaviour.layer_study("nvfp4", cache=True)
    behaviour.clear_caches()

    def refuse(*args, **kwargs):
        raise AssertionError("the model ran again")

    monkeypatch.setattr(sentence_model, "load", refuse)
    monkeypatch.setattr(behaviour, "captured_inputs", refuse)
    steps = []
    again = behaviour.retrieval_study(names, progress=lambda *step: steps.append(step), cache=True)
    assert json.dumps(again) == json.dumps(computed) and len(steps) == len(names)
    assert not behaviour._EMBEDDINGS  # rows read back need no embeddings
    for name in names:
        back = behaviour.embeddings(name, cache=True)
        for part in ("queries", "passages", "sentences"):
            assert getattr(back, part).tobytes() == getattr(embedded[name], part).tobytes()
        assert (back.fallbacks, back.bits_per_weight) == (embedded[name].fallbacks, embedded[name].bits_per_weight)
    layers_back = behaviour.layer_study("nvfp4", cache=True)
    assert json.dumps(layers_back.records()) == json.dumps(layers.records())
    assert (layers_back.spearman, layers_back.disagreeing, layers_back.tokens) == (
        layers.spearman,
        layers.disagreeing,
        layers.tokens,
    )
    for layer, found in layers.outliers.items():
        back = layers_back.outliers[layer]
        assert back.rms.tobytes() == found.rms.tobytes()
        assert back.top_channels.tolist() == found.top_channels.tolist()
        assert (back.error_share, back.signal_share, back.peak_to_median) == (
            found.error_share,
            found.signal_share,
            found.peak_to_median,
        )
    behaviour.clear_caches()


def test_the_model_key_names_the_code_and_the_model_files(monkeypatch):
    require_real_model()
    from lab.study import behaviour

    before = behaviour.model_key()
    for name, other in (("lab_version", lambda: "0.0.0-other"), ("files_digest", lambda paths: "other weights")):
        with monkeypatch.context() as patched:
            patched.setattr(cache, name, other)
            assert behaviour.model_key() != before
    with monkeypatch.context() as patched:
        patched.setattr(np, "__version__", "0.0.0-other")
        assert behaviour.model_key() != before
    assert behaviour.model_key() == before


def test_a_device_report_read_back_is_the_one_that_ran(cache_folder, mx, monkeypatch):
    require_real_model()
    from lab.device import model as pane_model

    sentences = ["One sentence.", "Another, longer sentence."]
    ran = pane_model.run_model("mxfp4", sentences=sentences, cache=True)
    assert ran.runs and any(cache.ResultCache(pane_model.CACHE_NAMESPACE).folder.glob("*.json"))
    monkeypatch.setattr(pane_model, "_run_on_devices", lambda *a: pytest.fail("ran again"))
    back = pane_model.run_model("mxfp4", sentences=sentences, cache=True)
    assert back == ran and back.to_markdown() == ran.to_markdown()
    # other sentences, or another MLX, are another key
    rerun = dataclasses.replace(ran, message="ran again")
    monkeypatch.setattr(pane_model, "_run_on_devices", lambda *a: rerun)
    assert pane_model.run_model("mxfp4", sentences=sentences[:1], cache=True) is rerun
    monkeypatch.setattr(pane_model, "mlx_version", lambda mx: "0.0.0-other")
    assert pane_model.run_model("mxfp4", sentences=sentences, cache=True) is rerun


def _entry_bytes(store: cache.ResultCache, key: str) -> int:
    return store._path(key).stat().st_size


def _written_bytes(value) -> int:
    """An entry's size on disk: its value's JSON in {"checksum": <32 hex digits>, "value": ...}."""
    return len(json.dumps({"checksum": "0" * 32, "value": value}))


def _age(store: cache.ResultCache, key: str, seconds_ago: float) -> None:
    stamp = time.time() - seconds_ago
    os.utime(store._path(key), (stamp, stamp))


def test_the_folder_is_pruned_to_its_budget_least_recently_used_first(tmp_path, monkeypatch):
    monkeypatch.setattr(cache, "_FOLDER_BYTES", {})
    entry_bytes = _written_bytes("x" * 1000)
    budget = 3 * entry_bytes + 100  # three entries fit, four do not
    first = cache.ResultCache("one", folder=tmp_path, budget_bytes=budget)
    second = cache.ResultCache("two", folder=tmp_path, budget_bytes=budget)  # the budget is shared
    for store, key, seconds_ago in ((first, "a", 300), (second, "b", 200), (first, "c", 100)):
        store.store(key, "x" * 1000)
        assert _entry_bytes(store, key) == entry_bytes
        _age(store, key, seconds_ago)
    assert first.load("a") == "x" * 1000  # a read makes "a" the most recently used
    second.store("d", "y" * 1000)
    assert first.load("a") is not None and first.load("c") is not None and second.load("d") is not None
    assert second.load("b") is None  # used longest ago
    assert sum(path.stat().st_size for path in tmp_path.glob("*/*.json")) <= budget


def test_an_entry_alone_over_the_budget_is_kept_and_the_rest_make_room(tmp_path, monkeypatch):
    monkeypatch.setattr(cache, "_FOLDER_BYTES", {})
    store = cache.ResultCache("one", folder=tmp_path, budget_bytes=500)
    store.store("small", "s" * 100)
    _age(store, "small", 60)
    store.store("large", "L" * 1000)
    assert store.load("large") == "L" * 1000 and store.load("small") is None


def test_pruning_deletes_only_the_caches_own_files(tmp_path, monkeypatch):
    monkeypatch.setattr(cache, "_FOLDER_BYTES", {})
    store = cache.ResultCache("one", folder=tmp_path, budget_bytes=10)
    assert store.why_not_kept() is None  # which makes the namespace's folder, marked as the cache's
    stale = store.folder / f"old.{'0' * 16}{cache.TEMPORARY_SUFFIX}"
    fresh = store.folder / f"new.{'1' * 16}{cache.TEMPORARY_SUFFIX}"
    stale.write_text("half an entry")
    fresh.write_text("being written")
    os.utime(stale, (time.time() - 2 * cache.STALE_TEMPORARY_SECONDS,) * 2)
    foreign = [tmp_path / "README.txt", store.folder / "notes.txt", tmp_path / "top.json"]
    for path in foreign:
        path.write_text("not the cache's " * 100)
    store.store("entry", "e" * 100)
    assert not stale.exists() and fresh.exists()  # another process may still be writing that one
    assert all(path.exists() for path in foreign)
    assert store.load("entry") is not None


def test_the_folder_is_listed_again_only_when_the_count_reaches_the_budget(tmp_path, monkeypatch):
    monkeypatch.setattr(cache, "_FOLDER_BYTES", {})
    store = cache.ResultCache("one", folder=tmp_path, budget_bytes=10_000)
    listings = []
    real_prune = cache.ResultCache.prune
    monkeypatch.setattr(
        cache.ResultCache, "prune", lambda self, keep=None: listings.append(keep) or real_prune(self, keep)
    )
    filler = "z" * (1000 - _written_bytes(""))  # 1,000 bytes each
    for i in range(9):
        store.store(f"k{i}", filler)
    assert len(listings) == 1  # the first write counts the folder; the next eight fit the count
    store.store("k9", filler)
    store.store("k10", filler)
    assert len(listings) == 2  # the eleventh would pass 10,000 bytes
    assert sum(path.stat().st_size for path in tmp_path.glob("*/*.json")) <= 10_000


def test_load_as_reads_an_entry_back_and_takes_a_damaged_one_for_a_miss(tmp_path, monkeypatch):
    monkeypatch.setattr(cache, "_FOLDER_BYTES", {})
    store = cache.ResultCache("one", folder=tmp_path)
    store.store("whole", {"rows": [1, 2]})
    store.store("damaged", {"columns": [1, 2]})
    assert store.load_as("whole", lambda entry: entry["rows"]) == [1, 2]
    assert store.load_as("damaged", lambda entry: entry["rows"]) is None  # KeyError: a miss
    assert store.load_as("absent", lambda entry: entry["rows"]) is None
    with pytest.raises(ZeroDivisionError):  # a bug in the decoder is not a miss
        store.load_as("whole", lambda entry: 1 / 0)
