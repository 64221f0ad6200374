"""Headless Chromium for the browser tests: Debian's chromium driven by Playwright.

The launch flags, the search for a browser and the page that aborts every non-local request are
the harness's (bench/harness/chromium.py), so the tests and the bench see pages the same way. What
is the tests' own: without a browser they skip on a laptop and fail under CI=true, where .ci/run
installs one.
"""

from __future__ import annotations

import json
import os
from contextlib import contextmanager
from urllib.parse import quote

import pytest

from bench.harness.chromium import NO_CHROMIUM, chromium, find_chromium

# Run in a page: from then on window.created counts the elements it creates (a widget patched in
# place creates none; one drawn afresh creates hundreds).
COUNT_CREATED = """() => {
  window.created = 0;
  for (const name of ["createElement", "createElementNS"]) {
    const original = Document.prototype[name];
    Document.prototype[name] = function (...args) {
      window.created += 1;
      return original.apply(this, args);
    };
  }
}"""


def chromium_path() -> str:
    found = find_chromium()
    if found is not None:
        return found
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"{NO_CHROMIUM}; browser tests must run in CI")
    pytest.skip(NO_CHROMIUM)


@contextmanager
def browser_page():
    """A Playwright page in which every non-local request is aborted and recorded: yields
    (page, traffic), traffic.blocked and traffic.console_errors being what the tests check."""
    pytest.importorskip("playwright.sync_api")
    with chromium(chromium_path()) as new_page, new_page() as (page, traffic):
        yield page, traffic


def open_standalone(page, pages, slug: str, fragment=None) -> None:
    """Open standalone page `slug` from the `pages` folder, with `fragment` (any JSON value) as its
    link state, and wait until its widget has rendered."""
    url = (pages / f"{slug}.html").as_uri()
    if fragment is not None:
        url += "#" + quote(json.dumps(fragment))
    page.goto(url)
    page.wait_for_selector("body[data-ready='true']")
