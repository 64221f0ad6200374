// The browser tests' answer key (tests/browser/test_exercises_browser.py): for a seed and rounds,
// each exercise kind's answer as the lab prints it, from the widgets' own codec, a few answers the
// codec grades wrong there (a first and a second try), and the verdicts the codec gives other
// answers. Not a test itself (node --test runs *.test.mjs).
// Run: node tests/js/exercise_answers.mjs '{"seed": 7, "rounds": {}, "given": {}}'
import { EXERCISE_KINDS, exerciseCheck, exerciseInstance, exerciseSolve, exerciseVerdicts, formatLabNumber } from "../../widgets/codec/index.js";

const { seed, rounds = {}, given = {} } = JSON.parse(process.argv[2]);
const params = (kind) => exerciseInstance(kind, seed, rounds[kind] ?? 0).params;
const typed = (kind) => formatLabNumber(exerciseSolve(kind, params(kind)).answer).replace("\u2212", "-");
const answers = Object.fromEntries(EXERCISE_KINDS.map(({ kind }) => [kind, typed(kind)]));
const CANDIDATES = ["1", "2", "3", "4", "5", "6", "0", "7", "9", "11", "13"];
const wrongs = Object.fromEntries(
  EXERCISE_KINDS.map(({ kind }) => [
    kind,
    CANDIDATES.filter((text) => {
      const checked = exerciseCheck(kind, params(kind), text);
      return checked.ok && !checked.correct;
    }),
  ]),
);
console.log(JSON.stringify({ answers, wrongs, verdicts: exerciseVerdicts(seed, rounds, given) }));
