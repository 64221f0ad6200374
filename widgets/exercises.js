// Exercises that check themselves: seeded instances of each exercise kind for one notebook (or
// all of them), an answer field read with the lab's number grammar, a Check button, feedback that
// teaches before it tells (a first wrong answer gets a hint and a second try; the worked answer
// comes after the second miss, or at once from Show the working), a New instance button and a
// progress count. Questions, hints, answers and the arithmetic all come from
// codec/teach/exercises.js, which computes with the lab's own codec.
// State: the synced traits topic, seed, rounds (New instance presses per kind), answers (the
// text last checked per kind, at most LONGEST_ANSWER characters), attempts (per kind, for the
// instance on show: the first answer checked, how many different answers were checked, and
// whether the working was shown on request) and progress, which is output only: each answered
// kind's verdict, checked again from its answer (exerciseVerdicts) and written here, never read
// back as the truth, so a link claiming "correct" with no answer counts nothing. Seed 0 stands
// for the student's own numbers: this browser's seed, drawn at random the first time and kept in
// localStorage with the rounds, answers and attempts of each (topic, seed) worked on, so a reload
// (a course page has no link to carry them) shows the same numbers and progress.
// On a page of a class (serve --class) a name field joins the seed's, and every checked answer
// is also sent to the teacher's screen (class_report.js).
import { formatLabNumber, parseNumber } from "./codec/numbers.js";
import { EXERCISE_KINDS, exerciseCheck, exerciseHint, exerciseInstance, exerciseKinds, exerciseScore, exerciseSolve, exerciseVerdicts } from "./codec/teach/exercises.js";
import { visibleText } from "./codec/text.js";
import { classReporter } from "./class_report.js";
import { pageStorage } from "./page_storage.js";
import { h, mountInPlace, setTraits, setText, setAttr, setAttrs, resize, checker } from "./ui.js";

const KNOWN = new Set(EXERCISE_KINDS.map((entry) => entry.kind));
// The last notebook with exercises.
const LAST_TOPIC = Math.max(...EXERCISE_KINDS.map((entry) => entry.topic));
const isRecord = (value) => value !== null && typeof value === "object" && !Array.isArray(value);
const isEmpty = (record) => Object.keys(record).length === 0;
const quoted = (value) => visibleText(String(JSON.stringify(value)), 40);
// The longest answer the traits keep (and so a page's link carries): room for any number or name
// typed by hand, while a pasted page of text never rides along in every link.
const LONGEST_ANSWER = 200;
// The most tries one instance counts (teacher_view.py's MAX_TRIES); more are still checked.
export const MOST_TRIES = 9999;
// The seed that stands for the student's own; a seed drawn or typed is one of 1..LARGEST_SEED.
export const OWN_SEED = 0;
const LARGEST_SEED = 2 ** 32 - 1;
const isSeed = (value) => Number.isInteger(value) && value >= 1 && value <= LARGEST_SEED;

// Each record trait: which values its entries take, and what it says of one it does not take.
const RECORD_RULES = {
  rounds: [(value) => Number.isInteger(value) && value >= 0 && value < 2 ** 31, (kind, value) => `the round of ${kind} must be a whole number 0..2147483647, got ${quoted(value)}`],
  answers: [
    (value) => typeof value === "string" && value.length <= LONGEST_ANSWER,
    (kind, value) =>
      typeof value === "string" ? `the answer to ${kind} is ${value.length} characters long; an answer is at most ${LONGEST_ANSWER}` : `the answer to ${kind} must be text, got ${quoted(value)}`,
  ],
  attempts: [
    (value) =>
      isRecord(value) &&
      Object.keys(value).length === 3 &&
      typeof value.first === "string" &&
      value.first.length <= LONGEST_ANSWER &&
      Number.isInteger(value.tries) &&
      value.tries >= 0 &&
      value.tries <= MOST_TRIES &&
      typeof value.shown === "boolean",
    (kind, value) => `the attempts at ${kind} must be {first: text of at most ${LONGEST_ANSWER} characters, tries: a whole number 0..${MOST_TRIES}, shown: true or false}, got ${quoted(value)}`,
  ],
  progress: [(value) => value === "correct" || value === "wrong", (kind, value) => `${kind} must be "correct" or "wrong", got ${quoted(value)}`],
};

// What is wrong with a record trait (from the traits, a link or this browser's store), or null.
function recordProblem(name, record) {
  const [good, says] = RECORD_RULES[name];
  if (!isRecord(record)) return `${name} must be a set of named values`;
  const unknown = Object.keys(record).find((kind) => !KNOWN.has(kind));
  if (unknown !== undefined) return `${name} has an entry the exercises do not know: ${visibleText(JSON.stringify(unknown), 40)}`;
  const bad = Object.entries(record).find(([, value]) => !good(value));
  return bad ? `${name}: ${says(...bad)}` : null;
}

function validExercises(model) {
  const topic = model.get("topic");
  const seed = model.get("seed");
  const rounds = model.get("rounds");
  const answers = model.get("answers");
  // a page or link from before the attempts were kept has none: its answers count as first tries
  const attempts = model.get("attempts") ?? {};
  if (!(Number.isInteger(topic) && topic >= 0 && topic <= LAST_TOPIC)) return { problem: `topic must be a notebook number 1..${LAST_TOPIC}, or 0 for all, got ${visibleText(JSON.stringify(topic), 40)}` };
  if (!(seed === OWN_SEED || isSeed(seed))) return { problem: `seed must be a whole number 1..4294967295, or 0 for this browser's own, got ${visibleText(JSON.stringify(seed), 40)}` };
  // progress is written here, never read as the truth; a link's is still checked for its shape,
  // so what is wrong with it is said like anything else wrong in a link
  for (const [name, record] of [
    ["rounds", rounds],
    ["answers", answers],
    ["attempts", attempts],
    ["progress", model.get("progress")],
  ]) {
    const problem = recordProblem(name, record);
    if (problem) return { problem };
  }
  return { topic, seed, rounds, answers, attempts, kinds: exerciseKinds(topic) };
}

// The traits for these rounds, answers and attempts, with the progress checked again from them.
const checkedTraits = (seed, rounds, answers, attempts) => ({ rounds, answers, attempts, progress: exerciseVerdicts(seed, rounds, answers) });

/**
 * The attempts at one kind's instance on show: {first, tries, shown}, or null before any. An
 * answer kept without them (a link or a store from before they were kept) is its first try.
 */
export function attemptOf(attempts, answers, kind) {
  const kept = Object.hasOwn(attempts, kind) ? attempts[kind] : null;
  if (!Object.hasOwn(answers, kind)) return kept;
  // an answer with no try counted (a link that says so) was still tried once
  return kept !== null && kept.tries > 0 ? kept : { first: answers[kind], tries: 1, shown: kept?.shown ?? false };
}

/**
 * The attempts after `answer` was checked: the first answer stays the first, and a different
 * answer from the last one checked is one more try (Enter pressed twice on one answer is not).
 */
export function afterCheck(before, lastAnswer, answer) {
  if (before === null || before.tries === 0) return { first: answer, tries: 1, shown: before?.shown ?? false };
  if (answer === lastAnswer) return before;
  return { ...before, tries: Math.min(before.tries + 1, MOST_TRIES) };
}

/**
 * What the feedback shows for a checked answer (or none) and its attempts: "none", "correct",
 * "hint" (a first wrong try: the method, a second try, no answer), "worked" (wrong after the
 * second try, or with the working asked for) or "shown" (the working asked for before any answer).
 */
export function feedbackStage(checked, attempt) {
  if (!checked) return attempt?.shown ? "shown" : "none";
  if (checked.correct) return "correct";
  return attempt && (attempt.shown || attempt.tries >= 2) ? "worked" : "hint";
}

// ---------------------------------------------------------------------------------------------
// What this browser keeps: localStorage[STORE_KEY], {seed, records: {"topic:seed": {rounds,
// answers, attempts}}}, the records oldest first (a record from before attempts were kept has
// none, and is read as first tries). The progress is not kept: it is checked again from the
// answers. A stored value this did not write (edited, damaged, another program's) is set aside,
// never run and never shown: it is only ever JSON.parse'd, and each record is checked as a
// link's traits are; the next save writes over it.
// ---------------------------------------------------------------------------------------------
const STORE_KEY = "four-bit-lab:exercises";
// The (topic, seed) pairs kept, the last worked on: a student of the whole course on a few seeds.
const MOST_RECORDS = 32;
// At most this many characters kept; longer was not written here, and is not even parsed.
const LONGEST_STORE = 262144;
const RECORD_KEY = /^(1[0-2]|[0-9]):([1-9][0-9]{0,9})$/;

const recordKey = (topic, seed) => `${topic}:${seed}`;

/** A stored text read back: {seed (or null), records (a Map, oldest first), setAside (whether any of it was not taken)}. */
export function readStore(text) {
  const none = { seed: null, records: new Map(), setAside: false };
  if (text === null || text === undefined) return none;
  let parsed = null;
  if (typeof text === "string" && text.length <= LONGEST_STORE) {
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = null;
    }
  }
  if (!isRecord(parsed) || !isRecord(parsed.records)) return { ...none, setAside: true };
  const records = new Map();
  const entries = Object.entries(parsed.records);
  for (const [key, record] of entries.slice(-MOST_RECORDS)) {
    const named = RECORD_KEY.exec(key);
    if (!named || !isSeed(Number(named[2])) || !isRecord(record)) continue;
    const attempts = record.attempts ?? {};
    if (recordProblem("rounds", record.rounds) || recordProblem("answers", record.answers) || recordProblem("attempts", attempts)) continue;
    records.set(key, { rounds: { ...record.rounds }, answers: { ...record.answers }, attempts: { ...attempts } });
  }
  // no seed yet (null: a link's seed was all this browser used so far) is not one set aside
  const seed = isSeed(parsed.seed) ? parsed.seed : null;
  const badSeed = seed === null && parsed.seed !== null && parsed.seed !== undefined;
  return { seed, records, setAside: records.size < entries.length || badSeed };
}

/** The text to store: the newest records that fit in MOST_RECORDS and LONGEST_STORE characters. */
export function storeText({ seed, records }) {
  const kept = [...records].slice(-MOST_RECORDS).map(([key, record]) => [key, record, JSON.stringify(key).length + JSON.stringify(record).length + 2]);
  let length = JSON.stringify({ seed, records: {} }).length + kept.reduce((sum, [, , size]) => sum + size, 0);
  while (kept.length && length > LONGEST_STORE) length -= kept.shift()[2];
  return JSON.stringify({ seed, records: Object.fromEntries(kept.map(([key, record]) => [key, record])) });
}

/** A fresh seed, 1..4294967295, from the browser's cryptographic generator (never a clock). */
export function drawSeed(source = globalThis.crypto) {
  const word = source.getRandomValues(new Uint32Array(1))[0];
  return 1 + (word % LARGEST_SEED);
}

// The store as the widget uses it: every call reads it again (another tab may have written it).
export function keeper() {
  const storage = pageStorage(STORE_KEY);
  let drawnHere = null; // the own seed where nothing can be kept (or a write failed)
  let setAside = false;
  const load = () => {
    let text = null;
    try {
      text = storage?.getItem(STORE_KEY) ?? null;
    } catch {
      text = null;
    }
    const kept = readStore(text);
    setAside ||= kept.setAside;
    return kept;
  };
  const write = (kept) => {
    try {
      storage?.setItem(STORE_KEY, storeText(kept));
    } catch {
      // full, or turned off since: the page keeps working on what it has
    }
  };
  return {
    keeps: storage !== null,
    setAside: () => setAside,
    /** This browser's own seed, or null before one is drawn. */
    ownSeed: () => load().seed ?? drawnHere,
    /** This browser's own seed, drawn and kept the first time. */
    own() {
      const kept = load();
      if (kept.seed !== null) return kept.seed;
      drawnHere ??= drawSeed();
      write({ ...kept, seed: drawnHere });
      return drawnHere;
    },
    /** Make `seed` this browser's own (typed, or drawn by New numbers). */
    adopt(seed) {
      drawnHere = seed;
      write({ ...load(), seed });
    },
    /** The rounds, answers and attempts kept for (topic, seed), or null. */
    record: (topic, seed) => load().records.get(recordKey(topic, seed)) ?? null,
    save(topic, seed, rounds, answers, attempts) {
      const kept = load();
      const key = recordKey(topic, seed);
      const before = kept.records.get(key);
      const empty = isEmpty(rounds) && isEmpty(answers) && isEmpty(attempts);
      if (before === undefined ? empty : !empty && JSON.stringify(before) === JSON.stringify({ rounds, answers, attempts })) return;
      kept.records.delete(key); // re-set, so it is the newest
      if (!empty) kept.records.set(key, { rounds, answers, attempts });
      write(kept);
    },
  };
}

const sameVerdicts = (a, b) => Object.keys(a).length === Object.keys(b).length && Object.entries(a).every(([kind, verdict]) => b[kind] === verdict);

// After every change (one microtask later, once a link has set all its traits): seed 0 becomes
// this browser's own seed; a page that opens, or turns to the own seed, with no rounds and no
// answers takes those kept for its (topic, seed); the progress is written from the answers; and
// the rounds and answers are kept. Writes only what differs, so it settles at once.
export function settler(model, store) {
  let first = true;
  return () => {
    const view = validExercises(model);
    if (view.problem) return; // shown by the widget; nothing is kept or derived from it
    const values = {};
    const resolving = view.seed === OWN_SEED;
    const seed = resolving ? store.own() : view.seed;
    if (resolving) values.seed = seed;
    let { rounds, answers, attempts } = view;
    if ((first || resolving) && isEmpty(rounds) && isEmpty(answers) && isEmpty(attempts)) {
      const kept = store.record(view.topic, seed);
      if (kept) {
        ({ rounds, answers, attempts } = kept);
        Object.assign(values, kept);
      }
    }
    first = false;
    const progress = exerciseVerdicts(seed, rounds, answers);
    if (!sameVerdicts(progress, model.get("progress"))) values.progress = progress;
    if (!isEmpty(values)) setTraits(model, values);
    store.save(view.topic, seed, rounds, answers, attempts);
  };
}

// The verdict, the hint or the worked arithmetic for a checked answer, or nothing before one is
// checked (a new instance has none). A first wrong try gets the kind's hint and no answer; the
// answer and its working come with a right answer, after a second wrong try, or when asked for.
// The lines leave the page with their answer but are kept, so the next check writes its working
// into them instead of making them again. While the field holds an entry that was refused (no
// answer at all, or one too long to keep), the verdict is still the last checked answer's, and
// says so: that answer is the one the count counts.
function feedback() {
  const node = h("div", { role: "status" });
  const verdict = h("p", { class: "lab-exercise-verdict" });
  const lines = [];
  let shown = null; // {stage, checked, attempt, hint, answer, worked} on show
  let stale = false; // whether the field now holds a refused entry instead of that answer
  function verdictText() {
    const { stage, checked, attempt, hint, answer } = shown;
    const tries = attempt?.tries ?? 1;
    if (stage === "shown") return `The working, as you asked: the codec computes ${formatLabNumber(answer)}. Type it, or your own answer, and press Check.`;
    const typed = formatLabNumber(checked.typed);
    if (stale) {
      const was = stage === "correct" ? "was correct" : stage === "hint" ? "was not right" : `was not right (the codec computes ${formatLabNumber(answer)})`;
      return `Your last checked answer, ${typed}, ${was}. What the field holds now was refused, so it was not checked and the count stays as it was.`;
    }
    if (stage === "correct") {
      if (tries === 1 && !attempt?.shown) return "Correct, at the first try.";
      const how = attempt?.shown ? "after the working was shown" : `at try ${tries}`;
      return `Correct, ${how}.`;
    }
    if (stage === "hint") return `Not yet: ${typed} is not it. Hint: ${hint} Try again, or press Show the working.`;
    return `Not yet: you typed ${typed}; the codec computes ${formatLabNumber(answer)}. Here is its working.`;
  }
  function writeVerdict() {
    const right = shown.stage === "correct" || shown.stage === "shown";
    setAttrs(node, {
      class: `lab-message lab-exercise-feedback ${right ? "lab-note" : "lab-error"}${stale ? " lab-exercise-stale" : ""}`,
      "data-exercise-stale": stale ? "true" : null,
    });
    setText(verdict, verdictText());
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
    // Whether the working is on show (so Show the working has nothing left to show).
    working: () => shown !== null && shown.stage !== "hint",
    patch(state) {
      shown = state && state.stage !== "none" ? state : null;
      stale = false; // a new kept answer or instance: the field's refusal, if any, went with the old
      if (!shown) {
        setAttrs(node, { class: "lab-exercise-feedback", "data-exercise-result": "none", "data-exercise-stage": "none", "data-exercise-stale": null });
        verdict.remove();
        showLines([]);
        return;
      }
      const result = shown.stage === "shown" ? "none" : shown.stage === "correct" ? "correct" : "wrong";
      setAttrs(node, { "data-exercise-result": result, "data-exercise-stage": shown.stage });
      if (verdict.parentNode !== node) node.prepend(verdict);
      writeVerdict();
      showLines(shown.stage === "hint" ? [] : shown.worked);
    },
    // Whether the field holds a refused entry; told on every draw.
    refusing(refused) {
      if (refused === stale) return;
      stale = refused;
      if (shown && shown.stage !== "shown") writeVerdict();
    },
  };
}

// The entry a post to the teacher's screen carries for one kind: its question (seed and round),
// the last answer checked, and its attempts.
function reportEntry(model, kind, answer, attempt) {
  return { kind, seed: model.get("seed"), round: model.get("rounds")[kind] ?? 0, answer, first: attempt.first, tries: attempt.tries, shown: attempt.shown };
}

// One exercise, built once; `patch(view, number)` draws its instance (again only when the seed or
// its round changes) and the feedback for the kept answer and attempts (again only when they change).
function exercise(model, ui, kind, reporter) {
  let number = 0;
  let instance = null;
  let drawnFor = null; // the seed and round the instance was drawn for, the answer checked and its attempts
  const attemptsNow = () => model.get("attempts") ?? {};
  const commit = (text) => {
    // An answer is kept as typed (less the spaces around it), so one too long for the traits is
    // refused first, before it is read or reaches them; a number that long could not be read anyway
    // (the number grammar stops at MAX_NUMBER_CHARS, far below this).
    const answer = text.trim();
    if (answer.length > LONGEST_ANSWER) {
      return { ok: false, message: `This answer is ${answer.length} characters long; an answer is at most ${LONGEST_ANSWER}: a number or a name is far shorter.` };
    }
    const result = exerciseCheck(kind, instance.params, text);
    if (!result.ok) return result;
    const answers = model.get("answers");
    const attempt = afterCheck(attemptOf(attemptsNow(), answers, kind), answers[kind], answer);
    reporter?.report(reportEntry(model, kind, answer, attempt));
    return { ok: true, values: checkedTraits(model.get("seed"), model.get("rounds"), { ...answers, [kind]: answer }, { ...attemptsNow(), [kind]: attempt }) };
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
  // Asking for the working is kept like a try: the teacher's screen hears of it with the next answer.
  const showWorking = h(
    "button",
    {
      type: "button",
      class: "lab-chip",
      "data-focus": `working-${kind}`,
      onclick: () => {
        const answers = model.get("answers");
        const attempt = attemptOf(attemptsNow(), answers, kind) ?? { first: "", tries: 0, shown: false };
        setTraits(model, { attempts: { ...attemptsNow(), [kind]: { ...attempt, shown: true } } });
        // the button goes once the working is on show; the field keeps the focus for the answer
        input.focus();
      },
    },
    "Show the working",
  );
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
      showWorking,
      h(
        "button",
        {
          type: "button",
          class: "lab-chip",
          "data-focus": `new-${kind}`,
          onclick: () => {
            const others = (record) => Object.fromEntries(Object.entries(record).filter(([name]) => name !== kind));
            const round = model.get("rounds")[kind] ?? 0;
            setTraits(model, checkedTraits(model.get("seed"), { ...model.get("rounds"), [kind]: round + 1 }, others(model.get("answers")), others(attemptsNow())));
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
      const attempt = attemptOf(view.attempts, view.answers, kind);
      const attemptKey = JSON.stringify(attempt);
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
      if (fresh || typed !== drawnFor.typed || attemptKey !== drawnFor.attemptKey) {
        // The feedback is recomputed from the kept answer and attempts, so a link shows the same.
        const read = typed === undefined ? null : exerciseCheck(kind, instance.params, typed);
        const checked = read && read.ok ? read : null;
        const stage = feedbackStage(checked, attempt);
        const solved = stage === "none" ? null : exerciseSolve(kind, instance.params);
        result.patch({
          stage,
          checked,
          attempt,
          hint: stage === "hint" ? exerciseHint(kind, instance.params, checked.typed) : "",
          answer: solved?.answer,
          worked: solved?.worked ?? [],
        });
        setAttr(showWorking, "hidden", result.working() ? "" : null);
      }
      drawnFor = { seed: view.seed, round, typed, attemptKey };
    },
  };
}

// What the seed is and where it is kept, in words.
function seedWords(seed, store) {
  const own = store.ownSeed();
  let kept;
  if (!store.keeps) kept = `Seed ${seed}. This browser keeps nothing for this page, so to come back to these numbers keep the link, or note the seed and type it in again.`;
  else if (seed === own) kept = `Seed ${seed}, this browser's own: it is kept here with your answers, so a reload shows the same numbers.`;
  else kept = `Seed ${seed}, set for this page${own === null ? "" : ` (this browser's own is ${own})`}.`;
  const lost = store.setAside() ? " What this browser had kept for the exercises could not all be read, so that part was set aside." : "";
  return `${kept} The same seed gives the same questions: New instance draws the next one for one exercise, New numbers a new seed for them all.${lost}`;
}

// The exercises of the topic, with the count above them. Every kind's exercise is built once (their
// answer fields belong to the figure); the topic decides which are on the page, in the kinds' order.
function figure(model, ui, first, store, reporter) {
  const progress = h("p", { class: "lab-big lab-exercise-progress", "data-testid": "exercise-progress", role: "status" });
  const rule = h(
    "p",
    { class: "lab-caption", "data-testid": "exercise-count-rule" },
    "A first wrong answer gets a hint and a second try; the worked answer comes after a second wrong answer, or when you press Show the working. Each exercise counts its last checked answer: a wrong answer after a right one takes the count back down, and an entry refused beside its field (no answer, or one too long to keep) changes nothing.",
  );
  const seedNote = h("p", { class: "lab-caption", "data-testid": "exercise-seed-note" });
  const exercises = new Map(EXERCISE_KINDS.map(({ kind }) => [kind, exercise(model, ui, kind, reporter)]));
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
    // The count is the answers' own, checked again: never what the progress trait claims.
    const score = exerciseScore(view.topic, view.seed, view.rounds, view.answers);
    setText(progress, `${score.correct} of ${score.of} correct`);
    setText(seedNote, seedWords(view.seed, store));
    view.kinds.forEach((kind, i) => exercises.get(kind).patch(view, i + 1));
  }
  update(first, new Set(TRAITS));
  return { nodes: [list], update };
}

// A seed typed into the seed field: {ok, value} or {ok: false, message}.
function readSeed(text) {
  const parsed = parseNumber(text);
  const how = "type a whole number from 1 to 4294967295, or press New numbers";
  if (text.trim() === "") return { ok: false, message: `There is no seed to take: ${how}.` };
  if (!parsed.ok) return { ok: false, message: `“${visibleText(text.trim(), 40)}” is not a seed: ${how}.` };
  if (parsed.value === OWN_SEED) return { ok: false, message: `0 is no seed here (a link's seed 0 means this browser's own): ${how}.` };
  if (!isSeed(parsed.value)) return { ok: false, message: `${formatLabNumber(parsed.value)} is not a seed: ${how}.` };
  return { ok: true, value: parsed.value };
}

// The seed field and New numbers, above the exercises and there even while the traits have a
// problem. A seed typed or drawn here becomes this browser's own, and brings the rounds and
// answers kept for it (none for a new one).
function seedControls(model, ui, store, reporter, classNote) {
  const numbersFor = (seed) => {
    const topic = model.get("topic");
    const kept = Number.isInteger(topic) ? store.record(topic, seed) : null;
    return { seed, ...checkedTraits(seed, kept?.rounds ?? {}, kept?.answers ?? {}, kept?.attempts ?? {}) };
  };
  const field = ui.field({
    key: "seed",
    label: "seed (your numbers)",
    value: () => (Number.isInteger(model.get("seed")) ? String(model.get("seed")) : ""),
    commit: (text) => {
      const read = readSeed(text);
      if (!read.ok) return read;
      store.adopt(read.value);
      return { ok: true, values: numbersFor(read.value) };
    },
  });
  const fresh = h(
    "button",
    {
      type: "button",
      class: "lab-chip",
      "data-focus": "new-numbers",
      onclick: () => {
        const seed = drawSeed();
        store.adopt(seed);
        setTraits(model, numbersFor(seed));
      },
    },
    "New numbers",
  );
  // New numbers sits on the seed's own line, beside the input and above a refusal of it.
  const input = field.querySelector("input");
  const line = h("div", { class: "lab-exercise-seed-line" });
  input.replaceWith(line);
  line.append(input, fresh);
  if (reporter === null) return { node: field };
  // In a class: the name the teacher's screen shows, and what became of the last answer sent.
  // A name typed now sends the answers already checked, so nothing before it is lost.
  const nickname = ui.field({
    key: "nickname",
    label: "your name on the teacher's screen",
    drives: false, // a refused name leaves the exercises as they are
    value: () => reporter.nickname(),
    commit: (text) => {
      const taken = reporter.setNickname(text);
      if (!taken.ok) return taken;
      const answers = model.get("answers");
      for (const [kind, answer] of Object.entries(answers)) reporter.report(reportEntry(model, kind, answer, attemptOf(model.get("attempts") ?? {}, answers, kind)));
      return { ok: true, values: {} };
    },
  });
  return { node: h("div", { class: "lab-exercise-class" }, nickname, classNote, field) };
}

const TRAITS = ["topic", "seed", "rounds", "answers", "attempts", "progress"];

function render({ model, el }) {
  const store = keeper();
  const classNote = h("p", { class: "lab-caption", role: "status", "data-testid": "class-status" });
  const reporter = classReporter((text) => setText(classNote, text));
  if (reporter !== null) setText(classNote, "Your teacher follows this class: each answer you check goes to the teacher's screen, under the name above, and nowhere else.");
  const settle = settler(model, store);
  // Before the first draw, so that the exercises are drawn once, for the numbers they keep.
  settle();
  let due = false;
  let live = true; // until anywidget takes the view away
  const later = () => {
    if (due) return;
    due = true;
    queueMicrotask(() => {
      due = false;
      if (live) settle();
    });
  };
  for (const name of TRAITS) model.on(`change:${name}`, later);
  const unmount = mountInPlace({
    model,
    el,
    className: "lab-exercises",
    traits: TRAITS,
    validate: validExercises,
    controls: (ui) => seedControls(model, ui, store, reporter, classNote),
    // The exercises, answer fields and all, are the figure: they go while the traits have a problem.
    figure: (view, ui) => figure(model, ui, view, store, reporter),
  });
  return () => {
    live = false;
    for (const name of TRAITS) model.off(`change:${name}`, later);
    unmount();
  };
}

export default { render, check: checker(validExercises) };
