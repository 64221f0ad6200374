"""A precomputed choice on a live page computes the outcome shown first and each other one when it
is picked (widgets/choice.py). Notebook 4 under `marimo run`, as `labctl.py open` serves it, used to
compute all twenty of its seeds and tensor-scale settings, each with an MLX run, before it showed
anything; the static site still carries every outcome (tests/browser/test_static_controls.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from chromium import browser_page
from playwright.sync_api import expect

from bench.browser import RENDERED
from labctl import marimo_server

pytestmark = pytest.mark.browser

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "04_nvfp4.py"

# Per outcome panel of the notebook's choice: its options, whether it shows, and whether the
# kernel has computed it or it still says it is being worked out.
PANELS = """
() => [...document.querySelectorAll('.lab-outcome[data-lab-choice="nvfp4-tensor"]')].map((panel) => ({
  when: JSON.parse(panel.dataset.labWhen),
  shown: !panel.hidden,
  pending: panel.querySelector(".lab-outcome-pending") !== null,
}))
"""


def test_a_live_page_computes_the_outcome_shown_and_then_the_one_picked():
    with (
        marimo_server(Path(sys.executable), "run", NOTEBOOK, quiet=True, start_s=60) as server,
        browser_page() as (page, log),
    ):
        page.goto(server.url())
        summary = page.get_by_text("Relative RMS error per group").locator("visible=true")
        # every cell has run: marimo's running mark is gone and the page's last output is there
        page.wait_for_function(RENDERED, polling="raf", timeout=90000)
        panels = page.evaluate(PANELS)
        # three cells draw outcomes of this choice, twenty combinations each: one computed apiece
        assert len(panels) == 60
        computed = [panel for panel in panels if not panel["pending"]]
        assert [panel["when"] for panel in computed] == [{"seed": "3", "tensor-scale": "on (MLX convention)"}] * 3
        assert all(panel["shown"] for panel in computed)

        field = page.get_by_role("textbox", name="random seed")
        field.fill("5")
        field.press("Enter")
        # the kernel runs the three cells again for seed 5; its outcomes replace the placeholders
        expect(page.locator(".lab-outcome-pending").locator("visible=true")).to_have_count(0, timeout=60000)
        picked = {"seed": "5", "tensor-scale": "on (MLX convention)"}
        shown = [panel for panel in page.evaluate(PANELS) if panel["shown"]]
        assert [(panel["when"], panel["pending"]) for panel in shown] == [(picked, False)] * 3
        expect(summary).to_have_count(1)
        assert log.blocked == [] and log.console_errors == []
