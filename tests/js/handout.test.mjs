// The handouts' module (widgets/handout.js) against the exercises' generator it draws from: each
// sheet holds round 0 of every kind of its notebook, the key the codec's own answer and worked
// arithmetic, the worksheet neither. Run: node --test tests/js/
import assert from "node:assert/strict";
import { test } from "node:test";

import { EXERCISE_KINDS, exerciseInstance, exerciseSolve, formatLabNumber, visibleText } from "../../widgets/codec/index.js";
import { handoutExercises, handoutSeedLine } from "../../widgets/handout.js";

test("each topic's sheet holds its kinds at round 0, and only the key gives the answers", () => {
  for (const seed of [1, 7, 4294967295]) {
    for (let topic = 1; topic <= 8; topic += 1) {
      const kinds = EXERCISE_KINDS.filter((entry) => entry.topic === topic).map((entry) => entry.kind);
      const key = handoutExercises(topic, seed, "key");
      const worksheet = handoutExercises(topic, seed, "worksheet");
      assert.deepEqual(key.map((each) => each.kind), kinds);
      assert.deepEqual(worksheet.map((each) => each.number), kinds.map((_, i) => i + 1));
      kinds.forEach((kind, i) => {
        const instance = exerciseInstance(kind, seed, 0);
        const solved = exerciseSolve(kind, instance.params);
        assert.equal(key[i].prompt, instance.prompt);
        assert.equal(worksheet[i].prompt, instance.prompt);
        assert.deepEqual(key[i].options, instance.options);
        assert.equal(key[i].answer, formatLabNumber(solved.answer));
        assert.deepEqual(key[i].worked, solved.worked);
        assert.ok(!("answer" in worksheet[i]) && !("worked" in worksheet[i]), kind);
        // the sheet writes every line through visibleText: the lab's own text reads the same
        for (const line of [instance.prompt, ...instance.options, ...solved.worked]) assert.equal(visibleText(line), line);
      });
    }
  }
});

test("the seed line says what the numbers are", () => {
  assert.equal(handoutSeedLine(7), "seed 7: the numbers a student gets by typing seed 7 into the exercises");
});
