// Every code clickable: E2M1, E8M0 or E4M3 as bit toggles coloured by field (sign, exponent,
// mantissa), the decode formula filled in, and a value box: type a real number and see the code
// each rounding rule picks, its neighbours, the step there and the relative error.
// State: the synced traits format, code and value_text. Arithmetic: the codec (codec/).
import { binary, hexByte } from "./codec/codes/bits.js";
import { E2M1_VALUES, e2m1Explain } from "./codec/codes/e2m1.js";
import { e4m3Decode, e4m3Encode, e4m3Explain } from "./codec/codes/e4m3.js";
import { e8m0Decode, e8m0Encode, e8m0Explain, e8m0Nearest } from "./codec/codes/e8m0.js";
import { parseByte, parseNumber } from "./codec/numbers.js";
import { scaleQuantizeCodes } from "./codec/teach/scale.js";
import { h, formatNumber, mount, setTraits, checker } from "./ui.js";

// Each format: its width, which bits are which field (bit 7 or 3 first), its decoder and explain,
// and its rounding rules, each a function from a real number to a code.
const FORMATS = {
  E2M1: {
    width: 4,
    fields: ["sign", "exponent", "exponent", "mantissa"],
    decode: (code) => E2M1_VALUES[code],
    explain: (code) => e2m1Explain(code),
    // The scale lab's convention at scale 1: nearest value, ties to the lower code, saturating at ±6.
    rules: [{ name: "nearest, ties to the lower code, saturating (the lab convention)", encode: (x) => scaleQuantizeCodes([x], 1)[0] }],
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
  },
  E4M3: {
    width: 8,
    fields: ["sign", "exponent", "exponent", "exponent", "exponent", "mantissa", "mantissa", "mantissa"],
    decode: e4m3Decode,
    explain: e4m3Explain,
    rules: [{ name: "nearest, ties to even, saturating at ±448", encode: e4m3Encode }],
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
  if (!Object.hasOwn(FORMATS, name)) return { problem: `format must be E2M1, E8M0 or E4M3, got ${JSON.stringify(name)}` };
  const limit = 2 ** FORMATS[name].width;
  if (!(Number.isInteger(code) && code >= 0 && code < limit)) return { problem: `a ${name} code is a whole number 0..${limit - 1}, got ${JSON.stringify(code)}` };
  const typed = parseNumber(String(model.get("value_text")));
  if (!typed.ok) return { problem: `value: ${typed.message}` };
  return { name, format: FORMATS[name], code, x: typed.value };
}

function bitButtons(model, view) {
  const { format, code, name } = view;
  const buttons = format.fields.map((field, position) => {
    const bit = format.width - 1 - position;
    const on = (code >> bit) & 1;
    return h(
      "button",
      {
        type: "button",
        class: `lab-bit lab-bit-${field === "mantissa" ? "fraction" : field} lab-bit-field-${field}`,
        "aria-pressed": on ? "true" : "false",
        "aria-label": `bit ${bit}, ${field}, is ${on}`,
        "data-bit": bit,
        "data-focus": `bit-${bit}`,
        onclick: () => setTraits(model, { code: code ^ (1 << bit) }),
      },
      String(on),
    );
  });
  const legend = ["sign", "exponent", "mantissa"].filter((field) => format.fields.includes(field));
  return h(
    "div",
    { class: "lab-code-bits" },
    h("div", { class: `lab-bits ${format.width === 8 ? "lab-bits-byte" : ""}`, role: "group", "aria-label": `the ${format.width} bits of the ${name} code` }, buttons),
    h("p", { class: "lab-caption lab-field-legend" }, legend.map((field) => h("span", { class: `lab-legend lab-legend-${field}` }, field))),
  );
}

function commitCode(name) {
  return (text) => {
    const parsed = parseByte(text);
    const limit = 2 ** FORMATS[name].width;
    if (!parsed.ok) return { ok: false, message: `code: ${parsed.message}` };
    if (parsed.value >= limit) return { ok: false, message: `code: a ${name} code is 0..${limit - 1}, got ${parsed.value}` };
    return { ok: true, values: { code: parsed.value } };
  };
}

function commitValue(text) {
  const parsed = parseNumber(text);
  return parsed.ok ? { ok: true, values: { value_text: text.trim() } } : { ok: false, message: `value: ${parsed.message}` };
}

function controls(model, ui, view) {
  const name = view.problem ? model.get("format") : view.name;
  const chips = Object.keys(FORMATS).map((each) =>
    h(
      "button",
      {
        type: "button",
        class: "lab-chip",
        "aria-pressed": each === name ? "true" : "false",
        "data-focus": `format-${each}`,
        onclick: () => setTraits(model, { format: each, code: Math.min(model.get("code"), 2 ** FORMATS[each].width - 1) }),
      },
      each,
    ),
  );
  return h(
    "div",
    { class: "lab-controls" },
    h("div", { class: "lab-row", role: "group", "aria-label": "code format" }, chips),
    h(
      "div",
      { class: "lab-row" },
      ui.field({ key: "code", label: "code (decimal, 0x… or 0b…)", value: String(model.get("code")), commit: commitCode(Object.hasOwn(FORMATS, name) ? name : "E4M3") }),
      ui.field({ key: "value", label: "a real number to encode", value: String(model.get("value_text")), commit: commitValue }),
    ),
  );
}

function decoded(view) {
  const parts = view.format.explain(view.code);
  const bits = binary(view.code, view.format.width);
  return h(
    "div",
    { class: "lab-readouts" },
    h(
      "div",
      { class: "lab-card" },
      h("h4", {}, `${view.name} code ${view.format.width === 8 ? hexByte(view.code) : view.code} = ${bits}`),
      h("p", { class: "lab-big", "data-testid": "code-value" }, formatNumber(parts.value)),
      h("p", { class: "lab-formula", "data-testid": "code-formula" }, parts.formula),
    ),
  );
}

function neighbours(ladder, value) {
  const index = ladder.indexOf(value + 0);
  return { below: index > 0 ? ladder[index - 1] : null, above: index >= 0 && index < ladder.length - 1 ? ladder[index + 1] : null };
}

function valueBox(model, view) {
  const { x, format, name } = view;
  if (format.positiveOnly && !(x > 0)) {
    return h("p", { class: "lab-message lab-note", "data-testid": "encode-note" }, `${name} has no sign and no zero: it only stores powers of two, so type a positive number.`);
  }
  const ladder = LADDERS[name];
  const below = ladder.filter((value) => value <= x).pop() ?? null;
  const above = ladder.find((value) => value >= x) ?? null;
  const rows = format.rules.map((rule) => {
    const code = rule.encode(x);
    const value = format.decode(code);
    const near = neighbours(ladder, value);
    const error = Number.isFinite(value) && x !== 0 ? Math.abs(value - x) / Math.abs(x) : null;
    return h(
      "div",
      { class: "lab-card lab-rule", "data-rule": rule.name },
      h("h4", {}, rule.name),
      h(
        "p",
        {},
        h("button", { type: "button", class: "lab-pick", "data-focus": `show-${rule.name}`, "aria-label": `show code ${hexByte(code)}`, onclick: () => setTraits(model, { code }) }, `${format.width === 8 ? hexByte(code) : code} = ${binary(code, format.width)}`),
      ),
      h("p", { class: "lab-big", "data-testid": "encoded-value" }, formatNumber(value)),
      h("p", {}, `neighbours ${formatNumber(near.below)} and ${formatNumber(near.above)}`),
      h("p", { "data-testid": "relative-error" }, `relative error ${error === null ? "—" : formatNumber(error)}`),
    );
  });
  const step = below !== null && above !== null ? above - below : null;
  return h(
    "div",
    { class: "lab-value-box" },
    h(
      "p",
      { "data-testid": "bracket" },
      below === null || above === null
        ? `${formatNumber(x)} lies beyond ${name}'s range (${formatNumber(ladder[0])} to ${formatNumber(ladder[ladder.length - 1])}).`
        : below === above
          ? `${formatNumber(x)} is exactly a ${name} value.`
          : `${formatNumber(x)} lies between ${formatNumber(below)} and ${formatNumber(above)}: the step there is ${formatNumber(step)}.`,
    ),
    h("div", { class: "lab-readouts", role: "group", "aria-label": "the code each rounding rule picks" }, rows),
  );
}

function render({ model, el }) {
  return mount({
    model,
    el,
    className: "lab-code-explorer",
    traits: ["format", "code", "value_text"],
    validate: validState,
    controls: (ui, view) => controls(model, ui, view),
    build: (view) => [bitButtons(model, view), decoded(view), valueBox(model, view)],
  });
}

export default { render, check: checker(validState) };
