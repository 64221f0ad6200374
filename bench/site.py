"""The static site's weight: its size on disk and a cold load of the index and one course page.

A cold load is a fresh browser context (empty cache) against `labctl.py serve`'s server on
127.0.0.1 (bench/harness/static_server.py). The page is loaded, then given until the network has
been idle for 500 ms (marimo loads chunks after the load event); requests and bytes are every
response the page received, counted from the Resource Timing entries (transfer sizes as the
server sent them) plus the document itself.

The throttled load is the workshop's case (issue 25): the first course page, cold, from `serve`'s
own server (gzip, cache headers: classroom/handler.py) over a link that Chromium's DevTools
protocol slows to 1.6 Mbit/s down and 300 ms of latency, as bad hotel wifi or one room's share of
a shared line gives. Usable is the moment the page's first lab widget has drawn its controls: a
learner can click a bit. Goals: at most 3 MB transferred in at most 120 requests, usable in 15 s.
"""

from __future__ import annotations

import statistics
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from bench.harness.static_server import static_server
from bench.measure import Measure

#: the course page a cold load is measured on: widgets, charts and an on-device pane
COURSE_PAGE = "03_mxfp4.html"
#: the page a workshop's students open first, and what a throttled load of it may cost (issue 25)
FIRST_COURSE_PAGE = "01_one_nibble.html"
THROTTLED_GOAL_MB = 3.0
THROTTLED_GOAL_REQUESTS = 120
THROTTLED_GOAL_MS = 15000.0
#: after a throttled page is usable, this long with no request on the wire ends its load
QUIET_MS = 2000
#: the slow link: 1.6 Mbit/s down, 0.75 Mbit/s up, 300 ms added to every round trip
SLOW_LINK = {"offline": False, "latency": 300, "downloadThroughput": 1.6e6 / 8, "uploadThroughput": 0.75e6 / 8}

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


# Usable: the first lab widget (inside marimo's shadow roots) shows its first button; resolves with
# performance.now() at that moment, polled every animation frame.
USABLE = """
() => {
  const deep = (root) => {
    for (const element of root.querySelectorAll("*")) {
      if (element.matches(".four-bit-lab button")) return element;
      const inner = element.shadowRoot && deep(element.shadowRoot);
      if (inner) return inner;
    }
    return null;
  };
  return deep(document) !== null && performance.now();
}
"""


@contextmanager
def served(site: Path):
    """The site from `labctl.py serve`'s own server on an ephemeral loopback port: what students'
    browsers get, compressed and with its cache headers."""
    from classroom import serve

    server = serve.site_server(site, ("127.0.0.1", 0))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def throttled_load(new_page, url: str) -> dict:
    """One cold load of `url` over SLOW_LINK: milliseconds to usable, requests, bytes transferred.
    The bytes and requests are counted once nothing has been on the wire for QUIET_MS after the
    page is usable: the fonts its text asks for once drawn come after that moment, and count."""
    with new_page() as (page, traffic):
        page.add_init_script(BIGGER_BUFFER)
        in_flight = set()
        page.on("request", lambda request: in_flight.add(request))
        page.on("requestfinished", lambda request: in_flight.discard(request))
        page.on("requestfailed", lambda request: in_flight.discard(request))
        devtools = page.context.new_cdp_session(page)
        devtools.send("Network.enable")
        devtools.send("Network.emulateNetworkConditions", SLOW_LINK)
        page.goto(url, wait_until="commit")
        usable_ms = float(page.wait_for_function(USABLE, polling="raf", timeout=180000).json_value())
        quiet_since = time.monotonic()
        deadline = quiet_since + 180
        while time.monotonic() - quiet_since < QUIET_MS / 1000:
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"{url}: still loading 180 s after it was usable: {sorted(r.url for r in in_flight)[:5]}"
                )
            page.wait_for_timeout(100)  # lets Playwright deliver the request events
            if in_flight:
                quiet_since = time.monotonic()
        loaded = page.evaluate(LOADED)
        if traffic.failed or traffic.blocked:
            raise RuntimeError(f"{url}: failed {traffic.failed[:5]}, blocked {traffic.blocked[:5]}")
    return {**loaded, "usable_ms": usable_ms}


def throttled_load_rows(new_page, site: Path, repeat: int = 3) -> list[Measure]:
    """The first course page over the slow link, cold, `repeat` times: the median of each figure
    against its goal. The bytes and requests are those of the whole load, after the page is usable."""
    with served(site) as server:
        loads = [throttled_load(new_page, f"{server}/{FIRST_COURSE_PAGE}") for _ in range(repeat)]
    usable_ms = statistics.median(load["usable_ms"] for load in loads)
    requests = statistics.median(load["requests"] for load in loads)
    megabytes = statistics.median(load["bytes"] for load in loads) / 1e6
    link = "1.6 Mbit/s, 300 ms latency, from serve (gzip)"
    note = f"median of {repeat} cold loads over {link}: " + ", ".join(f"{load['usable_ms']:.0f}" for load in loads)
    name = f"throttled cold load {FIRST_COURSE_PAGE}"
    return [
        Measure(f"{name}: to usable", usable_ms, "ms", THROTTLED_GOAL_MS, note),
        Measure(f"{name}: transferred", megabytes, "MB", THROTTLED_GOAL_MB, f"{link}; every response of the load"),
        Measure(f"{name}: requests", requests, "requests", THROTTLED_GOAL_REQUESTS, link),
    ]
