// The arithmetic-free part of the teacher's view (serve --class, classroom/teacher_view.py), pure
// so node tests it: which room a page belongs to, a nickname as typed, each kept answer's verdict
// checked again with the exercises' own generator, and the room's answers as CSV. The browser
// glue is widgets/class_report.js (a student's page) and widgets/teacher.js (the teacher's).
import { EXERCISE_KINDS, exerciseCheck, exerciseInstance } from "./exercises.js";
import { visibleText } from "../text.js";

/** The longest nickname, in characters (teacher_view.py's MAX_NICKNAME). */
export const LONGEST_NICKNAME = 24;
const CLASS_COOKIE = "four-bit-lab-class";
const ROOM_ID = /^[0-9a-f]{32}$/;
// What a name on the teacher's grid may not hold (teacher_view.py's UNSHOWABLE_CATEGORIES): a
// control, a format mark (zero-width, bidi), half a surrogate pair, private use, a line or
// paragraph separator, or a space other than the plain one.
const UNSHOWABLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Zl}\p{Zp}]|(?! )\p{Zs}/u;

/**
 * The room a page served by `serve --class` on `port` belongs to: the value of the cookie that
 * server sets (its name carries the port, since one host's ports share cookies), or null where
 * there is no class (a plain serve, the live course, a file).
 */
export function classRoomOf(cookieText, port) {
  const name = `${CLASS_COOKIE}-${port}`;
  for (const part of String(cookieText).split(";")) {
    const [key, value] = part.trim().split("=", 2);
    if (key === name && ROOM_ID.test(value ?? "")) return value;
  }
  return null;
}

/**
 * A nickname typed for the teacher's view: {ok, value} (composed as NFC and trimmed, as the server
 * keeps it) or {ok: false, message}. Its length counts characters as the server does, so an emoji is one.
 */
export function readNickname(text) {
  const name = String(text).normalize("NFC").trim();
  if (!name) return { ok: false, message: "Type a name your teacher will know you by." };
  const unshowable = UNSHOWABLE.exec(name);
  if (unshowable) return { ok: false, message: `That name holds ${visibleText(unshowable[0])}, which the teacher's screen cannot show: use letters, digits, signs and plain spaces.` };
  const length = Array.from(name).length;
  if (length > LONGEST_NICKNAME) return { ok: false, message: `That name is ${length} characters long; a name here is at most ${LONGEST_NICKNAME}.` };
  return { ok: true, value: name };
}

/** Each exercise as a column of the teacher's grid: {kind, topic, title, label ("3.2", the course's number)}. */
export const EXERCISE_COLUMNS = Object.freeze(
  EXERCISE_KINDS.map((entry) => Object.freeze({ ...entry, label: `${entry.topic}.${EXERCISE_KINDS.filter((other) => other.topic === entry.topic).indexOf(entry) + 1}` })),
);
const COLUMN_OF = new Map(EXERCISE_COLUMNS.map((column) => [column.kind, column]));

/** The column of an exercise kind, or null for a kind the course does not have. */
export const exerciseColumn = (kind) => COLUMN_OF.get(kind) ?? null;

/**
 * A kept answer {seed, round, answer} to `kind` checked again against the question drawn from
 * its seed and round: "right", "wrong", or "unread" when the text is no answer to that question.
 */
export function answerVerdict(kind, kept) {
  return verdictOn(kind, kept, kept.answer);
}

function verdictOn(kind, kept, text) {
  const checked = exerciseCheck(kind, exerciseInstance(kind, kept.seed, kept.round).params, text);
  if (!checked.ok) return "unread";
  return checked.correct ? "right" : "wrong";
}

/**
 * How a kept answer came about: {first (the first answer checked to that question), firstVerdict
 * (answerVerdict's word for it), tries (the different answers checked), shown (whether the
 * working was asked for)}. The server takes no post without them; an entry without them (none
 * should reach here) reads as a first try.
 */
export function answerHistory(kind, kept) {
  const first = typeof kept.first === "string" ? kept.first : kept.answer;
  const tries = Number.isInteger(kept.tries) && kept.tries >= 1 ? kept.tries : 1;
  return { first, firstVerdict: verdictOn(kind, kept, first), tries, shown: kept.shown === true };
}

// A spreadsheet runs a cell that starts with one of these as a formula; a plain number does not.
const FORMULA_START = /^[=+\-@\t\r]/;
const PLAIN_NUMBER = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?$/i;

/** One CSV field: quoted, and text a spreadsheet would run as a formula kept as text by an apostrophe. */
export function csvField(value) {
  let text = String(value);
  if (FORMULA_START.test(text) && !PLAIN_NUMBER.test(text)) text = `'${text}`;
  return `"${text.replaceAll('"', '""')}"`;
}

/** A nickname as the grid and the CSV show it: hidden marks spelt out, cut visibly. */
export const shownNickname = (nickname) => visibleText(nickname, LONGEST_NICKNAME);

/**
 * What the grid and the CSV call each of `students` (the server's list, in the order they first
 * posted): the shown nickname, followed by " (2)", " (3)"… where a student who posted earlier is
 * already called that, so no two rows read alike and the first keeps the plain name. A Map from
 * the student's id to that name.
 */
export function studentNames(students) {
  const taken = new Set();
  const names = new Map();
  for (const student of students) {
    const shown = shownNickname(student.nickname);
    let name = shown;
    for (let count = 2; taken.has(name); count += 1) name = `${shown} (${count})`;
    taken.add(name);
    names.set(student.student, name);
  }
  return names;
}

/**
 * The room's answers ({students: [{student, nickname, answers: {kind: {seed, round, answer, first,
 * tries, shown, at}}}]}) as CSV text, one line per student and exercise the course has: the first
 * answer and the last, each verdict checked again, the tries between them and whether the working
 * was asked for, each student named as the grid names them (studentNames).
 */
export function roomCsv(students) {
  const names = studentNames(students);
  const lines = [["nickname", "notebook", "exercise", "title", "seed", "round", "first answer", "first verdict", "tries", "working shown on request", "answer", "verdict", "checked at (UTC)"]];
  for (const student of students) {
    for (const [kind, kept] of Object.entries(student.answers)) {
      const column = exerciseColumn(kind);
      if (!column) continue;
      const at = new Date(kept.at * 1000).toISOString();
      const history = answerHistory(kind, kept);
      const shown = history.shown ? "yes" : "no";
      lines.push([names.get(student.student), column.topic, column.label, column.title, kept.seed, kept.round, visibleText(history.first), history.firstVerdict, history.tries, shown, visibleText(kept.answer), answerVerdict(kind, kept), at]);
    }
  }
  return `${lines.map((line) => line.map(csvField).join(",")).join("\r\n")}\r\n`;
}
