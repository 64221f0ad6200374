// The teacher's page of serve --class (widgets/build/classroom.py inlines this bundle into it): a
// grid of exercises by student that follows the room, and a CSV of it made in this browser. The
// token is the link's fragment; it leaves this page only in the Authorization header of the
// request for the room's answers. Each verdict is the exercises' own check of the answer a student
// typed (codec/teach/classroom.js), so a post nobody answered counts nothing. What a student sent
// (a nickname, an answer) is only ever text.
import { EXERCISE_COLUMNS, answerVerdict, exerciseColumn, roomCsv, shownNickname } from "./codec/teach/classroom.js";
import { visibleText } from "./codec/text.js";

const page = document.getElementById("class-page");
const resultsPath = page.dataset.source;
const pollMs = Number(page.dataset.pollMs);
const teacherToken = location.hash.slice(1);
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
  tag("h2", {}, "The exercises"),
  exerciseKey,
);

function studentRow(student, columns) {
  let right = 0;
  const cells = columns.map((column) => {
    const kept = student.answers[column.kind];
    if (!kept) return tag("td", { "aria-label": `${column.label}: not answered` }, "");
    const verdict = answerVerdict(column.kind, kept);
    if (verdict === "right") right += 1;
    const answer = visibleText(kept.answer, 40);
    return tag("td", { class: verdict, title: `answer: ${answer}`, "aria-label": `${column.label}: ${WORDS[verdict]} (${answer})`, "data-verdict": verdict }, MARKS[verdict]);
  });
  const name = tag("th", { scope: "row", title: shownNickname(student.nickname) }, shownNickname(student.nickname));
  return tag("tr", { "data-student": student.student }, name, ...cells, tag("td", {}, `${right} of ${columns.length}`));
}

function drawRoom() {
  const topic = Number(topicPicker.value);
  const columns = EXERCISE_COLUMNS.filter((column) => topic === 0 || column.topic === topic);
  const students = [...(answersRead?.students ?? [])].sort((a, b) => a.nickname.localeCompare(b.nickname));
  const head = tag("tr", {}, tag("th", { scope: "col" }, "student"), ...columns.map((column) => tag("th", { scope: "col", title: column.title }, column.label)), tag("th", { scope: "col" }, "right"));
  const rights = columns.map((column) => students.filter((student) => student.answers[column.kind] && answerVerdict(column.kind, student.answers[column.kind]) === "right").length);
  const foot = tag("tr", {}, tag("th", { scope: "row" }, "right"), ...rights.map((count) => tag("td", {}, String(count))), tag("td", {}, ""));
  grid.replaceChildren(tag("thead", {}, head), tag("tbody", {}, ...students.map((student) => studentRow(student, columns))), tag("tfoot", {}, foot));
  exerciseKey.replaceChildren(...columns.map((column) => tag("li", {}, `${column.label}: ${column.title}`)));
  const strangers = students.reduce((sum, student) => sum + Object.keys(student.answers).filter((kind) => !exerciseColumn(kind)).length, 0);
  const leftOut = strangers ? ` ${strangers} answers name an exercise this course does not have, and are left out.` : "";
  const counted = `${students.length} ${students.length === 1 ? "student" : "students"} so far`;
  readout.textContent = `${counted}; read at ${new Date().toLocaleTimeString()}, again every ${pollMs / 1000} s. ✓ right, ✗ not right, ? not an answer the exercise takes.${leftOut}`;
}

function showRefusal(text) {
  refusal.textContent = text;
  refusal.hidden = !text;
}

async function poll() {
  let stop = false;
  try {
    const reply = await fetch(resultsPath, { headers: teacherToken ? { Authorization: `Bearer ${teacherToken}` } : {}, cache: "no-store" });
    const body = await reply.json();
    if (reply.ok) {
      answersRead = body;
      showRefusal("");
      drawRoom();
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
