// Notebooks 9..12's exercises as tests/apps/test_exercise_lab_answers.py checks them against lab/:
// for each seed and round, each of those kinds' parameters, the answer the checker computes, and
// what the checker says of the answer typed as the lab prints it. Not a test itself (node --test
// runs *.test.mjs). Run: node tests/js/exercise_lab_cases.mjs '{"seeds": [1, 2], "rounds": 3}'
import { EXERCISE_KINDS, exerciseCheck, exerciseInstance, exerciseSolve, formatLabNumber } from "../../widgets/codec/index.js";

const { seeds, rounds } = JSON.parse(process.argv[2]);
const cases = [];
for (const { kind, topic } of EXERCISE_KINDS.filter((entry) => entry.topic >= 9)) {
  for (const seed of seeds) {
    for (let round = 0; round < rounds; round += 1) {
      const { params, places } = exerciseInstance(kind, seed, round);
      const { answer } = exerciseSolve(kind, params);
      const typed = formatLabNumber(answer).replace("\u2212", "-");
      const rounded = places === null ? typed : answer.toFixed(places);
      cases.push({ kind, topic, seed, round, params, places, answer, typedChecks: exerciseCheck(kind, params, typed).correct, roundedChecks: exerciseCheck(kind, params, rounded).correct });
    }
  }
}
console.log(JSON.stringify(cases));
