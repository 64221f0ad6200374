"""The bench's issue-13 rows: Q4_K quantize against the recorded baseline, and the real-model
study cold and warm. Only what the rows say is checked here; speed itself is measured by the
bench, never asserted in a test."""

from __future__ import annotations

import numpy as np
from support import require_real_model

from bench import run as bench
from lab.teach import cache, real_weights


def test_the_baseline_row_needs_the_baseline_shape(monkeypatch):
    w = np.random.default_rng(0).normal(0, 0.02, (16, 256)).astype(np.float32)
    assert bench.q4k_quantize_baseline_row(w, repeat=1) is None
    monkeypatch.setitem(bench.Q4K_QUANTIZE_BASELINE, "rows", 16)
    monkeypatch.setitem(bench.Q4K_QUANTIZE_BASELINE, "cols", 256)
    row = bench.q4k_quantize_baseline_row(w, repeat=1)
    assert row.peer_seconds == bench.Q4K_QUANTIZE_BASELINE["cpu_seconds"]
    assert row.target_ratio == bench.Q4K_QUANTIZE_TARGET_SPEEDUP
    assert bench.Q4K_QUANTIZE_BASELINE["commit"] in row.peer


def test_the_study_is_timed_cold_then_warm_in_a_cache_of_its_own(monkeypatch, tmp_path):
    require_real_model()  # a skip on a laptop without the model, a failure in CI
    user_cache = tmp_path / "user-cache"
    monkeypatch.setenv(cache.CACHE_ENV, str(user_cache))
    names = ["encoder.layer.0.attention.self.query.weight", "encoder.layer.5.output.dense.weight"]
    small = real_weights.load_weights(names=names, rows=8)
    monkeypatch.setattr(real_weights, "load_weights", lambda: small)
    rows, workload = bench.real_model_rows()
    tasks = [row.task for row in rows]
    assert tasks[-2].endswith("cold cache") and tasks[-1].endswith("warm cache")
    assert "CPU" in rows[-2].note and "cache" in rows[-1].note
    assert len(rows) == len(real_weights.study_rows()) + 2
    assert not user_cache.exists()  # the bench leaves the user's cache alone
    assert real_weights.MODEL_NAME in workload
