"""The bench's issue-13 rows: Q4_K quantize against the code before the speed work, and the real-model
study cold and warm. Only what the rows say is checked here; speed itself is measured by the
bench, never asserted in a test."""

from __future__ import annotations

import numpy as np
import pytest
from support import require_real_model

from bench import run as bench
from lab.formats import FORMATS
from lab.study import cache, real_weights


def _varied_weights() -> np.ndarray:
    """Four rows of super-blocks that differ in every way the search cares about."""
    rng = np.random.default_rng(13)
    w = rng.normal(0, 0.02, (4, 1024)).astype(np.float32)
    w[1] = rng.standard_t(2, 1024).astype(np.float32)  # heavy tails
    w[2, :32] = 0.25  # a constant subblock: no step, the floor carries it
    w[2, 32:64] = -0.5
    w[2, 256:512] = 0.0  # an all-zero super-block
    w[3] = rng.uniform(-1e-30, 3e-30, 1024).astype(np.float32)  # below float16's reach: d = 0
    return w


def test_the_peer_quantizer_writes_the_labs_bytes():
    previous = bench.quantizer_at(bench.Q4K_QUANTIZE_PEER_COMMIT)
    if previous is None:  # a shallow clone or a source archive: the bench's row then says so (below)
        pytest.skip(f"no git history with {bench.Q4K_QUANTIZE_PEER_COMMIT} here, so no peer to compare")
    w = _varied_weights()
    lab_raw = FORMATS["q4k"].quantize(w).to_gguf()
    assert lab_raw.shape == (4, 4 * 144)
    np.testing.assert_array_equal(previous(w).to_gguf(), lab_raw)


def test_without_history_the_row_says_so(monkeypatch):
    monkeypatch.setattr(bench, "Q4K_QUANTIZE_PEER_COMMIT", "0" * 40)  # no such commit
    row = bench.q4k_quantize_peer_row(_varied_weights(), repeat=1)
    assert row.peer_seconds is None and row.ratio is None and "no git history" in row.peer


def test_the_quantize_row_times_the_peer_in_the_same_run():
    row = bench.q4k_quantize_peer_row(_varied_weights(), repeat=1)
    assert row.peer_seconds is not None and row.peer_seconds > 0 and row.lab_seconds > 0
    assert row.target_ratio == bench.Q4K_QUANTIZE_TARGET_SPEEDUP == 3.0
    assert bench.Q4K_QUANTIZE_PEER_COMMIT in row.peer
    assert "same run" in row.note and "CPU" in row.note


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


def test_every_standalone_explainer_has_a_timed_action():
    # a page added without one would stop `bench --browser` with a KeyError
    from bench import browser
    from publish import standalone

    assert set(browser.EXPLAINER_ACTIONS) == set(standalone.PAGES)


def test_the_q8_0_rows_say_why_they_are_skipped_without_the_real_file(monkeypatch):
    from lab.study import shipped_gguf

    def unavailable():
        raise shipped_gguf.RealFileUnavailableError(f"the real GGUF file is not installed; {shipped_gguf.INSTALL_HINT}")

    monkeypatch.setattr(shipped_gguf, "model_file", unavailable)
    rows, reason = bench.real_q8_0_decode_rows(repeat=1)
    assert rows == [] and "skipped" in reason and shipped_gguf.PACKAGE in reason


def test_the_q8_0_rows_time_gguf_py_in_the_same_run_and_report_the_peak(monkeypatch, tmp_path):
    # a small stand-in for the real file: its token_embd in Q8_0, written by the lab
    from lab.interop import gguf as gguf_tools
    from lab.study import shipped_gguf

    w = np.random.default_rng(8).normal(0, 0.02, (64, 640)).astype(np.float32)
    path = gguf_tools.write_gguf(tmp_path / "small.gguf", {bench.REAL_Q8_0_TENSOR: w}, {bench.REAL_Q8_0_TENSOR: "Q8_0"})
    monkeypatch.setattr(shipped_gguf, "model_file", lambda: path)
    rows, workload = bench.real_q8_0_decode_rows(repeat=1)
    assert [row.task.split(": ")[-1] for row in rows] == ["GGUFFile.decode", "from_gguf(raw).dequantize()"]
    for row in rows:
        assert row.peer_seconds > 0 and row.lab_seconds > 0 and "gguf-py" in row.peer
        assert row.target_ratio == bench.Q8_0_DECODE_TARGET_RATIO == 1.0
        assert "peak" in row.note and "x the 0.164 MB output" in row.note
    assert f"goal <= {bench.Q8_0_DECODE_PEAK_GOAL:g}x" in rows[0].note
    assert bench.REAL_Q8_0_TENSOR in workload and "(64, 640)" in workload
