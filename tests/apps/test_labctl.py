"""labctl's `open` serves the course read-only and keeps the access token off the command line;
its `test --quick` runs the same checks as `test` with pytest narrowed to the quick tier."""

from __future__ import annotations

import http.client
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

import labctl

ROOT = Path(__file__).resolve().parents[2]


def _status(port: int, path: str) -> tuple[int, str | None]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, response.getheader("Location")
    finally:
        connection.close()


def _children(pid: int) -> list[int]:
    text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    return [int(child) for child in text.split()]


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except FileNotFoundError:  # a child that ended between the listing and the read
        return b""


@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="reads process command lines from /proc")
@pytest.mark.parametrize("mode", ["run", "edit"])
def test_open_starts_marimo_without_the_token_in_its_argv(mode):
    # open_lab itself, with this interpreter: labctl's set-up step would build a fresh .venv; and
    # without preparing notebook 10, which the next test covers
    launcher = (
        "import sys, labctl; from pathlib import Path; "
        f"sys.exit(labctl.open_lab(Path(sys.executable), [], {mode!r}, prepare=False))"
    )
    env = {**os.environ, "BROWSER": "true"}  # webbrowser.open runs `true` instead of a browser
    opener = subprocess.Popen(
        [sys.executable, "-c", launcher],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        url = None
        while url is None and time.monotonic() < deadline:
            line = opener.stdout.readline()
            if not line and opener.poll() is not None:
                break
            found = re.search(r"open at (http://127\.0\.0\.1:\d+/\S+)", line)
            url = found and found.group(1)
        assert url, "labctl never said the lab was open"
        token = re.search(r"access_token=([\w-]+)", url).group(1)
        # the opener's children are marimo and, for a moment, the `true` that stands in for a browser
        commands = [_cmdline(child) for child in _children(opener.pid)]
        (argv,) = [command.split(b"\0") for command in commands if b"marimo" in command.split(b"\0")]
        assert token.encode() not in b"\0".join(argv)
        assert b"--token-password-file" in argv
        assert argv[argv.index(b"marimo") + 1] == mode.encode()
        # and marimo did read the token from the file: the link opens, a guess does not
        port = int(re.search(r":(\d+)/", url).group(1))
        # the right token is taken (a redirect to the page, with a session cookie), a wrong one is not
        assert _status(port, url.split(f":{port}", 1)[1]) == (303, "/?file=00_index.py")
        assert _status(port, f"/?file=00_index.py&access_token={token}x")[1].startswith("/auth/login")
    finally:
        for child in _children(opener.pid) if opener.poll() is None else []:
            os.kill(child, signal.SIGTERM)
        opener.terminate()
        opener.wait(timeout=30)


def test_open_prepares_notebook_10_before_it_starts_marimo(monkeypatch):
    calls = []
    monkeypatch.setattr(labctl, "subprocess", SimpleNamespace(call=lambda command, **_: calls.append(command) or 0))

    class Started(Exception):
        pass

    def marimo_server(*_):
        calls.append("marimo")
        raise Started

    monkeypatch.setattr(labctl, "marimo_server", marimo_server)
    with pytest.raises(Started):
        labctl.open_lab(Path("python"), [], "run")
    assert calls[:2] == [["python", "-m", "lab.teach.prepare"], "marimo"]


def _test_commands(monkeypatch, extra: list[str]) -> list[list[str]]:
    """The commands `labctl.py test <extra>` runs, recorded instead of run, with node found."""
    commands = []
    monkeypatch.setattr(labctl, "subprocess", SimpleNamespace(call=lambda command, **_: commands.append(command) or 0))
    monkeypatch.setattr(labctl, "shutil", SimpleNamespace(which=lambda name: f"/usr/bin/{name}"))
    assert labctl.run_tests(Path("python"), extra) == 0
    return commands


def test_quick_narrows_pytest_to_the_quick_tier_and_passes_the_rest_on(monkeypatch):
    full = _test_commands(monkeypatch, ["-k", "codec", "-x"])
    quick = _test_commands(monkeypatch, ["--quick", "-k", "codec", "-x"])
    # ruff check, ruff format --check and node's runner, as the full run has them
    assert quick[:-1] == full[:-1] and len(full) == 4 and full[2][:2] == ["/usr/bin/node", "--test"]
    assert full[-1] == ["python", "-m", "pytest", "-k", "codec", "-x"]
    assert quick[-1] == ["python", "-m", "pytest", "-m", "not browser and not slow", "-k", "codec", "-x"]


def test_the_full_run_gives_pytest_no_selection(monkeypatch):
    # CI's command (.ci/run): every test, browser and slow ones included
    assert _test_commands(monkeypatch, [])[-1] == ["python", "-m", "pytest"]


def test_the_quick_tier_leaves_out_tests_by_their_folder_file_and_model():
    """tests/conftest.py marks by place and by need: test_ui_theme.py has no marker of its own but
    is in tests/browser/, test_notebooks.py is one of the slow files, and the speed bench's timed
    study asks for the real model."""
    real_model_test = "tests/apps/test_speed_bench.py::test_the_study_is_timed_cold_then_warm_in_a_cache_of_its_own"
    files = ["tests/browser/test_ui_theme.py", "tests/apps/test_notebooks.py", "tests/apps/test_speed_bench.py"]
    listed = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *files]
        + ["tests/apps/test_labctl.py", "-m", labctl.QUICK_TESTS],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert listed.returncode == 0, listed.stdout + listed.stderr
    collected = {line.split("::")[0] for line in listed.stdout.splitlines() if "::" in line}
    assert collected == {"tests/apps/test_labctl.py", "tests/apps/test_speed_bench.py"}, listed.stdout
    assert real_model_test not in listed.stdout and re.search(r"\(\d+ deselected\)", listed.stdout)
