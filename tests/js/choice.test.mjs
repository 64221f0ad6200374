// Which outcome panels a precomputed choice shows (widgets/choice.js): a panel belongs to a group
// and names the options it was computed for; it shows when every one of them is chosen.
import { test } from "node:test";
import assert from "node:assert/strict";
import { groupPanels, panelShown } from "../../widgets/ui.js";

test("a panel shows only when every control it depends on holds its option", () => {
  const values = { source: "tiny GGUF", byte: "3" };
  assert.equal(panelShown({ source: "tiny GGUF" }, values), true);
  assert.equal(panelShown({ source: "tiny GGUF", byte: "3" }, values), true);
  assert.equal(panelShown({ source: "tiny GGUF", byte: "4" }, values), false);
  assert.equal(panelShown({ source: "other" }, values), false);
  // an option is compared as the text it is, never coerced ("3" is not 3)
  assert.equal(panelShown({ byte: 3 }, values), false);
  assert.equal(panelShown({}, values), true);
});

function fakePanel(attributes) {
  return { getAttribute: (name) => (name in attributes ? attributes[name] : null) };
}

test("a group's panels are found by group, and a mark that does not parse is skipped", () => {
  const nodes = [
    fakePanel({ "data-lab-choice": "real-weights", "data-lab-when": '{"format":"Q4_K"}' }),
    fakePanel({ "data-lab-choice": "real-weights", "data-lab-when": '{"format":"NF4"}' }),
    fakePanel({ "data-lab-choice": "answers", "data-lab-when": '{"format":"Q4_K"}' }),
    fakePanel({ "data-lab-choice": "real-weights", "data-lab-when": "not json" }),
    fakePanel({ "data-lab-choice": "real-weights", "data-lab-when": '["Q4_K"]' }),
    fakePanel({ "data-lab-choice": "real-weights" }),
  ];
  const root = { querySelectorAll: (selector) => (assert.equal(selector, "[data-lab-choice]"), nodes) };
  const panels = groupPanels(root, "real-weights");
  assert.deepEqual(
    panels.map((panel) => panel.when),
    [{ format: "Q4_K" }, { format: "NF4" }],
  );
  assert.equal(panels[0].node, nodes[0]);
  assert.deepEqual(groupPanels(root, "nothing"), []);
});

test("a number field takes a whole number it offers, and refuses anything else in the lab's words", async () => {
  const { typedOption } = await import("../../widgets/choice.js");
  const seed = { label: "random seed", options: ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"] };
  assert.deepEqual(typedOption(seed, "7"), { option: "7", refusal: "" });
  assert.deepEqual(typedOption(seed, " 4 "), { option: "4", refusal: "" });
  assert.deepEqual(typedOption(seed, "007"), { option: "7", refusal: "" });
  const wanted = "random seed: type a whole number from 0 to 9";
  for (const typed of ["3.7", "10", "-1", "seven", "1e0", "0x3", "<b>1</b>", "99999999999"]) {
    assert.deepEqual(typedOption(seed, typed), { option: null, refusal: `${wanted}, not ${typed}.` }, typed);
  }
  assert.deepEqual(typedOption(seed, "  "), { option: null, refusal: `${wanted}; the field is empty.` });
  // what would hide in the text is spelt out, and a long entry is cut
  assert.equal(typedOption(seed, "1\n2").refusal, `${wanted}, not 1\\n2.`);
  assert.equal(typedOption(seed, "9".repeat(60)).refusal, `${wanted}, not ${"9".repeat(39)}….`);
});
