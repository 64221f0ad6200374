// Exercises that teach before they tell (widgets/exercises.js, codec/teach/exercises.js): a first
// wrong answer gets a hint and a second try, the worked answer comes after the second miss or on
// request, and the attempts (first answer, tries, working asked for) are kept for the teacher.
// Run: node --test tests/js/
import assert from "node:assert/strict";
import { test } from "node:test";

import { EXERCISE_KINDS, exerciseCheck, exerciseHint, exerciseInstance, exerciseSolve, formatLabNumber } from "../../widgets/codec/index.js";
import exercises, { MOST_TRIES, afterCheck, attemptOf, feedbackStage } from "../../widgets/exercises.js";

const typedAnswer = (kind, seed) => formatLabNumber(exerciseSolve(kind, exerciseInstance(kind, seed, 0).params).answer).replace("\u2212", "-");

test("a first wrong answer is a hint; a second wrong one, or asking, shows the working; a right one shows it too", () => {
  const wrong = { ok: true, correct: false, typed: 1 };
  const right = { ok: true, correct: true, typed: 2 };
  const first = afterCheck(null, undefined, "1");
  assert.deepEqual(first, { first: "1", tries: 1, shown: false });
  assert.equal(feedbackStage(wrong, first), "hint");
  // Enter pressed again on the same answer is not a second try
  assert.deepEqual(afterCheck(first, "1", "1"), first);
  const second = afterCheck(first, "1", "3");
  assert.deepEqual(second, { first: "1", tries: 2, shown: false });
  assert.equal(feedbackStage(wrong, second), "worked");
  assert.equal(feedbackStage(right, second), "correct");
  // the working asked for before any answer, then a first answer
  const asked = { first: "", tries: 0, shown: true };
  assert.equal(feedbackStage(null, asked), "shown");
  assert.deepEqual(afterCheck(asked, undefined, "2"), { first: "2", tries: 1, shown: true });
  assert.equal(feedbackStage(wrong, { first: "1", tries: 1, shown: true }), "worked");
  assert.equal(feedbackStage(null, null), "none");
  // the tries stop counting at the server's limit
  assert.equal(afterCheck({ first: "1", tries: MOST_TRIES, shown: false }, "1", "2").tries, MOST_TRIES);
});

test("an answer kept without attempts (a link or a store from before they were kept) is a first try", () => {
  assert.deepEqual(attemptOf({}, { "nibble-decode": "3" }, "nibble-decode"), { first: "3", tries: 1, shown: false });
  assert.equal(attemptOf({}, {}, "nibble-decode"), null);
  const kept = { first: "2", tries: 4, shown: true };
  assert.deepEqual(attemptOf({ "nibble-decode": kept }, { "nibble-decode": "3" }, "nibble-decode"), kept);
  // the working asked for and no answer yet; and a link whose answer says no try was made
  const asked = { first: "", tries: 0, shown: true };
  assert.deepEqual(attemptOf({ "nibble-decode": asked }, {}, "nibble-decode"), asked);
  assert.deepEqual(attemptOf({ "nibble-decode": asked }, { "nibble-decode": "3" }, "nibble-decode"), { first: "3", tries: 1, shown: true });
  const traits = { topic: 1, seed: 5, rounds: {}, answers: { "nibble-decode": "3" }, progress: {} };
  assert.equal(exercises.check(traits), null);
  assert.equal(exercises.check({ ...traits, attempts: { "nibble-decode": kept } }), null);
});

test("attempts that are not the widget's own are refused in its words", () => {
  const traits = { topic: 1, seed: 5, rounds: {}, answers: {}, progress: {} };
  for (const bad of [{ first: "1", tries: -1, shown: false }, { first: "1", tries: 1 }, { first: 1, tries: 1, shown: false }, { first: "1", tries: 1, shown: "no" }, { first: "1", tries: 10000, shown: false }, "1"]) {
    assert.match(exercises.check({ ...traits, attempts: { "nibble-decode": bad } }), /^attempts: the attempts at nibble-decode must be \{first: text of at most 200 characters, tries: a whole number 0\.\.9999, shown: true or false\}/, JSON.stringify(bad));
  }
  assert.match(exercises.check({ ...traits, attempts: { "no-such-kind": { first: "1", tries: 1, shown: false } } }), /attempts has an entry the exercises do not know/);
});

test("every kind has a hint in words, and a hint never gives the answer away", () => {
  for (const { kind } of EXERCISE_KINDS) {
    // each instance's hint (after a wrong first answer) and answer, as the lab prints it
    const drawn = [];
    for (let seed = 1; seed <= 40; seed += 1) {
      const { params, prompt } = exerciseInstance(kind, seed, 0);
      const solved = exerciseSolve(kind, params);
      const wrongText = ["1", "2", "3", "6"].find((text) => {
        const checked = exerciseCheck(kind, params, text);
        return checked.ok && !checked.correct;
      });
      if (wrongText === undefined) continue;
      const hint = exerciseHint(kind, params, exerciseCheck(kind, params, wrongText).typed);
      assert.ok(hint.length > 20, `${kind} seed ${seed}`);
      for (const line of solved.worked) assert.ok(!hint.includes(line), `${kind} seed ${seed}: the hint holds the working`);
      drawn.push({ seed, prompt, hint, answer: formatLabNumber(solved.answer) });
    }
    assert.ok(drawn.length > 0, kind);
    // A number in a hint is the method's (a bias of 127, the E2M1 values) when the hint of a
    // question with another answer says it too; otherwise it gave this question's answer away.
    for (const { seed, prompt, hint, answer } of drawn) {
      if (answer.length < 2 || prompt.includes(answer) || !hint.includes(answer)) continue;
      assert.ok(
        drawn.some((other) => other.answer !== answer && other.hint.includes(answer)),
        `${kind} seed ${seed}: the hint says ${answer}`,
      );
    }
  }
});

test("a hint says what a wrong number most likely got wrong: the sign, or a power of two", () => {
  const find = (kind, wanted) => {
    for (let seed = 1; ; seed += 1) {
      const { params } = exerciseInstance(kind, seed, 0);
      if (wanted(exerciseSolve(kind, params).answer)) return params;
    }
  };
  const params = find("mxfp4-decode", (answer) => answer > 0.25 && answer < 64);
  const answer = exerciseSolve("mxfp4-decode", params).answer;
  assert.match(exerciseHint("mxfp4-decode", params, -answer), /^Your number has the right size but the wrong sign\. Two factors/);
  assert.match(exerciseHint("mxfp4-decode", params, answer * 4), /^Your number is too large by a power of two: look again at an exponent, a scale or a bias\./);
  assert.match(exerciseHint("mxfp4-decode", params, -answer / 2), /^Your number is too small by a power of two, and its sign is wrong too/);
  assert.match(exerciseHint("mxfp4-decode", params, answer + 0.1), /^Two factors/);
});

test("a question asked to three decimal places takes any number that rounds to its answer, and no other", () => {
  for (const kind of ["relative-error", "cosine-similarity", "retrieval-margin", "recipe-bpw", "kl-divergence"]) {
    for (const seed of [1, 2, 3, 11]) {
      const { params, prompt, places } = exerciseInstance(kind, seed, 0);
      assert.equal(places, 3, kind);
      assert.match(prompt, /to three decimal places/, kind);
      const answer = exerciseSolve(kind, params).answer;
      assert.ok(exerciseCheck(kind, params, answer.toFixed(3)).correct, `${kind} ${answer}`);
      assert.ok(exerciseCheck(kind, params, typedAnswer(kind, seed)).correct, kind);
      assert.equal(exerciseCheck(kind, params, (answer + 0.002).toFixed(3)).correct, false, `${kind} ${answer}`);
    }
  }
});
