// The teacher's view's pure part (widgets/codec/teach/classroom.js): which room a page belongs to,
// nicknames (two students of one name told apart), each kept answer checked again as the student's
// page checks it, and the CSV, whose cells a spreadsheet must never run.
// Run: node --test tests/js/
import assert from "node:assert/strict";
import { test } from "node:test";

import { EXERCISE_COLUMNS, EXERCISE_KINDS, answerHistory, answerVerdict, classRoomOf, csvField, exerciseColumn, exerciseInstance, exerciseSolve, exerciseVerdicts, formatLabNumber, readNickname, roomCsv, studentNames } from "../../widgets/codec/index.js";

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

test("a nickname is composed as the server keeps it, counts an emoji as one character, and holds nothing the grid cannot show", () => {
  assert.deepEqual(readNickname("Jose\u0301"), { ok: true, value: "Jos\u00e9" });
  assert.equal(readNickname("\u{1f600}".repeat(24)).ok, true); // 48 UTF-16 units, 24 characters
  assert.equal(readNickname("Ana María 李 O'Neil-2").ok, true);
  for (const [name, spelt] of [
    ["Ana\u202eevil", "\\u202e"],
    ["A\u200bna", "\\u200b"],
    ["Ana\u0000", "\\x00"],
    ["Ana\u00a0Bo", "\\xa0"],
    ["Ana\ud800", "\\ud800"],
    ["Ana\ue000", "\\ue000"],
  ]) {
    assert.equal(readNickname(name).message, `That name holds ${spelt}, which the teacher's screen cannot show: use letters, digits, signs and plain spaces.`, name);
  }
});

test("two students of one name are two names on the grid, the later ones numbered in the order they first posted", () => {
  const student = (id, nickname) => ({ student: id.repeat(32), nickname, answers: {} });
  const names = studentNames([student("1", "Ana"), student("2", "Bo"), student("3", "Ana"), student("4", "Ana (2)"), student("5", "Ana"), student("6", "x".repeat(30)), student("7", "x".repeat(31))]);
  assert.deepEqual([...names.values()], ["Ana", "Bo", "Ana (2)", "Ana (2) (2)", "Ana (3)", `${"x".repeat(23)}…`, `${"x".repeat(23)}… (2)`]);
  assert.equal(new Set(names.values()).size, names.size);
  assert.equal(names.get("3".repeat(32)), "Ana (2)");
  // names that differ only in a hidden character are shown apart already, and keep their own names
  assert.deepEqual([...studentNames([student("a", "Ana"), student("b", "Ana\u200b")]).values()], ["Ana", "Ana\\u200b"]);
});

test("the grid has a column for every exercise, numbered within its notebook", () => {
  assert.equal(EXERCISE_COLUMNS.length, EXERCISE_KINDS.length);
  assert.deepEqual(
    EXERCISE_COLUMNS.map((column) => column.label),
    ["1.1", "1.2", "2.1", "2.2", "3.1", "3.2", "4.1", "4.2", "5.1", "5.2", "6.1", "6.2", "7.1", "7.2", "8.1", "8.2", "9.1", "9.2", "10.1", "10.2", "11.1", "11.2", "12.1", "12.2"],
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
    { student: "a".repeat(32), nickname: "=cmd|' /C calc'!A0", answers: { "nibble-decode": { seed: 7, round: 0, answer: right, first: "=1+1", tries: 3, shown: true, at: 1_800_000_000 } } },
    { student: "b".repeat(32), nickname: "right\u202eto left", answers: { "nibble-decode": { seed: 7, round: 0, answer: "abc", first: "abc", tries: 1, shown: false, at: 1_800_000_001 }, "made-up": { seed: 1, round: 0, answer: "1", first: "1", tries: 1, shown: false, at: 0 } } },
  ];
  const lines = roomCsv(students).split("\r\n");
  assert.equal(lines.length, 4); // a header, two answers, and the final line break
  assert.equal(lines[0], '"nickname","notebook","exercise","title","seed","round","first answer","first verdict","tries","working shown on request","answer","verdict","checked at (UTC)"');
  assert.ok(lines[1].startsWith(`"'=cmd|' /C calc'!A0","1","1.1",`), lines[1]);
  // the first answer, a formula, stays text, and is judged as the question's answer is
  assert.ok(lines[1].endsWith(`"7","0","'=1+1","unread","3","yes","${right}","right","2027-01-15T08:00:00.000Z"`), lines[1]);
  assert.ok(lines[2].startsWith('"right\\u202eto left","1","1.1"'), lines[2]);
  assert.ok(lines[2].includes('"abc","unread","1","no","abc","unread"'), lines[2]);
  assert.equal(lines[3], "");
});

test("the room's CSV names two students of one nickname as the grid does", () => {
  const kept = { "nibble-decode": { seed: 7, round: 0, answer: "1", first: "1", tries: 1, shown: false, at: 1_800_000_000 } };
  const students = ["a", "b", "c"].map((id) => ({ student: id.repeat(32), nickname: id === "b" ? "Bo" : "Ana", answers: kept }));
  const firstFields = roomCsv(students)
    .split("\r\n")
    .slice(1, -1)
    .map((line) => line.split(",")[0]);
  assert.deepEqual(firstFields, ['"Ana"', '"Bo"', '"Ana (2)"']);
});

test("the grid and the CSV keep the first answer and the tries: a student who corrects a wrong answer is not right at the first try", () => {
  const seed = 7;
  const kind = "nibble-decode";
  const right = formatLabNumber(exerciseSolve(kind, exerciseInstance(kind, seed, 0).params).answer).replace("\u2212", "-");
  const wrong = String(Number(right) === 1 ? 2 : 1);
  const corrected = { seed, round: 0, answer: right, first: wrong, tries: 2, shown: false, at: 1_800_000_000 };
  assert.equal(answerVerdict(kind, corrected), "right");
  assert.deepEqual(answerHistory(kind, corrected), { first: wrong, firstVerdict: "wrong", tries: 2, shown: false });
  const atOnce = { ...corrected, first: right, tries: 1 };
  assert.deepEqual(answerHistory(kind, atOnce), { first: right, firstVerdict: "right", tries: 1, shown: false });
  const asked = { ...atOnce, shown: true };
  assert.equal(answerHistory(kind, asked).shown, true);
  const students = [
    { student: "a".repeat(32), nickname: "Ana", answers: { [kind]: corrected } },
    { student: "b".repeat(32), nickname: "Bo", answers: { [kind]: atOnce } },
    { student: "c".repeat(32), nickname: "Cy", answers: { [kind]: asked } },
  ];
  const rows = roomCsv(students)
    .split("\r\n")
    .slice(1, -1)
    .map((line) => line.split(",").slice(6, 12).map((field) => JSON.parse(field)));
  assert.deepEqual(rows, [
    [wrong, "wrong", "2", "no", right, "right"],
    [right, "right", "1", "no", right, "right"],
    [right, "right", "1", "yes", right, "right"],
  ]);
});
