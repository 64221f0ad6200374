"""The static site's weight: its size on disk and a cold load of the index and one course page.

A cold load is a fresh browser context (empty cache) against `labctl.py serve`'s server on
127.0.0.1 (bench/harness/static_server.py). The page is loaded, then given until the network has
been idle for 500 ms (marimo loads chunks after the load event); requests and bytes are every
response the page received, counted from the Resource Timing entries (transfer sizes as the
server sent them) plus the document itself.
"""

from __future__ import annotations

import statistics
from pathlib import Path

from bench.harness.static_server import static_server
from bench.measure import Measure

#: the course page a cold load is measured on: widgets, charts and an on-device pane
COURSE_PAGE = "03_mxfp4.html"

# Resource Timing keeps 250 entries by default; a marimo page makes more requests than that.
BIGGER_BUFFER = "performance.setResourceTimingBufferSize(100000);"
LOADED = """
() => {
  const navigation = performance.getEntriesByType("navigation")[0];
  const resources = performance.getEntriesByType("resource");
  return {
    load_ms: navigation.loadEventEnd,
    requests: 1 + resources.length,
    bytes: navigation.transferSize + resources.reduce((sum, entry) => sum + entry.transferSize, 0),
  };
}
"""


def folder_size(folder: Path) -> tuple[int, int]:
    files = [path for path in folder.rglob("*") if path.is_file()]
    return sum(path.stat().st_size for path in files), len(files)


def size_rows(site: Path) -> list[Measure]:
    total, count = folder_size(site)
    assets, asset_count = folder_size(site / "assets" / "marimo")
    return [
        Measure("site size", total / 1e6, "MB", None, f"{count} files"),
        Measure("site size: marimo front-end copy", assets / 1e6, "MB", None, f"{asset_count} files in assets/marimo"),
    ]


def cold_load(new_page, url: str) -> dict:
    with new_page() as (page, traffic):
        page.add_init_script(BIGGER_BUFFER)
        page.goto(url, wait_until="load")
        page.wait_for_load_state("networkidle")
        loaded = page.evaluate(LOADED)
        if traffic.failed or traffic.blocked:
            raise RuntimeError(f"{url}: failed {traffic.failed[:5]}, blocked {traffic.blocked[:5]}")
    return loaded


def cold_load_rows(new_page, site: Path, repeat: int = 5) -> list[Measure]:
    rows = []
    with static_server(site) as server:
        for name in ("index.html", COURSE_PAGE):
            loads = [cold_load(new_page, f"{server}/{name}") for _ in range(repeat)]
            load_ms = statistics.median(load["load_ms"] for load in loads)
            requests = statistics.median(load["requests"] for load in loads)
            megabytes = statistics.median(load["bytes"] for load in loads) / 1e6
            note = f"median of {repeat} cold loads; {requests:.0f} requests, {megabytes:.2f} MB transferred"
            rows.append(Measure(f"cold load {name}: to load event", load_ms, "ms", None, note))
            rows.append(Measure(f"cold load {name}: requests", requests, "requests", None, f"{megabytes:.2f} MB"))
    return rows
