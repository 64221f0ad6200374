"""Getting the course's server ready for the next page while the learner reads the index.

`labctl.py open` serves every notebook from one marimo server, and each page a learner opens gets
a kernel thread in that process. The first page to need Altair, the GGUF reader or the shipped
model file pays for importing the one and checking the other's sha256, about half a second on this
course's 2-core reference machine. The index starts that work in a background thread once it has
drawn itself, so the page the learner opens next finds it done. Only a live page does this: an
export or a script run has no next page.
"""

from __future__ import annotations

import importlib
import threading

# What the pages after the index share and the index itself does not load.
MODULES = ("lab.teach.charts", "lab.interop.gguf", "lab.study.shipped_gguf")

_started = threading.Event()


def _warm() -> None:
    for name in MODULES:
        importlib.import_module(name)
    from lab.study.shipped_gguf import RealFileUnavailableError, model_file

    try:
        model_file()  # joined and checked once per process; the pages that need it say so if it is absent
    except RealFileUnavailableError:
        pass


def start() -> bool:
    """Start the warm-up once per process, on a page a learner opened under `marimo run`; True if
    this call started it."""
    import marimo as mo

    meta = mo.app_meta()
    if meta.mode != "run" or meta.request is None or _started.is_set():
        return False
    _started.set()
    threading.Thread(target=_warm, name="four-bit-lab warm-up", daemon=True).start()
    return True
