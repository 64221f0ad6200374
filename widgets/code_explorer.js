// Every code clickable: E2M1, E8M0 or E4M3 as bit toggles coloured by field (sign, exponent,
// mantissa), the decode formula filled in, and a value box: type a real number and see the code
// each rounding rule picks, its neighbours, the step there and the relative error.
// State: the synced traits format, code and value_text. Arithmetic: the codec (codec/).
import { binary, hexByte } from "./codec/codes/bits.js";
import { E2M1_VALUES, e2m1Encode, e2m1Explain } from "./codec/codes/e2m1.js";
import { e4m3Decode, e4m3Encode, e4m3Explain } from "./codec/codes/e4m3.js";
import { e8m0Decode, e8m0Encode, e8m0Explain, e8m0Nearest } from "./codec/codes/e8m0.js";
import { parseByte, parseNumber } from "./codec/numbers.js";
import { visibleText } from "./codec/text.js";
import { h, formatNumber, mountInPlace, setTraits, setText, setAttr, setAttrs, checker } from "./ui.js";

// Each format: its width, which bits are which field (bit 7 or 3 first), its decoder and explain,
// its rounding rules, each a function from a real number to a code, and `carry`: the code it
// gives the number on screen when the learner switches to it, the nearest it has (ties as
// ml_dtypes casts them: to even, up for E8M0; saturating), so E4M3's 0x2A = 0.3125 becomes
// E2M1's 0.5, not a clamped code 15 = −6.
// Every name starts with the sound of E, so the messages call it "an E2M1 code".
const FORMATS = {
  E2M1: {
    width: 4,
    fields: ["sign", "exponent", "exponent", "mantissa"],
    decode: (code) => E2M1_VALUES[code],
    explain: (code) => e2m1Explain(code),
    // The OCP rounding keeps the sign, so −0 and a tiny negative number are 1000 (−0); MLX's and
    // ggml's rule (lab.codes.e2m1's "mlx", which the scale lab follows) stores every zero as +0.
    rules: [
      { name: "nearest, ties to even, saturating at ±6 (OCP, ml_dtypes)", encode: (x) => e2m1Encode(x, "rne") },
      { name: "nearest, ties to the lower code, zero as +0 (MLX and ggml; the scale lab's rule)", encode: (x) => e2m1Encode(x, "mlx") },
    ],
    carry: (x) => (Number.isNaN(x) ? 0 : e2m1Encode(x, "rne")), // no NaN code: back to +0
  },
  E8M0: {
    width: 8,
    fields: new Array(8).fill("exponent"),
    decode: e8m0Decode,
    explain: e8m0Explain,
    positiveOnly: true,
    rules: [
      { name: "floor (OCP): 2^floor(log2 x)", encode: (x) => e8m0Encode(x, "ocp", 1) },
      { name: "ceil (MLX): 2^ceil(log2 x)", encode: (x) => e8m0Encode(x, "mlx", 1) },
      { name: "nearest, ties up (ml_dtypes' cast)", encode: e8m0Nearest },
    ],
    // No zero and no sign: zero and negative numbers go to the nearest E8M0 has, 2^−127.
    carry: (x) => (Number.isNaN(x) ? 0xff : x > 0 ? e8m0Nearest(x) : 0),
  },
  E4M3: {
    width: 8,
    fields: ["sign", "exponent", "exponent", "exponent", "exponent", "mantissa", "mantissa", "mantissa"],
    decode: e4m3Decode,
    explain: e4m3Explain,
    rules: [{ name: "nearest, ties to even, saturating at ±448", encode: e4m3Encode }],
    carry: (x) => (Number.isNaN(x) ? 0x7f : e4m3Encode(x)),
  },
};

// Every finite value a format reaches, ascending, each once (+0 for the two zeros).
const LADDERS = Object.fromEntries(
  Object.entries(FORMATS).map(([name, format]) => {
    const values = Array.from({ length: 2 ** format.width }, (_, code) => format.decode(code)).filter(Number.isFinite);
    return [name, [...new Set(values.map((value) => value + 0))].sort((a, b) => a - b)];
  }),
);

function validState(model) {
  const name = model.get("format");
  const code = model.get("code");
  if (!Object.hasOwn(FORMATS, name)) return { problem: `format must be E2M1, E8M0 or E4M3, got ${visibleText(JSON.stringify(name), 40)}` };
  const limit = 2 ** FORMATS[name].width;
  if (!(Number.isInteger(code) && code >= 0 && code < limit)) return { problem: `an ${name} code is a whole number 0..${limit - 1}, got ${visibleText(JSON.stringify(code), 40)}` };
  const typed = parseNumber(String(model.get("value_text")));
  if (!typed.ok) return { problem: `value: ${typed.message}` };
  return { name, format: FORMATS[name], code, x: typed.value };
}

// Eight bit buttons, bit 7 first; a 4-bit format shows the last four. `shown()` is the code on
// screen, which a button toggles a bit of. Focus on a bit a 4-bit format takes away goes to the
// bit that takes its place on screen: bit 7's to bit 3, the sign in both.
function bitButtons(model, shown) {
  const buttons = Array.from({ length: 8 }, (_, position) => {
    const bit = 7 - position;
    return h("button", {
      type: "button",
      "data-bit": bit,
      "data-focus": `bit-${bit}`,
      "data-focus-fallback": bit >= 4 ? `bit-${bit - 4}` : null,
      onclick: () => setTraits(model, { code: shown() ^ (1 << bit) }),
    });
  });
  const group = h("div", { role: "group" }, buttons);
  const legend = ["sign", "exponent", "mantissa"].map((field) => ({ field, node: h("span", { class: `lab-legend lab-legend-${field}` }, field) }));
  const legendLine = h("p", { class: "lab-caption lab-field-legend" });
  let drawnFormat = null;
  return {
    node: h("div", { class: "lab-code-bits lab-bits-frame" }, group, legendLine),
    patch(view) {
      const { format, code, name } = view;
      if (name !== drawnFormat) {
        drawnFormat = name;
        if (format.width === 4) for (const button of buttons.slice(0, 4)) button.remove();
        else if (buttons[0].parentNode !== group) group.prepend(...buttons.slice(0, 4));
        format.fields.forEach((field, position) => {
          setAttr(buttons[8 - format.width + position], "class", `lab-bit lab-bit-${field === "mantissa" ? "fraction" : field} lab-bit-field-${field}`);
        });
        setAttrs(group, { class: format.width === 8 ? "lab-bits lab-bits-byte" : "lab-bits", "aria-label": `the ${format.width} bits of the ${name} code` });
        legendLine.replaceChildren(...legend.filter(({ field }) => format.fields.includes(field)).map(({ node }) => node));
      }
      format.fields.forEach((field, position) => {
        const bit = format.width - 1 - position;
        const on = (code >> bit) & 1;
        const button = buttons[7 - bit];
        setAttrs(button, { "aria-pressed": on ? "true" : "false", "aria-label": `bit ${bit}, ${field}, is ${on}` });
        setText(button, String(on));
      });
    },
  };
}

function commitCode(name) {
  return (text) => {
    // Read as a code of the format's width, so a refusal only suggests codes the format has.
    const parsed = parseByte(text, FORMATS[name].width);
    return parsed.ok ? { ok: true, values: { code: parsed.value } } : { ok: false, message: `code: ${parsed.message}` };
  };
}

function commitValue(text) {
  const parsed = parseNumber(text);
  return parsed.ok ? { ok: true, values: { value_text: text.trim() } } : { ok: false, message: `value: ${parsed.message}` };
}

// The code `target` shows after a switch: the same code if the format stays, the number on
// screen carried over if the traits hold one, else the old code clamped into the new range.
function carriedCode(model, target) {
  const name = model.get("format");
  const code = model.get("code");
  if (name === target) return code;
  const readable = Object.hasOwn(FORMATS, name) && Number.isInteger(code) && code >= 0 && code < 2 ** FORMATS[name].width;
  if (readable) return FORMATS[target].carry(FORMATS[name].decode(code));
  return Math.min(Number.isInteger(code) && code >= 0 ? code : 0, 2 ** FORMATS[target].width - 1);
}

// The format chips and the two fields, drawn once and kept even when the traits have a problem;
// `update` marks the chip of the format the traits name. The value field tells `box` (the value
// box) whether it holds a refused entry.
function controls(model, ui, box) {
  const chips = Object.keys(FORMATS).map((each) =>
    h(
      "button",
      {
        type: "button",
        class: "lab-chip",
        "data-focus": `format-${each}`,
        onclick: () => setTraits(model, { format: each, code: carriedCode(model, each) }),
      },
      each,
    ),
  );
  // A code is read against the format the traits name (E4M3's 0..255 while that is no format).
  const formatNow = () => (Object.hasOwn(FORMATS, model.get("format")) ? model.get("format") : "E4M3");
  const commit = (text) => commitCode(formatNow())(text);
  // A refused code stays in its field through a switch of format (the field keeps its entry while
  // the code it shows stays the same), so it is read again against the format now picked: "abc"
  // is then no byte for E8M0, not no 4-bit code. Text the new format takes (200, refused by E2M1)
  // stays refused, with words that say so: the chip carried the number on screen over to the new
  // format, and a click that also took a code typed for another format would show a code the
  // learner never chose for this one. Enter takes it, as it does any entry.
  const recheck = (text) => {
    const name = formatNow();
    const result = commit(text);
    if (!result.ok) return result.message;
    const { code } = result.values;
    const spelled = `${FORMATS[name].width === 8 ? hexByte(code) : code} = ${binary(code, FORMATS[name].width)}`;
    return `code: “${visibleText(text.trim(), 40)}” was typed while another format was picked, so it is not shown yet. As an ${name} code it is ${spelled}: press Enter to show it.`;
  };
  const node = h(
    "div",
    { class: "lab-controls" },
    h("div", { class: "lab-row", role: "group", "aria-label": "code format" }, chips),
    h(
      "div",
      { class: "lab-row" },
      ui.field({
        key: "code",
        label: "code (decimal, 0x… or 0b…)",
        name: "code",
        value: () => String(model.get("code")),
        commit,
        recheck,
        // Enter always reads the field, even text unchanged since it was refused, which fires no
        // change event: that is how a code kept through a switch of format is taken.
        onkeydown: (event) => {
          if (event.key === "Enter") event.target.dispatchEvent(new Event("change"));
        },
      }),
      ui.field({
        key: "value",
        label: "a real number to encode",
        name: "number to encode",
        value: () => String(model.get("value_text")),
        commit: commitValue,
        refusing: (refused) => box.refusing(refused),
      }),
    ),
  );
  return {
    node,
    update() {
      const name = model.get("format");
      chips.forEach((chip, i) => setAttr(chip, "aria-pressed", Object.keys(FORMATS)[i] === name ? "true" : "false"));
    },
  };
}

function decoded() {
  const heading = h("h4", {});
  const value = h("p", { class: "lab-big", "data-testid": "code-value" });
  const formula = h("p", { class: "lab-formula", "data-testid": "code-formula" });
  return {
    node: h("div", { class: "lab-readouts" }, h("div", { class: "lab-card" }, heading, value, formula)),
    patch(view) {
      const parts = view.format.explain(view.code);
      setText(heading, `${view.name} code ${view.format.width === 8 ? hexByte(view.code) : view.code} = ${binary(view.code, view.format.width)}`);
      setText(value, formatNumber(parts.value));
      setText(formula, parts.formula);
    },
  };
}

function neighbours(ladder, value) {
  const index = ladder.indexOf(value + 0);
  return { below: index > 0 ? ladder[index - 1] : null, above: index >= 0 && index < ladder.length - 1 ? ladder[index + 1] : null };
}

// One card per rounding rule: the code it picks (a button that shows that code), its value, the
// neighbours there and the relative error.
function ruleCard(model) {
  let code = null; // the code the card shows
  const heading = h("h4", {});
  const pick = h("button", { type: "button", class: "lab-pick", onclick: () => setTraits(model, { code }) });
  const value = h("p", { class: "lab-big", "data-testid": "encoded-value" });
  const near = h("p", {});
  const error = h("p", { "data-testid": "relative-error" });
  const node = h("div", { class: "lab-card lab-rule" }, heading, h("p", {}, pick), value, near, error);
  return {
    node,
    patch(rule, format, ladder, x) {
      code = rule.encode(x);
      const decoded = format.decode(code);
      const around = neighbours(ladder, decoded);
      const relative = Number.isFinite(decoded) && x !== 0 ? Math.abs(decoded - x) / Math.abs(x) : null;
      setAttr(node, "data-rule", rule.name);
      setText(heading, rule.name);
      setAttrs(pick, { "data-focus": `show-${rule.name}`, "aria-label": `show code ${hexByte(code)}` });
      setText(pick, `${format.width === 8 ? hexByte(code) : code} = ${binary(code, format.width)}`);
      setText(value, formatNumber(decoded));
      setText(near, `neighbours ${formatNumber(around.below)} and ${formatNumber(around.above)}`);
      setText(error, `relative error ${relative === null ? "—" : formatNumber(relative)}`);
    },
  };
}

// The typed number: where it lies among the format's values and the code each rounding rule
// picks, or a note in place of all that when the format cannot store it. It depends on the format
// and the typed number, never on the code. While the value field holds a refused entry, all that
// is still for the last number taken; `cue`, a line above it, says so, and it gets a dashed edge.
function valueBox(model) {
  const note = h("p", { class: "lab-message lab-note", "data-testid": "encode-note" });
  const bracket = h("p", { "data-testid": "bracket" });
  const group = h("div", { class: "lab-readouts", role: "group", "aria-label": "the code each rounding rule picks" });
  const box = h("div", { class: "lab-value-box" }, bracket, group);
  const cue = h("p", { class: "lab-message lab-note lab-value-stale", "data-testid": "value-stale", hidden: true });
  const cards = [];
  let noted = false; // whether the note stands in for the box
  let x = null; // the number on show: the last one taken
  let stale = false; // whether the value field holds a refused entry instead of it
  function markStale() {
    cue.hidden = !stale;
    for (const node of [box, note]) node.classList.toggle("lab-value-old", stale);
    if (stale) setText(cue, `The ${noted ? "note" : "rounding"} below is for the last number taken, ${formatNumber(x)}, not for the refused entry in the field above.`);
  }
  return {
    cue,
    get node() {
      return noted ? note : box;
    },
    // Whether the value field holds a refused entry; told on every draw.
    refusing(refused) {
      if (refused === stale) return;
      stale = refused;
      markStale();
    },
    patch(view) {
      const { format, name } = view;
      x = view.x;
      const noting = format.positiveOnly && !(x > 0);
      if (noting !== noted) {
        // On the page (the figure is shown), the one stands in for the other where it is.
        const [from, to] = noting ? [box, note] : [note, box];
        if (from.parentNode) from.replaceWith(to);
        noted = noting;
      }
      markStale();
      if (noted) {
        setText(note, `${name} has no sign and no zero: it only stores powers of two, so type a positive number.`);
        return;
      }
      const ladder = LADDERS[name];
      const below = ladder.filter((value) => value <= x).pop() ?? null;
      const above = ladder.find((value) => value >= x) ?? null;
      const step = below !== null && above !== null ? above - below : null;
      setText(
        bracket,
        below === null || above === null
          ? `${formatNumber(x)} lies beyond ${name}'s range (${formatNumber(ladder[0])} to ${formatNumber(ladder[ladder.length - 1])}).`
          : below === above
            ? `${formatNumber(x)} is exactly an ${name} value.`
            : `${formatNumber(x)} lies between ${formatNumber(below)} and ${formatNumber(above)}: the step there is ${formatNumber(step)}.`,
      );
      // A card is kept once made: switching formats back and forth makes nothing new.
      while (cards.length < format.rules.length) cards.push(ruleCard(model));
      cards.forEach((card, i) => {
        if (i >= format.rules.length) return card.node.remove();
        if (card.node.parentNode !== group) group.append(card.node);
        card.patch(format.rules[i], format, ladder, x);
      });
    },
  };
}

// What depends on which trait: the bits and the decoded card on the format and the code, the
// value box on the format and the typed number.
function figure(model, first, box) {
  let code = first.code;
  const bits = bitButtons(model, () => code);
  const card = decoded();
  function update(view, changed) {
    code = view.code;
    if (changed.has("format") || changed.has("code")) {
      bits.patch(view);
      card.patch(view);
    }
    if (changed.has("format") || changed.has("value_text")) box.patch(view);
  }
  update(first, new Set(TRAITS));
  return {
    get nodes() {
      return [bits.node, card.node, box.cue, box.node];
    },
    update,
  };
}

const TRAITS = ["format", "code", "value_text"];

function render({ model, el }) {
  // The value box is made before the controls, whose value field tells it of a refused entry.
  const box = valueBox(model);
  return mountInPlace({
    model,
    el,
    className: "lab-code-explorer",
    traits: TRAITS,
    validate: validState,
    controls: (ui) => controls(model, ui, box),
    figure: (view) => figure(model, view, box),
  });
}

export default { render, check: checker(validState) };
