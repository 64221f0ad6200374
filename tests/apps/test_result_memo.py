"""lab.study.results: the codec gives back what it was given, and CachedResults computes each result once."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np
import pytest

from lab.study.results import CachedResults, from_json, to_json


@dataclass(frozen=True)
class Inner:
    label: str
    values: np.ndarray
    share: float | None = None


@dataclass(frozen=True)
class Outer:
    name: str
    count: int
    ratio: float
    flags: tuple[bool, ...]
    pairs: tuple[tuple[str, str], ...]
    inner: Inner
    by_name: dict[str, Inner] = field(default_factory=dict)
    missing: int | None = None


def _sample() -> Outer:
    rng = np.random.default_rng(3)
    return Outer(
        name="fmt",
        count=3,
        ratio=float("nan"),
        flags=(True, False),
        pairs=(("a", "why"),),
        inner=Inner("x", rng.standard_normal((2, 3)).astype(np.float32), 0.1 + 0.2),
        by_name={"k": Inner("y", np.arange(4, dtype=np.intp))},
    )


def test_a_dataclass_comes_back_through_json_exactly():
    sample = _sample()
    back = from_json(json.loads(json.dumps(to_json(sample))), Outer)
    assert (back.name, back.count, back.flags, back.pairs, back.missing) == (
        "fmt",
        3,
        (True, False),
        (("a", "why"),),
        None,
    )
    assert np.isnan(back.ratio) and back.inner.share == sample.inner.share
    assert back.inner.values.dtype == np.float32 and back.inner.values.tobytes() == sample.inner.values.tobytes()
    assert back.by_name["k"].values.dtype == np.intp and back.by_name["k"].values.tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize(
    "damage",
    [
        lambda entry: entry.pop("count"),
        lambda entry: entry.update(count="3"),
        lambda entry: entry.update(extra=1),
        lambda entry: entry.update(pairs=[["a"]]),
        lambda entry: entry["inner"].update(values={"dtype": "|O", "shape": [1], "bytes": ""}),
    ],
)
def test_an_entry_that_is_not_the_type_is_refused(damage):
    entry = json.loads(json.dumps(to_json(_sample())))
    damage(entry)
    with pytest.raises((KeyError, TypeError, ValueError)):
        from_json(entry, Outer)


def test_a_result_is_computed_once_then_read_from_memory_then_from_disk(tmp_path, monkeypatch):
    monkeypatch.setenv("LAB_CACHE_DIR", str(tmp_path))
    computed, loaded = [], []

    def compute():
        computed.append(1)
        return _sample()

    memo = CachedResults("memo_test", Outer)
    first = memo.get("fmt", compute, disk_key=lambda: "key1")
    assert memo.get("fmt", compute, disk_key=lambda: "key1") is first and len(computed) == 1 and len(memo) == 1
    memo.clear()
    back = memo.get("fmt", compute, disk_key=lambda: "key1", on_load=loaded.append)
    assert len(computed) == 1 and loaded == [back] and back.inner.values.tobytes() == first.inner.values.tobytes()
    memo.get("other", compute)  # no disk key: memory only
    assert len(computed) == 2 and not (tmp_path / "memo_test.lab-cache" / "other.lab-cache.json").exists()


def test_without_remembering_each_get_without_a_disk_entry_computes(tmp_path, monkeypatch):
    monkeypatch.setenv("LAB_CACHE_DIR", str(tmp_path))
    counted = []
    memo = CachedResults("memo_test", Outer, remember=False)
    for _ in range(2):
        memo.get("fmt", lambda: counted.append(1) or _sample())
    assert len(counted) == 2 and len(memo) == 0
