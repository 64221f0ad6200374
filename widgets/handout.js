// A printable sheet of one notebook's exercises, or a workshop's booklet of several: the
// worksheet (each question, with ruled lines to write on) or its answer key (each answer and the
// worked arithmetic, as the Exercises widget shows them). The questions, answers and arithmetic
// come from the same generator the widget draws from (codec/teach/exercises.js), for the same seed
// and round, so a student who types that seed into the exercises gets the numbers on the paper.
// publish/handouts.py inlines this module into an offline page and prints it to PDF. Only text
// nodes are written.
import { formatLabNumber } from "./codec/numbers.js";
import { EXERCISE_KINDS, exerciseInstance, exerciseKinds, exerciseSolve } from "./codec/teach/exercises.js";
import { visibleText } from "./codec/text.js";

export const HANDOUT_SHEETS = ["worksheet", "key"];
// Ruled lines under each question on the worksheet: room for the working and the answer.
const WORKING_LINES = 4;
const LARGEST_SEED = 2 ** 32 - 1;
// The notebooks with exercises: 1..LAST_TOPIC.
const LAST_TOPIC = Math.max(...EXERCISE_KINDS.map((entry) => entry.topic));

// What is wrong with a sheet's inputs, or null.
function handoutProblem({ topic, seed, sheet }) {
  if (!(Number.isInteger(topic) && topic >= 1 && topic <= LAST_TOPIC)) return `topic must be a notebook number 1..${LAST_TOPIC}, got ${visibleText(JSON.stringify(topic), 40)}`;
  if (!(Number.isInteger(seed) && seed >= 1 && seed <= LARGEST_SEED)) return `seed must be a whole number 1..4294967295, got ${visibleText(JSON.stringify(seed), 40)}`;
  if (!HANDOUT_SHEETS.includes(sheet)) return `sheet must be "worksheet" or "key", got ${visibleText(JSON.stringify(sheet), 40)}`;
  return null;
}

/**
 * What one sheet says, exercise by exercise: [{kind, number, title, prompt, options, answer,
 * worked}], answer (as the lab prints it) and worked (lines) only on the key. Round 0 of each
 * kind: the question a student sees first for this seed.
 */
export function handoutExercises(topic, seed, sheet) {
  return exerciseKinds(topic).map((kind, i) => handoutQuestion(kind, seed, 0, sheet, i + 1));
}

/**
 * One question as a sheet shows it: {kind, round, number, title, prompt, options}, and on the key
 * answer (as the lab prints it) and worked (lines).
 */
export function handoutQuestion(kind, seed, round, sheet, number) {
  const instance = exerciseInstance(kind, seed, round);
  const shown = { kind, round, number, title: instance.title, prompt: instance.prompt, options: instance.options };
  if (sheet !== "key") return shown;
  const { answer, worked } = exerciseSolve(kind, instance.params);
  return { ...shown, answer: formatLabNumber(answer), worked };
}

/**
 * The questions a booklet may ask of one notebook, in the order it asks them: round 0 of each of
 * its kinds, then round 1 of each, and so on, up to `rounds` rounds: [{kind, round}].
 */
export function bookletCandidates(topic, rounds) {
  const kinds = exerciseKinds(topic);
  return Array.from({ length: rounds * kinds.length }, (_, i) => ({ kind: kinds[i % kinds.length], round: Math.floor(i / kinds.length) }));
}

/** Where a question of a booklet is in the lab: "exercise 3.2, round 1: New instance pressed once". */
export function bookletWhere(topic, kind, round) {
  const label = `${topic}.${exerciseKinds(topic).indexOf(kind) + 1}`;
  const presses = round === 0 ? "the first question shown" : `after New instance pressed ${round === 1 ? "once" : `${round} times`}`;
  return `exercise ${label}, round ${round}: ${presses}`;
}

/** The line under the title that says which numbers these are. */
export function handoutSeedLine(seed) {
  return `seed ${seed}: the numbers a student gets by typing seed ${seed} into the exercises`;
}

// A maker of elements in `doc` whose text is always a text node, through visibleText.
function elements(doc) {
  return (tag, className, text) => {
    const node = doc.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.append(doc.createTextNode(visibleText(String(text))));
    return node;
  };
}

// One question as a section of a sheet: its title, where it is in the lab (a booklet's), the
// question and its options, then ruled lines (worksheet) or the answer and its working (key).
function questionSection(element, exercise, key, where = null, lines = WORKING_LINES) {
  const section = element("section", "handout-exercise");
  section.dataset.exercise = exercise.kind;
  section.dataset.round = String(exercise.round);
  section.append(element("h2", "handout-exercise-title", `${exercise.number}. ${exercise.title}`));
  if (where !== null) section.append(element("p", "handout-where", where));
  section.append(element("p", "handout-prompt", exercise.prompt));
  if (exercise.options.length) {
    const options = element("ol", "handout-options");
    for (const option of exercise.options) options.append(element("li", "", option));
    section.append(options);
  }
  if (key) {
    section.append(element("p", "handout-answer", `Answer: ${exercise.answer}`));
    for (const line of exercise.worked) section.append(element("p", "handout-worked", line));
  } else {
    for (let i = 0; i < lines; i += 1) section.append(element("div", "handout-line"));
    const answer = element("p", "handout-answer-line", "Answer");
    answer.append(element("span", "handout-blank"));
    section.append(answer);
  }
  return section;
}

function refuse(root, element, problem) {
  const refusal = element("p", "handout-problem", `This sheet cannot be made: ${problem}.`);
  refusal.setAttribute("role", "alert");
  root.append(refusal);
  return { ok: false, problem };
}

/**
 * Write the sheet into `root` (an element): {topic, title (the notebook's), seed, sheet}. Bad
 * inputs are said on the sheet, in a marked paragraph, instead of a sheet that could mislead.
 */
export function writeHandout(root, inputs) {
  const element = elements(root.ownerDocument);
  const problem = handoutProblem(inputs);
  if (problem !== null) return refuse(root, element, problem);
  const { topic, title, seed, sheet } = inputs;
  const key = sheet === "key";
  const header = element("header", "handout-header");
  header.append(
    element("p", "handout-lab", `The four-bit lab · notebook ${topic} · ${key ? "answer key" : "worksheet"}`),
    element("h1", "handout-title", `${topic} · ${title}`),
    element("p", "handout-seed", handoutSeedLine(seed)),
  );
  if (key) {
    header.append(element("p", "handout-about", "Each answer, and the worked arithmetic the Exercises widget shows with it."));
  } else {
    const name = element("p", "handout-name", "Name");
    name.append(element("span", "handout-blank"));
    header.append(name, element("p", "handout-about", "Write your working on the lines, then the answer. Type the seed above into the exercises to check yourself."));
  }
  root.append(header);
  for (const exercise of handoutExercises(topic, seed, sheet)) root.append(questionSection(element, exercise, key));
  return { ok: true, problem: null };
}

// ---------------------------------------------------------------------------------------------
// The booklet: one per workshop. A cover with the seed and the notebooks, then each notebook's
// questions on pages of their own. The worksheet fills each notebook's pages: it lays out one
// question after another, rounds 0, 1, 2… of the notebook's kinds, and a question that does not fit
// on the last page is left for a shorter one, so every page is full but for less than a question.
// The key asks the questions the worksheet chose (handouts.py hands them over), with the answers.
// ---------------------------------------------------------------------------------------------

// The most rounds a notebook's pages are filled from, and the most questions in a row that may
// not fit before the page counts as full.
const BOOKLET_ROUNDS = 40;
const BOOKLET_SKIPS = 6;
// Ruled lines under a booklet's question as it is placed; the room a page has left once no other
// question fits is then shared out among its questions as more lines, so each page is full.
const BOOKLET_LINES = 2;
const MOST_SHARED_LINES = 200;
export const LARGEST_PAGES_PER_NOTEBOOK = 4;

// What is wrong with a booklet's inputs, or null.
function bookletProblem({ seed, sheet, notebooks, pages, chosen }) {
  if (!(Number.isInteger(seed) && seed >= 1 && seed <= LARGEST_SEED)) return `seed must be a whole number 1..4294967295, got ${visibleText(JSON.stringify(seed), 40)}`;
  if (!HANDOUT_SHEETS.includes(sheet)) return `sheet must be "worksheet" or "key", got ${visibleText(JSON.stringify(sheet), 40)}`;
  if (!Array.isArray(notebooks) || notebooks.length === 0) return "a booklet needs at least one notebook";
  const bad = notebooks.find((notebook) => !(Number.isInteger(notebook?.topic) && notebook.topic >= 1 && notebook.topic <= LAST_TOPIC && typeof notebook.title === "string"));
  if (bad !== undefined) return `each notebook must be {topic: 1..${LAST_TOPIC}, title}, got ${visibleText(JSON.stringify(bad), 60)}`;
  if (!(Number.isInteger(pages) && pages >= 1 && pages <= LARGEST_PAGES_PER_NOTEBOOK)) return `pages must be a whole number 1..${LARGEST_PAGES_PER_NOTEBOOK}, got ${visibleText(JSON.stringify(pages), 40)}`;
  if (sheet === "key" && (chosen === null || typeof chosen !== "object")) return "the key needs the questions its worksheet chose";
  return null;
}

/** The cover's lines: what the booklet is, its seed, and how a student finds a question in the lab. */
export function bookletCoverLines(seed, key) {
  return {
    kind: key ? "answer key" : "worksheet",
    seed: `Seed ${seed}`,
    how: `Every question is one of the exercises at the end of its notebook's page. Type seed ${seed} into the seed field there to get these numbers: round 0 is the question shown first, round 1 the one after pressing New instance once, and so on.`,
  };
}

// A new page of the booklet in `root`: a box of one printed page's height (handouts.py's SHEET_CSS).
function newPage(root, element) {
  const page = element("div", "booklet-page");
  root.append(page);
  return page;
}

// Whether `page`'s content runs past its box.
const overflows = (page) => page.scrollHeight > page.clientHeight + 0.5;

// Share the room left on a full worksheet page among its questions, one ruled line at a time.
function shareRoom(page, element) {
  const answers = [...page.querySelectorAll(".handout-answer-line")];
  for (let i = 0; answers.length && i < MOST_SHARED_LINES; i += 1) {
    const line = element("div", "handout-line");
    answers[i % answers.length].before(line);
    if (overflows(page)) {
      line.remove();
      return;
    }
  }
}

/**
 * Write a booklet into `root`: {seed, sheet, notebooks: [{topic, title}], pages (per notebook, for
 * the worksheet), chosen (for the key: {topic: [{kind, round}]}, as the worksheet returned it)}.
 * Returns {ok, problem, chosen}.
 */
export function writeBooklet(root, inputs) {
  const element = elements(root.ownerDocument);
  const problem = bookletProblem(inputs);
  if (problem !== null) return { ...refuse(root, element, problem), chosen: null };
  const { seed, sheet, notebooks, pages } = inputs;
  const key = sheet === "key";
  const cover = newPage(root, element);
  cover.classList.add("booklet-cover");
  const lines = bookletCoverLines(seed, key);
  cover.append(element("p", "handout-lab", `The four-bit lab · workshop booklet · ${lines.kind}`), element("h1", "booklet-seed", lines.seed));
  if (!key) {
    const name = element("p", "handout-name", "Name");
    name.append(element("span", "handout-blank"));
    cover.append(name);
  }
  cover.append(element("p", "handout-about", lines.how));
  const contents = element("ul", "booklet-contents");
  cover.append(element("h2", "handout-exercise-title", "In this booklet"), contents);
  const chosen = {};
  for (const { topic, title } of notebooks) {
    const heading = () => element("h2", "booklet-notebook", `${topic} · ${title}`);
    const asked = [];
    let page = newPage(root, element);
    page.dataset.topic = String(topic);
    page.append(heading());
    const candidates = key ? inputs.chosen[topic] ?? [] : bookletCandidates(topic, BOOKLET_ROUNDS);
    let used = 1;
    let skipped = 0;
    for (const { kind, round } of candidates) {
      if (!key && skipped >= BOOKLET_SKIPS) break;
      const question = handoutQuestion(kind, seed, round, sheet, asked.length + 1);
      const section = questionSection(element, question, key, bookletWhere(topic, kind, round), BOOKLET_LINES);
      page.append(section);
      if (!overflows(page)) {
        asked.push({ kind, round });
        skipped = 0;
        continue;
      }
      section.remove();
      if (!key && used >= pages) {
        skipped += 1; // this notebook's last page: leave room for a shorter question
        continue;
      }
      if (!key) shareRoom(page, element);
      page = newPage(root, element);
      page.dataset.topic = String(topic);
      used += 1;
      page.append(section);
      asked.push({ kind, round });
      skipped = 0;
    }
    if (!key) shareRoom(page, element);
    chosen[topic] = asked;
    contents.append(element("li", "", `${topic} · ${title}: ${asked.length} questions`));
  }
  return { ok: true, problem: null, chosen };
}
