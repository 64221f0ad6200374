// The exercises' checker (widgets/codec/teach/exercises.js), the E8M0/E4M3 encoders and the zoo's
// data against golden vectors written by Python (tests/js/make_golden.py): lab/ chooses instance
// parameters and computes each answer; the JS checker must compute the same bits and accept them.
// Run: node --test tests/js/
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";

import * as codec from "../../widgets/codec/index.js";

const view = new DataView(new ArrayBuffer(8));
function decodeFloat(text) {
  const [width, hex] = text.split(":");
  if (hex === "NaN") return NaN;
  if (width === "f64") {
    view.setBigUint64(0, BigInt(`0x${hex}`));
    return view.getFloat64(0);
  }
  view.setUint32(0, Number.parseInt(hex, 16));
  return view.getFloat32(0);
}
const camelCase = (key) => key.replace(/_([a-z0-9])/g, (_, letter) => letter.toUpperCase());
function revive(key, value) {
  if (typeof value === "string" && /^f(32|64):([0-9a-f]+|NaN)$/.test(value)) return decodeFloat(value);
  if (value && typeof value === "object" && !Array.isArray(value)) {
    return Object.fromEntries(Object.entries(value).map(([name, item]) => [camelCase(name), item]));
  }
  return value;
}
const golden = JSON.parse(readFileSync(new URL("./golden.json", import.meta.url), "utf8"), revive);

function sameBits(actual, expected, where) {
  assert.ok(Object.is(actual, expected) || (actual === expected && actual !== 0), `${where}: expected ${Object.is(expected, -0) ? "-0" : expected}, got ${Object.is(actual, -0) ? "-0" : actual}`);
}

describe("exercises against lab/", () => {
  test("every kind of notebooks 1..8 has golden cases, and every notebook 1..12 at least two kinds", () => {
    // Notebooks 9..12's kinds are held to lab/ by tests/apps/test_exercise_lab_answers.py, which
    // runs their checker (tests/js/exercise_lab_cases.mjs) against lab.study's own functions.
    const kinds = new Set(golden.exercises.map((each) => each.kind));
    assert.deepEqual([...kinds].sort(), codec.EXERCISE_KINDS.filter((each) => each.topic <= 8).map((each) => each.kind).sort());
    for (let topic = 1; topic <= 12; topic += 1) assert.ok(codec.exerciseKinds(topic).length >= 2, `topic ${topic}`);
    assert.equal(codec.exerciseKinds(0).length, codec.EXERCISE_KINDS.length);
  });

  test("the checker computes Python's answer and accepts it", () => {
    for (const { kind, params, answer, accepted } of golden.exercises) {
      const where = `${kind} ${JSON.stringify(params)}`;
      const solved = codec.exerciseSolve(kind, params);
      sameBits(solved.answer, answer, where);
      assert.ok(solved.worked.length > 0 && solved.worked.every((line) => typeof line === "string" && line.length > 0), where);
      const typed = codec.formatLabNumber(answer).replace("\u2212", "-");
      const checked = codec.exerciseCheck(kind, params, typed);
      assert.ok(checked.ok && checked.correct, `${where}: ${typed} should be correct`);
      for (const other of accepted ?? []) assert.ok(codec.exerciseCheck(kind, params, String(other)).correct, `${where}: ${other}`);
      // A wrong number is graded wrong, or refused when it is none of the exercise's choices (a
      // check's number, a code, a reading's values); at least one is graded. Text that is no
      // number is refused with a message.
      const others = [Math.abs(answer) + 17, (answer + 1) % 256, answer - 1, 0, 1, 2, 3, 4, 6, -0.5].filter((other) => other !== answer && !(accepted ?? []).includes(other));
      const checks = others.map((other) => [other, codec.exerciseCheck(kind, params, String(other))]);
      for (const [other, wrong] of checks) assert.ok(wrong.ok ? !wrong.correct : wrong.message.length > 0, `${where}: ${other} should be wrong`);
      assert.ok(checks.some(([, wrong]) => wrong.ok), `${where}: no wrong answer was graded`);
      const refused = codec.exerciseCheck(kind, params, "abc");
      assert.ok(!refused.ok && refused.message.length > 0, where);
      assert.ok(codec.exercisePresent(kind, params).prompt.length > 0, where);
    }
  });

  test("an answer outside an exercise's choices is refused in its words, not graded", () => {
    const params = (kind, wanted = () => true) => {
      for (let round = 0; ; round += 1) {
        const drawn = codec.exerciseInstance(kind, 1, round).params;
        if (wanted(drawn)) return drawn;
      }
    };
    const cases = [
      ["zoo-check", params("zoo-check"), ["0", "7", "2.5", "-1", "abc", ""], "type a whole number from 1 to 6."],
      ["e2m1-code", params("e2m1-code"), ["16", "0x1F", "-1", "2.5", "0101"], "type a whole number from 0 to 15."],
      ["q4k-metadata", params("q4k-metadata"), ["64", "255"], "type a whole number from 0 to 63."],
      ["q4k-lane", params("q4k-lane"), ["256", "-1"], "type a whole number from 0 to 255."],
      ["nibble-decode", params("nibble-decode", (drawn) => drawn.reading === "UINT4"), ["16", "-1", "0.5"], "type a whole number from 0 to 15."],
      ["nibble-decode", params("nibble-decode", (drawn) => drawn.reading === "INT4"), ["8", "-9"], "type a whole number from \u22128 to 7."],
      ["nibble-decode", params("nibble-decode", (drawn) => drawn.reading === "E2M1"), ["2.5", "5", "-7"], "type one of 0, \u00b10.5, \u00b11, \u00b11.5, \u00b12, \u00b13, \u00b14 or \u00b16."],
    ];
    for (const [kind, drawn, entries, words] of cases) {
      for (const entry of entries) {
        const checked = codec.exerciseCheck(kind, drawn, entry);
        assert.ok(!checked.ok && checked.message.toLowerCase().includes(words), `${kind} ${entry}: ${checked.message}`);
      }
    }
    assert.match(codec.exerciseCheck("e2m1-code", params("e2m1-code"), "0101").message, /start with 0b: 0b0101/);
    // and one of the choices is graded
    assert.ok(codec.exerciseCheck("zoo-check", params("zoo-check"), "6").ok);
    // a listed check typed by its name is its number; part of a name is refused
    const zoo = params("zoo-check");
    const options = codec.exercisePresent("zoo-check", zoo).options;
    assert.deepEqual(options.map((option) => option.split(". ")[0]), ["1", "2", "3", "4", "5", "6"]);
    for (const option of options) {
      const [number, name] = option.split(". ");
      const byName = codec.exerciseCheck("zoo-check", zoo, ` ${name.toUpperCase()}  `);
      const byNumber = codec.exerciseCheck("zoo-check", zoo, number);
      assert.ok(byName.ok && byName.typed === Number(number) && byName.correct === byNumber.correct, option);
    }
    assert.match(codec.exerciseCheck("zoo-check", zoo, "lane").message, /neither a number nor a name on the list/);
    assert.ok(codec.exerciseCheck("nibble-decode", params("nibble-decode", (drawn) => drawn.reading === "E2M1"), "-0.5").ok);
  });

  test("the PRNG and the instance seed match Python's", () => {
    for (const { seed, kind, round, mixed, draws } of golden.exercisePrng) {
      assert.equal(codec.exerciseSeed(seed, kind, round), mixed);
      const draw = codec.mulberry32(mixed);
      for (const expected of draws) sameBits(draw(), expected, `${seed} ${kind} ${round}`);
    }
  });

  test("an instance is reproducible from its seed, and the next round differs", () => {
    for (const { kind } of codec.EXERCISE_KINDS) {
      const first = codec.exerciseInstance(kind, 7, 0);
      assert.deepEqual(codec.exerciseInstance(kind, 7, 0), first);
      const rounds = new Set(Array.from({ length: 8 }, (_, round) => JSON.stringify(codec.exerciseInstance(kind, 7, round).params)));
      if (kind !== "gguf-bpw") assert.ok(rounds.size > 1, `${kind}: eight rounds gave one instance`);
      for (let round = 0; round < 20; round += 1) {
        const { params } = codec.exerciseInstance(kind, 12345, round);
        const { answer } = codec.exerciseSolve(kind, params);
        assert.ok(Number.isFinite(answer), `${kind} round ${round}: ${answer}`);
      }
    }
  });

  test("any student's seed gives instances whose answer, typed as the lab prints it, checks", () => {
    // Each browser draws its own seed (widgets/exercises.js), so every seed must give a question the
    // page can answer: spread over 1..2^32 − 1 by the PRNG itself, with both ends.
    const draw = codec.mulberry32(2026);
    const seeds = [1, 2 ** 32 - 1, ...Array.from({ length: 300 }, () => 1 + Math.floor(draw() * (2 ** 32 - 1)))];
    for (const seed of seeds) {
      for (const { kind } of codec.EXERCISE_KINDS) {
        const { params, prompt } = codec.exerciseInstance(kind, seed, seed % 3);
        const { answer, worked } = codec.exerciseSolve(kind, params);
        const typed = codec.formatLabNumber(answer).replace("\u2212", "-");
        const checked = codec.exerciseCheck(kind, params, typed);
        assert.ok(prompt.length > 0 && worked.length > 0, `${kind} seed ${seed}`);
        assert.ok(checked.ok && checked.correct, `${kind} seed ${seed}: ${typed} should be correct`);
        assert.deepEqual(codec.exerciseVerdicts(seed, { [kind]: seed % 3 }, { [kind]: typed }), { [kind]: "correct" }, `${kind} seed ${seed}`);
      }
    }
  });

  test("the zoo's data is the Python zoo's", () => {
    assert.deepEqual(
      Object.entries(codec.ZOO_CHECK_TITLES).map(([number, title]) => [Number(number), title]),
      golden.zoo.checkTitles,
    );
    assert.deepEqual(JSON.parse(JSON.stringify(codec.ZOO_WRONG_SPECIMENS)), golden.zoo.wrongSpecimens);
  });
});

describe("encoders against lab/ and ml_dtypes", () => {
  test("e8m0Encode is lab.codes.e8m0.encode under both rules", () => {
    for (const { amax, rule, elementMax, byte } of golden.e8m0Encode) assert.equal(codec.e8m0Encode(amax, rule, elementMax), byte, `${amax} ${rule} ${elementMax}`);
  });
  test("e8m0Nearest is ml_dtypes' float8_e8m0fnu cast for normal float32 values", () => {
    for (const { x, byte } of golden.e8m0NearestMlDtypes) assert.equal(codec.e8m0Nearest(x), byte, `${x}`);
  });
  test("e4m3Encode is ml_dtypes' float8_e4m3fn cast within ±464", () => {
    for (const { x, byte } of golden.e4m3EncodeMlDtypes) assert.equal(codec.e4m3Encode(x), byte, `${x}`);
  });
});
