// Small DOM helpers shared by every widget. No arithmetic and no number text live here: numbers
// and their spellings (hex bytes, binary fields) come from the codec in codec/.
import { formatLabNumber } from "./codec/numbers.js";

export function h(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") node.className = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : String(value));
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

// Render a figure and re-render it whenever one of `traits` changes. `validate(model)` returns
// either the view's values or {problem}; `build(view, ui)` returns the figure's children, and
// `controls(ui)`, if given, returns inputs shown even while the traits have a problem, so the
// learner can fix it. Either may call ui.reject(text) when the learner types something unusable:
// the text is shown and the traits stay as they were. Returns the cleanup anywidget expects.
export function mount({ model, el, className, traits, validate, build, controls = null }) {
  el.classList.add("four-bit-lab", className);
  let rejection = null;
  const ui = {
    reject(text) {
      rejection = text;
      draw();
    },
  };
  function draw() {
    const children = controls ? [controls(ui)] : [];
    if (rejection) children.push(message(rejection));
    rejection = null;
    const view = validate(model);
    if (view.problem) children.push(message(view.problem));
    else children.push(...build(view, ui));
    replaceKeepingFocus(el, children);
  }
  draw();
  const handler = () => draw();
  for (const name of traits) model.on(`change:${name}`, handler);
  return () => {
    for (const name of traits) model.off(`change:${name}`, handler);
  };
}

export function setTraits(model, values) {
  for (const [name, value] of Object.entries(values)) model.set(name, value);
  model.save_changes();
}

export function message(text, kind = "error") {
  return h("p", { class: `lab-message lab-${kind}`, role: kind === "error" ? "alert" : "status" }, text);
}

// Replace a widget's content and give focus back to the control that had it (matched by its
// data-focus key), so keyboard users keep their place when a click re-renders the figure.
export function replaceKeepingFocus(el, children) {
  const active = el.contains(document.activeElement) ? document.activeElement.getAttribute("data-focus") : null;
  el.replaceChildren(...children.filter((child) => child !== null && child !== undefined));
  if (active) el.querySelector(`[data-focus="${active}"]`)?.focus();
}
