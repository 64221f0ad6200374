// A stand-in for the anywidget model, for pages with no kernel: the widget reads and writes its
// traits here exactly as it would through anywidget. Input traits are mirrored into the URL
// fragment, so a link reproduces what its author saw.

import { visibleText } from "./codec/text.js";

export function createModel(defaults, inputNames) {
  const state = { ...defaults };
  const listeners = new Map();
  // The link is written once for all the saves one task makes, in a microtask: still before
  // anything else (a reload, a copied address, a test reading location.hash) can read it.
  let linkDue = false;
  const writeLink = () => {
    linkDue = false;
    writeFragment(state, inputNames);
  };
  const fire = (event) => {
    for (const callback of listeners.get(event) ?? []) callback();
  };
  return {
    get: (name) => state[name],
    set(name, value) {
      if (Object.is(state[name], value)) return;
      state[name] = value;
      fire(`change:${name}`);
      fire("change");
    },
    save_changes() {
      if (linkDue) return;
      linkDue = true;
      queueMicrotask(writeLink);
    },
    on(event, callback) {
      if (!listeners.has(event)) listeners.set(event, new Set());
      listeners.get(event).add(callback);
    },
    off(event, callback) {
      listeners.get(event)?.delete(callback);
    },
    send() {},
  };
}

// replaceState costs a few tenths of a millisecond, so a link that would not change is left alone.
function writeFragment(state, inputNames) {
  const shared = Object.fromEntries(inputNames.map((name) => [name, state[name]]));
  const fragment = "#" + encodeURIComponent(JSON.stringify(shared));
  if (location.hash !== fragment) history.replaceState(null, "", fragment);
}

function sameShape(value, reference) {
  if (Array.isArray(reference)) return Array.isArray(value) && value.length === reference.length && value.every((item, i) => sameShape(item, reference[i]));
  if (typeof reference === "number") return typeof value === "number" && Number.isFinite(value);
  return typeof value === typeof reference;
}

// Traits from the fragment, keeping only known input traits whose values look like the defaults.
// Anything else is ignored and reported, never evaluated.
export function readFragment(defaults, inputNames) {
  if (location.hash.length <= 1) return { values: {}, problem: null };
  let parsed;
  try {
    parsed = JSON.parse(decodeURIComponent(location.hash.slice(1)));
  } catch {
    return { values: {}, problem: "The link's state could not be read, so the defaults are shown." };
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) return { values: {}, problem: "The link's state is not a set of named values; showing the defaults." };
  const values = {};
  const ignored = [];
  for (const [name, value] of Object.entries(parsed)) {
    if (inputNames.includes(name) && sameShape(value, defaults[name])) values[name] = value;
    else ignored.push(name);
  }
  // a name from the link is text from outside: shown with what would hide in it spelt out, and cut
  return { values, problem: ignored.length ? `Ignored from the link: ${ignored.map((name) => visibleText(name, 40)).join(", ")}.` : null };
}
