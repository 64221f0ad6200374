// The teacher's page of serve --class (classroom/teacher_view.py inlines this bundle into it): a
// grid of exercises by student that follows the room, a CSV of it made in this browser, and the
// teacher's two changes to the room (remove a student, merge two rows of one student). The token
// is the link's fragment; it leaves this page only in the Authorization header of its requests.
// Each verdict is the exercises' own check of the answer a student typed (codec/teach/classroom.js),
// so a post nobody answered counts nothing. Each cell shows the first answer's verdict before the
// last one's, with the tries between them, since the last answer alone is right for everyone
// who kept trying. What a student sent (a nickname, an answer) is only ever text, and two
// students of one nickname are told apart by studentNames' " (2)".
import { EXERCISE_COLUMNS, answerHistory, answerVerdict, exerciseColumn, roomCsv, studentNames } from "./codec/teach/classroom.js";
import { visibleText } from "./codec/text.js";

const page = document.getElementById("class-page");
const resultsPath = page.dataset.source;
const pollMs = Number(page.dataset.pollMs);
const teacherToken = location.hash.slice(1);
// classroom/teacher_view.py's REMOVE_PATH and MERGE_PATH
const REMOVE_PATH = "/class/remove";
const MERGE_PATH = "/class/merge";
const TOPICS = [...new Set(EXERCISE_COLUMNS.map((column) => column.topic))];
const MARKS = { right: "✓", wrong: "✗", unread: "?" };
const WORDS = { right: "right", wrong: "not right", unread: "not an answer the exercise takes" };

function tag(name, attributes = {}, ...children) {
  const node = document.createElement(name);
  for (const [attribute, value] of Object.entries(attributes)) {
    if (attribute.startsWith("on")) node.addEventListener(attribute.slice(2), value);
    else node.setAttribute(attribute, value);
  }
  node.append(...children);
  return node;
}

const readout = tag("p", { role: "status", "data-testid": "teacher-status" });
const refusal = tag("p", { class: "error", role: "alert", "data-testid": "teacher-problem", hidden: "" });
const topicPicker = tag(
  "select",
  { id: "teacher-topic", onchange: () => drawRoom() },
  tag("option", { value: "0" }, "every notebook"),
  ...TOPICS.map((topic) => tag("option", { value: String(topic) }, `notebook ${topic}`)),
);
const grid = tag("table", { "data-testid": "teacher-grid" });
const exerciseKey = tag("ul", { class: "key", "aria-label": "the exercises" });
let answersRead = null; // the last answers read: {room, students}
let rowNames = new Map(); // student id -> the name the grid and the CSV give that row
// Bumped by each change the teacher makes: a poll sent before it may answer with the room as it
// was, and must not draw a removed row back for a moment.
let changesMade = 0;

// The teacher's changes: pickers of students (kept, with their choice and focus, as the room is
// read again), a confirmation before a removal, and what became of the last change.
const mergeFrom = tag("select", { id: "teacher-merge-from" });
const mergeInto = tag("select", { id: "teacher-merge-into" });
const removePicker = tag("select", { id: "teacher-remove", onchange: () => closeConfirmation(false) });
const removeButton = tag("button", { type: "button", onclick: askToRemove }, "Remove…");
const confirmQuestion = tag("p", { id: "teacher-remove-question" });
const confirmButton = tag("button", { type: "button", class: "danger" }, "Remove");
const cancelButton = tag("button", { type: "button", onclick: () => closeConfirmation(true) }, "Cancel");
const confirmation = tag(
  "div",
  { class: "confirm", role: "group", "aria-labelledby": "teacher-remove-question", hidden: "", onkeydown: (event) => event.key === "Escape" && closeConfirmation(true) },
  confirmQuestion,
  tag("div", { class: "bar" }, confirmButton, cancelButton),
);
const changeDone = tag("p", { role: "status", "data-testid": "teacher-change" });
const changeRefused = tag("p", { class: "error", role: "alert", "data-testid": "teacher-change-problem", hidden: "" });
let removing = null; // the id the open confirmation would remove

function saveCsv() {
  const blob = new Blob([roomCsv(answersRead?.students ?? [])], { type: "text/csv" });
  const link = tag("a", { href: URL.createObjectURL(blob), download: "room-answers.csv" });
  link.click();
  setTimeout(() => URL.revokeObjectURL(link.href), 10_000);
}

page.replaceChildren(
  tag(
    "div",
    { class: "bar" },
    tag("label", { for: "teacher-topic" }, "Show"),
    topicPicker,
    tag("button", { type: "button", onclick: saveCsv }, "Download CSV"),
    tag("a", { href: `/class/notes#${teacherToken}` }, "Slides and speaker notes"),
  ),
  readout,
  refusal,
  tag("div", { class: "scroll", tabindex: "0", role: "region", "aria-label": "answers by student" }, grid),
  tag(
    "section",
    { "aria-labelledby": "teacher-changes" },
    tag("h2", { id: "teacher-changes" }, "Remove or merge students"),
    tag(
      "p",
      { class: "muted" },
      "A student who came back under a new row (another browser, a private window): merge the old row into the new one. The row kept has the newer answer to each exercise, and the old page's later answers land on it too. A removed student's place is free again; if their page sends an answer later, they come back as a new row.",
    ),
    tag(
      "div",
      { class: "bar" },
      tag("label", { for: "teacher-merge-from" }, "Merge"),
      mergeFrom,
      tag("label", { for: "teacher-merge-into" }, "into"),
      mergeInto,
      tag("button", { type: "button", onclick: mergeRows }, "Merge"),
    ),
    tag("div", { class: "bar" }, tag("label", { for: "teacher-remove" }, "Remove"), removePicker, removeButton),
    confirmation,
    changeDone,
    changeRefused,
  ),
  tag("h2", {}, "The exercises"),
  exerciseKey,
);

// Whether a kept answer was right at the first try, with no working asked for first.
const rightAtFirst = (kind, kept) => {
  const history = answerHistory(kind, kept);
  return history.firstVerdict === "right" && !history.shown;
};

// One answered cell: "✓" right at the first try; "✗→✓ 3" wrong first, right at the last of 3
// tries; " w" where the working was asked for. Its words say the same for a screen reader.
function answerCell(column, kept) {
  const verdict = answerVerdict(column.kind, kept);
  const history = answerHistory(column.kind, kept);
  const answer = visibleText(kept.answer, 40);
  const first = visibleText(history.first, 40);
  let mark = MARKS[history.firstVerdict];
  let words = `first answer ${WORDS[history.firstVerdict]} (${first})`;
  if (history.tries > 1) {
    mark += `→${MARKS[verdict]} ${history.tries}`;
    words += `, last answer ${WORDS[verdict]} (${answer}) after ${history.tries} tries`;
  }
  if (history.shown) {
    mark += " w";
    words += ", the working asked for";
  }
  const title = history.tries > 1 ? `first answer: ${first}; last answer: ${answer}` : `answer: ${answer}`;
  return tag(
    "td",
    { class: verdict, title, "aria-label": `${column.label}: ${words}`, "data-verdict": verdict, "data-first-verdict": history.firstVerdict, "data-tries": String(history.tries), "data-shown": String(history.shown) },
    mark,
  );
}

function studentRow(student, columns) {
  let right = 0;
  let first = 0;
  const cells = columns.map((column) => {
    const kept = student.answers[column.kind];
    if (!kept) return tag("td", { "aria-label": `${column.label}: not answered` }, "");
    if (answerVerdict(column.kind, kept) === "right") right += 1;
    if (rightAtFirst(column.kind, kept)) first += 1;
    return answerCell(column, kept);
  });
  const name = rowNames.get(student.student);
  return tag("tr", { "data-student": student.student }, tag("th", { scope: "row", title: name }, name), ...cells, tag("td", { "data-testid": "first-right" }, `${first} of ${columns.length}`), tag("td", {}, `${right} of ${columns.length}`));
}

// Each student as a picker offers them: the row's name, how many exercises, and when last.
function choiceText(student) {
  const times = Object.values(student.answers).map((kept) => kept.at);
  const count = times.length;
  const last = count ? `, the last at ${new Date(Math.max(...times) * 1000).toLocaleTimeString()}` : "";
  return `${rowNames.get(student.student)}: ${count} ${count === 1 ? "answer" : "answers"}${last}`;
}

// A picker's options rewritten in place while the same students are listed, so an open picker,
// its choice and its focus stay as they are; rebuilt (keeping the choice if still there) otherwise.
function fillPicker(select, choices) {
  const wanted = [["", "choose a student"], ...choices];
  const options = [...select.options];
  if (options.length === wanted.length && options.every((option, index) => option.value === wanted[index][0])) {
    options.forEach((option, index) => {
      if (option.textContent !== wanted[index][1]) option.textContent = wanted[index][1];
    });
    return;
  }
  const chosen = select.value;
  select.replaceChildren(...wanted.map(([value, text]) => tag("option", { value }, text)));
  select.value = choices.some(([value]) => value === chosen) ? chosen : "";
}

function drawRoom() {
  const topic = Number(topicPicker.value);
  const columns = EXERCISE_COLUMNS.filter((column) => topic === 0 || column.topic === topic);
  rowNames = studentNames(answersRead?.students ?? []);
  const students = [...(answersRead?.students ?? [])].sort((a, b) => rowNames.get(a.student).localeCompare(rowNames.get(b.student)));
  const head = tag(
    "tr",
    {},
    tag("th", { scope: "col" }, "student"),
    ...columns.map((column) => tag("th", { scope: "col", title: column.title }, column.label)),
    tag("th", { scope: "col" }, "right at the first try"),
    tag("th", { scope: "col" }, "right at the last"),
  );
  const count = (column, judge) => students.filter((student) => student.answers[column.kind] && judge(column.kind, student.answers[column.kind])).length;
  const footRow = (name, judge) => tag("tr", {}, tag("th", { scope: "row" }, name), ...columns.map((column) => tag("td", {}, String(count(column, judge)))), tag("td", {}, ""), tag("td", {}, ""));
  const foot = [footRow("right at the first try", rightAtFirst), footRow("right at the last", (kind, kept) => answerVerdict(kind, kept) === "right")];
  grid.replaceChildren(tag("thead", {}, head), tag("tbody", {}, ...students.map((student) => studentRow(student, columns))), tag("tfoot", {}, ...foot));
  exerciseKey.replaceChildren(...columns.map((column) => tag("li", {}, `${column.label}: ${column.title}`)));
  const choices = students.map((student) => [student.student, choiceText(student)]);
  for (const picker of [mergeFrom, mergeInto, removePicker]) fillPicker(picker, choices);
  const strangers = students.reduce((sum, student) => sum + Object.keys(student.answers).filter((kind) => !exerciseColumn(kind)).length, 0);
  const leftOut = strangers ? ` ${strangers} answers name an exercise this course does not have, and are left out.` : "";
  const counted = `${students.length} ${students.length === 1 ? "student" : "students"} so far`;
  const key = "✓ right, ✗ not right, ? not an answer the exercise takes: the first answer's mark, then → the last answer's and the number of tries where there were more; w: the working was asked for.";
  readout.textContent = `${counted}; read at ${new Date().toLocaleTimeString()}, again every ${pollMs / 1000} s. ${key}${leftOut}`;
}

function showRefusal(text) {
  refusal.textContent = text;
  refusal.hidden = !text;
}

function showChange(done, refused = "") {
  changeDone.textContent = done;
  changeRefused.textContent = refused;
  changeRefused.hidden = !refused;
}

// One of the teacher's changes: true once the server made it (and the grid shows the room after it).
async function change(path, body) {
  changesMade += 1;
  try {
    const reply = await fetch(path, {
      method: "POST",
      headers: { "Content-Type": "application/json", Authorization: `Bearer ${teacherToken}` },
      body: JSON.stringify(body),
      cache: "no-store",
    });
    const said = await reply.json().catch(() => ({}));
    if (!reply.ok) {
      showChange("", `The server refused: ${visibleText(String(said.error ?? reply.status), 300)}.`);
      return false;
    }
    answersRead = said;
    drawRoom();
    return true;
  } catch {
    showChange("", "The server did not answer (has serve stopped?); nothing was changed.");
    return false;
  }
}

async function mergeRows() {
  const [source, target] = [mergeFrom.value, mergeInto.value];
  if (!source || !target || source === target) {
    showChange("", "Choose two different students: the row to merge, and the row it goes into.");
    (source ? mergeInto : mergeFrom).focus();
    return;
  }
  const [sourceName, targetName] = [rowNames.get(source), rowNames.get(target)];
  if (await change(MERGE_PATH, { from: source, into: target })) showChange(`Merged ${sourceName} into ${targetName}: it keeps the newer answer to each exercise.`);
}

function askToRemove() {
  const chosen = answersRead?.students.find((student) => student.student === removePicker.value);
  if (!chosen) {
    showChange("", "Choose the student to remove first.");
    removePicker.focus();
    return;
  }
  removing = chosen.student;
  const name = rowNames.get(chosen.student);
  const count = Object.keys(chosen.answers).length;
  confirmQuestion.textContent = `Remove ${name} and ${count === 1 ? "their 1 answer" : `their ${count} answers`} from the grid? This cannot be undone.`;
  confirmButton.textContent = `Remove ${name}`;
  confirmation.hidden = false;
  showChange("");
  // the safe choice has the focus, so a second Enter does not remove
  cancelButton.focus();
}

function closeConfirmation(refocus) {
  if (confirmation.hidden) return;
  removing = null;
  confirmation.hidden = true;
  if (refocus) removeButton.focus();
}

confirmButton.addEventListener("click", async () => {
  const [key, name] = [removing, rowNames.get(removing)];
  closeConfirmation(false);
  removePicker.focus();
  if (await change(REMOVE_PATH, { student: key })) showChange(`Removed ${name}.`);
});

async function poll() {
  let stop = false;
  const changesBefore = changesMade;
  try {
    const reply = await fetch(resultsPath, { headers: teacherToken ? { Authorization: `Bearer ${teacherToken}` } : {}, cache: "no-store" });
    const body = await reply.json();
    if (reply.ok) {
      if (changesBefore === changesMade) {
        answersRead = body;
        drawRoom();
      }
      showRefusal("");
    } else {
      showRefusal(`The server refused: ${visibleText(String(body.error), 300)}.`);
      stop = reply.status === 401 || reply.status === 403; // a token does not become right by waiting
    }
  } catch {
    showRefusal(`The server did not answer (has serve stopped?); asking again in ${pollMs / 1000} s.`);
  }
  if (!stop) setTimeout(poll, pollMs);
}

drawRoom();
poll();
