// Block explorer: one block of any GGUF block format the lab decodes but Q4_K (its own explorer)
// and MXFP4 and NVFP4 (the ownership view). The block's bytes as a map, part by part; one weight
// followed to every bit it is read from (the byte trace), with the arithmetic; all the block's
// weights as lanes to pick from. State: synced traits `type_name`, `block` (the block's bytes)
// and `weight`. Everything shown comes from the format's codec module (codec/formats/).
import { binary, hexByte } from "./codec/codes/bits.js";
import { ggufBlockCodec } from "./codec/formats/gguf_blocks.js";
import { bitsPerWeight } from "./codec/formats/sizes.js";
import { parseNumber } from "./codec/numbers.js";
import { visibleText } from "./codec/text.js";
import { h, svg, formatNumber, mountInPlace, setTraits, setText, setAttr, setAttrs, checker, cellFrames, resize, watchSize, svgWidth, DRAWN_WIDTH } from "./ui.js";

const TRAITS = ["type_name", "block", "weight"];

// What each role of a layout part holds, as the legend names it (ggml.js gives every part a role);
// the codes' part holds their low bits only where the format keeps their high bits apart.
function roleWords(role, roles) {
  if (role === "codes") return roles.includes("high") ? "low bits of the codes" : "the codes";
  return { super: "float16 scale", scales: "sub-block scales", high: "high bits of the codes" }[role];
}

// The arithmetic from the code to the weight, in order; each format's explanation has some of it.
const STEPS = [
  ["code", (explained) => explained.codeFormula],
  ["level", (explained) => explained.valueFormula],
  ["scale", (explained) => explained.metadata?.scaleFormula ?? explained.scaleFormula],
  ["minimum", (explained) => explained.metadata?.minFormula],
  ["gain", (explained) => explained.gainFormula],
  ["offset", (explained) => explained.offsetFormula],
  ["weight", (explained) => explained.formula],
];

function codecOf(typeName) {
  try {
    return { codec: ggufBlockCodec(typeName) };
  } catch (error) {
    return { problem: error.message };
  }
}

/** Why `weight` picks no weight of a block of `count`, or null. */
function weightRefusal(weight, count) {
  if (typeof weight !== "number" || !Number.isInteger(weight)) {
    return `the weight is picked by a whole number 0..${count - 1}, got ${visibleText(JSON.stringify(weight) ?? String(weight), 40)}`;
  }
  if (weight < 0 || weight >= count) return `this block has weights 0..${count - 1}, got ${weight}`;
  return null;
}

function validState(model) {
  const { codec, problem } = codecOf(model.get("type_name"));
  if (problem) return { problem };
  const { title, bytes, weights } = codec.block;
  const block = model.get("block");
  if (!Array.isArray(block) || block.length !== bytes || !block.every((b) => Number.isInteger(b) && b >= 0 && b <= 255)) {
    return { problem: `a ${title} block is ${bytes} bytes, each 0..255` };
  }
  const refusal = weightRefusal(model.get("weight"), weights);
  return refusal ? { problem: refusal } : { codec, block, weight: model.get("weight") };
}

// The weight typed as a number: any number the lab reads, as long as it is a weight of the block.
// It is read against the type's block alone, so it can put right a weight the traits got wrong.
function commitWeight(model, text) {
  const { codec, problem } = codecOf(model.get("type_name"));
  if (problem) return { ok: false, message: `no weight can be picked: ${problem}` };
  const { title, weights: count } = codec.block;
  const parsed = parseNumber(text);
  if (!parsed.ok) return { ok: false, message: `weight: ${parsed.message}` };
  if (!Number.isInteger(parsed.value)) {
    return { ok: false, message: `weight: ${formatNumber(parsed.value)} is not a whole number. Type a weight from 0 to ${count - 1}.` };
  }
  if (parsed.value < 0 || parsed.value >= count) {
    return { ok: false, message: `weight: a ${title} block has weights 0 to ${count - 1}, so there is no weight ${formatNumber(parsed.value)}.` };
  }
  return { ok: true, values: { weight: parsed.value + 0 } }; // + 0: −0 is weight 0
}

// The weight field, drawn once and kept even when the traits have a problem, so the learner can
// fix it; ↑ and ↓ step through the weights.
function weightField(model, ui) {
  let view = { problem: "not drawn yet" };
  const node = h(
    "div",
    { class: "lab-row lab-controls" },
    ui.field({
      key: "weight",
      label: () => {
        const { codec } = codecOf(model.get("type_name"));
        return codec ? `weight (0..${codec.block.weights - 1}); ↑ ↓ step it` : "weight";
      },
      name: "weight",
      value: () => String(model.get("weight")),
      commit: (text) => commitWeight(model, text),
      onkeydown: (event) => {
        const step = { ArrowUp: 1, ArrowDown: -1 }[event.key];
        if (step === undefined || view.problem) return;
        event.preventDefault();
        const count = view.codec.block.weights;
        setTraits(model, { weight: (view.weight + step + count) % count });
      },
    }),
  );
  return {
    node,
    update(now) {
      view = now;
    },
  };
}

function bitRange([low, high]) {
  return low === high ? `bit ${low}` : `bits ${high}..${low}`;
}

function fieldWords(field, explained) {
  const j = explained.subblock;
  if (field === "code") return "the code";
  if (field === "storedScale") return `u${j} = s${j} + 32`;
  if (field === "scale") return `s${j}`;
  if (field === "min") return `m${j}`;
  return field; // the float16 d, dmin or m
}

function roleOf(codec, partName) {
  return codec.block.parts.find((part) => part.name === partName).role;
}

// The block's bytes, one grid of cells per layout part under a caption that names it, all the
// grids with the same columns (ui.js cellFrames). The cells a weight is read from are marked.
// Made again only when the type changes (another layout); the bytes and marks are patched.
function byteMap() {
  const node = h("div", { class: "lab-block-map", role: "group", "aria-label": "the block's bytes, part by part" });
  let shown = null; // {codec, cells, fit}
  let shownBytes = null;
  let marked = new Set();

  function build(codec) {
    const cells = [];
    const grids = codec.block.parts.map((part) => {
      const partCells = Array.from({ length: part.size }, (_, i) => {
        const text = h("span", { class: "lab-cell-line" });
        const cell = h("div", { role: "img" }, text);
        cells[part.start + i] = { cell, text, part };
        return cell;
      });
      return h("div", { class: "lab-cells lab-cells-bytes" }, partCells);
    });
    const frames = cellFrames(grids);
    node.replaceChildren(
      ...codec.block.parts.map((part, i) => {
        const last = part.start + part.size - 1;
        const where = part.size === 1 ? `byte ${part.start}` : `bytes ${part.start}..${last}`;
        return h("div", { class: "lab-block-part" }, h("p", { class: "lab-caption" }, `${part.name}, ${where}: ${part.words}`), frames.frames[i]);
      }),
    );
    return { codec, cells, fit: frames.fit };
  }

  const className = (offset) => `lab-cell lab-role-${shown.cells[offset].part.role}${marked.has(offset) ? " lab-selected" : ""}`;
  const label = (offset, bytes) => {
    const { part } = shown.cells[offset];
    return `${part.name} byte ${offset} = ${hexByte(bytes[offset])}${marked.has(offset) ? ", read by this weight" : ""}`;
  };

  return {
    node,
    patch(codec, bytes, explained) {
      if (shown?.codec !== codec) {
        shown = build(codec);
        shownBytes = null;
        marked = new Set();
      }
      const before = marked;
      marked = new Set(explained.parts.map((part) => part.byte));
      bytes.forEach((byte, offset) => {
        const { cell, text } = shown.cells[offset];
        const changed = shownBytes === null || shownBytes[offset] !== byte;
        if (changed) setText(text, hexByte(byte).slice(2));
        if (changed || before.has(offset) !== marked.has(offset)) {
          setAttr(cell, "class", className(offset));
          setAttr(cell, "aria-label", label(offset, bytes));
          setAttr(cell, "title", label(offset, bytes));
        }
      });
      shownBytes = bytes;
      shown.fit();
    },
  };
}

// The legend: a swatch for each role the layout has, and the mark of a byte the weight reads.
function legend() {
  const node = h("p", { class: "lab-field-legend", "aria-label": "legend" });
  let shownCodec = null;
  return {
    node,
    patch(codec) {
      if (codec === shownCodec) return;
      shownCodec = codec;
      const roles = [...new Set(codec.block.parts.map((part) => part.role))];
      node.replaceChildren(
        ...roles.map((role) => h("span", { class: `lab-legend lab-legend-role lab-legend-${role}` }, roleWords(role, roles))),
        h("span", { class: "lab-legend lab-legend-read" }, "read by this weight"),
      );
    },
  };
}

// The byte trace: one line per run of bits the weight is read from, its byte drawn bit by bit
// (bit 7 first) with the bits read marked, and what they are.
function traceList() {
  const node = h("ul", { class: "lab-trace", "data-testid": "trace" });
  const entries = [];
  const make = () => {
    const where = h("span", { class: "lab-trace-where" });
    const bits = [7, 6, 5, 4, 3, 2, 1, 0].map(() => h("span", { class: "lab-trace-bit" }));
    const what = h("span", { class: "lab-trace-what" });
    return { nodes: [h("li", {}, where, h("span", { class: "lab-trace-bits", "aria-hidden": "true" }, bits), what)], where, bits, what };
  };
  return {
    node,
    patch(codec, bytes, explained) {
      resize(node, entries, explained.parts.length, make);
      explained.parts.forEach((part, i) => {
        const entry = entries[i];
        const byte = bytes[part.byte];
        const role = roleOf(codec, part.name);
        setText(entry.where, `${part.name} byte ${part.byte} = ${hexByte(byte)}`);
        entry.bits.forEach((span, column) => {
          const bit = 7 - column;
          const read = bit >= part.bits[0] && bit <= part.bits[1];
          setText(span, String((byte >> bit) & 1));
          setAttr(span, "class", read ? `lab-trace-bit lab-trace-bit-read lab-role-${role}` : "lab-trace-bit");
        });
        const width = part.bits[1] - part.bits[0] + 1;
        setText(entry.what, `${bitRange(part.bits)} = ${binary(part.value, width)} → ${bitRange(part.fieldBits)} of ${fieldWords(part.field, explained)}`);
      });
    },
  };
}

// The code put together from its parts, top bits first, as the trace reads them.
function codeText(explained) {
  const pieces = explained.parts
    .filter((part) => part.field === "code")
    .sort((a, b) => b.fieldBits[0] - a.fieldBits[0])
    .map((part) => binary(part.value, part.bits[1] - part.bits[0] + 1));
  const signed = explained.code < 0 ? " (int8, two's complement)" : "";
  return `code = ${pieces.join(" ")} = ${formatNumber(explained.code)}${signed}`;
}

// The arithmetic, one labelled line per step the format has.
function stepList() {
  const rows = STEPS.map(([name, read]) => {
    const term = h("dt", {}, name);
    const formula = h("dd", { class: "lab-formula", "data-testid": `step-${name}` });
    return { read, term, formula };
  });
  return {
    node: h("dl", { class: "lab-steps" }, rows.map((row) => [row.term, row.formula])),
    patch(explained) {
      for (const row of rows) {
        const text = row.read(explained);
        row.term.hidden = text === undefined;
        row.formula.hidden = text === undefined;
        setText(row.formula, text ?? "");
      }
    },
  };
}

// All the block's weights as bars from a zero line, sub-blocks in alternating colours, the traced
// weight marked by a line across the plot (a bar of a 256-weight block is a pixel wide on a
// phone). The plot is a slider: a click picks the weight under the pointer, the arrow keys step,
// Page Up and Page Down move by a sub-block (or 8), Home and End go to the ends. Drawn to its
// width on screen (ui.js svgWidth), so its 16 px labels stay 16 px on a phone.
function laneChart(model) {
  const plotHeight = 140;
  let width = DRAWN_WIDTH;
  let codec = null;
  let bars = [];
  let values = null;
  let current = 0;
  const barsGroup = svg("g", {});
  const axis = svg("line", { x1: 0, class: "lab-axis" });
  const marker = svg("line", { y1: 0, y2: plotHeight, class: "lab-block-marker" });
  const ticks = [0, 1, 2, 3, 4].map(() => svg("text", { y: plotHeight + 18, "text-anchor": "middle", class: "lab-tick" }));
  // below the plot in HTML, so that it wraps on a phone
  const caption = h("p", { class: "lab-caption" });
  const node = svg(
    "svg",
    { class: "lab-lanes lab-block-lanes", role: "slider", tabindex: "0", "aria-valuemin": "0", "aria-orientation": "horizontal", "data-focus": "lanes", "data-testid": "lanes" },
    barsGroup,
    axis,
    marker,
    ticks,
  );
  const count = () => codec.block.weights;
  const pick = (weight) => setTraits(model, { weight: Math.min(count() - 1, Math.max(0, weight)) });
  node.addEventListener("click", (event) => {
    const box = node.getBoundingClientRect();
    pick(Math.floor(((event.clientX - box.left) / box.width) * count()));
  });
  node.addEventListener("keydown", (event) => {
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    const page = codec.block.subblockWeights ?? 8;
    const target = { ArrowRight: current + 1, ArrowUp: current + 1, ArrowLeft: current - 1, ArrowDown: current - 1, PageUp: current + page, PageDown: current - page, Home: 0, End: count() - 1 }[event.key];
    if (target === undefined) return;
    event.preventDefault();
    pick(target);
  });

  const className = (lane) => {
    if (lane === current) return "lab-lane-current";
    const size = codec.block.subblockWeights;
    return size !== null && Math.floor(lane / size) % 2 ? "lab-lane-odd" : "lab-lane";
  };

  function layout() {
    const pitch = width / count();
    setAttr(node, "viewBox", `0 0 ${width} ${plotHeight + 24}`);
    setAttr(axis, "x2", width);
    bars.forEach((bar, lane) => setAttrs(bar.rect, { x: lane * pitch, width: Math.max(1, 0.8 * pitch) }));
    setAttrs(marker, { x1: (current + 0.5) * pitch, x2: (current + 0.5) * pitch });
    const at = [0, count() / 4, count() / 2, (3 * count()) / 4, count() - 1];
    ticks.forEach((tick, i) => {
      setAttr(tick, "x", Math.min(width - 14, Math.max(14, (at[i] + 0.5) * pitch)));
      setText(tick, String(at[i]));
    });
  }
  const frame = h("div", {}, node, caption);
  watchSize(frame, () => {
    width = svgWidth(node);
    if (codec !== null) layout();
  });

  return {
    node: frame,
    patch(nextCodec, weights, weight) {
      if (nextCodec !== codec) {
        codec = nextCodec;
        bars = Array.from({ length: count() }, () => {
          const title = svg("title", {});
          return { title, rect: svg("rect", {}, title) };
        });
        barsGroup.replaceChildren(...bars.map((bar) => bar.rect));
        values = null;
        const size = codec.block.subblockWeights;
        setText(caption, `The block's weights by index${size === null ? "" : `, sub-blocks of ${size} in alternating colours`}: click one, or use the arrow keys, to trace it.`);
        setAttr(node, "aria-valuemax", String(count() - 1));
      }
      if (weights !== values) {
        values = weights;
        const finite = [...weights].filter(Number.isFinite);
        const highest = Math.max(0, ...finite);
        const lowest = Math.min(0, ...finite);
        const span = highest - lowest || 1;
        const y = (value) => 4 + ((highest - (Number.isFinite(value) ? value : 0)) / span) * (plotHeight - 8);
        const zero = y(0);
        setAttrs(axis, { y1: zero, y2: zero });
        bars.forEach((bar, lane) => {
          setAttrs(bar.rect, { y: Math.min(y(weights[lane]), zero), height: Math.abs(y(weights[lane]) - zero) || 1 });
          setText(bar.title, `weight ${lane}: ${formatNumber(weights[lane])}`);
        });
      }
      current = weight;
      bars.forEach((bar, lane) => setAttr(bar.rect, "class", className(lane)));
      setAttr(node, "aria-valuenow", String(weight));
      setAttr(node, "aria-valuetext", `weight ${weight} = ${formatNumber(weights[weight])}`);
      setAttr(node, "aria-label", `the block's ${count()} weights; arrow keys pick the traced weight`);
      layout();
    },
  };
}

function figure(model, first) {
  const heading = h("h4", { "data-testid": "block-heading" });
  const rule = h("p", { class: "lab-formula", "data-testid": "rule" });
  const key = legend();
  const map = byteMap();
  const traceHeading = h("h4", {});
  const trace = traceList();
  const code = h("p", { class: "lab-formula", "data-testid": "code" });
  const steps = stepList();
  const cardTitle = h("h4", {});
  const value = h("p", { class: "lab-big", "data-testid": "weight-value" });
  const lanes = laneChart(model);

  let weights = null;
  function update(view, changed) {
    const { codec, block, weight } = view;
    const { title, bytes, weights: count } = codec.block;
    if (changed.has("type_name") || changed.has("block")) weights = codec.decodeBlock(block);
    const explained = codec.explainWeight(block, weight);
    if (changed.has("type_name")) {
      setText(heading, `${title}: ${bytes} bytes hold ${count} weights, ${formatNumber(bitsPerWeight(title))} bits per weight`);
      setText(rule, codec.block.rule);
      key.patch(codec);
    }
    map.patch(codec, block, explained);
    const subblock = explained.subblock === undefined ? "" : ` (subblock ${explained.subblock})`;
    setText(traceHeading, `Where weight ${weight}${subblock} is read from: ${explained.parts.length} runs of bits in ${new Set(explained.parts.map((part) => part.byte)).size} bytes`);
    trace.patch(codec, block, explained);
    setText(code, codeText(explained));
    steps.patch(explained);
    setText(cardTitle, `weight ${weight}`);
    setText(value, formatNumber(explained.weight));
    lanes.patch(codec, weights, weight);
  }
  update(first, new Set(TRAITS));
  return {
    nodes: [heading, rule, key.node, map.node, traceHeading, trace.node, code, steps.node, h("div", { class: "lab-readouts" }, h("div", { class: "lab-card" }, cardTitle, value)), lanes.node],
    update,
  };
}

function render({ model, el }) {
  return mountInPlace({
    model,
    el,
    className: "lab-block-explorer",
    traits: TRAITS,
    validate: validState,
    controls: (ui) => weightField(model, ui),
    figure: (view) => figure(model, view),
  });
}

export default { render, check: checker(validState) };
