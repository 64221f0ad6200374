"""An uploaded GGUF's temporary copy goes when its process ends, and a copy left by a process that
was killed goes at the next upload (or when labctl.py open stops): none stays in the temporary
folder for good, and nothing outside the lab's own upload folders is ever removed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lab.teach import gguf_browser

pytestmark = pytest.mark.skipif(os.name == "nt", reason="the upload sweep does not run on Windows")

ROOT = Path(__file__).resolve().parents[2]

# Opens an upload in a fresh process, prints where its copy lies, then waits to be stopped.
UPLOADER = textwrap.dedent(
    """
    import sys
    from lab.interop.gguf import write_gguf
    from lab.teach import gguf_browser
    import numpy as np, tempfile, pathlib
    source = pathlib.Path(sys.argv[1])
    write_gguf(source, {"w": np.arange(8, dtype=np.float32)}, {"w": "F32"})
    browser = gguf_browser.open_upload(source.read_bytes(), "mine.gguf")
    print(browser.temporary_path.parent, flush=True)
    if sys.argv[2] == "wait":
        sys.stdin.read()
    """
)


def _uploader(tmp_path: Path, how: str) -> tuple[subprocess.Popen, Path]:
    env = {**os.environ, "TMPDIR": str(tmp_path / "tmp")}
    (tmp_path / "tmp").mkdir(exist_ok=True)
    process = subprocess.Popen(
        [sys.executable, "-c", UPLOADER, str(tmp_path / "source.gguf"), how],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=env,
    )
    folder = Path(process.stdout.readline().strip())
    assert folder.name.startswith(f"{gguf_browser.UPLOAD_PREFIX}{process.pid}-")
    return process, folder


def _dead_pid() -> int:
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(finished.stdout)


def test_a_copy_goes_when_its_process_ends(tmp_path):
    process, folder = _uploader(tmp_path, "exit")
    assert process.wait(timeout=60) == 0
    assert not folder.exists()


def test_a_killed_processs_copy_goes_at_the_next_sweep(tmp_path):
    process, folder = _uploader(tmp_path, "wait")
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=60)
    assert folder.is_dir(), "a killed process cannot clean up after itself"
    assert gguf_browser.remove_leftover_scratch(tmp_path / "tmp") == [folder]
    assert not folder.exists()


def test_the_sweep_leaves_live_processes_links_and_other_folders_alone(tmp_path):
    temp = tmp_path / "tmp"
    temp.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("not the lab's")
    dead = _dead_pid()
    live = temp / f"{gguf_browser.UPLOAD_PREFIX}{os.getpid()}-abc123"
    live.mkdir()
    left = temp / f"{gguf_browser.UPLOAD_PREFIX}{dead}-def456"
    left.mkdir()
    (left / "upload.gguf").write_bytes(b"GGUF")
    (left / "inside").symlink_to(outside)  # a link inside is removed as a link, its target stays
    linked = temp / f"{gguf_browser.UPLOAD_PREFIX}{dead}-ghi789"
    linked.symlink_to(outside)
    other = temp / "four-bit-lab-cache-xyz"
    other.mkdir()
    removed = gguf_browser.remove_leftover_scratch(temp)
    assert sorted(removed) == sorted([left, linked])
    assert live.is_dir() and other.is_dir() and not left.exists() and not linked.exists()
    assert (outside / "keep.txt").read_text() == "not the lab's"


def test_labctl_open_sweeps_after_the_server_stops():
    import labctl

    assert "remove_leftover_scratch()" in labctl.REMOVE_LEFTOVER_SCRATCH
    finished = subprocess.run([sys.executable, "-c", labctl.REMOVE_LEFTOVER_SCRATCH], cwd=ROOT, timeout=120)
    assert finished.returncode == 0


def test_the_sweep_takes_every_kind_of_scratch_folder_a_killed_process_left(tmp_path):
    """The token folder labctl writes for marimo, an upload's copy and notebook 6's toy file share
    one pattern; the lab's other temporary folders (a build's, the test cache) are not in it."""
    dead = _dead_pid()
    left = [tmp_path / f"four-bit-lab-{kind}-{dead}-x1y2" for kind in ("server", "upload", "toy")]
    for folder in left:
        folder.mkdir()
    others = [tmp_path / f"four-bit-lab-bundle-{dead}-x1y2", tmp_path / "four-bit-lab-x1y2"]
    for folder in others:
        folder.mkdir()
    assert sorted(gguf_browser.remove_leftover_scratch(tmp_path)) == sorted(left)
    assert all(folder.is_dir() for folder in others)
    toy = gguf_browser.scratch_folder("toy")
    assert Path(toy.name).name.startswith(f"four-bit-lab-toy-{os.getpid()}-")
    toy.cleanup()
