// What the exercises and the code explorer show is computed only in the browser (their Python
// classes keep the inputs and derive nothing), so their state checks and the exercises' count are
// tested here, on the same functions the figures call. Expected values are worked by hand.
// Run: node --test tests/js/
import assert from "node:assert/strict";
import { test } from "node:test";

import { exerciseScore } from "../../widgets/codec/teach/exercises.js";
import codeExplorer from "../../widgets/code_explorer.js";
import exercises from "../../widgets/exercises.js";

const TOPIC_2 = { topic: 2, seed: 1, rounds: {}, answers: {}, progress: { "scale-nearest": "correct", "scale-delta-y": "wrong" } };

test("the exercises count the right answers of the topic's kinds", () => {
  assert.equal(exercises.check(TOPIC_2), null);
  assert.deepEqual(exerciseScore(2, TOPIC_2.progress), { correct: 1, of: 2 });
  // an answer to another notebook's exercise is not one of this topic's
  assert.deepEqual(exerciseScore(3, TOPIC_2.progress), { correct: 0, of: exerciseScore(3, {}).of });
});

test("the exercises refuse a topic that is no notebook", () => {
  assert.match(exercises.check({ ...TOPIC_2, topic: 9 }), /1\.\.8/);
});

test("the code explorer takes E8M0 0x7E and refuses a code past 0xFF", () => {
  assert.equal(codeExplorer.check({ format: "E8M0", code: 126, value_text: "0.3" }), null);
  assert.match(codeExplorer.check({ format: "E8M0", code: 300, value_text: "0.3" }), /0\.\.255/);
});
