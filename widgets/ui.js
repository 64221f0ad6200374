// Small DOM helpers shared by every widget. No arithmetic and no number text live here: numbers
// and their spellings (hex bytes, binary fields) come from the codec in codec/.
import { formatLabNumber } from "./codec/numbers.js";
import { visibleText } from "./codec/text.js";

export function h(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") node.className = value;
    else if (name.startsWith("on")) {
      // An event handler, set as the node's property; a misspelt one would never fire.
      if (!(name in node)) throw new Error(`h(): ${tag} has no event handler ${name}`);
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

// An SVG figure is drawn for a width of DRAWN_WIDTH units and scaled to its box; on a screen
// narrower than that it is drawn to its own width instead (down to NARROWEST), so that its 16 px
// labels stay 16 px on a phone rather than shrinking with the drawing, and its layout makes room.
export const DRAWN_WIDTH = 640;
const NARROWEST = 300;

/** The width, in its own units, to draw an SVG at: its width on screen, within NARROWEST..DRAWN_WIDTH. */
export function svgWidth(node) {
  const onScreen = node.getBoundingClientRect().width;
  return onScreen > 0 ? Math.min(DRAWN_WIDTH, Math.max(NARROWEST, Math.round(onScreen))) : DRAWN_WIDTH;
}

/** An SVG text's length in its drawing's units; before it is on screen, a generous estimate. */
export function textWidth(node) {
  if (node.isConnected && node.getBBox().height > 0) return node.getComputedTextLength();
  return node.textContent.length * 0.65 * 16; // .lab-tick's 16 px, about 0.65 of it a character
}

/**
 * Rows for labels along a line, so that no two touch: `spans` are the labels' [start, end], in
 * order of where they sit on the line, and each label takes the lowest row in which it starts at
 * least `gap` after the last label there. Returns each label's row (0 the first), or −1 for a
 * label that none of the first `most` rows has room for.
 */
export function labelRows(spans, most = Infinity, gap = 6) {
  const rowEnds = [];
  return spans.map(([start, end]) => {
    let row = rowEnds.findIndex((last) => last + gap <= start);
    if (row < 0 && rowEnds.length < most) row = rowEnds.length;
    if (row >= 0) rowEnds[row] = end;
    return row;
  });
}

/** How many columns a CSS grid has on screen now. */
export function gridColumns(grid) {
  return getComputedStyle(grid).gridTemplateColumns.split(" ").length;
}

/**
 * Buttons that pick one of many (a payload byte, an element, a code) as one Tab stop, focus and
 * pick moving together: the picked button is the one Tab reaches (tabindex 0, the others −1); an
 * arrow key picks the neighbour and moves focus to it (Up and Down by `rowLength()`, the row on
 * screen, wrapping round at the ends), Home and End the first and last; Enter and Space pick the
 * focused button (its own click). `pick(index)` sets the traits; call `mark(index)` whenever the
 * pick changes, whoever changed it, so Tab comes back to it.
 */
export function pickOne(buttons, pick, rowLength = () => 1) {
  let marked = 0;
  buttons.forEach((button, index) => {
    setAttr(button, "tabindex", index === marked ? "0" : "-1");
    button.addEventListener("keydown", (event) => {
      if (event.altKey || event.ctrlKey || event.metaKey) return;
      const count = buttons.length;
      const row = rowLength();
      const target = { ArrowRight: index + 1, ArrowLeft: index - 1, ArrowDown: index + row, ArrowUp: index - row, Home: 0, End: count - 1 }[event.key];
      if (target === undefined) return;
      event.preventDefault();
      const next = (target + count) % count;
      pick(next);
      buttons[next].focus();
    });
  });
  return {
    mark(index) {
      setAttr(buttons[marked], "tabindex", "-1");
      marked = index;
      setAttr(buttons[marked], "tabindex", "0");
    },
  };
}

/**
 * Grids of cells (lab.css .lab-cells), each in the frame that gives it 16, 8 or 4 columns by the
 * room it has. A cell's text sits in .lab-cell-line elements that never wrap, so a number never
 * breaks inside itself; where the widest line would not fit its column, the columns halve until
 * it does (a row still holds a power of two, so it splits a block evenly). Where every cell's
 * lines fit side by side they are set that way (lab-cells-inline), else each above the next, the
 * same in every cell. Grids made together (the same codes as MXFP4 and as NVFP4) are laid out
 * alike, as the one that needs most room needs. Returns {frames, fit}: call `fit()` after the
 * cells' text changes; a new width or type size (presenter view) refits on its own (watchSize).
 */
export function cellFrames(grids) {
  const frames = grids.map((grid) => h("div", { class: "lab-cells-frame" }, grid));
  function fit() {
    if (!grids.every((grid) => grid.isConnected && grid.clientWidth > 0)) return; // watchSize calls again
    for (const grid of grids) grid.style.removeProperty("grid-template-columns");
    const most = Math.min(...grids.map(gridColumns));
    // What each grid's cells need: their widest line (stacked) and all lines in a row (inline),
    // each with the cell's padding and borders (a picked cell's are thicker).
    const needs = grids.map((grid) => {
      let stacked = 0;
      let inline = 0;
      for (const cell of grid.children) {
        const style = getComputedStyle(cell);
        const around = parseFloat(style.paddingLeft) + parseFloat(style.paddingRight) + cell.offsetWidth - cell.clientWidth;
        const lines = [...cell.querySelectorAll(".lab-cell-line")].map((line) => line.offsetWidth);
        stacked = Math.max(stacked, Math.max(0, ...lines) + around);
        inline = Math.max(inline, lines.reduce((sum, width) => sum + width, 0) + (parseFloat(style.columnGap) || 0) * Math.max(0, lines.length - 1) + around);
      }
      return { grid, gap: parseFloat(getComputedStyle(grid).columnGap) || 0, stacked, inline };
    });
    const room = (need, columns) => (need.grid.clientWidth - need.gap * (columns - 1)) / columns;
    let columns = most;
    while (columns > 1 && needs.some((need) => room(need, columns) < need.stacked)) columns /= 2;
    const inline = needs.every((need) => room(need, columns) >= need.inline);
    for (const grid of grids) {
      if (columns < most) grid.style.gridTemplateColumns = `repeat(${columns}, minmax(0, 1fr))`;
      grid.classList.toggle("lab-cells-inline", inline);
    }
  }
  for (const frame of frames) watchSize(frame, fit);
  return { frames, fit };
}

/**
 * Call `onResize()` once the frame is on the page and whenever its width or type size changes
 * (presenter view), for a figure laid out to its room. A ResizeObserver on the frame itself would
 * hear again of every height change its own layout makes, which the browser reports as an error;
 * so it watches a sentinel (lab.css .lab-size-sentinel) as wide as the frame and 1em tall, whose
 * size only the frame's width and type size change.
 */
export function watchSize(frame, onResize) {
  const sentinel = h("div", { class: "lab-size-sentinel", "aria-hidden": "true" });
  frame.classList.add("lab-sized");
  frame.prepend(sentinel);
  new ResizeObserver(() => onResize()).observe(sentinel);
  // A figure is made before mountInPlace puts it on the page, later in the same task: lay it out
  // then, before anything reads it, rather than a frame later when the observer reports.
  queueMicrotask(onResize);
}

/**
 * A table in its scroll box that, where its columns do not fit the box, first lets its text cells
 * (.lab-text-cell) wrap (lab.css .lab-table-wrapped), and where that is not enough is set one
 * block per row (.lab-table-stacked): each cell shows its column's name (data-label, from the
 * header) beside its value, so nothing scrolls sideways and no number is cut at the box's edge.
 * Rows laid out as blocks are no longer table rows to a screen reader, so the caller gives the
 * table's parts their roles. Returns {node, fit}: call `fit()` after the rows change; a new
 * width or type size refits on its own (watchSize).
 */
export function stackingTable(label, table) {
  const box = scrollBox(label, table);
  function fit() {
    if (!box.isConnected || box.clientWidth === 0) return; // watchSize calls again
    const names = [...table.tHead.rows[0].cells].map((cell) => cell.textContent);
    for (const row of table.tBodies[0].rows) [...row.cells].forEach((cell, i) => setAttr(cell, "data-label", names[i]));
    // The box scrolls sideways when its table is wider, however the table is laid out.
    const overflows = () => box.scrollWidth > box.clientWidth;
    table.classList.remove("lab-table-wrapped", "lab-table-stacked");
    if (!overflows()) return;
    table.classList.add("lab-table-wrapped");
    if (overflows()) table.classList.replace("lab-table-wrapped", "lab-table-stacked");
  }
  watchSize(box, fit);
  return { node: box, fit };
}

// Messages quote what was typed; a pasted page of text would bury the advice, so long runs of
// characters are cut down to their ends.
function shorten(text) {
  return visibleText(text).replace(/\S{41,}/g, (run) => `${run.slice(0, 24)}…${run.slice(-8)}`);
}

let mounted = 0;

/**
 * Render a widget once and patch it in place whenever one of `traits` changes, so a change costs
 * what it changes; every widget mounts this way.
 *
 * `validate(model)` returns the view's values or {problem}. Every widget gets a presenter toggle
 * (trait `presenter`) that enlarges it for a projector. Text inputs come from `ui.field`, which
 * checks what is typed before any trait changes: a refused entry keeps its text in the field and
 * gets a message beside it (role=alert, tied to the field by aria-describedby), and the traits
 * stay as they were. The refusal stays there, whatever else changes, until the learner commits
 * that field or the field comes to show something else: its kept value, its label (which names
 * what it edits) or `about(view)` changes. A problem with the traits themselves is shown beside
 * the field last committed (or just below the controls). A typo keeps the output: while a field
 * holds a refused entry, or the traits have a problem, the figure last drawn from valid traits
 * stays where it is, dimmed, under a note (role=status) naming the last valid input of each field
 * that no longer holds it (keptNote), so the page never shrinks on a typo; the figure follows
 * again once the fields are valid. A field that marks what it drives itself (`refusing`) leaves its
 * own refusals to that. Nothing is rebuilt:
 *
 * - `controls(ui)` (optional) is called once and returns `{node, update(view)}`; `update`
 *   (optional) runs on every change, view being {problem} while the traits have one, so the
 *   controls are there even then and the learner can always fix it. `ui.field` takes `label` and
 *   `value` as text or as functions of the view, read again on every change.
 * - `figure(view, ui)` is called with the first valid view and returns `{nodes, update(view, changed)}`;
 *   `nodes` (read whenever the figure is put in or taken out, so it may be a getter) are the
 *   figure's top-level nodes in order; `update` gets the names of the traits whose values differ
 *   from the ones the figure shows (Object.is), and should patch only what depends on them. The
 *   figure may make fields too (the exercises' answers): they keep what they show while the
 *   traits have a problem, which is then shown below the controls.
 *
 * Nodes stay where they are, so focus, caret, scroll and pointer capture stay with them.
 * Returns the cleanup anywidget expects.
 */
// Outcome panels (widgets/choice.py): notebook output computed in advance for each combination of
// some widget's values, each panel marked data-lab-choice="<group>" and
// data-lab-when='{"name": "option", ...}'. They sit in the page, not in a widget's shadow root, so
// the page's own styles draw them; a widget shows the ones whose conditions hold for its values.

/** Whether a panel's conditions hold for the current values (options are compared as text). */
export function panelShown(when, values) {
  return Object.entries(when).every(([name, option]) => values[name] === option);
}

/** The panels of a group in a document (or any node): [{node, when}], skipping unreadable marks. */
export function groupPanels(root, group) {
  const panels = [];
  for (const node of root.querySelectorAll("[data-lab-choice]")) {
    if (node.getAttribute("data-lab-choice") !== group) continue;
    let when = null;
    try {
      when = JSON.parse(node.getAttribute("data-lab-when") ?? "");
    } catch {
      when = null;
    }
    if (when !== null && typeof when === "object" && !Array.isArray(when)) panels.push({ node, when });
  }
  return panels;
}

// A typo keeps the output: while a control holds an entry it refuses, what it drove stays on
// screen, dimmed (greyed, a little faded: text keeps its contrast) and headed by a note naming
// the last valid input, until the control is valid again. A widget's figure (mountInPlace) and
// the outcome panels on the page (showOutcomes) are kept the same way.
const KEPT_STYLE = { filter: "grayscale(1)", opacity: "0.85" };

/** What a kept output's note says. `inputs` are [name, text] pairs: the last valid input of each
 * control that no longer holds it (none: the input came from elsewhere, a link or the kernel). */
export function keptNote(inputs) {
  const listed = inputs.map(([name, text]) => `${name} = ${shorten(String(text))}`).join("; ");
  const fields = inputs.length > 1 ? "the fields are" : "the field is";
  return listed
    ? `Showing the last valid input: ${listed}. What is shown here follows again once ${fields} valid.`
    : "Showing the last valid input. What is shown here follows again once the input is valid.";
}

/** Dim `node` as a kept output, or undo it; writes only what differs. */
export function dimKept(node, kept) {
  setAttr(node, "data-lab-kept", kept ? "stale" : null);
  for (const [name, value] of Object.entries(KEPT_STYLE)) {
    const want = kept ? value : "";
    if (node.style.getPropertyValue(name) !== want) {
      if (want) node.style.setProperty(name, want);
      else node.style.removeProperty(name);
    }
  }
}

/**
 * Which values a group's panels follow: `values` itself, or, where it has a refused member (null)
 * or is null (the widget's input has a problem), the last values that had none, kept. Returns
 * {following, kept, refused}: `following` null when nothing valid was ever shown (then no panel
 * shows: there is nothing to keep), `refused` the names of the refused members.
 */
export function outcomesFollowing(values, lastValid) {
  const refused = values === null ? [] : Object.keys(values).filter((name) => values[name] === null);
  if (values !== null && refused.length === 0) return { following: values, kept: false, refused };
  return { following: lastValid ?? null, kept: true, refused };
}

// The last values each group's panels followed with no refused member.
const lastFollowed = new Map();

// A kept panel's note: the panel's first child, styled inline (the page's own styles do not know
// it), with a dashed edge so it is told apart without colour.
const PAGE_NOTE_STYLE = "border-left: 6px dashed currentColor; padding: 8px 12px; margin: 0 0 8px 0;";

function markPanel(node, kept, text) {
  let note = node.firstElementChild?.hasAttribute("data-lab-kept-note") ? node.firstElementChild : null;
  if (kept) {
    if (note === null) {
      note = h("p", { "data-lab-kept-note": "", role: "note", style: PAGE_NOTE_STYLE });
      node.prepend(note);
    }
    setText(note, text);
  } else note?.remove();
  // The note itself is not dimmed: it is what the reader should read first.
  for (const child of node.children) if (child !== note) dimKept(child, kept);
}

/** Show the panels of `group` that hold for `values` and hide the rest; returns how many show and
 * how many there are. Values with a refused member (null), or null for all, keep the panels of the
 * last valid values on screen, dimmed under `note` (by default it names each refused member and
 * its last valid option). Charts drawn while hidden measured no width, so a change sends a resize. */
export function showOutcomes(group, values, note = null) {
  const plan = outcomesFollowing(values, lastFollowed.get(group));
  if (!plan.kept) lastFollowed.set(group, { ...values });
  const text = plan.kept ? (note ?? keptNote(plan.refused.map((name) => [name, plan.following?.[name] ?? ""]))) : "";
  const panels = groupPanels(document, group);
  let shown = 0;
  let changed = false;
  for (const { node, when } of panels) {
    const on = plan.following !== null && panelShown(when, plan.following);
    if (node.hidden === on) {
      node.hidden = !on;
      changed = true;
    }
    markPanel(node, on && plan.kept, text);
    shown += on ? 1 : 0;
  }
  // Only on a change: the charts' redraw is itself a change to the page, which calls this again.
  if (changed) window.dispatchEvent(new Event("resize"));
  return { shown, panels: panels.length };
}

/** Keep `group`'s panels following `values()` while marimo draws or redraws them (a cell that
 * re-runs live); `note()` is the kept panels' note (null: showOutcomes's own). Returns the
 * function that stops. */
export function followOutcomes(group, values, note = () => null) {
  let due = false;
  const pageWatch = new MutationObserver(() => {
    if (due) return;
    due = true;
    requestAnimationFrame(() => {
      due = false;
      showOutcomes(group, values(), note());
    });
  });
  pageWatch.observe(document.body, { childList: true, subtree: true });
  showOutcomes(group, values(), note());
  return () => pageWatch.disconnect();
}

export function mountInPlace({ model, el, className, traits, validate, controls = null, figure }) {
  el.classList.add("four-bit-lab", className);
  startCoursePresenter();
  mounted += 1;
  const prefix = `${className}-${mounted}`;
  const refused = new Map(); // field key -> {text, message, kept}: kept is what the field showed
  const fields = []; // the controls' fields, then the figure's
  let figureFields = 0; // where the figure's fields start in `fields`
  let buildingFigure = false;
  let lastField = null;

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
      refused.set(key, { text, message: shorten(result.message), kept: fields.find((field) => field.key === key).shown });
    }
    draw();
  }

  const ui = {
    /**
     * A labelled text input; `commit(text)` returns {ok, values (traits to set)} or {ok: false, message}.
     * `about(view)` (optional) is what the field's text answers to besides its label and kept
     * value, such as an exercise's instance; a refusal lasts while it stays the same.
     * `refusing(shown)` (optional) is told on every draw whether the field holds a refused entry,
     * so what stands for the kept value (an exercise's verdict) can say it no longer matches.
     * `recheck(text)` (optional) reads a refused entry again on every draw while the field keeps
     * it, and returns what its refusal says now: for a field whose rule depends on other traits
     * (a code's width on the format picked since), so the refusal never speaks of an old rule.
     * `name` (optional, the label by default) is what a kept figure's note calls the field;
     * `drives: false` marks a field the figure is not drawn from (a name sent to the teacher), whose
     * refusal leaves the figure as it is.
     */
    field({ key, label, value, commit, about = null, refusing = null, recheck = null, onkeydown = null, name = null, drives = true }) {
      const inputId = `${prefix}-${key}`;
      const messageId = `${inputId}-message`;
      const field = {
        key,
        label,
        value,
        about,
        refusing,
        recheck,
        name,
        drives,
        shown: null, // what the field last showed for the traits: its label, kept value and about
        drawnLabel: null, // its label and kept value when the figure was last drawn from valid traits
        drawnText: null,
        text: null, // what it holds now: a refused entry or its kept value
        inFigure: buildingFigure,
        labelNode: h("label", { for: inputId }),
        input: h("input", {
          id: inputId,
          type: "text",
          spellcheck: "false",
          autocomplete: "off",
          "data-focus": key,
          "aria-describedby": messageId,
          onchange: (event) => submit(key, event.target.value, commit),
          onkeydown,
        }),
        note: h("p", { id: messageId, class: "lab-message lab-error lab-field-message", role: "alert", hidden: true }),
      };
      fields.push(field);
      return h("div", { class: "lab-field" }, field.labelNode, field.input, field.note);
    },
  };

  // Each shown field's label, text and message for this view; true if the traits' problem went
  // beside one (never a figure's field: the figure is kept as it was while there is a problem).
  function syncFields(view, problem) {
    let placed = false;
    for (const field of fields) {
      if (field.inFigure && (!attached || problem)) continue;
      const label = typeof field.label === "function" ? field.label(view) : field.label;
      const kept = typeof field.value === "function" ? field.value(view) : field.value;
      field.shown = JSON.stringify([label, kept, field.about?.(view) ?? null]);
      // A refusal belongs to what the field showed when it was refused; once the field shows
      // something else, the learner sees that instead.
      if (refused.get(field.key)?.kept !== field.shown) refused.delete(field.key);
      const refusal = refused.get(field.key);
      if (refusal && field.recheck) refusal.message = shorten(field.recheck(refusal.text));
      let message = refusal?.message ?? "";
      if (!message && problem && field.key === lastField) {
        message = problem;
        placed = true;
      }
      setText(field.labelNode, label);
      setAttr(field.input, "aria-label", label);
      const text = refusal ? refusal.text : kept;
      field.text = text;
      if (!problem && attached) {
        field.drawnLabel = label;
        field.drawnText = kept;
      }
      // Only a changed text is written: writing moves the caret to the end.
      if (field.input.value !== text) field.input.value = text;
      setAttr(field.input, "aria-invalid", message ? "true" : null);
      setText(field.note, message);
      field.note.hidden = !message;
      field.refusing?.(refusal !== undefined);
    }
    return placed;
  }

  const toggle = h(
    "button",
    {
      type: "button",
      class: "lab-chip lab-presenter-toggle",
      "data-focus": "presenter",
      // With the course-wide mode on, the widget shows it as pressed, and pressing it turns the
      // whole page back, rather than leaving one widget larger than the prose around it.
      onclick: () => {
        if (coursePresenter()) {
          setCoursePresenter(false);
          if (model.get("presenter") === true) setTraits(model, { presenter: false });
        } else setTraits(model, { presenter: model.get("presenter") !== true });
      },
    },
    "Presenter view",
  );
  let made = { node: null };
  try {
    if (controls) made = controls(ui);
  } catch (error) {
    made = { node: message(`The controls could not be drawn: ${visibleText(error.message, 300)}`) };
  }
  const controlsNode = made.node;
  const updateControls = made.update ?? null;
  const controlsFailure = message("");
  const problemNode = message("");
  const toolbar = h("div", { class: "lab-toolbar" }, toggle);
  el.replaceChildren(...[toolbar, controlsNode].filter(Boolean));

  // The widget's own presenter view (lab-presenter: 1.5 times its type) or the course-wide one,
  // which enlarges the whole page around it already (lab-presenter-course only lets it widen).
  function followPresenter() {
    const course = coursePresenter();
    const own = model.get("presenter") === true;
    el.classList.toggle("lab-presenter", own && !course);
    el.classList.toggle("lab-presenter-course", course);
    setAttr(toggle, "aria-pressed", own || course ? "true" : "false");
  }

  let drawn = null; // the figure, {nodes, update}, once it has been drawn
  let drawnFrom = null; // the trait values it shows
  let attached = false;
  let figureFailure = null; // a message standing in for a figure that could not be drawn

  function detachFigure() {
    if (attached) for (const node of drawn.nodes) node.remove();
    attached = false;
    figureFailure?.remove();
    figureFailure = null;
  }

  function showFigure(view, values) {
    try {
      if (drawn === null) {
        figureFields = fields.length;
        buildingFigure = true;
        try {
          drawn = figure(view, ui);
        } finally {
          buildingFigure = false;
        }
      } else {
        const changed = new Set(traits.filter((name) => !Object.is(values[name], drawnFrom[name])));
        if (changed.size) drawn.update(view, changed);
      }
      drawnFrom = values;
      figureFailure?.remove();
      figureFailure = null;
      if (!attached) el.append(...drawn.nodes);
      attached = true;
    } catch (error) {
      detachFigure();
      drawn = null;
      fields.length = figureFields; // a figure drawn again makes its fields again
      figureFailure = message(`This figure could not be drawn: ${shorten(error.message)}`);
      el.append(figureFailure);
    }
  }

  function draw() {
    followTheme(el);
    followPresenter();
    const root = el.getRootNode();
    const active = root.activeElement && el.contains(root.activeElement) ? root.activeElement : null;
    const values = Object.fromEntries(traits.map((name) => [name, model.get(name)]));
    let view;
    try {
      view = validate(model);
    } catch (error) {
      view = { problem: error.message };
    }
    const problem = view.problem ? shorten(view.problem) : null;
    // The figure first, so that the fields it made are there to be filled in; with a problem it
    // stays as it was drawn last, kept.
    if (!problem) showFigure(view, values);
    let placed = false;
    try {
      updateControls?.(view);
      placed = syncFields(view, problem);
      controlsFailure.remove();
    } catch (error) {
      setText(controlsFailure, `The controls could not be drawn: ${visibleText(error.message, 300)}`);
      (controlsNode ?? toolbar).after(controlsFailure);
    }
    if (problem) {
      if (placed) problemNode.remove();
      else {
        setText(problemNode, problem);
        // Just below the controls, above a kept figure, where the learner fixes it.
        if (problemNode.previousSibling !== (controlsNode ?? toolbar)) (controlsNode ?? toolbar).after(problemNode);
      }
    } else problemNode.remove();
    keep(problem);
    // Prose the notebook computed for each value of this widget follows it, and is kept with
    // the figure while a field or the traits have a problem.
    if (outcomes) showOutcomes(outcomes, keptNoteText === null ? outcomeValues() : null, keptNoteText);
    // Nothing focusable is rebuilt, but a figure taken away takes its focus with it; a control
    // with the same data-focus key gets it back if there is one. A control that a change can take
    // away on its own (a bit the new format lacks) names the one that takes its place in
    // data-focus-fallback, so the keyboard keeps its place.
    const key = active?.getAttribute("data-focus");
    if (key && !el.contains(active)) {
      const fallback = active.getAttribute("data-focus-fallback");
      (el.querySelector(`[data-focus="${key}"]`) ?? (fallback && el.querySelector(`[data-focus="${fallback}"]`)))?.focus();
    }
  }
  // Whether what was drawn last no longer follows the fields (a refused entry in a field the
  // figure is drawn from, or a problem with the traits), and if so the kept figure's note.
  const keptNoteNode = h("p", { class: "lab-message lab-note lab-value-stale", role: "status", "data-lab-kept-note": "" });
  let keptNoteText = null;
  function keep(problem) {
    const refusing = fields.some((field) => !field.inFigure && field.drives && !field.refusing && refused.has(field.key));
    // Each field the figure was drawn from that holds something else now, with what it held.
    const inputs = fields
      .filter((field) => !field.inFigure && field.drives && field.drawnText !== null && field.text !== field.drawnText)
      .map((field) => [field.name ?? field.drawnLabel, field.drawnText]);
    keptNoteText = problem !== null || refusing ? keptNote(inputs) : null;
    const kept = keptNoteText !== null && drawn !== null && attached;
    if (kept) {
      setText(keptNoteNode, keptNoteText);
      const first = drawn.nodes[0];
      if (keptNoteNode.nextSibling !== first) first.before(keptNoteNode);
    } else keptNoteNode.remove();
    if (drawn !== null && attached) for (const node of drawn.nodes) dimKept(node, kept);
  }
  // The group of outcome panels this widget drives, keyed by its traits' values as text (null
  // while they are kept).
  const outcomes = model.get("outcomes") || null;
  const outcomeValues = () => Object.fromEntries(traits.map((name) => [name, String(model.get(name))]));
  draw();
  const stopFollowing = outcomes ? followOutcomes(outcomes, () => (keptNoteText === null ? outcomeValues() : null), () => keptNoteText) : () => {};
  // While setTraits is setting several traits, the draw waits for the last of them.
  const handler = () => (drawsDue ? drawsDue.add(draw) : draw());
  const watched = [...traits, "presenter"];
  for (const name of watched) model.on(`change:${name}`, handler);
  const stopWatchingTheme = watchTheme(el, followPresenter);
  return () => {
    stopWatchingTheme();
    stopFollowing();
    for (const name of watched) model.off(`change:${name}`, handler);
  };
}

// Follow the page's theme, and the course-wide presenter mode (also a class on the root), while
// the widget is mounted; returns the function that stops.
export function watchTheme(el, followPresenter) {
  const themeWatch = new MutationObserver(() => {
    followTheme(el);
    followPresenter();
  });
  for (const node of [document.documentElement, document.body]) {
    if (node) themeWatch.observe(node, { attributes: true, attributeFilter: ["class", "data-theme"] });
  }
  return () => themeWatch.disconnect();
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

// The draws put off while setTraits sets its traits one by one (null when it is not running): a
// widget draws once they are all set, never a mix of old and new values (New instance's next
// round with the old instance's answer still in place).
let drawsDue = null;

export function setTraits(model, values) {
  const outermost = drawsDue === null;
  if (outermost) drawsDue = new Set();
  try {
    for (const [name, value] of Object.entries(values)) model.set(name, value);
  } finally {
    if (outermost) {
      const due = drawsDue;
      drawsDue = null;
      for (const draw of due) draw();
    }
  }
  model.save_changes();
}

// Patching helpers for mountInPlace: each writes only what differs, so an unchanged value costs a
// comparison and no DOM work.
export function setText(node, text) {
  const value = String(text);
  const only = node.firstChild;
  if (only !== null && only === node.lastChild && only.nodeType === Node.TEXT_NODE) {
    if (only.nodeValue !== value) only.nodeValue = value;
  } else if (node.textContent !== value) node.textContent = value;
}

/** Set an attribute as h() would (null, undefined or false removes it, true is ""), if it differs. */
export function setAttr(node, name, value) {
  if (value === null || value === undefined || value === false) {
    if (node.hasAttribute(name)) node.removeAttribute(name);
    return;
  }
  const text = value === true ? "" : String(value);
  if (node.getAttribute(name) !== text) node.setAttribute(name, text);
}

export function setAttrs(node, attributes) {
  for (const [name, value] of Object.entries(attributes)) setAttr(node, name, value);
}

/**
 * Keep a run of repeated parts (a table's rows, a chart's marks) at `count`. `entries` is the
 * caller's array of parts, each {nodes, ...} as `make(index)` built it; the run sits in `parent`
 * just before `anchor` (null: at the end). New parts go at the end of the run and surplus parts
 * leave from its end; the others stay where they are. Returns `entries`.
 */
export function resize(parent, entries, count, make, anchor = null) {
  while (entries.length > count) for (const node of entries.pop().nodes) node.remove();
  while (entries.length < count) {
    const entry = make(entries.length);
    for (const node of entry.nodes) parent.insertBefore(node, anchor);
    entries.push(entry);
  }
  return entries;
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

// Course-wide presenter mode, for a projector: a class on the page's root element that
// notebooks/course.css enlarges the whole page by (prose, tables, charts and widgets in step). The
// choice is remembered in localStorage, so it follows the teacher from page to page, and a link
// with ?present or #present (?present=off to leave it) opens a page in it.
export const COURSE_PRESENTER_CLASS = "lab-course-presenter";
const PRESENTER_STORAGE_KEY = "four-bit-lab:presenter";

export function coursePresenter() {
  return document.documentElement.classList.contains(COURSE_PRESENTER_CLASS);
}

export function setCoursePresenter(on) {
  document.documentElement.classList.toggle(COURSE_PRESENTER_CLASS, on);
  try {
    localStorage.setItem(PRESENTER_STORAGE_KEY, on ? "on" : "off");
  } catch {
    // storage refused (a private window): the mode still holds for this page
  }
}

/** What the link asks for: true (?present, #present), false (?present=off), or null (nothing). */
export function presenterFromLink(search, hash) {
  const asked = new URLSearchParams(search).get("present");
  if (asked !== null) return !["off", "0", "false", "no"].includes(asked.trim().toLowerCase());
  return /^#present(?:=on)?$/i.test(hash) ? true : null;
}

let presenterStarted = false;

/** Set the course-wide mode once per page, from the link, else from what was remembered. */
export function startCoursePresenter() {
  if (presenterStarted) return;
  presenterStarted = true;
  const fromLink = presenterFromLink(location.search, location.hash);
  if (fromLink !== null) return setCoursePresenter(fromLink);
  let remembered = null;
  try {
    remembered = localStorage.getItem(PRESENTER_STORAGE_KEY);
  } catch {
    remembered = null;
  }
  if (remembered === "on") document.documentElement.classList.add(COURSE_PRESENTER_CLASS);
}
