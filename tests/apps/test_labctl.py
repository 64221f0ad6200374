"""labctl's `open` serves the course read-only and keeps the access token off the command line,
stops as cleanly on SIGTERM and SIGHUP as on Ctrl+C, and takes marimo with it when killed; its
`test --quick` runs the same checks as `test` with pytest narrowed to the quick tier."""

from __future__ import annotations

import contextlib
import http.client
import os
import re
import signal
import socket
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
            with contextlib.suppress(ProcessLookupError):  # the stand-in browser may have ended since the listing
                os.kill(child, signal.SIGTERM)
        opener.terminate()
        opener.wait(timeout=30)


def _start_open(tmp_path: Path) -> tuple[subprocess.Popen, int, int]:
    """open_lab in a process group of its own, with its temporary folder in `tmp_path`/tmp: the
    process, marimo's pid and marimo's port, once the lab says it is open. Without preparing
    notebook 10 (minutes); the signal path is the real one."""
    launcher = (
        "import sys, labctl; from pathlib import Path; "
        "sys.exit(labctl.open_lab(Path(sys.executable), [], 'run', prepare=False))"
    )
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {**os.environ, "BROWSER": "true", "TMPDIR": str(temp)}
    opener = subprocess.Popen(
        [sys.executable, "-c", launcher],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    port = None
    while port is None and time.monotonic() < deadline:
        line = opener.stdout.readline()
        if not line and opener.poll() is not None:
            break
        found = re.search(r"open at http://127\.0\.0\.1:(\d+)/", line)
        port = found and int(found.group(1))
    assert port, "labctl never said the lab was open"
    (marimo,) = [child for child in _children(opener.pid) if b"marimo" in _cmdline(child).split(b"\0")]
    return opener, marimo, port


def _accepts(port: int) -> bool:
    with socket.socket() as client:
        return client.connect_ex(("127.0.0.1", port)) == 0


def _gone(pid: int, within_s: float) -> bool:
    """Whether process `pid` has ended (or is a zombie no one waits for) within `within_s` seconds."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            if Path(f"/proc/{pid}/stat").read_text().split(") ")[1].startswith("Z"):
                return True
        except FileNotFoundError:
            return True
        time.sleep(0.1)
    return False


def _kill_group(opener: subprocess.Popen) -> None:
    """Whatever a failed test left of the group (labctl, marimo) is killed."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(opener.pid, signal.SIGKILL)
    opener.wait(timeout=30)


def _lab_folders(tmp_path: Path) -> list[str]:
    return sorted(entry.name for entry in (tmp_path / "tmp").iterdir() if entry.name.startswith("four-bit-lab-"))


@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="reads process trees from /proc")
@pytest.mark.parametrize("stop", ["SIGTERM", "SIGHUP"])
def test_a_stop_signal_to_opens_process_group_stops_it_as_ctrl_c_does(tmp_path, stop):
    """A closed terminal or `kill` of the group: marimo stopped and waited for, every scratch folder
    gone (the token's, and one a killed kernel left before), quietly."""
    opener, marimo, port = _start_open(tmp_path)
    try:
        left_before = tmp_path / "tmp" / f"four-bit-lab-toy-{marimo}-left"
        left_before.mkdir()  # as a kernel killed with marimo leaves its toy file
        assert _lab_folders(tmp_path), "marimo's token folder is in the temporary folder while it serves"
        os.killpg(opener.pid, getattr(signal, stop))
        assert opener.wait(timeout=60) == 0
        assert "Traceback" not in opener.stderr.read()
        assert _gone(marimo, 5) and not _accepts(port)
        assert _lab_folders(tmp_path) == []
    finally:
        _kill_group(opener)


@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="reads process trees from /proc")
def test_sigterm_to_labctl_alone_stops_marimo_too(tmp_path):
    opener, marimo, port = _start_open(tmp_path)
    try:
        opener.terminate()
        assert opener.wait(timeout=60) == 0
        assert _gone(marimo, 5) and not _accepts(port)
        assert _lab_folders(tmp_path) == []
    finally:
        _kill_group(opener)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_marimo_dies_with_a_killed_labctl_and_the_next_sweep_takes_its_token_folder(tmp_path):
    opener, marimo, port = _start_open(tmp_path)
    try:
        opener.kill()  # no handler runs: only the kernel can tell marimo
        opener.wait(timeout=30)
        assert _gone(marimo, 10) and not _accepts(port)
        (token_folder,) = _lab_folders(tmp_path)
        assert token_folder.startswith(f"{labctl.SERVER_SCRATCH_PREFIX}{opener.pid}-")
        swept = subprocess.run(
            [sys.executable, "-c", labctl.REMOVE_LEFTOVER_SCRATCH],
            cwd=ROOT,
            env={**os.environ, "TMPDIR": str(tmp_path / "tmp")},
            timeout=120,
        )
        assert swept.returncode == 0 and _lab_folders(tmp_path) == []
    finally:
        _kill_group(opener)


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
    # after the sweep of what killed runs left, before marimo; and the sweep again once it has stopped
    sweep = ["python", "-c", labctl.REMOVE_LEFTOVER_SCRATCH]
    assert calls == [sweep, ["python", "-m", "lab.teach.prepare"], "marimo", sweep]


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


# A command labctl runs to its end, standing in for serve: it says when it is ready, then stops in
# its own words on SIGINT or SIGTERM, as serve does.
STAND_IN = (
    "import signal, sys, time\n"
    "def stop(*_):\n"
    "    print('stopped', flush=True)\n"
    "    sys.exit(0)\n"
    "signal.signal(signal.SIGINT, stop)\n"
    "signal.signal(signal.SIGTERM, stop)\n"
    "print('ready', flush=True)\n"
    "time.sleep(60)\n"
)


def _run_stand_in() -> subprocess.Popen:
    """labctl.run_to_its_end on the stand-in, in a process group of its own, once the stand-in is ready."""
    runner = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import sys, labctl; sys.exit(labctl.run_to_its_end([sys.executable, '-c', {STAND_IN!r}]))",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert runner.stdout.readline() == "ready\n"
    return runner


@pytest.mark.skipif(not hasattr(os, "killpg"), reason="process groups are POSIX's")
def test_ctrl_c_on_a_command_labctl_runs_leaves_the_child_to_stop_and_no_traceback():
    """Ctrl+C reaches the whole group: labctl waits for the child's own quiet stop (serve's "stopped")."""
    runner = _run_stand_in()
    try:
        os.killpg(runner.pid, signal.SIGINT)
        out, err = runner.communicate(timeout=30)
        assert (runner.returncode, out, err) == (0, "stopped\n", "")
    finally:
        _kill_group(runner)


@pytest.mark.skipif(not hasattr(signal, "SIGHUP"), reason="SIGTERM and SIGHUP as POSIX sends them")
def test_a_sigterm_that_arrives_while_the_command_starts_is_passed_on_once_it_exists(monkeypatch):
    """The stop a CI run once lost: sent while labctl was still starting the command, before a
    handler passed stops on, it went nowhere and labctl waited out the command's 60 s."""
    real_popen = subprocess.Popen

    def popen_during_a_stop(*args, **options):
        os.kill(os.getpid(), signal.SIGTERM)  # Python runs the handler before Popen starts the child
        return real_popen(*args, **options)

    monkeypatch.setattr(labctl.subprocess, "Popen", popen_during_a_stop)

    # as where labctl inherits SIGTERM ignored: a stop nothing passes on is lost, not fatal
    def ignore(*_):
        return None

    before = signal.signal(signal.SIGTERM, ignore)
    try:
        started = time.monotonic()
        returncode = labctl.run_to_its_end([sys.executable, "-c", "import time; time.sleep(60)"])
        assert returncode == -signal.SIGTERM and time.monotonic() - started < 30
        assert signal.getsignal(signal.SIGTERM) is ignore
    finally:
        signal.signal(signal.SIGTERM, before)


@pytest.mark.skipif(not hasattr(signal, "SIGHUP"), reason="SIGTERM and SIGHUP as POSIX sends them")
def test_sigterm_to_labctl_alone_is_passed_on_to_the_command_it_runs():
    runner = _run_stand_in()
    try:
        runner.terminate()
        out, err = runner.communicate(timeout=30)
        assert (runner.returncode, out, err) == (0, "stopped\n", "")
    finally:
        _kill_group(runner)
