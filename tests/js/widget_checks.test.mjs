// What the exercises and the code explorer show is computed only in the browser (their Python
// classes keep the inputs and derive nothing), so their state checks and the exercises' count are
// tested here, on the same functions the figures call. Expected values are worked by hand.
// Run: node --test tests/js/
import assert from "node:assert/strict";
import { test } from "node:test";

import { exerciseInstance, exerciseScore, exerciseSolve, formatLabNumber } from "../../widgets/codec/index.js";
import codeExplorer from "../../widgets/code_explorer.js";
import exercises from "../../widgets/exercises.js";

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
  assert.match(exercises.check({ ...TOPIC_2, topic: 9 }), /1\.\.8/);
});

test("the code explorer takes E8M0 0x7E and refuses a code past 0xFF", () => {
  assert.equal(codeExplorer.check({ format: "E8M0", code: 126, value_text: "0.3" }), null);
  assert.match(codeExplorer.check({ format: "E8M0", code: 300, value_text: "0.3" }), /0\.\.255/);
});
