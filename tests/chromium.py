"""Headless Chromium for the browser tests: Debian's chromium driven by Playwright.

The browser is found on PATH (chromium, chromium-browser, google-chrome) or through LAB_CHROMIUM.
Playwright's own browser download is never used. Without a browser the tests skip on a laptop
and fail under CI=true, where .ci/run installs one.
"""

from __future__ import annotations

import os
import shutil
from contextlib import contextmanager
from dataclasses import dataclass, field
from urllib.parse import urlparse

import pytest

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


def chromium_path() -> str:
    explicit = os.environ.get("LAB_CHROMIUM")
    if explicit:
        return explicit
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    message = "no Chromium found (install Debian's chromium, or set LAB_CHROMIUM)"
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"{message}; browser tests must run in CI")
    pytest.skip(message)


def is_local(url: str) -> bool:
    parsed = urlparse(url)
    return parsed.scheme in ("file", "data", "blob", "about") or parsed.hostname in ("127.0.0.1", "localhost", "::1")


@dataclass
class PageLog:
    blocked: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)


@contextmanager
def browser_page():
    """A Playwright page in which every non-local request is aborted and recorded."""
    sync_api = pytest.importorskip("playwright.sync_api")
    executable = chromium_path()
    log = PageLog()
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=LAUNCH_ARGS)
        context = browser.new_context(viewport={"width": 1100, "height": 900})

        def route(request_route):
            url = request_route.request.url
            if is_local(url):
                request_route.continue_()
            else:
                log.blocked.append(url)
                request_route.abort()

        context.route("**/*", route)
        page = context.new_page()
        page.on("console", lambda message: message.type == "error" and log.console_errors.append(message.text))
        page.on("pageerror", lambda error: log.console_errors.append(str(error)))
        try:
            yield page, log
        finally:
            context.close()
            browser.close()
