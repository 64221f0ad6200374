"""A built folder (the static site, standalone pages) served on 127.0.0.1 for a browser to load."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from classroom.serve import site_server


@contextmanager
def static_server(folder: Path) -> Iterator[str]:
    """Serve `folder` on a free port of 127.0.0.1 until the block ends; yields its base URL,
    http://127.0.0.1:PORT. The server is `labctl.py serve`'s own, so pages are measured and tested
    as a classroom gets them."""
    server = site_server(folder, ("127.0.0.1", 0))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
