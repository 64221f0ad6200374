"""The index readies the server for the next page: only on a page a learner opened, once."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import marimo
import pytest

from lab.study import shipped_gguf
from lab.teach import warm


@pytest.fixture
def fresh(monkeypatch):
    monkeypatch.setattr(warm, "_started", threading.Event())
    checked = []
    monkeypatch.setattr(shipped_gguf, "model_file", lambda: checked.append(1))
    return checked


def _finished() -> None:
    for thread in threading.enumerate():
        if thread.name == "four-bit-lab warm-up":
            thread.join(timeout=60)


def test_a_script_run_or_an_export_starts_nothing(fresh):
    assert warm.start() is False  # app.run(): marimo's script mode, as test_notebooks runs pages
    _finished()
    assert fresh == []


def test_a_page_opened_under_marimo_run_starts_it_once(fresh, monkeypatch):
    monkeypatch.setattr(marimo, "app_meta", lambda: SimpleNamespace(mode="run", request=object()))
    assert warm.start() is True
    assert warm.start() is False
    _finished()
    assert fresh == [1]


def test_a_missing_model_file_is_left_to_the_pages_that_need_it(fresh, monkeypatch):
    def missing():
        raise shipped_gguf.RealFileUnavailableError("not installed")

    monkeypatch.setattr(shipped_gguf, "model_file", missing)
    monkeypatch.setattr(marimo, "app_meta", lambda: SimpleNamespace(mode="run", request=object()))
    errors = []
    monkeypatch.setattr(threading, "excepthook", errors.append)
    assert warm.start() is True
    _finished()
    assert errors == []
