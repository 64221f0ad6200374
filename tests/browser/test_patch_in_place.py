"""The explainers are built once and patched in place: a control change creates no elements (a
widget drawn afresh creates hundreds), and the readouts still follow. How long a change takes is
measured in bench/browser.py, never here."""

from __future__ import annotations

import pytest
from chromium import COUNT_CREATED, browser_page, open_standalone

pytestmark = pytest.mark.browser

# (what is done, how: a control clicked, a field committed or a key pressed, the readout that must change)
CHANGES = {
    "scale-lab": [
        ("commit", "scale-entry", "0.125", "delta-y"),
        ("click", "button[data-focus='power-0']", None, "delta-y"),
        ("key", "[data-testid='drag-w_text-1']", "ArrowUp", "y"),
        ("commit", "x", "1, 2, 3, 4", "y"),
        ("commit", "w", "not a number", None),
        ("click", "button[data-focus='fine']", None, None),
    ],
    "ownership": [
        ("commit", "mx-byte", "0x80", "mx-trace"),
        ("click", "button[data-focus='nvfp4-20']", None, "nv-trace"),
        ("commit", "tensor-scale", "2", "nv-trace"),
        ("commit", "mx-byte", "0xFF", "mx-trace"),
        ("commit", "nv-byte-0", "300", None),
    ],
    "q4k-explorer": [
        ("click", "button[data-focus='byte-17']", None, "low-formula"),
        ("key", "button[data-focus='byte-17']", "ArrowDown", "low-formula"),
        ("commit", "edit-d", "0.5", "low-formula"),
        ("commit", "edit-byte", "0x5A", "low-formula"),
        ("click", "button[data-focus='byte-100']", None, "low-formula"),
        ("commit", "edit-dmin", "1e38", None),
    ],
    "nibble-decoder": [
        ("click", "button[data-focus='bit-0']", None, "e2m1-value"),
        ("key", "input[data-focus='code']", "ArrowUp", "e2m1-value"),
        ("commit", "code", "0b1111", "nf4-value"),
        ("click", "button[data-focus='pick-2']", None, "e2m1-formula"),
        ("key", "button[data-focus='bit-3']", "ArrowDown", "int4-value"),
        ("commit", "code", "0x10", None),
    ],
    "exercises": [
        ("commit", "answer-nibble-decode", "-1", "exercise-progress"),
        ("commit", "answer-nibble-decode", "abc", None),
        ("click", "button[data-focus='check-e2m1-code']", None, None),
        ("commit", "answer-zoo-check", "1", None),
        ("click", "button[data-focus='new-nibble-decode']", None, "exercise-progress"),
        # the new instance's working goes into the lines the old one's used
        ("commit", "answer-nibble-decode", "3", None),
    ],
    "code-explorer": [
        ("click", "button[data-focus='bit-0']", None, "code-value"),
        ("click", "button[data-focus='format-E8M0']", None, "code-value"),
        ("commit", "value", "3", "bracket"),
        ("click", "button[data-focus='show-floor (OCP): 2^floor(log2 x)']", None, "code-formula"),
        ("commit", "value", "-1", None),
        # refused: the line saying the note is for the last number taken appears, made beforehand
        ("commit", "value", "abc", None),
        # E8M0's 2 carries over as E2M1's 2: the value stays, the formula changes
        ("click", "button[data-focus='format-E2M1']", None, "code-formula"),
        ("key", "button[data-focus='bit-3']", "Enter", "code-value"),
        ("commit", "code", "16", None),
        ("click", "button[data-focus='format-E4M3']", None, "code-formula"),
        ("commit", "value", "0.3", "bracket"),
    ],
}

# Changes made before counting: what appears only once there is something to show (an
# exercise's worked arithmetic, with its first checked answer) is drawn here.
FIRST = {
    "exercises": [
        ("commit", "answer-nibble-decode", "2", None),
        ("commit", "answer-e2m1-code", "0", None),
        ("commit", "answer-zoo-check", "2", None),
        # a first miss shows a hint only: the working is asked for, so its lines are drawn here
        ("reveal", "nibble-decode", None, None),
        ("reveal", "e2m1-code", None, None),
        ("reveal", "zoo-check", None, None),
    ],
    # E8M0 has three rounding rules, E4M3 one: the two extra cards are drawn with the first E8M0
    "code-explorer": [
        ("click", "button[data-focus='format-E8M0']", None, None),
        ("click", "button[data-focus='format-E4M3']", None, None),
    ],
}


def _make(page, how, target, value):
    if how == "commit":
        field = page.locator(f"#widget input[data-focus='{target}']")
        field.fill(value)
        field.press("Enter")
    elif how == "click":
        page.locator(f"#widget {target}").click()
    elif how == "reveal":  # Show the working, where the answer has not shown it already
        button = page.locator(f"#widget button[data-focus='working-{target}']")
        if button.is_visible() and button.is_enabled():
            button.click()
    else:
        page.locator(f"#widget {target}").focus()
        page.keyboard.press(value)


@pytest.mark.parametrize("slug", list(CHANGES))
def test_a_change_creates_no_elements(pages, slug):
    with browser_page() as (page, log):
        # exercises at seed 1, whose nibble-decode changes below are written for
        open_standalone(page, pages, slug, {"seed": 1} if slug == "exercises" else None)
        controls = page.locator("#widget input, #widget button").count()
        for change in FIRST.get(slug, []):
            _make(page, *change[:3])
        page.evaluate(COUNT_CREATED)
        for how, target, value, readout in CHANGES[slug]:
            before = page.get_by_test_id(readout).inner_text() if readout else None
            _make(page, how, target, value)
            if readout:
                assert page.get_by_test_id(readout).inner_text() != before, (slug, how, target, value)
            assert page.evaluate("window.created") == 0, (slug, how, target, value)
        assert page.locator("#widget input, #widget button").count() == controls
        assert log.blocked == [] and log.console_errors == []
