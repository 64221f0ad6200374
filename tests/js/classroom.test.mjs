// The teacher's view's pure part (widgets/codec/teach/classroom.js): which room a page belongs to,
// nicknames, each kept answer checked again as the student's page checks it, and the CSV, whose
// cells a spreadsheet must never run.
// Run: node --test tests/js/
import assert from "node:assert/strict";
import { test } from "node:test";

import { EXERCISE_COLUMNS, EXERCISE_KINDS, answerVerdict, classRoomOf, csvField, exerciseColumn, exerciseInstance, exerciseSolve, exerciseVerdicts, formatLabNumber, readNickname, roomCsv } from "../../widgets/codec/index.js";

const ROOM = "0123456789abcdef0123456789abcdef";

test("a page knows its class only from its own port's cookie", () => {
  assert.equal(classRoomOf(`four-bit-lab-class-8765=${ROOM}`, "8765"), ROOM);
  assert.equal(classRoomOf(`theme=dark; four-bit-lab-class-8765=${ROOM}; x=1`, "8765"), ROOM);
  assert.equal(classRoomOf(`four-bit-lab-class-8765=${ROOM}`, "2718"), null); // the live course on another port
  assert.equal(classRoomOf(`four-bit-lab-class-8765=${ROOM.toUpperCase()}`, "8765"), null);
  assert.equal(classRoomOf(`four-bit-lab-class-8765=${ROOM}x`, "8765"), null);
  assert.equal(classRoomOf("four-bit-lab-class-8765=", "8765"), null);
  assert.equal(classRoomOf("", "8765"), null);
});

test("a nickname is trimmed, and refused when empty or longer than 24 characters", () => {
  assert.deepEqual(readNickname("  Ada  "), { ok: true, value: "Ada" });
  assert.deepEqual(readNickname("<b>x</b>"), { ok: true, value: "<b>x</b>" });
  assert.equal(readNickname("x".repeat(24)).ok, true);
  assert.match(readNickname("x".repeat(25)).message, /25 characters long; a name here is at most 24/);
  assert.match(readNickname("   ").message, /Type a name/);
});

test("the grid has a column for every exercise, numbered within its notebook", () => {
  assert.equal(EXERCISE_COLUMNS.length, EXERCISE_KINDS.length);
  assert.deepEqual(
    EXERCISE_COLUMNS.map((column) => column.label),
    ["1.1", "1.2", "2.1", "2.2", "3.1", "3.2", "4.1", "4.2", "5.1", "5.2", "6.1", "6.2", "7.1", "7.2", "8.1", "8.2"],
  );
  assert.equal(exerciseColumn("no-such-exercise"), null);
});

test("the teacher's verdict on a kept answer is the student's page's, for every kind and several seeds and rounds", () => {
  for (const seed of [1, 7, 4294967295]) {
    for (const round of [0, 3]) {
      for (const { kind } of EXERCISE_KINDS) {
        const right = formatLabNumber(exerciseSolve(kind, exerciseInstance(kind, seed, round).params).answer).replace("\u2212", "-");
        for (const [answer, expected] of [
          [right, "right"],
          ["nonsense", "unread"],
        ]) {
          assert.equal(answerVerdict(kind, { seed, round, answer }), expected, `${kind} seed ${seed} round ${round}: ${answer}`);
        }
        const page = exerciseVerdicts(seed, { [kind]: round }, { [kind]: right })[kind];
        assert.equal(page, "correct");
      }
    }
  }
  // a right answer to another round's question is not right for this one
  const kind = "nibble-decode";
  const otherRound = formatLabNumber(exerciseSolve(kind, exerciseInstance(kind, 7, 1).params).answer);
  const thisRound = formatLabNumber(exerciseSolve(kind, exerciseInstance(kind, 7, 0).params).answer);
  if (otherRound !== thisRound) assert.equal(answerVerdict(kind, { seed: 7, round: 0, answer: otherRound }), "wrong");
});

test("a CSV field is quoted, and text a spreadsheet would run stays text", () => {
  assert.equal(csvField("Ada"), '"Ada"');
  assert.equal(csvField('say "hi"'), '"say ""hi"""');
  for (const formula of ["=1+1", "+SUM(A1)", "-2+3", "@cmd", "=HYPERLINK(\"x\")", "\tx"]) assert.equal(csvField(formula)[1], "'", formula);
  for (const number of ["-0.5", "+3", "-1e-3", "-.25", "12"]) assert.equal(csvField(number), `"${number}"`);
  assert.equal(csvField(7), '"7"');
});

test("the room's CSV: one line per kept answer of a known exercise, nicknames shown visibly", () => {
  const right = formatLabNumber(exerciseSolve("nibble-decode", exerciseInstance("nibble-decode", 7, 0).params).answer).replace("\u2212", "-");
  const students = [
    { student: "a".repeat(32), nickname: "=cmd|' /C calc'!A0", answers: { "nibble-decode": { seed: 7, round: 0, answer: right, at: 1_800_000_000 } } },
    { student: "b".repeat(32), nickname: "right\u202eto left", answers: { "nibble-decode": { seed: 7, round: 0, answer: "abc", at: 1_800_000_001 }, "made-up": { seed: 1, round: 0, answer: "1", at: 0 } } },
  ];
  const lines = roomCsv(students).split("\r\n");
  assert.equal(lines.length, 4); // a header, two answers, and the final line break
  assert.equal(lines[0], '"nickname","notebook","exercise","title","seed","round","answer","verdict","checked at (UTC)"');
  assert.ok(lines[1].startsWith(`"'=cmd|' /C calc'!A0","1","1.1",`), lines[1]);
  assert.ok(lines[1].endsWith(`"7","0","${right}","right","2027-01-15T08:00:00.000Z"`), lines[1]);
  assert.ok(lines[2].startsWith('"right\\u202eto left","1","1.1"'), lines[2]);
  assert.ok(lines[2].includes('"abc","unread"'), lines[2]);
  assert.equal(lines[3], "");
});
