// The handouts' module (widgets/handout.js) against the exercises' generator it draws from: each
// sheet holds round 0 of every kind of its notebook, the key the codec's own answer and worked
// arithmetic, the worksheet neither. Run: node --test tests/js/
import assert from "node:assert/strict";
import { test } from "node:test";

import { EXERCISE_KINDS, exerciseInstance, exerciseSolve, formatLabNumber, visibleText } from "../../widgets/codec/index.js";
import { bookletCandidates, bookletCoverLines, bookletWhere, handoutExercises, handoutQuestion, handoutSeedLine } from "../../widgets/handout.js";

test("each topic's sheet holds its kinds at round 0, and only the key gives the answers", () => {
  for (const seed of [1, 7, 4294967295]) {
    for (let topic = 1; topic <= 12; topic += 1) {
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

test("a booklet asks a notebook's kinds round after round, each question the one the exercises show at that round", () => {
  const kinds = EXERCISE_KINDS.filter((entry) => entry.topic === 12).map((entry) => entry.kind);
  const candidates = bookletCandidates(12, 3);
  assert.deepEqual(
    candidates,
    [0, 1, 2].flatMap((round) => kinds.map((kind) => ({ kind, round }))),
  );
  for (const { kind, round } of candidates) {
    const instance = exerciseInstance(kind, 7, round);
    const solved = exerciseSolve(kind, instance.params);
    const asked = handoutQuestion(kind, 7, round, "key", 4);
    assert.deepEqual(
      [asked.number, asked.round, asked.prompt, asked.options, asked.answer, asked.worked],
      [4, round, instance.prompt, instance.options, formatLabNumber(solved.answer), solved.worked],
    );
    assert.ok(!("answer" in handoutQuestion(kind, 7, round, "worksheet", 4)));
  }
  // every notebook 1..12 has questions to ask
  for (let topic = 1; topic <= 12; topic += 1) assert.ok(bookletCandidates(topic, 1).length >= 2, String(topic));
});

test("a booklet says where each question is in the lab, and its cover says the seed and how to use it", () => {
  assert.equal(bookletWhere(3, "mxfp4-decode", 0), "exercise 3.2, round 0: the first question shown");
  assert.equal(bookletWhere(3, "e8m0-rule", 1), "exercise 3.1, round 1: after New instance pressed once");
  assert.equal(bookletWhere(12, "kl-divergence", 4), "exercise 12.1, round 4: after New instance pressed 4 times");
  const cover = bookletCoverLines(4242, false);
  assert.equal(cover.seed, "Seed 4242");
  assert.equal(cover.kind, "worksheet");
  assert.match(cover.how, /Type seed 4242 into the seed field there/);
  assert.equal(bookletCoverLines(1, true).kind, "answer key");
});
