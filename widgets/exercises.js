// Exercises that check themselves: seeded instances of each exercise kind for one notebook (or
// all of them), an answer field read with the lab's number grammar, a Check button, feedback with
// the worked arithmetic, a New instance button and a progress count. Questions, answers and the
// arithmetic all come from codec/teach/exercises.js, which computes with the lab's own codec.
// State: the synced traits topic, seed, rounds (New instance presses per kind), answers (the
// text last checked per kind) and progress ("correct" or "wrong" per kind).
import { formatLabNumber } from "./codec/numbers.js";
import { EXERCISE_KINDS, exerciseCheck, exerciseInstance, exerciseKinds } from "./codec/teach/exercises.js";
import { h, mount, setTraits, checker } from "./ui.js";

const KNOWN = new Set(EXERCISE_KINDS.map((entry) => entry.kind));
const isRecord = (value) => value !== null && typeof value === "object" && !Array.isArray(value);

function validExercises(model) {
  const topic = model.get("topic");
  const seed = model.get("seed");
  const rounds = model.get("rounds");
  const answers = model.get("answers");
  const progress = model.get("progress");
  if (!(Number.isInteger(topic) && topic >= 0 && topic <= 8)) return { problem: `topic must be a notebook number 1..8, or 0 for all, got ${JSON.stringify(topic)}` };
  if (!(Number.isInteger(seed) && seed >= 0 && seed < 2 ** 32)) return { problem: `seed must be a whole number 0..4294967295, got ${JSON.stringify(seed)}` };
  for (const [name, record, good] of [
    ["rounds", rounds, (value) => Number.isInteger(value) && value >= 0 && value < 2 ** 31],
    ["answers", answers, (value) => typeof value === "string" && value.length <= 200],
    ["progress", progress, (value) => value === "correct" || value === "wrong"],
  ]) {
    if (!isRecord(record)) return { problem: `${name} must be a set of named values` };
    const bad = Object.entries(record).find(([kind, value]) => !KNOWN.has(kind) || !good(value));
    if (bad) return { problem: `${name} has an entry the exercises do not know: ${JSON.stringify(bad[0]).slice(0, 40)}` };
  }
  return { topic, seed, rounds, answers, progress, kinds: exerciseKinds(topic) };
}

function feedback(result) {
  if (!result) return h("div", { class: "lab-exercise-feedback", "data-exercise-result": "none", role: "status" });
  const correct = result.correct;
  return h(
    "div",
    { class: `lab-message lab-exercise-feedback ${correct ? "lab-note" : "lab-error"}`, "data-exercise-result": correct ? "correct" : "wrong", role: "status" },
    h("p", { class: "lab-exercise-verdict" }, correct ? "Correct." : `Not yet: you typed ${formatLabNumber(result.typed)}; the codec computes ${formatLabNumber(result.answer)}.`),
    result.worked.map((line) => h("p", { class: "lab-formula lab-exercise-worked" }, line)),
  );
}

function exercise(model, ui, view, kind, number) {
  const round = view.rounds[kind] ?? 0;
  const instance = exerciseInstance(kind, view.seed, round);
  const typed = view.answers[kind];
  // The verdict is recomputed from the kept answer, so a link shows the same feedback.
  const checked = typed === undefined ? null : exerciseCheck(kind, instance.params, typed);
  const fieldKey = `answer-${kind}`;
  const commit = (text) => {
    const result = exerciseCheck(kind, instance.params, text);
    if (!result.ok) return result;
    return {
      ok: true,
      values: {
        answers: { ...model.get("answers"), [kind]: text.trim() },
        progress: { ...model.get("progress"), [kind]: result.correct ? "correct" : "wrong" },
      },
    };
  };
  const section = h(
    "section",
    { class: "lab-card lab-exercise", "data-exercise": kind, "aria-label": `exercise ${number}: ${instance.title}` },
    h("h4", {}, `${number}. ${instance.title}`),
    h("p", { class: "lab-exercise-prompt", "data-testid": `prompt-${kind}` }, instance.prompt),
    instance.options.length ? h("ol", { class: "lab-exercise-options" }, instance.options.map((option) => h("li", {}, option.replace(/^\d+\. /, "")))) : null,
    ui.field({
      key: fieldKey,
      label: `answer to exercise ${number}`,
      value: typed ?? "",
      commit,
      // Enter always checks, even an empty or unchanged answer, which fires no change event.
      onkeydown: (event) => {
        if (event.key === "Enter") event.target.dispatchEvent(new Event("change"));
      },
    }),
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
          onclick: (event) => event.target.closest("section").querySelector("input").dispatchEvent(new Event("change")),
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
            setTraits(model, { rounds: { ...model.get("rounds"), [kind]: round + 1 }, answers: without(model.get("answers")), progress: without(model.get("progress")) });
          },
        },
        "New instance",
      ),
    ),
    feedback(checked && checked.ok ? checked : null),
  );
  return section;
}

function render({ model, el }) {
  return mount({
    model,
    el,
    className: "lab-exercises",
    traits: ["topic", "seed", "rounds", "answers", "progress"],
    validate: validExercises,
    // The exercises are the controls, with the count above them; nothing is drawn below.
    controls: (ui, view) => {
      if (view.problem) return null;
      const correct = view.kinds.filter((kind) => view.progress[kind] === "correct").length;
      return h(
        "div",
        { class: "lab-exercise-list" },
        h("p", { class: "lab-big lab-exercise-progress", "data-testid": "exercise-progress", role: "status" }, `${correct} of ${view.kinds.length} correct`),
        h("p", { class: "lab-caption" }, `seed ${view.seed}: the same seed gives the same questions; New instance draws the next one for that exercise.`),
        view.kinds.map((kind, i) => exercise(model, ui, view, kind, i + 1)),
      );
    },
    build: () => [],
  });
}

export default { render, check: checker(validExercises) };
