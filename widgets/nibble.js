// Nibble decoder: four bit buttons, the same nibble under every 4-bit decoder (E2M1, UINT4, INT4,
// Q4_0, NF4, IQ4_NL), their sixteen levels side by side, the 16-code table and the E2M1 ruler. All
// state is the synced trait `code`; everything shown is computed here from it, so the widget works
// in a static page with no kernel.
import { binary } from "./codec/codes/bits.js";
import { E2M1_VALUES, e2m1Explain } from "./codec/codes/e2m1.js";
import { uint4, int4 } from "./codec/codes/nibble.js";
import { iq4NlValue } from "./codec/formats/iq4_nl.js";
import { nf4Level } from "./codec/formats/nf4.js";
import { q4_0Value } from "./codec/formats/q4_0.js";
import { formatFloat32, parseByte } from "./codec/numbers.js";
import { visibleText } from "./codec/text.js";
import { h, svg, formatNumber, mountInPlace, setTraits, setText, setAttr, setAttrs, checker, stackingTable, pickOne, watchSize, svgWidth, textWidth, labelRows, DRAWN_WIDTH } from "./ui.js";

const BIT_NAMES = ["sign", "exponent bit 1", "exponent bit 0", "fraction bit"];

// Every 4-bit decoder the course meets: what one code means before its block's scale.
const DECODERS = [
  { key: "e2m1", title: "E2M1", where: "MXFP4, NVFP4", decode: (code) => E2M1_VALUES[code], spacing: "floating point" },
  { key: "uint4", title: "UINT4", where: "Q4_K, Q4_1", decode: uint4, spacing: "uniform" },
  { key: "int4", title: "INT4", where: "two's complement", decode: int4, spacing: "uniform" },
  { key: "q4_0", title: "Q4_0", where: "code − 8", decode: q4_0Value, spacing: "uniform" },
  { key: "nf4", title: "NF4", where: "QLoRA", decode: nf4Level, spacing: "normal quantiles" },
  { key: "iq4_nl", title: "IQ4_NL", where: "16-entry codebook", decode: iq4NlValue, spacing: "non-linear codebook" },
];

function validCode(model) {
  const code = model.get("code");
  return Number.isInteger(code) && code >= 0 && code <= 15 ? { code } : { problem: `code must be a whole number 0..15, got ${visibleText(JSON.stringify(code), 40)}` };
}

const STEPS = { ArrowUp: 1, ArrowRight: 1, ArrowDown: -1, ArrowLeft: -1 };

// The code typed as a number: decimal, 0x hex or 0b bits, and it must fit in four bits.
function commitCode(text) {
  const parsed = parseByte(text);
  if (!parsed.ok) return { ok: false, message: `code: “${visibleText(text.trim(), 40)}” is not a code. Type a whole number from 0 to 15, four bits such as 0b0101, or hex such as 0x5.` };
  if (parsed.value > 15) return { ok: false, message: `code: ${parsed.value} needs more than four bits; a nibble is 0 to 15 (0b0000 to 0b1111).` };
  return { ok: true, values: { code: parsed.value } };
}

// The code field, drawn once and kept even when the trait has a problem, so the learner can fix it.
function codeField(model, ui) {
  return ui.field({
    key: "code",
    label: "code (0..15, 0x… or 0b…); ↑ ↓ step it",
    name: "code",
    value: () => String(model.get("code")),
    commit: commitCode,
    onkeydown: (event) => {
      const step = { ArrowUp: 1, ArrowDown: -1 }[event.key];
      if (step === undefined || !Number.isInteger(model.get("code"))) return;
      event.preventDefault();
      setTraits(model, { code: (model.get("code") + step + 16) % 16 });
    },
  });
}

// Each part of the figure is built once for no code in particular; `patch(code)` writes what
// depends on the code. `shown()` is the code on screen, which the buttons and keys step from.
function bitButtons(model, shown) {
  const buttons = [3, 2, 1, 0].map((bit, position) =>
    h("button", {
      type: "button",
      class: `lab-bit lab-bit-${position === 0 ? "sign" : position < 3 ? "exponent" : "fraction"}`,
      "data-bit": bit,
      "data-focus": `bit-${bit}`,
      onclick: () => setTraits(model, { code: shown() ^ (1 << bit) }),
    }),
  );
  const node = h(
    "div",
    {
      class: "lab-bits",
      role: "group",
      tabindex: "-1",
      "aria-label": "the four bits of the nibble; arrow keys step the code",
      onkeydown: (event) => {
        const step = STEPS[event.key];
        if (step === undefined) return;
        event.preventDefault();
        setTraits(model, { code: (shown() + step + 16) % 16 });
      },
    },
    buttons,
  );
  return {
    node,
    patch(code) {
      [3, 2, 1, 0].forEach((bit, position) => {
        const on = (code >> bit) & 1;
        setAttrs(buttons[position], { "aria-pressed": on ? "true" : "false", "aria-label": `bit ${bit}, ${BIT_NAMES[position]}, is ${on}` });
        setText(buttons[position], String(on));
      });
    },
  };
}

function readouts() {
  const card = (title, testid, note) => {
    const value = h("p", { class: "lab-big", "data-testid": testid });
    return { value, node: h("div", { class: "lab-card" }, h("h4", {}, title), value, note) };
  };
  const e2m1Value = h("p", { class: "lab-big", "data-testid": "e2m1-value" });
  const e2m1Fields = h("p", {});
  const e2m1Formula = h("p", { class: "lab-formula", "data-testid": "e2m1-formula" });
  // The other readouts: each card, and its value's text for a code.
  const others = [
    [card("UINT4 (a Q4_K code)", "uint4-value", h("p", {}, "before the block's gain and offset")), (code) => String(uint4(code))],
    [card("INT4 (two's complement)", "int4-value", h("p", {}, "bit 3 weighs −8")), (code) => formatNumber(int4(code))],
    [card("Q4_0 (GGUF)", "q4_0-value", h("p", {}, "code − 8, before the block's scale d")), (code) => formatNumber(q4_0Value(code))],
    // NF4's levels are float32 constants: the shortest text that reads back as that float32
    [card("NF4 (QLoRA)", "nf4-value", h("p", {}, "a normal quantile, before the block's absmax")), (code) => formatFloat32(nf4Level(code))],
    [card("IQ4_NL (GGUF)", "iq4_nl-value", h("p", {}, "a codebook entry, before the block's scale d")), (code) => formatNumber(iq4NlValue(code))],
  ];
  return {
    node: h(
      "div",
      { class: "lab-readouts" },
      h("div", { class: "lab-card lab-e2m1" }, h("h4", {}, "E2M1 (MXFP4, NVFP4)"), e2m1Value, e2m1Fields, e2m1Formula),
      others.map(([each]) => each.node),
    ),
    patch(code) {
      const parts = e2m1Explain(code);
      setText(e2m1Value, formatNumber(parts.value));
      setText(e2m1Fields, `sign ${parts.sign} · exponent ${binary(parts.exponentField, 2)} · fraction ${parts.fraction} · ${parts.kind}`);
      setText(e2m1Formula, parts.formula);
      for (const [each, spell] of others) setText(each.value, spell(code));
    },
  };
}

// Each decoder's sixteen levels on one line, divided by the row's largest magnitude so every row
// spans at most −1..1 with zero in one place: uniform, floating-point and quantile spacing side by
// side. The current code's level is the thick mark in every row; the thin marks show the other
// fifteen, in code order. Drawn to its width on screen (ui.js svgWidth), so its 16 px labels stay
// 16 px on a phone; the lines start just past the widest decoder's name.
function levelRows() {
  const rowHeight = 34;
  let width = DRAWN_WIDTH;
  let left = 0; // where the lines start, just past the widest name: set by layout()
  const x = (unit) => left + ((unit + 1) / 2) * (width - 20 - left);
  const rows = DECODERS.map((decoder, row) => {
    const levels = Array.from({ length: 16 }, (_, each) => decoder.decode(each));
    const reach = Math.max(...levels.map(Math.abs));
    const y = 24 + row * rowHeight;
    const name = svg("text", { x: 4, y: y + 5, class: "lab-tick" }, decoder.title);
    const axis = svg("line", { y1: y, y2: y, class: "lab-axis lab-axis-faint" });
    const marks = Array.from({ length: 15 }, () => svg("line", { y1: y - 7, y2: y + 7, class: "lab-mark" }));
    const current = svg("line", { y1: y - 12, y2: y + 12, class: "lab-mark lab-mark-current" });
    const title = svg("title", {});
    const node = svg("g", { "data-testid": `levels-${decoder.key}`, "data-spacing": decoder.spacing }, name, axis, marks, current, title);
    return { decoder, levels, reach, node, name, axis, marks, current, title };
  });
  const bottom = 24 + DECODERS.length * rowHeight;
  const ticks = [-1, 0, 1].map((tick) => ({ tick, label: svg("text", { y: bottom + 10, "text-anchor": "middle", class: "lab-tick" }, formatNumber(tick)) }));
  const node = svg(
    "svg",
    { class: "lab-ruler lab-levels", role: "img", "data-testid": "levels" },
    rows.map((row) => row.node),
    ticks.map(({ label }) => label),
  );
  let code = null;

  // Everything placed along x, for this width and code.
  function layout() {
    left = 4 + Math.ceil(Math.max(...rows.map((row) => textWidth(row.name)))) + 12;
    setAttr(node, "viewBox", `0 0 ${width} ${bottom + 16}`);
    for (const { levels, reach, axis, marks, current } of rows) {
      setAttrs(axis, { x1: x(-1), x2: x(1) });
      marks.forEach((mark, i) => {
        const level = levels[i < code ? i : i + 1];
        setAttrs(mark, { x1: x(level / reach), x2: x(level / reach) });
      });
      setAttrs(current, { x1: x(levels[code] / reach), x2: x(levels[code] / reach) });
    }
    for (const { tick, label } of ticks) setAttr(label, "x", x(tick));
  }

  // Laid out again on the page (its names measured, not estimated) and at every new width; the
  // frame is HTML, since the sentinel that watches it cannot sit in an SVG.
  const frame = h("div", {}, node);
  watchSize(frame, () => {
    width = svgWidth(node);
    if (code !== null) layout();
  });
  return {
    node: frame,
    patch(next) {
      code = next;
      for (const { decoder, levels, reach, node: group, title } of rows) {
        const value = levels[code];
        setAttrs(group, { "data-value": String(value), "data-normalised": String(value / reach) });
        setText(title, `${decoder.title} (${decoder.where}): code ${code} is ${formatNumber(value)}, ${formatNumber(value / reach)} of the row's reach ${formatNumber(reach)}; ${decoder.spacing} spacing`);
      }
      setAttr(node, "aria-label", `the sixteen levels of each decoder on one line, scaled to its largest magnitude; code ${code} is ${rows.map((row) => `${formatNumber(row.levels[code])} as ${row.decoder.title}`).join(", ")}`);
      layout();
    },
  };
}

// The code table's columns, in the order lab.css pairs them into two lines on a phone.
const CODE_COLUMNS = ["bits", "code", "E2M1", "UINT4", "INT4", "Q4_0", "NF4", "IQ4_NL"];

// All sixteen codes under every decoder; the current code's row is marked, and a code's bits are
// the button that picks it: one Tab stop, the arrow keys moving focus and code together (ui.js
// pickOne). Where the full row does not fit (a phone), each code takes two lines of four columns
// (lab.css), so the table fits without scrolling sideways. Rows laid out as grids are no longer
// table rows to a screen reader, so every part names its role.
function codeTable(model) {
  const picks = E2M1_VALUES.map((_, each) =>
    h("button", { type: "button", class: "lab-pick", "data-focus": `pick-${each}`, "aria-label": `pick code ${binary(each, 4)}`, onclick: () => setTraits(model, { code: each }) }, binary(each, 4)),
  );
  const picker = pickOne(picks, (code) => setTraits(model, { code }));
  const rows = E2M1_VALUES.map((value, each) =>
    h(
      "tr",
      { role: "row" },
      h("td", { role: "cell" }, picks[each]),
      [String(each), formatNumber(value), String(uint4(each)), formatNumber(int4(each)), formatNumber(q4_0Value(each)), formatFloat32(nf4Level(each)), formatNumber(iq4NlValue(each))].map((text) =>
        h("td", { role: "cell" }, text),
      ),
    ),
  );
  // Where even two lines a code do not fit (presenter view on a phone), each code is a block of
  // named values (ui.js stackingTable).
  const table = stackingTable(
    "all sixteen codes",
    h(
      "table",
      { class: "lab-table lab-codes", role: "table", "aria-label": "all sixteen codes" },
      h("thead", { role: "rowgroup" }, h("tr", { role: "row" }, CODE_COLUMNS.map((t) => h("th", { scope: "col", role: "columnheader" }, t)))),
      h("tbody", { role: "rowgroup" }, rows),
    ),
  );
  return {
    node: h("div", { class: "lab-codes-frame" }, table.node),
    patch(code) {
      rows.forEach((row, each) => setAttrs(row, { class: each === code ? "lab-current" : "", "aria-current": each === code ? "true" : null }));
      picker.mark(code);
    },
  };
}

// The representable E2M1 values on a number line: uneven gaps, and two codes at zero. Drawn to its
// width on screen (ui.js svgWidth), so its 16 px labels stay 16 px on a phone. The values near
// zero are only 0.5 apart, so each label takes the first row under the line in which it clears
// the labels to its left (ui.js labelRows): two rows on a wide screen, more on a phone.
function ruler() {
  let width = DRAWN_WIDTH;
  const x = (value) => 30 + ((value + 6) / 12) * (width - 60);
  const axis = svg("line", { y1: 30, y2: 30, class: "lab-axis" });
  // −0 (code 8) shares +0's mark; the note below the labels names both.
  const marks = E2M1_VALUES.filter((_, each) => each !== 8)
    .sort((a, b) => a - b)
    .map((value) => ({
      value,
      line: svg("line", { y1: 30 }),
      label: svg("text", { "text-anchor": "middle", class: "lab-tick" }, formatNumber(value)),
    }));
  const zeroNote = svg("text", { "text-anchor": "middle", class: "lab-tick lab-zero-note" }, "+0 and −0 (codes 0000 and 1000)");
  const node = svg(
    "svg",
    { class: "lab-ruler", role: "img", "aria-label": "the E2M1 values on a number line: gaps of 0.5 near zero, 2 between 4 and 6" },
    axis,
    marks.map(({ line, label }) => [line, label]),
    zeroNote,
  );

  // Everything placed along x, and the label rows that follow from it, for this width.
  function layout() {
    setAttrs(axis, { x1: x(-6), x2: x(6) });
    const rowOf = labelRows(marks.map(({ value, label }) => [x(value) - textWidth(label) / 2, x(value) + textWidth(label) / 2]));
    marks.forEach(({ value, line, label }, i) => {
      setAttrs(line, { x1: x(value), x2: x(value) });
      setAttrs(label, { x: x(value), y: 50 + 20 * rowOf[i] }); // rows 20 apart: 16 px type is about 19 px tall
    });
    const noteY = 50 + 20 * Math.max(...rowOf) + 24;
    setAttrs(zeroNote, { x: x(0), y: noteY });
    setAttr(node, "viewBox", `0 0 ${width} ${noteY + 8}`);
  }

  // Laid out again on the page (its labels measured, not estimated) and at every new width.
  const frame = h("div", {}, node);
  watchSize(frame, () => {
    width = svgWidth(node);
    layout();
  });
  return {
    node: frame,
    patch(code) {
      const current = E2M1_VALUES[code];
      for (const { line, value } of marks) {
        const selected = value === current;
        setAttrs(line, { y2: selected ? 8 : 18, class: selected ? "lab-mark lab-mark-current" : "lab-mark" });
      }
    },
  };
}

// The figure, built once; every part depends on the one trait, the code.
function figure(model, first) {
  let code = first.code;
  const bits = bitButtons(model, () => code);
  const caption = h("span", { class: "lab-caption" });
  const below = [readouts(), levelRows(), ruler(), codeTable(model)];
  function update(view) {
    code = view.code;
    bits.patch(code);
    setText(caption, `code ${code} = ${binary(code, 4)}`);
    for (const part of below) part.patch(code);
  }
  update(first);
  // The frame lets the bits shrink to its width (lab.css): presenter view on a phone.
  return { nodes: [h("div", { class: "lab-bits-frame" }, h("div", { class: "lab-row" }, bits.node, caption)), ...below.map((part) => part.node)], update };
}

function render({ model, el }) {
  return mountInPlace({
    model,
    el,
    className: "lab-nibble",
    traits: ["code"],
    validate: validCode,
    controls: (ui) => ({ node: codeField(model, ui) }),
    figure: (view) => figure(model, view),
  });
}

export default { render, check: checker(validCode) };
