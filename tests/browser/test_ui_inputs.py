"""Hostile input in every text field of every widget, on the standalone pages (the same widget code
that marimo loads), and focus staying put through re-renders.

Every entry must leave all controls in place, put any refusal beside its field (role=alert, tied
by aria-describedby), log no console error, run no script, and never reach the page's link.
"""

from __future__ import annotations

import pytest
from chromium import browser_page, open_standalone
from playwright.sync_api import expect

from publish import standalone

pytestmark = pytest.mark.browser

# Entries every field must refuse, and entries some fields accept (a weight of 1e39 or −0 is fine;
# a tensor scale of 1e39 is not).
REFUSED = ["NaN", "", "1e400", "9" * 5000, "<img src=x onerror=alert(1)>", "0x", "\u00bc"]
MAYBE = ["1e39", "-0"]

# Collects the controls and the state of each text field, looking inside shadow roots too.
PROBE = """() => {
  const root = document.getElementById("widget");
  const fields = [...root.querySelectorAll("input[type=text]")].map((input) => {
    const note = document.getElementById(input.getAttribute("aria-describedby") ?? "");
    return {
      key: input.dataset.focus,
      invalid: input.getAttribute("aria-invalid") === "true",
      note: note && !note.hidden && note.getAttribute("role") === "alert" ? note.textContent : "",
    };
  });
  return { controls: root.querySelectorAll("input, button").length, fields };
}"""

DEEP_ACTIVE = """() => {
  let active = document.activeElement;
  while (active && active.shadowRoot && active.shadowRoot.activeElement) active = active.shadowRoot.activeElement;
  return active ? (active.dataset.focus ?? active.tagName) : null;
}"""


# Fields one template makes for many items (the exercises page's answer field for each exercise:
# "answer-<kind>", one parser): every entry in the first two of them, and in the rest one entry
# that must be refused and one that must stay text.
SAME_TEMPLATE_IN_FULL = 2
SAME_TEMPLATE_SAMPLE = ["NaN", "<img src=x onerror=alert(1)>"]


def entries_for(key: str, keys: list[str]) -> list[str]:
    template = key.split("-", 1)[0]
    siblings = [other for other in keys if other.split("-", 1)[0] == template]
    if len(siblings) > SAME_TEMPLATE_IN_FULL and siblings.index(key) >= SAME_TEMPLATE_IN_FULL:
        return SAME_TEMPLATE_SAMPLE
    return REFUSED + MAYBE


def _field(probe, key):
    return next(field for field in probe["fields"] if field["key"] == key)


@pytest.mark.parametrize("slug", list(standalone.PAGES))
def test_every_text_field_survives_hostile_entries(pages, slug):
    with browser_page() as (page, log):
        dialogs = []
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        open_standalone(page, pages, slug)
        before = page.evaluate(PROBE)
        keys = [field["key"] for field in before["fields"]]
        assert keys, f"{slug} has no text field"
        # a page reloaded after a refusal is the page as opened (nothing of the refusal is kept), so
        # the next entry starts from it; after an accepted entry the page is opened afresh
        as_opened = False
        for key in keys:
            for entry in entries_for(key, keys):
                if not as_opened:
                    open_standalone(page, pages, slug)
                as_opened = False
                field = page.locator(f"#widget input[data-focus='{key}']")
                field.fill(entry)
                field.press("Enter")
                after = page.evaluate(PROBE)
                assert after["controls"] == before["controls"], (slug, key, entry)
                state = _field(after, key)
                if entry in REFUSED:
                    assert state["invalid"] and state["note"].strip(), (slug, key, entry)
                    assert len(state["note"]) < 400, (slug, key, entry)  # a pasted page is not echoed whole
                if state["invalid"]:
                    assert state["note"].strip(), (slug, key, entry)
                    # the refusal never reaches the link: a reload shows a working page
                    page.reload()
                    page.wait_for_selector("body[data-ready='true']")
                    reloaded = page.evaluate(PROBE)
                    assert reloaded["controls"] == before["controls"], (slug, key, entry)
                    assert all(not f["invalid"] for f in reloaded["fields"]), (slug, key, entry)
                    as_opened = True
        assert dialogs == [] and page.evaluate("typeof window.alertRan") == "undefined"
        assert log.blocked == [] and log.console_errors == []


def test_ownership_tensor_scale_1e39_is_refused_in_the_labs_words(pages):
    with browser_page() as (page, log):
        open_standalone(page, pages, "ownership")
        field = page.get_by_role("textbox", name="FP32 tensor scale (multiplier)")
        field.fill("1e39")
        field.press("Enter")
        note = _field(page.evaluate(PROBE), "tensor-scale")["note"]
        assert "tensor scale" in note and "global_scale = 2688" in note
        assert _text(page, "nv-trace") == "element 0: 3 \u00d7 0.3125 \u00d7 1 = 0.9375"  # unchanged
        assert "tensor_scale" not in page.evaluate("decodeURIComponent(location.hash)")
        # the same value arriving in a link falls back to the defaults, with a message (the page is
        # open already, so the link is applied by its hashchange event, which can come after goto)
        open_standalone(page, pages, "ownership", {"tensor_scale": 1e39})
        expect(page.locator("#link-note")).to_contain_text("defaults")
        assert _text(page, "nv-trace").endswith("= 0.9375")
        assert page.evaluate(PROBE)["controls"] > 60
        assert log.blocked == [] and log.console_errors == []


def _text(page, testid):
    return page.get_by_test_id(testid).inner_text()


@pytest.mark.parametrize(
    "fragment",
    [
        {"w_text": "9" * 5000},
        {"w_text": "1, 2", "x_text": "1"},
        {"scale": -0.0},
        {"w_text": "<img src=x onerror=alert(1)>"},
    ],
)
def test_bad_links_fall_back_to_the_defaults(pages, fragment):
    with browser_page() as (page, log):
        open_standalone(page, pages, "scale-lab", fragment)
        assert "defaults" in page.locator("#link-note").inner_text()
        assert _text(page, "delta-y") == "\u22120.25"
        assert log.blocked == [] and log.console_errors == []


def test_scale_lab_saturates_a_huge_weight(pages):
    with browser_page() as (page, log):
        open_standalone(page, pages, "scale-lab", {"scale": 1})
        field = page.get_by_role("textbox", name="weights w")
        field.fill("1e17, 0.3, 0.9, 1.7")
        field.press("Enter")
        first_row = page.locator("table.lab-table tbody tr").first
        cells = first_row.locator("td").all_inner_texts()
        assert cells[2] == "6" and cells[6] == "clipped"
        assert log.blocked == [] and log.console_errors == []


def test_focus_stays_on_the_control_through_re_renders(pages):
    with browser_page() as (page, log):
        open_standalone(page, pages, "nibble-decoder")
        code = page.get_by_role("textbox", name="code (0..15, 0x\u2026 or 0b\u2026); \u2191 \u2193 step it")
        code.focus()
        page.keyboard.press("ArrowUp")
        page.keyboard.press("ArrowUp")
        assert page.evaluate(DEEP_ACTIVE) == "code"
        assert _text(page, "e2m1-value") == "6" and code.input_value() == "7"
        page.keyboard.press("ArrowDown")
        assert _text(page, "e2m1-value") == "4"
        code.fill("0b1111")
        code.press("Enter")
        assert _text(page, "e2m1-value") == "\u22126" and page.evaluate(DEEP_ACTIVE) == "code"
        bit = page.get_by_role("button", name="bit 0, fraction bit, is 1")
        bit.focus()
        page.keyboard.press("Space")
        page.keyboard.press("Space")
        assert page.evaluate(DEEP_ACTIVE) == "bit-0" and _text(page, "e2m1-value") == "\u22126"

        open_standalone(page, pages, "q4k-explorer")
        page.locator("button[data-focus='byte-16']").focus()  # payload byte 0, the one traced
        page.keyboard.press("ArrowRight")
        page.keyboard.press("ArrowRight")
        # focus goes with the traced byte, to payload byte 2
        assert page.evaluate(DEEP_ACTIVE) == "byte-18" and _text(page, "low-weight") == "3.5"

        open_standalone(page, pages, "ownership")
        cell = page.get_by_role("button", name="element 3,", exact=False).first
        cell.focus()
        page.keyboard.press("Space")
        page.keyboard.press("Space")
        assert page.evaluate(DEEP_ACTIVE) == "mxfp4-3"

        open_standalone(page, pages, "scale-lab")
        weights = page.get_by_role("textbox", name="weights w")
        weights.fill("1, 2, 3, 4")
        page.keyboard.press("Home")
        page.keyboard.press("ArrowRight")
        page.keyboard.press("ArrowRight")
        page.keyboard.press("Enter")  # commits: the figure re-renders around the field
        page.keyboard.press("Enter")
        assert page.evaluate(DEEP_ACTIVE) == "w"
        assert page.evaluate("document.activeElement.selectionStart") == 2
        page.get_by_role("button", name="2^\u22123").focus()
        page.keyboard.press("Enter")
        page.keyboard.press("Enter")
        assert page.evaluate(DEEP_ACTIVE) == "power--3"
        # Tab still leaves a field whose edit commits on the way out
        weights.fill("1, 2, 3, 5")
        page.keyboard.press("Tab")
        assert page.evaluate(DEEP_ACTIVE) == "x"
        assert log.blocked == [] and log.console_errors == []


# (a field, an entry it refuses, another field, two entries that field takes, neither of which
# changes the first field's kept value)
OTHER_COMMITS = {
    "scale-lab": ("w", "1, two", "x", ("1, 2, 3, 4", "4, 3, 2, 1")),
    "ownership": ("mx-byte", "0x1FF", "tensor-scale", ("2", "3")),
    "q4k-explorer": ("edit-d", "abc", "edit-dmin", ("0.5", "0.25")),
    "code-explorer": ("code", "abc", "value", ("3", "5")),
    "exercises": ("answer-nibble-decode", "abc", "answer-e2m1-code", ("1", "2")),
}


@pytest.mark.parametrize("slug", list(OTHER_COMMITS))
def test_a_refusal_stays_while_another_field_commits(pages, slug):
    refusing, bad, other, good = OTHER_COMMITS[slug]
    with browser_page() as (page, log):
        open_standalone(page, pages, slug)
        field = page.locator(f"#widget input[data-focus='{refusing}']")
        field.fill(bad)
        field.press("Enter")
        refusal = _field(page.evaluate(PROBE), refusing)["note"]
        assert refusal.strip()
        link = page.evaluate("location.hash")
        # committed in place, and on the way out of the field
        for leave, entry_text in zip(("Enter", "Tab"), good, strict=True):
            entry = page.locator(f"#widget input[data-focus='{other}']")
            entry.fill(entry_text)
            entry.press(leave)
            assert page.evaluate("location.hash") != link, (slug, leave)  # the other commit changed a trait
            link = page.evaluate("location.hash")
            if leave == "Enter":
                assert page.evaluate(DEEP_ACTIVE) == other
            assert field.input_value() == bad, (slug, leave)  # what the learner typed is still there
            state = _field(page.evaluate(PROBE), refusing)
            assert state["invalid"] and state["note"] == refusal, (slug, leave)
            assert not _field(page.evaluate(PROBE), other)["invalid"]
        assert log.blocked == [] and log.console_errors == []


def test_a_refusal_goes_when_its_field_gets_a_new_kept_value(pages):
    with browser_page() as (page, log):
        open_standalone(page, pages, "code-explorer")
        code = page.locator("#widget input[data-focus='code']")
        code.fill("abc")
        code.press("Enter")
        assert _field(page.evaluate(PROBE), "code")["invalid"]
        page.get_by_role("button", name="bit 0, mantissa, is 0").click()  # 0x2A becomes 0x2B
        assert code.input_value() == "43" and not _field(page.evaluate(PROBE), "code")["invalid"]

        open_standalone(page, pages, "q4k-explorer")
        edit = page.locator("#widget input[data-focus='edit-byte']")
        edit.fill("0x1FF")
        edit.press("Enter")
        assert _field(page.evaluate(PROBE), "edit-byte")["invalid"]
        # another payload byte: the field now edits that byte, so it shows it
        page.locator("#widget button[data-focus='byte-17']").click()
        assert edit.input_value() == "0x" + page.locator("#widget button[data-focus='byte-17']").inner_text()
        assert not _field(page.evaluate(PROBE), "edit-byte")["invalid"]

        open_standalone(page, pages, "exercises")
        answer = page.locator("#widget input[data-focus='answer-nibble-decode']")
        answer.fill("abc")
        answer.press("Enter")
        assert _field(page.evaluate(PROBE), "answer-nibble-decode")["invalid"]
        # a new instance is a new question: the refused text was an answer to the old one
        page.locator("#widget button[data-focus='new-nibble-decode']").click()
        assert answer.input_value() == "" and not _field(page.evaluate(PROBE), "answer-nibble-decode")["invalid"]
        assert log.blocked == [] and log.console_errors == []


def test_focus_moves_to_the_same_place_when_a_link_takes_its_bit_away(pages):
    with browser_page() as (page, log):
        for bit, stand_in in ((7, 3), (4, 0)):
            open_standalone(page, pages, "code-explorer", {"format": "E4M3", "code": 5})
            page.locator(f"#widget button[data-focus='bit-{bit}']").focus()
            # a link (or Python) switches to E2M1, which has no bit 4..7
            page.evaluate("location.hash = encodeURIComponent(JSON.stringify({format: 'E2M1', code: 5}))")
            page.wait_for_function("document.querySelector(\"#widget [data-testid='code-value']\").textContent === '3'")
            assert page.evaluate(DEEP_ACTIVE) == f"bit-{stand_in}"
            page.keyboard.press("Space")  # and the keyboard carries on from there
            assert page.get_by_test_id("code-value").inner_text() != "3"
            # back to E4M3: the bit kept its place and keeps focus
            page.evaluate("location.hash = encodeURIComponent(JSON.stringify({format: 'E4M3', code: 5}))")
            page.wait_for_function(
                "document.querySelector(\"#widget [data-testid='code-value']\").textContent === '0.009765625'"
            )
            assert page.evaluate(DEEP_ACTIVE) == f"bit-{stand_in}"
        assert log.blocked == [] and log.console_errors == []


# Byte fields (notebooks 3 and 5): what a refusal says for an entry, and what it must never suggest.
BYTE_REFUSALS = {
    "abc": ("\u201cabc\u201d is not a byte. Type something like 126, 0x7E or 0b01111110.", "0xABC"),
    "1e999": ("\u201c1e999\u201d is not a byte. Type something like 126, 0x7E or 0b01111110.", "0x1E999"),
    "256": ("256 does not fit in a byte. Type 0 to 255 or 0x00 to 0xFF.", "256 is 256"),
    "a5": ("For hexadecimal, start with 0x: 0xA5.", None),
}


@pytest.mark.parametrize(
    ("slug", "key"), [("ownership", "mx-byte"), ("ownership", "nv-byte-1"), ("q4k-explorer", "edit-byte")]
)
def test_byte_fields_suggest_only_bytes(pages, slug, key):
    with browser_page() as (page, log):
        open_standalone(page, pages, slug)
        field = page.locator(f"#widget input[data-focus='{key}']")
        for entry, (says, never) in BYTE_REFUSALS.items():
            field.fill(entry)
            field.press("Enter")
            note = _field(page.evaluate(PROBE), key)["note"]
            assert says in note, (entry, note)
            assert never is None or never not in note, (entry, note)
        # the suggestion, typed, is taken
        field.fill("0xA5")
        field.press("Enter")
        assert not _field(page.evaluate(PROBE), key)["invalid"] and field.input_value() == "0xA5"
        assert log.blocked == [] and log.console_errors == []


# Buttons that pick one of many: one Tab stop, focus and pick moving together. (page, the
# container of the buttons, how many rows' worth of buttons an arrow Up/Down moves)
PICK_ONE = {
    "q4k-explorer": ".lab-cells-bytes",
    "ownership": ".lab-cells-elements",
    "nibble-decoder": "table[aria-label='all sixteen codes']",
}

# The container's buttons: which has focus, which is picked, which Tab reaches, and the row on screen.
PICKS = """(selector) => {
  const box = document.querySelector(selector);
  const buttons = [...box.querySelectorAll("button")];
  const active = document.activeElement;
  return {
    focused: buttons.indexOf(active),
    focusVisible: active.matches(":focus-visible") && getComputedStyle(active).outlineStyle !== "none",
    picked: buttons.findIndex((b) => b.getAttribute("aria-pressed") === "true" || b.closest("[aria-current='true']")),
    tabStops: buttons.flatMap((b, i) => (b.tabIndex === 0 ? [i] : [])),
    row: box.tagName === "TABLE" ? 1 : getComputedStyle(box).gridTemplateColumns.split(" ").length,
    count: buttons.length,
  };
}"""


@pytest.mark.parametrize("width", [390, 1440])
@pytest.mark.parametrize("slug", list(PICK_ONE))
def test_arrow_keys_move_focus_and_pick_together(pages, slug, width):
    selector = PICK_ONE[slug]
    with browser_page() as (page, log):
        page.set_viewport_size({"width": width, "height": 900})
        open_standalone(page, pages, slug)
        buttons = page.locator(f"#widget {selector} button")
        picks = lambda: page.evaluate(PICKS, selector)  # noqa: E731
        assert picks()["tabStops"] == [picks()["picked"]]  # one Tab stop: the picked button
        buttons.nth(2).click()
        state = picks()
        assert state["focused"] == state["picked"] == 2 and state["tabStops"] == [2]
        page.keyboard.press("ArrowRight")
        state = picks()
        assert state["focused"] == state["picked"] == 3 and state["tabStops"] == [3] and state["focusVisible"], state
        for key in ("Enter", " "):  # picks the focused button: no jump back to the clicked one
            page.keyboard.press(key)
            state = picks()
            assert state["focused"] == state["picked"] == 3, (key, state)
        row = state["row"]
        page.keyboard.press("ArrowDown")
        assert picks()["focused"] == picks()["picked"] == 3 + row
        page.keyboard.press("ArrowUp")
        page.keyboard.press("ArrowLeft")
        assert picks()["focused"] == picks()["picked"] == 2
        page.keyboard.press("End")
        state = picks()
        assert state["focused"] == state["picked"] == state["count"] - 1 and state["tabStops"] == [state["count"] - 1]
        page.keyboard.press("Home")
        assert picks()["focused"] == picks()["picked"] == 0
        page.keyboard.press("ArrowLeft")  # round from the first to the last
        assert picks()["focused"] == picks()["picked"] == state["count"] - 1
        # one Tab leaves the buttons; Shift+Tab comes back to the picked one
        page.keyboard.press("Tab")
        assert picks()["focused"] == -1
        page.keyboard.press("Shift+Tab")
        state = picks()
        assert state["focused"] == state["picked"] == state["count"] - 1 and state["focusVisible"], state
        assert log.blocked == [] and log.console_errors == []
