// The browser tests' answer key (tests/browser/test_exercises_browser.py): for a seed and rounds,
// each exercise kind's answer as the lab prints it, from the widgets' own codec, and the verdicts
// the codec gives other answers there. Not a test itself (node --test runs *.test.mjs).
// Run: node tests/js/exercise_answers.mjs '{"seed": 7, "rounds": {}, "given": {}}'
import { EXERCISE_KINDS, exerciseInstance, exerciseSolve, exerciseVerdicts, formatLabNumber } from "../../widgets/codec/index.js";

const { seed, rounds = {}, given = {} } = JSON.parse(process.argv[2]);
const typed = (kind) => formatLabNumber(exerciseSolve(kind, exerciseInstance(kind, seed, rounds[kind] ?? 0).params).answer).replace("\u2212", "-");
const answers = Object.fromEntries(EXERCISE_KINDS.map(({ kind }) => [kind, typed(kind)]));
console.log(JSON.stringify({ answers, verdicts: exerciseVerdicts(seed, rounds, given) }));
