// Each student's own numbers and progress (widgets/exercises.js): the seed drawn once and kept in
// this browser's localStorage, the rounds and answers kept per (topic, seed), a stored value this
// did not write set aside without a crash, and a progress claim that counts nothing unless the
// answers check. A fake model and a fake localStorage stand in for anywidget and the browser; the
// right answers are the codec's own. Run: node --test tests/js/
import assert from "node:assert/strict";
import { afterEach, describe, test } from "node:test";

import { exerciseInstance, exerciseKinds, exerciseSolve, formatLabNumber } from "../../widgets/codec/index.js";
import exercises, { OWN_SEED, drawSeed, keeper, readStore, settler, storeText } from "../../widgets/exercises.js";

const KEY = "four-bit-lab:exercises";

// A Storage as the browser has it (getItem gives null for a missing key); `broken` makes every
// call throw, as a browser does with storage turned off.
function fakeStorage({ broken = false } = {}) {
  const items = new Map();
  const guard = () => {
    if (broken) throw new Error("SecurityError: storage is off");
  };
  return {
    items,
    getItem: (key) => (guard(), items.has(key) ? items.get(key) : null),
    setItem: (key, value) => (guard(), items.set(key, String(value))),
    removeItem: (key) => (guard(), items.delete(key)),
  };
}

function useStorage(storage) {
  Object.defineProperty(globalThis, "localStorage", { value: storage, configurable: true, writable: true });
  return storage;
}

afterEach(() => {
  delete globalThis.localStorage;
});

// anywidget's model, enough for setTraits: get, set (firing change events), save_changes.
function fakeModel(traits) {
  const state = { topic: 0, seed: OWN_SEED, rounds: {}, answers: {}, progress: {}, presenter: false, ...traits };
  const saved = [];
  return {
    state,
    saved,
    get: (name) => state[name],
    set: (name, value) => {
      state[name] = value;
    },
    save_changes: () => saved.push({ ...state }),
    on() {},
    off() {},
  };
}

// What a page does when it opens: a fresh keeper over this browser's storage, settled once.
function openPage(traits) {
  const model = fakeModel(traits);
  const store = keeper();
  const settle = settler(model, store);
  settle();
  return { model, store, settle };
}

const right = (kind, seed, round = 0) => formatLabNumber(exerciseSolve(kind, exerciseInstance(kind, seed, round).params).answer).replace("\u2212", "-");

describe("the student's own seed", () => {
  test("seed 0 becomes a seed drawn once and kept, so the next page gets the same one", () => {
    const storage = useStorage(fakeStorage());
    const first = openPage({ topic: 3 });
    const seed = first.model.state.seed;
    assert.ok(Number.isInteger(seed) && seed >= 1 && seed <= 2 ** 32 - 1, String(seed));
    assert.equal(JSON.parse(storage.items.get(KEY)).seed, seed);
    assert.equal(openPage({ topic: 3 }).model.state.seed, seed); // a reload
    assert.equal(openPage({ topic: 5 }).model.state.seed, seed); // another notebook
  });

  test("two browsers draw different seeds", () => {
    useStorage(fakeStorage());
    const one = openPage({}).model.state.seed;
    useStorage(fakeStorage());
    const other = openPage({}).model.state.seed;
    assert.notEqual(one, other);
  });

  test("a seed set by Python or a link wins, and does not become the browser's own", () => {
    useStorage(fakeStorage());
    const own = openPage({}).model.state.seed;
    const linked = openPage({ seed: 7 });
    assert.equal(linked.model.state.seed, 7);
    assert.equal(linked.store.ownSeed(), own);
    assert.equal(openPage({}).model.state.seed, own);
  });

  test("a store written before any own seed was drawn (a link's seed first) reads back whole", () => {
    const storage = useStorage(fakeStorage());
    openPage({ topic: 1, seed: 7, answers: { "nibble-decode": "1" } });
    assert.equal(JSON.parse(storage.items.get(KEY)).seed, null);
    const page = openPage({ topic: 1, seed: 7 });
    assert.deepEqual(page.model.state.answers, { "nibble-decode": "1" });
    assert.ok(!page.store.setAside() && page.store.ownSeed() === null);
    const own = openPage({ topic: 1 }).model.state.seed;
    assert.ok(own >= 1 && own !== 7);
  });

  test("a seed adopted (typed, or New numbers) is the own seed from then on", () => {
    useStorage(fakeStorage());
    const page = openPage({});
    page.store.adopt(42);
    assert.equal(openPage({}).model.state.seed, 42);
  });

  test("drawSeed covers 1..4294967295 from the cryptographic generator", () => {
    const fixed = (word) => ({ getRandomValues: (array) => ((array[0] = word), array) });
    assert.equal(drawSeed(fixed(0)), 1);
    assert.equal(drawSeed(fixed(2 ** 32 - 2)), 2 ** 32 - 1);
    assert.equal(drawSeed(fixed(2 ** 32 - 1)), 1);
    const drawn = new Set(Array.from({ length: 64 }, () => drawSeed()));
    assert.ok(drawn.size > 60 && [...drawn].every((seed) => Number.isInteger(seed) && seed >= 1 && seed <= 2 ** 32 - 1));
  });

  test("where the browser keeps nothing, one seed is drawn for the page and the widget works", () => {
    useStorage(fakeStorage({ broken: true }));
    const page = openPage({ topic: 1 });
    const seed = page.model.state.seed;
    assert.ok(seed >= 1 && !page.store.keeps);
    page.model.state.seed = OWN_SEED; // a link back to the own seed
    page.settle();
    assert.equal(page.model.state.seed, seed);
    delete globalThis.localStorage; // and where there is no localStorage at all (node, a worker)
    assert.ok(openPage({}).model.state.seed >= 1);
  });
});

describe("progress kept and checked again", () => {
  test("answers are kept per topic and seed, and a reload checks them again", () => {
    useStorage(fakeStorage());
    const page = openPage({ topic: 2 });
    const seed = page.model.state.seed;
    const [first, second] = exerciseKinds(2);
    page.model.state.answers = { [first]: right(first, seed), [second]: `${Number(right(second, seed)) + 17}` };
    page.model.state.rounds = {};
    page.settle();
    assert.deepEqual(page.model.state.progress, { [first]: "correct", [second]: "wrong" });
    // a course page opens again with Python's defaults: seed 0, nothing answered
    const reloaded = openPage({ topic: 2 });
    assert.equal(reloaded.model.state.seed, seed);
    assert.deepEqual(reloaded.model.state.answers, page.model.state.answers);
    assert.deepEqual(reloaded.model.state.progress, { [first]: "correct", [second]: "wrong" });
    // another notebook's record is its own
    assert.deepEqual(openPage({ topic: 3 }).model.state.answers, {});
  });

  test("a page that opens with answers of its own (a link's) keeps them, checked, and keeps them here", () => {
    useStorage(fakeStorage());
    const kind = exerciseKinds(4)[0];
    const answers = { [kind]: right(kind, 99) };
    const page = openPage({ topic: 4, seed: 99, answers });
    assert.deepEqual(page.model.state.answers, answers);
    assert.deepEqual(page.model.state.progress, { [kind]: "correct" });
    assert.deepEqual(openPage({ topic: 4, seed: 99 }).model.state.answers, answers);
  });

  test("progress that claims every exercise correct with no answers counts nothing, and is written over", () => {
    useStorage(fakeStorage());
    const claimed = Object.fromEntries(exerciseKinds(0).map((kind) => [kind, "correct"]));
    const page = openPage({ seed: 5, progress: claimed });
    assert.deepEqual(page.model.state.progress, {});
    assert.equal(exercises.check(page.model.state), null);
    // and a claim with wrong answers is counted as what the answers are
    const kind = "nibble-decode";
    const wrongAnswer = right(kind, 5) === "1" ? "2" : "1";
    const forged = openPage({ seed: 5, answers: { [kind]: wrongAnswer }, progress: claimed });
    assert.deepEqual(forged.model.state.progress, { [kind]: "wrong" });
  });

  test("the answers a seed was kept with are not carried to another seed's record", () => {
    useStorage(fakeStorage());
    const page = openPage({ topic: 1, seed: 11, answers: { "nibble-decode": "1" } });
    assert.deepEqual(page.store.record(1, 11).answers, { "nibble-decode": "1" });
    assert.equal(page.store.record(1, 12), null);
    assert.equal(page.store.record(0, 11), null);
  });
});

describe("what is stored is only ever data", () => {
  const valid = { rounds: { "nibble-decode": 2 }, answers: { "nibble-decode": "3" }, attempts: { "nibble-decode": { first: "4", tries: 2, shown: false } } };

  test("a stored text this did not write is set aside, never run, and written over", () => {
    for (const text of ["not json", "<script>window.ran = 1</script>", "[1, 2]", "null", '"text"', '{"seed": 5}', "x".repeat(300000)]) {
      const read = readStore(text);
      assert.equal(read.seed, null, text.slice(0, 20));
      assert.equal(read.records.size, 0, text.slice(0, 20));
      assert.ok(read.setAside, text.slice(0, 20));
    }
    assert.equal(globalThis.ran, undefined);
    const storage = useStorage(fakeStorage());
    storage.setItem(KEY, "<img src=x onerror=window.ran=1>");
    const page = openPage({ topic: 1 });
    assert.ok(page.model.state.seed >= 1 && page.store.setAside());
    assert.equal(JSON.parse(storage.items.get(KEY)).seed, page.model.state.seed);
  });

  test("each stored record is checked as a link's traits are; what fails is left out", () => {
    const records = {
      "1:5": valid,
      "12:5": valid, // notebook 12 has exercises
      "13:5": valid, // no notebook 13
      "1:0": valid, // seed 0 is no seed
      "1:4294967296": valid,
      "1:6": { rounds: { "no-such-kind": 1 }, answers: {} },
      "1:7": { rounds: { "nibble-decode": -1 }, answers: {} },
      "1:8": { rounds: {}, answers: { "nibble-decode": "9".repeat(201) } },
      "1:9": { rounds: {}, answers: { "nibble-decode": 3 } },
      "1:10": { rounds: [], answers: {} },
      "1:11": "text",
      "1:12": { rounds: {}, answers: {}, attempts: { "nibble-decode": { first: "1", tries: -1, shown: false } } },
      "1:13": { rounds: {}, answers: {}, attempts: { "nibble-decode": { first: "1", tries: 1 } } },
      "1:14": { rounds: {}, answers: {}, attempts: { "nibble-decode": { first: "1", tries: 1, shown: "yes" } } },
      "1:15": { rounds: {}, answers: {}, attempts: { "nibble-decode": { first: "9".repeat(201), tries: 1, shown: false } } },
    };
    // and a record named __proto__, which JSON.parse makes an own property (an object literal could not)
    const text = JSON.stringify({ seed: 77, records }).replace('"records":{', '"records":{"__proto__":{"rounds":{},"answers":{"nibble-decode":"1"}},');
    const read = readStore(text);
    assert.equal(read.seed, 77);
    assert.deepEqual([...read.records.keys()], ["1:5", "12:5"]);
    assert.deepEqual(read.records.get("1:5"), valid);
    // a record kept before the attempts were: its answers read as first tries
    assert.deepEqual(readStore(JSON.stringify({ seed: 5, records: { "1:5": { rounds: {}, answers: { "nibble-decode": "3" } } } })).records.get("1:5"), {
      rounds: {},
      answers: { "nibble-decode": "3" },
      attempts: {},
    });
    assert.ok(read.setAside);
    assert.equal({}.rounds, undefined); // nothing reached Object.prototype
    for (const seed of [0, -1, 2.5, 2 ** 32, "5", null]) assert.equal(readStore(JSON.stringify({ seed, records: {} })).seed, null, String(seed));
  });

  test("the store is bounded: the newest records that fit, read back whole", () => {
    const many = new Map(Array.from({ length: 40 }, (_, i) => [`0:${i + 1}`, valid]));
    const kept = readStore(storeText({ seed: 3, records: many }));
    assert.equal(kept.records.size, 32);
    assert.deepEqual([...kept.records.keys()], [...many.keys()].slice(-32));
    assert.ok(!kept.setAside);
    // answers full of characters JSON escapes (six characters each): the oldest records go first
    const wide = { rounds: {}, answers: Object.fromEntries(exerciseKinds(0).map((kind) => [kind, "\u0001".repeat(200)])), attempts: {} };
    const big = new Map(Array.from({ length: 32 }, (_, i) => [`0:${i + 1}`, wide]));
    const text = storeText({ seed: 3, records: big });
    assert.ok(text.length <= 262144, String(text.length));
    const back = readStore(text);
    assert.ok(back.records.size >= 8 && back.records.size < 32 && !back.setAside, String(back.records.size));
    assert.equal([...back.records.keys()].at(-1), "0:32");
    assert.deepEqual(back.records.get("0:32"), wide);
  });

  test("a stored answer is text: one that is no answer has no verdict, and counts nothing", () => {
    const storage = useStorage(fakeStorage());
    const seed = openPage({}).model.state.seed;
    const payload = "<img src=x onerror=window.ran=1>";
    storage.setItem(KEY, JSON.stringify({ seed, records: { [`1:${seed}`]: { rounds: {}, answers: { "nibble-decode": payload } } } }));
    const page = openPage({ topic: 1 });
    assert.equal(page.model.state.answers["nibble-decode"], payload);
    assert.deepEqual(page.model.state.progress, {});
    assert.equal(globalThis.ran, undefined);
  });
});
