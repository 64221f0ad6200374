// What the exercises and the code explorer show is computed only in the browser (their Python
// classes keep the inputs and derive nothing), so their state checks and the exercises' count are
// tested here, on the same functions the figures call. Expected values are worked by hand.
// Run: node --test tests/js/
import assert from "node:assert/strict";
import { test } from "node:test";

import { exerciseInstance, exerciseScore, exerciseSolve, formatLabNumber } from "../../widgets/codec/index.js";
import codeExplorer from "../../widgets/code_explorer.js";
import exercises from "../../widgets/exercises.js";
import { keptNote, outcomesFollowing, showOutcomes } from "../../widgets/ui.js";

// The answer the codec computes for a kind at seed 1, round 0, typed as the lab prints it.
const right = (kind) => formatLabNumber(exerciseSolve(kind, exerciseInstance(kind, 1, 0).params).answer).replace("\u2212", "-");
const wrong = (kind) => String(Number(right(kind)) + 17);
// Notebook 2's two kinds: one answered right, one wrong; the progress claims both right.
const TOPIC_2 = {
  topic: 2,
  seed: 1,
  rounds: {},
  answers: { "scale-nearest": right("scale-nearest"), "scale-delta-y": wrong("scale-delta-y") },
  progress: { "scale-nearest": "correct", "scale-delta-y": "correct" },
};

test("the exercises count the right answers of the topic's kinds, checked again from the answers", () => {
  assert.equal(exercises.check(TOPIC_2), null);
  const score = exerciseScore(2, TOPIC_2.seed, TOPIC_2.rounds, TOPIC_2.answers);
  assert.deepEqual(score, { correct: 1, of: 2, verdicts: { "scale-nearest": "correct", "scale-delta-y": "wrong" } });
  // an answer to another notebook's exercise is not one of this topic's
  assert.deepEqual(exerciseScore(3, TOPIC_2.seed, TOPIC_2.rounds, TOPIC_2.answers).correct, 0);
  assert.equal(exerciseScore(3, 1, {}, {}).of, 2);
  // progress that claims "correct" without the answers counts nothing: the score never reads it
  assert.deepEqual(exerciseScore(2, 1, {}, {}), { correct: 0, of: 2, verdicts: {} });
  // seed 1's right answer (1.5: w = 1.74 at scale 1) is wrong for seed 2's numbers (w = −3.62 at
  // scale 0.25, −1.5) and for seed 1's next round (w = −0.97 at scale 0.125, −0.75)
  assert.equal(right("scale-nearest"), "1.5");
  assert.deepEqual(exerciseScore(2, 2, {}, { "scale-nearest": "1.5" }).verdicts, { "scale-nearest": "wrong" });
  assert.deepEqual(exerciseScore(2, 1, { "scale-nearest": 1 }, { "scale-nearest": "1.5" }).verdicts, { "scale-nearest": "wrong" });
  // text that is no answer at all (a link can carry any) has no verdict
  assert.deepEqual(exerciseScore(2, 1, {}, { "scale-nearest": "<b>1.5</b>" }).verdicts, {});
});

test("the exercises refuse a topic that is no notebook", () => {
  assert.match(exercises.check({ ...TOPIC_2, topic: 13 }), /1\.\.12, or 0 for all, got 13/);
});

test("the code explorer takes E8M0 0x7E and refuses a code past 0xFF", () => {
  assert.equal(codeExplorer.check({ format: "E8M0", code: 126, value_text: "0.3" }), null);
  assert.match(codeExplorer.check({ format: "E8M0", code: 300, value_text: "0.3" }), /0\.\.255/);
});

// A typo keeps the output (widgets/ui.js): what a refused entry would have changed stays on
// screen, dimmed under a note naming the last valid input, until the field is valid again.

test("a kept output's note names the last valid input of each field that no longer holds it", () => {
  assert.equal(
    keptNote([["inputs x", "2, 1, -1, 0.5"]]),
    "Showing the last valid input: inputs x = 2, 1, -1, 0.5. What is shown here follows again once the field is valid.",
  );
  assert.equal(
    keptNote([["weights w", "-1, 0.3"], ["scale", "0.5"]]),
    "Showing the last valid input: weights w = -1, 0.3; scale = 0.5. What is shown here follows again once the fields are valid.",
  );
  // the input came from elsewhere (a link, the kernel): no field to name
  assert.equal(keptNote([]), "Showing the last valid input. What is shown here follows again once the input is valid.");
  // what was typed is shown, never hidden or reordered, and a pasted page is cut to its ends
  assert.match(keptNote([["code", "5\u202e"]]), /code = 5\\u202e\./);
  const long = keptNote([["code", "7".repeat(500)]]);
  assert.ok(long.length < 200 && long.includes(`${"7".repeat(24)}…${"7".repeat(8)}`), long);
});

test("panels follow valid values, and keep the last valid ones while a control is refused", () => {
  const last = { seed: "7", spread: "0" };
  assert.deepEqual(outcomesFollowing({ seed: "4", spread: "0" }, last), { following: { seed: "4", spread: "0" }, kept: false, refused: [] });
  assert.deepEqual(outcomesFollowing({ seed: null, spread: "2" }, last), { following: last, kept: true, refused: ["seed"] });
  // a widget whose traits have a problem passes no values at all
  assert.deepEqual(outcomesFollowing(null, last), { following: last, kept: true, refused: [] });
  // nothing valid was shown yet: nothing to keep
  assert.deepEqual(outcomesFollowing({ seed: null }, undefined), { following: null, kept: true, refused: ["seed"] });
});

// Just enough of a page for showOutcomes: elements with attributes, children, text and style.
class FakeElement {
  constructor(tag, attributes = {}, children = []) {
    this.tagName = tag;
    this.attributes = new Map(Object.entries(attributes));
    this.children = [];
    this.parent = null;
    this.hidden = false;
    this.textContent = "";
    this.firstChild = null; // text is kept in textContent
    const styles = new Map();
    this.style = { getPropertyValue: (name) => styles.get(name) ?? "", setProperty: (name, value) => styles.set(name, value), removeProperty: (name) => styles.delete(name) };
    for (const child of children) this.append(child);
  }
  getAttribute(name) {
    return this.attributes.has(name) ? this.attributes.get(name) : null;
  }
  setAttribute(name, value) {
    this.attributes.set(name, String(value));
  }
  hasAttribute(name) {
    return this.attributes.has(name);
  }
  removeAttribute(name) {
    this.attributes.delete(name);
  }
  get firstElementChild() {
    return this.children[0] ?? null;
  }
  append(child) {
    child.parent = this;
    this.children.push(child);
  }
  prepend(child) {
    child.parent = this;
    this.children.unshift(child);
  }
  remove() {
    this.parent.children = this.parent.children.filter((child) => child !== this);
    this.parent = null;
  }
}

function fakePage(panels) {
  const resizes = [];
  globalThis.document = { querySelectorAll: () => panels, createElement: (tag) => new FakeElement(tag) };
  globalThis.window = { dispatchEvent: (event) => resizes.push(event.type) };
  return resizes;
}

const seedPanel = (seed) => new FakeElement("div", { "data-lab-choice": "mxfp4-block", "data-lab-when": JSON.stringify({ seed }) }, [new FakeElement("table")]);
const note = (panel) => (panel.firstElementChild.hasAttribute("data-lab-kept-note") ? panel.firstElementChild : null);

test("notebook 3's seed: a refused seed keeps the last seed's table, dimmed under a note, until a seed it offers", () => {
  const panels = ["3", "4", "7"].map(seedPanel);
  const [, four, seven] = panels;
  fakePage(panels);
  assert.deepEqual(showOutcomes("mxfp4-block", { seed: "7" }), { shown: 1, panels: 3 });
  assert.deepEqual(panels.map((panel) => panel.hidden), [true, true, false]);
  assert.equal(note(seven), null);
  // seed 99 is refused beside the field (choice.js): its value is null, and seed 7's table stays
  for (let draw = 0; draw < 2; draw += 1) {
    assert.deepEqual(showOutcomes("mxfp4-block", { seed: null }), { shown: 1, panels: 3 });
    assert.equal(seven.hidden, false);
    assert.equal(seven.children.length, 2, "one note, however often the page is drawn again");
    assert.equal(note(seven).textContent, "Showing the last valid input: seed = 7. What is shown here follows again once the field is valid.");
    assert.equal(note(seven).getAttribute("role"), "note");
    const table = seven.children[1];
    assert.equal(table.getAttribute("data-lab-kept"), "stale");
    assert.equal(table.style.getPropertyValue("filter"), "grayscale(1)");
    assert.equal(table.style.getPropertyValue("opacity"), "0.85");
  }
  // the caller may word the note itself (a widget names its field's label)
  showOutcomes("mxfp4-block", { seed: null }, "Showing the last valid input: random seed = 7.");
  assert.equal(note(seven).textContent, "Showing the last valid input: random seed = 7.");
  // a seed it offers: that seed's table, following, and nothing of the kept one stays
  assert.deepEqual(showOutcomes("mxfp4-block", { seed: "4" }), { shown: 1, panels: 3 });
  assert.deepEqual(panels.map((panel) => panel.hidden), [true, false, true]);
  assert.equal(note(seven), null);
  assert.equal(note(four), null);
  assert.equal(seven.children[0].getAttribute("data-lab-kept"), null);
  assert.equal(seven.children[0].style.getPropertyValue("filter"), "");
  assert.equal(four.children[0].getAttribute("data-lab-kept"), null);
});

test("a widget whose input was never valid keeps nothing: no panel shows", () => {
  const panels = ["0", "1"].map((code) => new FakeElement("div", { "data-lab-choice": "never-valid", "data-lab-when": JSON.stringify({ code }) }, [new FakeElement("p")]));
  panels[1].hidden = true;
  fakePage(panels);
  assert.deepEqual(showOutcomes("never-valid", null, "a note"), { shown: 0, panels: 2 });
  assert.deepEqual(panels.map((panel) => panel.hidden), [true, true]);
  assert.ok(panels.every((panel) => note(panel) === null));
});
