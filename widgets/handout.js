// A printable sheet of one notebook's exercises: the worksheet (each question, with ruled lines to
// write on) or its answer key (each answer and the worked arithmetic, as the Exercises widget shows
// them after a right answer). The questions, answers and arithmetic come from the same generator
// the widget draws from (codec/teach/exercises.js), for the same seed and round 0, so a student who
// types that seed into the exercises gets the numbers on the paper. publish/handouts.py
// inlines this module into an offline page and prints it to PDF. Only text nodes are written.
import { formatLabNumber } from "./codec/numbers.js";
import { exerciseInstance, exerciseKinds, exerciseSolve } from "./codec/teach/exercises.js";
import { visibleText } from "./codec/text.js";

export const HANDOUT_SHEETS = ["worksheet", "key"];
// Ruled lines under each question on the worksheet: room for the working and the answer.
const WORKING_LINES = 4;
const LARGEST_SEED = 2 ** 32 - 1;

// What is wrong with a sheet's inputs, or null.
function handoutProblem({ topic, seed, sheet }) {
  if (!(Number.isInteger(topic) && topic >= 1 && topic <= 8)) return `topic must be a notebook number 1..8, got ${visibleText(JSON.stringify(topic), 40)}`;
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
  return exerciseKinds(topic).map((kind, i) => {
    const instance = exerciseInstance(kind, seed, 0);
    const shown = { kind, number: i + 1, title: instance.title, prompt: instance.prompt, options: instance.options };
    if (sheet !== "key") return shown;
    const { answer, worked } = exerciseSolve(kind, instance.params);
    return { ...shown, answer: formatLabNumber(answer), worked };
  });
}

/** The line under the title that says which numbers these are. */
export function handoutSeedLine(seed) {
  return `seed ${seed}: the numbers a student gets by typing seed ${seed} into the exercises`;
}

/**
 * Write the sheet into `root` (an element): {topic, title (the notebook's), seed, sheet}. Bad
 * inputs are said on the sheet, in a marked paragraph, instead of a sheet that could mislead.
 */
export function writeHandout(root, inputs) {
  const doc = root.ownerDocument;
  const element = (tag, className, text) => {
    const node = doc.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.append(doc.createTextNode(visibleText(String(text))));
    return node;
  };
  const problem = handoutProblem(inputs);
  if (problem !== null) {
    const refusal = element("p", "handout-problem", `This sheet cannot be made: ${problem}.`);
    refusal.setAttribute("role", "alert");
    root.append(refusal);
    return { ok: false, problem };
  }
  const { topic, title, seed, sheet } = inputs;
  const key = sheet === "key";
  const header = element("header", "handout-header");
  header.append(
    element("p", "handout-lab", `The four-bit lab · notebook ${topic} · ${key ? "answer key" : "worksheet"}`),
    element("h1", "handout-title", `${topic} · ${title}`),
    element("p", "handout-seed", handoutSeedLine(seed)),
  );
  if (key) {
    header.append(element("p", "handout-about", "Each answer, and the worked arithmetic the Exercises widget shows after a right answer."));
  } else {
    const name = element("p", "handout-name", "Name");
    name.append(element("span", "handout-blank"));
    header.append(name, element("p", "handout-about", "Write your working on the lines, then the answer. Type the seed above into the exercises to check yourself."));
  }
  root.append(header);
  for (const exercise of handoutExercises(topic, seed, sheet)) {
    const section = element("section", "handout-exercise");
    section.dataset.exercise = exercise.kind;
    section.append(element("h2", "handout-exercise-title", `${exercise.number}. ${exercise.title}`), element("p", "handout-prompt", exercise.prompt));
    if (exercise.options.length) {
      const options = element("ol", "handout-options");
      for (const option of exercise.options) options.append(element("li", "", option));
      section.append(options);
    }
    if (key) {
      section.append(element("p", "handout-answer", `Answer: ${exercise.answer}`));
      for (const line of exercise.worked) section.append(element("p", "handout-worked", line));
    } else {
      for (let i = 0; i < WORKING_LINES; i += 1) section.append(element("div", "handout-line"));
      const answer = element("p", "handout-answer-line", "Answer");
      answer.append(element("span", "handout-blank"));
      section.append(answer);
    }
    root.append(section);
  }
  return { ok: true, problem: null };
}
