// A stand-in for the anywidget model, for pages with no kernel: the widget reads and writes its
// traits here exactly as it would through anywidget. Input traits that differ from the widget's
// defaults are mirrored into the URL fragment, so a link reproduces what its author saw and stays
// short: a Q4_K explorer on its own block with another payload byte carries that byte, not the
// block's 144 bytes. A link that names every input, as links once did, still opens.

import { visibleText } from "./codec/text.js";

/** The model of a page that opens with `initial`; its link carries the inputs (`inputNames`) that
 * differ from `defaults`, what the page shows with no link. */
export function createModel(initial, inputNames, defaults = initial) {
  const state = { ...initial };
  const listeners = new Map();
  // The link is written once for all the saves one task makes, in a microtask: still before
  // anything else (a reload, a copied address, a test reading location.hash) can read it.
  let linkDue = false;
  const writeLink = () => {
    linkDue = false;
    writeFragment(state, inputNames, defaults);
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

// Equal as JSON values, whatever the order of an object's keys (an exercise's answers by kind).
function sameValue(value, reference) {
  if (typeof value !== "object" || value === null || typeof reference !== "object" || reference === null) return value === reference;
  if (Array.isArray(value) !== Array.isArray(reference)) return false;
  const keys = Object.keys(value);
  return keys.length === Object.keys(reference).length && keys.every((key) => Object.hasOwn(reference, key) && sameValue(value[key], reference[key]));
}

/** The link fragment ("#…") of `state`: its inputs that differ from `defaults`, as JSON. With none
 * it is "#{}" (encoded), not "": a page written with a state of its own (labctl.py explainer
 * --state) opens that state when its link is empty, and the defaults when the link says so. */
export function linkFragment(state, inputNames, defaults) {
  const changed = inputNames.filter((name) => !sameValue(state[name], defaults[name]));
  return "#" + encodeURIComponent(JSON.stringify(Object.fromEntries(changed.map((name) => [name, state[name]]))));
}

// replaceState costs a few tenths of a millisecond, so a link that would not change is left alone.
function writeFragment(state, inputNames, defaults) {
  const fragment = linkFragment(state, inputNames, defaults);
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

// ---------------------------------------------------------------------------------------------
// Sharing a page with no kernel: a link with its state, and an embed code for an author's own page.
// ---------------------------------------------------------------------------------------------

// The message an embedded page sends its parent, and the embed code's listener reads.
const HEIGHT_MESSAGE = "four-bit-lab:height";

// Text set inside an HTML attribute in double quotes, read back as itself.
const attribute = (text) => String(text).replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

/** The embed code for page `file` at `fragment` ("#…" or ""): an iframe that takes the height of
 * what it shows, from the page's own messages, between 120 and 20000 px. */
export function embedCode(file, fragment, title) {
  return [
    `<iframe src="${attribute(file + fragment)}" title="${attribute(title)}" data-four-bit-lab style="width: 100%; height: 600px; border: 0"></iframe>`,
    "<script>",
    "// sizes each four-bit-lab iframe on this page to its content; put the explainer's file beside this page",
    'addEventListener("message", (event) => {',
    '  for (const frame of document.querySelectorAll("iframe[data-four-bit-lab]")) {',
    `    if (event.source === frame.contentWindow && event.data?.type === "${HEIGHT_MESSAGE}" && Number.isFinite(event.data.height)) {`,
    '      frame.style.height = `${Math.min(Math.max(Math.ceil(event.data.height), 120), 20000)}px`;',
    "    }",
    "  }",
    "});",
    // written "<\/" so that the page inlining this module never holds an end tag for its script
    "<\/script>",
  ].join("\n");
}

// Inside an iframe, tell the parent page this page's height whenever it changes (only a number:
// nothing of the state leaves the page this way).
export function reportHeight() {
  if (window.parent === window) return;
  let sent = -1;
  const send = () => {
    const height = document.documentElement.scrollHeight;
    if (height === sent) return;
    sent = height;
    window.parent.postMessage({ type: HEIGHT_MESSAGE, height }, "*");
  };
  new ResizeObserver(send).observe(document.body);
  send();
}

// What the status adds when the page was opened from disk, where its address names a folder of
// this computer that nobody else can open.
const fromDisk = (file) =>
  ` Opened from disk, this page has no address anyone else can open, so the link is relative to its file, ${file}: it opens this view from a page or folder beside that file.`;

/** The link to share for the page at `address` (a Location or URL), whose file is named `file`:
 * its whole address when served, for anyone who can reach it; from disk (file://), its file name
 * and fragment, a link relative to the explainer's own file, since a file:///home/… address opens
 * nothing on anyone else's computer. */
export function shareableLink(address, file) {
  return address.protocol === "file:" ? file + address.hash : address.href;
}

/** The "Copy link" and "Copy embed code" bar at the end of `parent`: each puts its text in the
 * clipboard where the browser allows (it may not from file://) and always shows it, selected, in
 * a read-only box to copy by hand. */
export function shareBar(parent, file, title) {
  const make = (tag, properties = {}, text = "") => {
    const node = document.createElement(tag);
    Object.assign(node, properties);
    if (text) node.textContent = text;
    return node;
  };
  const bar = make("section", { className: "four-bit-lab lab-share" });
  bar.setAttribute("aria-label", "share this explainer");
  const buttons = make("div", { className: "lab-share-buttons" });
  const status = make("p", { className: "lab-caption" });
  status.setAttribute("role", "status");
  status.dataset.testid = "share-status";
  const box = make("textarea", { readOnly: true, rows: 3, hidden: true, className: "lab-share-text" });
  box.dataset.testid = "share-text";
  box.setAttribute("aria-label", "the text to copy");
  const offer = async (what, text, note = "") => {
    box.value = text;
    box.rows = Math.min(text.split("\n").length, 12);
    box.hidden = false;
    box.focus();
    box.select();
    try {
      await navigator.clipboard.writeText(text);
      status.textContent = `The ${what} is copied, and shown below.${note}`;
    } catch {
      status.textContent = `This browser did not let the page copy the ${what}: it is selected below, so press Ctrl+C (⌘C on a Mac).${note}`;
    }
  };
  // This page's own file name, which `labctl.py explainer -o` may have chosen; `file` where the
  // address names none.
  const own = () => location.pathname.split("/").pop() || file;
  const link = make("button", { type: "button", className: "lab-chip" }, "Copy link");
  link.addEventListener("click", () => offer("link", shareableLink(location, own()), location.protocol === "file:" ? fromDisk(own()) : ""));
  const embed = make("button", { type: "button", className: "lab-chip" }, "Copy embed code");
  embed.addEventListener("click", () => offer("embed code", embedCode(own(), location.hash, title)));
  buttons.append(link, embed);
  bar.append(make("h2", {}, "Share what you see"), make("p", {}, "The link and the embed code carry this page's settings as they are now."), buttons, status, box);
  parent.append(bar);
}
