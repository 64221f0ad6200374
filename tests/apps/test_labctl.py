"""labctl's `open` serves the course read-only and keeps the access token off the command line."""

from __future__ import annotations

import http.client
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

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
    # open_lab itself, with this interpreter: labctl's set-up step would build a fresh .venv
    launcher = (
        f"import sys, labctl; from pathlib import Path; sys.exit(labctl.open_lab(Path(sys.executable), [], {mode!r}))"
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
