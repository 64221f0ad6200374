"""Headless Chromium through Playwright: Debian's chromium (or LAB_CHROMIUM), never Playwright's
own download, with every non-local request aborted and recorded."""

from __future__ import annotations

import os
import shutil
from contextlib import contextmanager
from dataclasses import dataclass, field
from urllib.parse import urlparse

# The flags of every headless Chromium the bench and the tests launch: no GPU, no background
# traffic, no sandbox (containers).
LAUNCH_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]

#: what to say when find_chromium finds nothing
NO_CHROMIUM = "no Chromium found (install Debian's chromium, or set LAB_CHROMIUM)"


def find_chromium() -> str | None:
    """Debian's chromium (or another Chromium on PATH), or LAB_CHROMIUM; Playwright's download is never used."""
    explicit = os.environ.get("LAB_CHROMIUM")
    if explicit:
        return explicit
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    return None


def chromium_path() -> str:
    found = find_chromium()
    if found is None:
        raise RuntimeError(NO_CHROMIUM)
    return found


def is_local(url: str) -> bool:
    parsed = urlparse(url)
    return parsed.scheme in ("file", "data", "blob", "about") or parsed.hostname in ("127.0.0.1", "localhost", "::1")


@dataclass
class Traffic:
    """What one page asked for: local requests, failed ones (HTTP >= 400), aborted non-local ones."""

    requests: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)


@contextmanager
def chromium(executable: str | None = None):
    """A Playwright browser; `new_page()` on it gives a fresh context (cold cache) and its Traffic.
    Every non-local request is aborted and recorded."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable or chromium_path(), args=LAUNCH_ARGS)

        @contextmanager
        def new_page():
            traffic = Traffic()
            context = browser.new_context(viewport={"width": 1100, "height": 900})

            def route(request_route):
                url = request_route.request.url
                if is_local(url):
                    request_route.continue_()
                else:
                    traffic.blocked.append(url)
                    request_route.abort()

            context.route("**/*", route)
            page = context.new_page()
            page.on("request", lambda request: traffic.requests.append(request.url))
            page.on("response", lambda response: response.status >= 400 and traffic.failed.append(response.url))
            page.on("console", lambda message: message.type == "error" and traffic.console_errors.append(message.text))
            page.on("pageerror", lambda error: traffic.console_errors.append(str(error)))
            try:
                yield page, traffic
            finally:
                context.close()

        try:
            yield new_page
        finally:
            browser.close()
