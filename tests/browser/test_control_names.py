"""Every menu and slider of the static site's pages (a precomputed choice's controls, widgets/
choice.js) is named by its label alone: the label that names it holds its words and no control, so
no screen reader reads the option chosen, every option or the slider's value into the control's
name, and the name Chromium gives the control is exactly those words.

A label wrapped around its select is named, by the accessible-name rules for a control embedded in
a label, with the select's chosen option too ("largest element (× the spread) 5 (both rules
agree)"); Chromium leaves it out, other engines and screen readers do not, so the label's shape is
held here as well as Chromium's name."""

from __future__ import annotations

import pytest
from chromium import browser_page

pytestmark = pytest.mark.browser

# the course pages with a precomputed choice: notebook 3's seed, spread and largest element,
# notebook 4's seed, 7's billions, 9's and 10's formats, 11's byte position
PAGES = [
    "03_mxfp4",
    "04_nvfp4",
    "07_capacity_and_cost",
    "09_real_weights",
    "10_what_four_bits_do_to_answers",
    "11_formats_side_by_side",
]

# Every menu and slider in the page's widgets, kept on window for the accessibility tree to name
# one by one, each with what names it: its aria-label, the elements its aria-labelledby points at,
# or its <label>s, and whether any of those holds a control.
CONTROLS = r"""() => {
  const roots = [document];
  for (let i = 0; i < roots.length; i += 1)
    for (const el of roots[i].querySelectorAll("*")) if (el.shadowRoot) roots.push(el.shadowRoot);
  const controls = roots.flatMap((root) => [...root.querySelectorAll('select, input[type="range"]')])
    .filter((control) => control.checkVisibility() && !control.closest("[inert]"));
  window.__labControls = controls;
  const words = (node) => node.textContent.replace(/\s+/g, " ").trim();
  return controls.map((control) => {
    const root = control.getRootNode();
    const ids = (control.getAttribute("aria-labelledby") || "").split(/\s+/).filter(Boolean);
    const naming = ids.length ? ids.map((id) => root.getElementById(id)).filter(Boolean) : [...(control.labels || [])];
    return {
      tag: control.tagName.toLowerCase(),
      ariaLabel: control.getAttribute("aria-label"),
      label: naming.map(words).join(" "),
      labelled: naming.length,
      holdsControl: naming.some((node) => node.querySelector("input, select, textarea, output, button")),
    };
  });
}"""


def _names(page, count: int) -> list[str]:
    """The name Chromium's accessibility tree gives each of window.__labControls."""
    cdp = page.context.new_cdp_session(page)
    names = []
    for i in range(count):
        found = cdp.send("Runtime.evaluate", {"expression": f"window.__labControls[{i}]"})
        tree = cdp.send(
            "Accessibility.getPartialAXTree", {"objectId": found["result"]["objectId"], "fetchRelatives": False}
        )
        names.append(tree["nodes"][0].get("name", {}).get("value", ""))
    return names


@pytest.mark.parametrize("name", PAGES)
def test_each_menu_and_slider_is_named_by_its_label_alone(server, name):
    with browser_page() as (page, log):
        page.goto(f"{server}/{name}.html")
        page.locator(".lab-choice").first.wait_for(state="attached", timeout=60_000)
        page.wait_for_load_state("networkidle")
        page.wait_for_timeout(500)
        controls = page.evaluate(CONTROLS)
        names = _names(page, len(controls))
        assert log.console_errors == [] and log.blocked == []
    assert controls, f"{name} shows no menu or slider"
    for control, accessible in zip(controls, names, strict=True):
        where = f"{name}: the {control['tag']} labelled {control['label']!r}"
        if control["ariaLabel"]:
            assert accessible == control["ariaLabel"], where
            continue
        assert control["labelled"] and control["label"], f"{where} has no label"
        assert not control["holdsControl"], f"{where}: its label holds the control, whose value joins the name"
        assert accessible == control["label"], f"{where} is named {accessible!r}"
