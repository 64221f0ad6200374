// Small DOM helpers shared by every widget. No arithmetic and no number text live here: numbers
// and their spellings (hex bytes, binary fields) come from the codec in codec/.
import { formatLabNumber } from "./codec/numbers.js";

// Event handlers are stored as properties (not addEventListener) so that a re-render can move
// them onto the nodes it keeps; see morph below.
const HANDLERS = ["onclick", "onchange", "onkeydown", "oninput", "onpointerdown", "onpointermove", "onpointerup"];

export function h(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") node.className = value;
    else if (name.startsWith("on")) {
      if (!HANDLERS.includes(name)) throw new Error(`h(): add ${name} to HANDLERS so re-renders keep it`);
      node[name] = value;
    } else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

const SVG_NS = "http://www.w3.org/2000/svg";

export function svg(tag, attributes = {}, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value !== undefined && value !== null) node.setAttribute(name, String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

// A number as the Python lab writes it (formatLabNumber), plus a dash for "no value".
export function formatNumber(value) {
  if (value === null || value === undefined) return "—";
  return formatLabNumber(value);
}

// A table that scrolls sideways inside its own box on a narrow screen instead of widening the
// page; focusable so keyboard users can scroll it too.
export function scrollBox(label, child) {
  return h("div", { class: "lab-scroll", tabindex: "0", role: "region", "aria-label": label }, child);
}

// Messages quote what was typed; a pasted page of text would bury the advice, so long runs of
// characters are cut down to their ends.
function shorten(text) {
  return String(text).replace(/\S{41,}/g, (run) => `${run.slice(0, 24)}…${run.slice(-8)}`);
}

let mounted = 0;

/**
 * Render a widget and re-render it whenever one of `traits` changes.
 *
 * `validate(model)` returns the view's values or {problem}; `build(view, ui)` returns the figure;
 * `controls(ui, view)` returns the inputs, drawn even while the traits have a problem so the learner
 * can always fix it (view may then be {problem}). Text inputs come from `ui.field`, which checks
 * what is typed before any trait changes: a refused entry keeps its text in the field and gets a
 * message beside it (role=alert, tied to the field by aria-describedby), and the traits stay as
 * they were. A problem with the traits themselves is shown beside the field last committed.
 * Every widget gets a presenter toggle (trait `presenter`) that enlarges it for a projector.
 * Returns the cleanup anywidget expects.
 */
export function mount({ model, el, className, traits, validate, build, controls = null }) {
  el.classList.add("four-bit-lab", className);
  mounted += 1;
  const prefix = `${className}-${mounted}`;
  const refused = new Map(); // field key -> {text, message}
  let lastField = null;
  let pendingProblem = null; // the traits' problem this draw, and the field it is shown beside
  let problemField = null;
  let problemPlaced = false;

  function submit(key, text, commit) {
    let result;
    try {
      result = commit(text);
    } catch (error) {
      result = { ok: false, message: error.message };
    }
    if (result.ok) {
      refused.delete(key);
      lastField = key;
      setTraits(model, result.values);
    } else {
      refused.set(key, { text, message: shorten(result.message) });
    }
    draw();
  }

  const ui = {
    /** A labelled text input; `commit(text)` returns {ok, values (traits to set)} or {ok: false, message}. */
    field({ key, label, value, commit, onkeydown = null }) {
      const inputId = `${prefix}-${key}`;
      const messageId = `${inputId}-message`;
      const refusal = refused.get(key);
      let shown = refusal?.message ?? "";
      if (!shown && key === problemField && pendingProblem) {
        shown = pendingProblem;
        problemPlaced = true;
      }
      return h(
        "div",
        { class: "lab-field" },
        h("label", { for: inputId }, label),
        h("input", {
          id: inputId,
          type: "text",
          value: refusal ? refusal.text : value,
          spellcheck: "false",
          autocomplete: "off",
          "data-focus": key,
          "aria-label": label,
          "aria-describedby": messageId,
          "aria-invalid": shown ? "true" : null,
          onchange: (event) => submit(key, event.target.value, commit),
          onkeydown,
        }),
        h("p", { id: messageId, class: "lab-message lab-error lab-field-message", role: "alert", hidden: !shown }, shown),
      );
    },
  };

  function safely(step, fallback) {
    try {
      return step();
    } catch (error) {
      return fallback(error);
    }
  }

  function draw() {
    followTheme(el);
    const presenter = model.get("presenter") === true;
    el.classList.toggle("lab-presenter", presenter);
    const view = safely(
      () => validate(model),
      (error) => ({ problem: error.message }),
    );
    pendingProblem = view.problem ? shorten(view.problem) : null;
    problemField = lastField;
    problemPlaced = false;
    const children = [
      h(
        "div",
        { class: "lab-toolbar" },
        h(
          "button",
          {
            type: "button",
            class: "lab-chip lab-presenter-toggle",
            "aria-pressed": presenter ? "true" : "false",
            "data-focus": "presenter",
            onclick: () => setTraits(model, { presenter: !presenter }),
          },
          "Presenter view",
        ),
      ),
    ];
    if (controls) children.push(safely(() => controls(ui, view), (error) => message(`The controls could not be drawn: ${error.message}`)));
    if (view.problem) {
      if (!problemPlaced) children.push(message(pendingProblem));
    } else {
      children.push(...safely(() => build(view, ui), (error) => [message(`This figure could not be drawn: ${shorten(error.message)}`)]));
    }
    replaceKeepingFocus(el, children);
  }
  draw();
  const handler = () => {
    refused.clear();
    draw();
  };
  const watched = [...traits, "presenter"];
  for (const name of watched) model.on(`change:${name}`, handler);
  const themeWatch = new MutationObserver(() => followTheme(el));
  for (const node of [document.documentElement, document.body]) {
    if (node) themeWatch.observe(node, { attributes: true, attributeFilter: ["class", "data-theme"] });
  }
  return () => {
    themeWatch.disconnect();
    for (const name of watched) model.off(`change:${name}`, handler);
  };
}

// marimo marks its dark theme with the class "dark" (or "dark-theme") on an ancestor, other hosts
// with data-theme="dark". The widget may sit in a shadow root, which CSS selectors cannot see out
// of, so the nearest declared theme is copied onto the widget as data-lab-theme; with none
// declared, lab.css follows prefers-color-scheme.
function declaredTheme(el) {
  for (let node = el; node; node = node.parentNode ?? node.host ?? null) {
    if (node.nodeType !== Node.ELEMENT_NODE) continue;
    if (node.classList.contains("dark") || node.classList.contains("dark-theme") || node.getAttribute("data-theme") === "dark") return "dark";
    if (node.classList.contains("light") || node.classList.contains("light-theme") || node.getAttribute("data-theme") === "light") return "light";
  }
  return null;
}

function followTheme(el) {
  const theme = declaredTheme(el);
  if (theme === null) el.removeAttribute("data-lab-theme");
  else if (el.getAttribute("data-lab-theme") !== theme) el.setAttribute("data-lab-theme", theme);
}

export function setTraits(model, values) {
  for (const [name, value] of Object.entries(values)) model.set(name, value);
  model.save_changes();
}

export function message(text, kind = "error") {
  return h("p", { class: `lab-message lab-${kind}`, role: kind === "error" ? "alert" : "status" }, text);
}

/** A validate(model) turned into a check of plain state (a standalone page's link): the problem or null. */
export function checker(validate) {
  return (state) => {
    try {
      return validate({ get: (name) => state[name] }).problem ?? null;
    } catch (error) {
      return error.message;
    }
  };
}

// Bring `node` in line with `fresh`, keeping `node` (and so focus, caret and scroll) wherever the
// two have the same shape, and taking fresh's attributes, text, handlers and input value.
function morph(node, fresh) {
  if (node.nodeType !== fresh.nodeType || node.nodeName !== fresh.nodeName || node.namespaceURI !== fresh.namespaceURI) {
    node.replaceWith(fresh);
    return;
  }
  if (node.nodeType !== Node.ELEMENT_NODE) {
    if (node.nodeValue !== fresh.nodeValue) node.nodeValue = fresh.nodeValue;
    return;
  }
  for (const { name } of [...node.attributes]) if (!fresh.hasAttribute(name)) node.removeAttribute(name);
  for (const { name, value } of fresh.attributes) if (node.getAttribute(name) !== value) node.setAttribute(name, value);
  for (const name of HANDLERS) node[name] = fresh[name];
  if (node instanceof HTMLInputElement && node.value !== fresh.value) node.value = fresh.value;
  morphChildren(node, [...fresh.childNodes]);
}

function morphChildren(parent, freshChildren) {
  const existing = [...parent.childNodes];
  freshChildren.forEach((fresh, index) => {
    if (index < existing.length) morph(existing[index], fresh);
    else parent.append(fresh);
  });
  for (const extra of existing.slice(freshChildren.length)) extra.remove();
}

// Update a widget's content in place. The control that had focus keeps it, with its caret and
// selection; if it had to be rebuilt, the control with the same data-focus key gets focus back.
// The widget may render in a shadow root, whose activeElement is the one to ask.
export function replaceKeepingFocus(el, children) {
  const root = el.getRootNode();
  const active = root.activeElement && el.contains(root.activeElement) ? root.activeElement : null;
  const key = active?.getAttribute("data-focus") ?? null;
  // Only text fields have a caret; a range input (the scale lab's slider) refuses selection calls.
  const caret = active instanceof HTMLInputElement && active.type === "text" ? [active.selectionStart, active.selectionEnd, active.value] : null;
  morphChildren(
    el,
    children.filter((child) => child !== null && child !== undefined),
  );
  if (!key) return;
  let target = active;
  if (!el.contains(active)) {
    target = el.querySelector(`[data-focus="${key}"]`);
    target?.focus();
  }
  if (caret && target instanceof HTMLInputElement && root.activeElement === target) {
    // Same text: the caret stays put. Changed text (a stepped code): the caret goes to the end.
    const [start, end, before] = caret;
    if (target.value === before) target.setSelectionRange(start, end);
    else if (target.selectionStart !== target.value.length) target.setSelectionRange(target.value.length, target.value.length);
  }
}
