// Exercises that check themselves: seeded instances of each exercise kind for one notebook (or
// all of them), an answer field read with the lab's number grammar, a Check button, feedback with
// the worked arithmetic, a New instance button and a progress count. Questions, answers and the
// arithmetic all come from codec/teach/exercises.js, which computes with the lab's own codec.
// State: the synced traits topic, seed, rounds (New instance presses per kind), answers (the
// text last checked per kind, at most LONGEST_ANSWER characters) and progress ("correct" or
// "wrong" per kind).
import { formatLabNumber } from "./codec/numbers.js";
import { EXERCISE_KINDS, exerciseCheck, exerciseInstance, exerciseKinds, exerciseScore } from "./codec/teach/exercises.js";
import { visibleText } from "./codec/text.js";
import { h, mountInPlace, setTraits, setText, setAttr, setAttrs, resize, checker } from "./ui.js";

const KNOWN = new Set(EXERCISE_KINDS.map((entry) => entry.kind));
const isRecord = (value) => value !== null && typeof value === "object" && !Array.isArray(value);
// The longest answer the traits keep (and so a page's link carries): room for any number or name
// typed by hand, while a pasted page of text never rides along in every link.
const LONGEST_ANSWER = 200;

function validExercises(model) {
  const topic = model.get("topic");
  const seed = model.get("seed");
  const rounds = model.get("rounds");
  const answers = model.get("answers");
  const progress = model.get("progress");
  if (!(Number.isInteger(topic) && topic >= 0 && topic <= 8)) return { problem: `topic must be a notebook number 1..8, or 0 for all, got ${visibleText(JSON.stringify(topic), 40)}` };
  if (!(Number.isInteger(seed) && seed >= 0 && seed < 2 ** 32)) return { problem: `seed must be a whole number 0..4294967295, got ${visibleText(JSON.stringify(seed), 40)}` };
  const shown = (value) => visibleText(String(JSON.stringify(value)), 40);
  // Each record: which values it takes, and what it says of one it does not take.
  for (const [name, record, good, says] of [
    [
      "rounds",
      rounds,
      (value) => Number.isInteger(value) && value >= 0 && value < 2 ** 31,
      (kind, value) => `the round of ${kind} must be a whole number 0..2147483647, got ${shown(value)}`,
    ],
    [
      "answers",
      answers,
      (value) => typeof value === "string" && value.length <= LONGEST_ANSWER,
      (kind, value) =>
        typeof value === "string" ? `the answer to ${kind} is ${value.length} characters long; an answer is at most ${LONGEST_ANSWER}` : `the answer to ${kind} must be text, got ${shown(value)}`,
    ],
    ["progress", progress, (value) => value === "correct" || value === "wrong", (kind, value) => `${kind} must be "correct" or "wrong", got ${shown(value)}`],
  ]) {
    if (!isRecord(record)) return { problem: `${name} must be a set of named values` };
    const unknown = Object.keys(record).find((kind) => !KNOWN.has(kind));
    if (unknown !== undefined) return { problem: `${name} has an entry the exercises do not know: ${visibleText(JSON.stringify(unknown), 40)}` };
    const bad = Object.entries(record).find(([, value]) => !good(value));
    if (bad) return { problem: `${name}: ${says(...bad)}` };
  }
  return { topic, seed, rounds, answers, progress, kinds: exerciseKinds(topic) };
}

// The verdict and the worked arithmetic for a checked answer, or nothing before one is checked
// (a new instance has none). The lines leave the page with their answer but are kept, so the
// next check writes its working into them instead of making them again. While the field holds
// an entry that was refused (no answer at all, or one too long to keep), the verdict is still the
// last checked answer's, and says so: that answer is the one the count counts.
function feedback() {
  const node = h("div", { role: "status" });
  const verdict = h("p", { class: "lab-exercise-verdict" });
  const lines = [];
  let shown = null; // the checked answer on show
  let stale = false; // whether the field now holds a refused entry instead of that answer
  function writeVerdict() {
    const typed = formatLabNumber(shown.typed);
    const answer = formatLabNumber(shown.answer);
    setAttrs(node, {
      class: `lab-message lab-exercise-feedback ${shown.correct ? "lab-note" : "lab-error"}${stale ? " lab-exercise-stale" : ""}`,
      "data-exercise-stale": stale ? "true" : null,
    });
    if (!stale) setText(verdict, shown.correct ? "Correct." : `Not yet: you typed ${typed}; the codec computes ${answer}.`);
    else {
      const was = shown.correct ? "was correct" : `was not right (the codec computes ${answer})`;
      setText(verdict, `Your last checked answer, ${typed}, ${was}. What the field holds now was refused, so it was not checked and the count stays as it was.`);
    }
  }
  // Show the first `texts.length` lines, in order, with these texts; take the rest away.
  function showLines(texts) {
    while (lines.length < texts.length) lines.push(h("p", { class: "lab-formula lab-exercise-worked" }));
    lines.forEach((line, i) => {
      if (i >= texts.length) return line.remove();
      setText(line, texts[i]);
      if (line.parentNode !== node) node.append(line);
    });
  }
  return {
    node,
    patch(result) {
      shown = result;
      stale = false; // a new kept answer or instance: the field's refusal, if any, went with the old
      if (!result) {
        setAttrs(node, { class: "lab-exercise-feedback", "data-exercise-result": "none", "data-exercise-stale": null });
        verdict.remove();
        showLines([]);
        return;
      }
      setAttr(node, "data-exercise-result", result.correct ? "correct" : "wrong");
      if (verdict.parentNode !== node) node.prepend(verdict);
      writeVerdict();
      showLines(result.worked);
    },
    // Whether the field holds a refused entry; told on every draw.
    refusing(refused) {
      if (refused === stale) return;
      stale = refused;
      if (shown) writeVerdict();
    },
  };
}

// One exercise, built once; `patch(view, number)` draws its instance (again only when the seed or
// its round changes) and the feedback for the kept answer (again only when that changes).
function exercise(model, ui, kind) {
  let number = 0;
  let instance = null;
  let drawnFor = null; // the seed and round the instance was drawn for, and the answer checked
  const commit = (text) => {
    const result = exerciseCheck(kind, instance.params, text);
    if (!result.ok) return result;
    // An answer is kept as typed (less the spaces around it), so one too long for the traits is
    // refused here, before it reaches them; any exercise can be answered that long (300 zeros and
    // a 1 read as 1). The number it reads as is short, in the spelling that reads back exactly.
    const answer = text.trim();
    if (answer.length > LONGEST_ANSWER) {
      const exact = Object.is(result.typed, -0) ? "-0" : String(result.typed);
      return { ok: false, message: `This answer is ${answer.length} characters long; an answer is at most ${LONGEST_ANSWER}. It reads as ${exact}: type that instead.` };
    }
    return {
      ok: true,
      values: {
        answers: { ...model.get("answers"), [kind]: answer },
        progress: { ...model.get("progress"), [kind]: result.correct ? "correct" : "wrong" },
      },
    };
  };
  const result = feedback();
  const field = ui.field({
    key: `answer-${kind}`,
    label: () => `answer to exercise ${number}`,
    value: (view) => view.answers[kind] ?? "",
    // A refused entry answers this instance; a new one is a new question, with an empty field.
    about: (view) => `${view.seed} ${view.rounds[kind] ?? 0}`,
    commit,
    refusing: (refused) => result.refusing(refused),
    // Enter always checks, even an empty or unchanged answer, which fires no change event.
    onkeydown: (event) => {
      if (event.key === "Enter") event.target.dispatchEvent(new Event("change"));
    },
  });
  const input = field.querySelector("input");
  const heading = h("h4", {});
  const prompt = h("p", { class: "lab-exercise-prompt", "data-testid": `prompt-${kind}` });
  // The options carry their numbers in their text ("3. Check lane placement"), since the answer
  // is that number: a host's stylesheet (marimo's resets lists) can hide a list's own markers.
  // role=list keeps it a list to screen readers that drop unmarked lists.
  const options = h("ol", { class: "lab-exercise-options", role: "list" });
  const items = [];
  const node = h(
    "section",
    { class: "lab-card lab-exercise", "data-exercise": kind },
    heading,
    prompt,
    field,
    h(
      "div",
      { class: "lab-row" },
      h(
        "button",
        {
          type: "button",
          class: "lab-chip lab-chip-on",
          "data-focus": `check-${kind}`,
          // Checking is the field's commit: a change event runs it with the field's current text.
          onclick: () => input.dispatchEvent(new Event("change")),
        },
        "Check",
      ),
      h(
        "button",
        {
          type: "button",
          class: "lab-chip",
          "data-focus": `new-${kind}`,
          onclick: () => {
            const without = (record) => Object.fromEntries(Object.entries(record).filter(([name]) => name !== kind));
            const round = model.get("rounds")[kind] ?? 0;
            setTraits(model, { rounds: { ...model.get("rounds"), [kind]: round + 1 }, answers: without(model.get("answers")), progress: without(model.get("progress")) });
          },
        },
        "New instance",
      ),
    ),
    result.node,
  );
  return {
    node,
    patch(view, shownNumber) {
      number = shownNumber;
      const round = view.rounds[kind] ?? 0;
      const typed = view.answers[kind];
      const fresh = drawnFor === null || drawnFor.seed !== view.seed || drawnFor.round !== round;
      if (fresh) {
        instance = exerciseInstance(kind, view.seed, round);
        setText(prompt, instance.prompt);
        resize(options, items, instance.options.length, () => ({ nodes: [h("li", {})] }));
        items.forEach(({ nodes: [item] }, i) => setText(item, instance.options[i]));
        if (!instance.options.length) options.remove();
        else if (options.parentNode !== node) prompt.after(options);
      }
      setText(heading, `${number}. ${instance.title}`);
      setAttr(node, "aria-label", `exercise ${number}: ${instance.title}`);
      if (fresh || typed !== drawnFor.typed) {
        // The verdict is recomputed from the kept answer, so a link shows the same feedback.
        const checked = typed === undefined ? null : exerciseCheck(kind, instance.params, typed);
        result.patch(checked && checked.ok ? checked : null);
      }
      drawnFor = { seed: view.seed, round, typed };
    },
  };
}

// The exercises of the topic, with the count above them. Every kind's exercise is built once (their
// answer fields belong to the figure); the topic decides which are on the page, in the kinds' order.
function figure(model, ui, first) {
  const progress = h("p", { class: "lab-big lab-exercise-progress", "data-testid": "exercise-progress", role: "status" });
  const rule = h(
    "p",
    { class: "lab-caption", "data-testid": "exercise-count-rule" },
    "Each exercise counts its last checked answer: a wrong answer after a right one takes the count back down, and an entry refused beside its field (no answer, or one too long to keep) changes nothing.",
  );
  const seedNote = h("p", { class: "lab-caption" });
  const exercises = new Map(EXERCISE_KINDS.map(({ kind }) => [kind, exercise(model, ui, kind)]));
  const list = h("div", { class: "lab-exercise-list" }, progress, rule, seedNote);
  let shown = [];
  function update(view, changed) {
    if (changed.has("topic")) {
      for (const kind of shown) if (!view.kinds.includes(kind)) exercises.get(kind).node.remove();
      // Those already on the page stay where they are (a moved node would lose focus).
      let next = null;
      for (const kind of [...view.kinds].reverse()) {
        const node = exercises.get(kind).node;
        if (node.parentNode !== list || node.nextSibling !== next) list.insertBefore(node, next);
        next = node;
      }
      shown = view.kinds;
    }
    const score = exerciseScore(view.topic, view.progress);
    setText(progress, `${score.correct} of ${score.of} correct`);
    setText(seedNote, `seed ${view.seed}: the same seed gives the same questions; New instance draws the next one for that exercise.`);
    view.kinds.forEach((kind, i) => exercises.get(kind).patch(view, i + 1));
  }
  update(first, new Set(TRAITS));
  return { nodes: [list], update };
}

const TRAITS = ["topic", "seed", "rounds", "answers", "progress"];

function render({ model, el }) {
  return mountInPlace({
    model,
    el,
    className: "lab-exercises",
    traits: TRAITS,
    validate: validExercises,
    // The exercises, answer fields and all, are the figure: they go while the traits have a problem.
    figure: (view, ui) => figure(model, ui, view),
  });
}

export default { render, check: checker(validExercises) };
