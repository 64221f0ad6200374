"""The on-disk result cache: where it lives, that a cached study is identical to a computed one,
and that each input of the key (weights, format, source code) is enough to miss."""

from __future__ import annotations

import json

import numpy as np
import pytest

from lab.teach import cache, real_weights


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
