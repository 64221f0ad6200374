// Q4_K block explorer: the 144-byte map, one payload byte followed into its two lanes, the
// 12-byte metadata unpacked field by field, and all 256 weights. State: synced traits `block`
// (144 bytes) and `payload_index`. All arithmetic comes from the codec (codec/).
import { binary, hexByte } from "./codec/codes/bits.js";
import { fp16Decode, fp16Encode } from "./codec/codes/fp16.js";
import {
  Q4K_BLOCK_BYTES,
  Q4K_METADATA_OFFSET,
  Q4K_PAYLOAD_OFFSET,
  Q4K_PAYLOAD_BYTES,
  q4kDecodeBlock,
  q4kUnpackScaleMin,
  q4kExplainByte,
  q4kMetadataSources,
} from "./codec/formats/q4k.js";
import { parseByte, parseNumber } from "./codec/numbers.js";
import { visibleText } from "./codec/text.js";
import { h, svg, formatNumber, mountInPlace, setTraits, setText, setAttr, setAttrs, checker, stackingTable, pickOne, gridColumns, cellFrames, watchSize, svgWidth, textWidth, DRAWN_WIDTH } from "./ui.js";

const REGIONS = [
  { name: "d", start: 0, end: 2, className: "lab-region-d" },
  { name: "dmin", start: 2, end: Q4K_METADATA_OFFSET, className: "lab-region-dmin" },
  { name: "metadata B[0..11]", start: Q4K_METADATA_OFFSET, end: Q4K_PAYLOAD_OFFSET, className: "lab-region-meta" },
  { name: "payload", start: Q4K_PAYLOAD_OFFSET, end: Q4K_BLOCK_BYTES, className: "lab-region-payload" },
];

function regionOf(offset) {
  return REGIONS.find((region) => offset >= region.start && offset < region.end);
}

function validState(model) {
  const block = model.get("block");
  const payloadIndex = model.get("payload_index");
  if (!Array.isArray(block) || block.length !== Q4K_BLOCK_BYTES || !block.every((b) => Number.isInteger(b) && b >= 0 && b <= 255))
    return { problem: `a Q4_K block is ${Q4K_BLOCK_BYTES} bytes, each 0..255` };
  if (!Number.isInteger(payloadIndex) || payloadIndex < 0 || payloadIndex >= Q4K_PAYLOAD_BYTES)
    return { problem: `payload index must be 0..${Q4K_PAYLOAD_BYTES - 1}, got ${visibleText(JSON.stringify(payloadIndex), 40)}` };
  return { block, payloadIndex };
}

function metadataBytesFeeding(subblocks) {
  const feeding = new Set();
  for (const j of subblocks) {
    const sources = q4kMetadataSources(j);
    for (const piece of [...sources.scale, ...sources.min]) feeding.add(Q4K_METADATA_OFFSET + piece.byte);
  }
  return feeding;
}

// The three editors, drawn once and kept even when the traits have a problem (a bad block sent
// from Python), so the learner keeps them; they edit only a valid block.
function editors(model, ui) {
  let view = { problem: "not drawn yet" }; // the view on screen, for the commits
  const blockProblem = () => ({ ok: false, message: `the block itself has a problem: ${view.problem}` });
  const fp16At = (offset) => (view.problem ? "" : formatNumber(fp16Decode(view.block[offset] | (view.block[offset + 1] << 8))));
  const setFp16 = (offset, label) => (text) => {
    if (view.problem) return blockProblem();
    const parsed = parseNumber(text);
    if (!parsed.ok) return { ok: false, message: `${label}: ${parsed.message}` };
    const encoded = fp16Encode(parsed.value);
    if (!encoded.ok) return { ok: false, message: `${label}: ${encoded.message}` };
    const block = [...view.block];
    block[offset] = encoded.bits & 0xff;
    block[offset + 1] = encoded.bits >> 8;
    return { ok: true, values: { block } };
  };
  const setPayloadByte = (text) => {
    if (view.problem) return blockProblem();
    const parsed = parseByte(text);
    if (!parsed.ok) return { ok: false, message: `payload byte: ${parsed.message}` };
    const block = [...view.block];
    block[Q4K_PAYLOAD_OFFSET + view.payloadIndex] = parsed.value;
    return { ok: true, values: { block } };
  };
  const stored = h("p", { class: "lab-caption lab-formula", "data-testid": "fp16-stored" });
  let storedFrom = null; // the block `stored` describes
  const node = h(
    "div",
    { class: "lab-row lab-controls" },
    ui.field({
      key: "edit-byte",
      label: (now) => (now.problem ? "payload byte" : `payload byte ${now.payloadIndex}`),
      value: (now) => (now.problem ? "" : hexByte(now.block[Q4K_PAYLOAD_OFFSET + now.payloadIndex])),
      commit: setPayloadByte,
    }),
    ui.field({ key: "edit-d", label: "d (fp16)", value: () => fp16At(0), commit: setFp16(0, "d") }),
    ui.field({ key: "edit-dmin", label: "dmin (fp16)", value: () => fp16At(2), commit: setFp16(2, "dmin") }),
  );
  return {
    node,
    update(now) {
      view = now;
      if (now.problem) {
        stored.remove();
        return;
      }
      if (now.block !== storedFrom) setText(stored, storedAs(now.block));
      storedFrom = now.block;
      if (stored.parentNode !== node) node.append(stored);
    },
  };
}

// What d and dmin hold after a typed value is rounded to the nearest float16 (ties to even):
// the bit pattern, little-endian in the block, and the value it decodes to.
function storedAs(block) {
  const stored = (offset, name) => {
    const bits = block[offset] | (block[offset + 1] << 8);
    return `${name} = ${hexByte(block[offset + 1])}${hexByte(block[offset]).slice(2)} = ${binary(bits >> 15, 1)} ${binary((bits >> 10) & 31, 5)} ${binary(bits & 1023, 10)} → ${formatNumber(fp16Decode(bits))}`;
  };
  return `stored as the nearest float16 (sign exponent fraction): ${stored(0, "d")}; ${stored(2, "dmin")}`;
}

// The 144 bytes as cells, payload bytes as buttons that pick the traced byte: one Tab stop, the
// arrow keys moving focus and pick together (ui.js pickOne), Down and Up by a row on screen (16
// bytes, or 8 on a phone). `bytes` writes the cells whose byte changed; `mark` the selected byte
// and the metadata bytes the subblocks read.
function byteMap(model) {
  const texts = Array.from({ length: Q4K_BLOCK_BYTES }, () => h("span", { class: "lab-cell-line" }));
  const cells = texts.map((text, offset) =>
    offset >= Q4K_PAYLOAD_OFFSET
      ? h("button", { type: "button", "data-focus": `byte-${offset}`, onclick: () => setTraits(model, { payload_index: offset - Q4K_PAYLOAD_OFFSET }) }, text)
      : h("div", { role: "img" }, text),
  );
  const grid = h(
    "div",
    { class: "lab-cells lab-cells-bytes", role: "group", "aria-label": "the 144 bytes of the block; arrow keys move between the payload bytes" },
    cells,
  );
  const picker = pickOne(
    cells.slice(Q4K_PAYLOAD_OFFSET),
    (payloadIndex) => setTraits(model, { payload_index: payloadIndex }),
    () => gridColumns(grid),
  );
  const frame = cellFrames([grid]);
  let shownBlock = null;
  let selectedOffset = null;
  let feeding = new Set();
  const className = (offset) =>
    ["lab-cell", regionOf(offset).className, offset === selectedOffset ? "lab-selected" : "", feeding.has(offset) ? "lab-feeds" : ""].join(" ");
  return {
    node: h(
      "div",
      {},
      h("p", { class: "lab-caption" }, "144 bytes: d (2), dmin (2), metadata (12), payload (128). Dashed: the metadata bytes the two subblocks read."),
      frame.frames[0],
    ),
    bytes(block) {
      block.forEach((byte, offset) => {
        if (shownBlock !== null && shownBlock[offset] === byte) return;
        const cell = cells[offset];
        const hex = hexByte(byte);
        if (offset >= Q4K_PAYLOAD_OFFSET) setAttr(cell, "aria-label", `payload byte ${offset - Q4K_PAYLOAD_OFFSET} = ${hex}`);
        else {
          const label = `${regionOf(offset).name} byte ${offset} = ${hex}`;
          setAttr(cell, "title", label);
          setAttr(cell, "aria-label", label);
        }
        setText(texts[offset], hex.slice(2));
      });
      shownBlock = block;
      frame.fit();
    },
    mark(payloadIndex, traced) {
      const first = selectedOffset === null;
      const before = [selectedOffset, ...feeding];
      selectedOffset = Q4K_PAYLOAD_OFFSET + payloadIndex;
      feeding = metadataBytesFeeding([traced.low.subblock, traced.high.subblock]);
      // The first time every cell; after that only those that were or are marked.
      const touched = first ? cells.keys() : new Set([...before, selectedOffset, ...feeding]);
      for (const offset of touched) {
        setAttr(cells[offset], "class", className(offset));
        if (offset >= Q4K_PAYLOAD_OFFSET) setAttr(cells[offset], "aria-pressed", offset === selectedOffset ? "true" : "false");
      }
      picker.mark(payloadIndex);
    },
  };
}

// The traced byte: which lanes its nibbles fill, and each nibble's weight worked out.
function trace() {
  const side = (nibble) => {
    const parts = {
      title: h("h4", {}),
      lane: h("p", {}),
      gain: h("p", { class: "lab-formula" }),
      offset: h("p", { class: "lab-formula" }),
      weight: h("p", { class: "lab-big", "data-testid": `${nibble}-weight` }),
      formula: h("p", { class: "lab-formula", "data-testid": `${nibble}-formula` }),
    };
    parts.node = h("div", { class: "lab-card" }, Object.values(parts));
    return parts;
  };
  const head = h("p", { class: "lab-formula" });
  const low = side("low");
  const high = side("high");
  return {
    node: h("div", {}, head, h("div", { class: "lab-readouts" }, low.node, high.node)),
    patch(traced) {
      setText(head, `payload byte ${traced.payloadIndex} = 32 × ${traced.chunk} + ${traced.position} holds ${traced.hex} = ${traced.byteBits}`);
      for (const [parts, half] of [
        [low, traced.low],
        [high, traced.high],
      ]) {
        setText(parts.title, `${half.nibble} nibble ${half.codeBits} = ${half.code}`);
        setText(parts.lane, `lane ${half.lane}, subblock ${half.subblock}`);
        setText(parts.gain, `gain d × s${half.subblock} = ${half.gainFormula}`);
        setText(parts.offset, `offset dmin × m${half.subblock} = ${half.offsetFormula}`);
        setText(parts.weight, formatNumber(half.weight));
        setText(parts.formula, half.formula);
      }
    },
  };
}

// The eight 6-bit scales and mins unpacked from the metadata, with where each comes from. Where
// the columns do not fit (a phone), each row is a block of named values (ui.js stackingTable).
function metadataTable() {
  const describe = (pieces) => pieces.map((piece) => `B[${piece.byte}] bits ${piece.byteBits[0]}..${piece.byteBits[1]} → bits ${piece.fieldBits[0]}..${piece.fieldBits[1]}`).join(" + ");
  const rows = Array.from({ length: 8 }, (_, j) => {
    const sources = q4kMetadataSources(j);
    const scale = h("td", { role: "cell" });
    const min = h("td", { role: "cell" });
    const node = h(
      "tr",
      { role: "row" },
      h("td", { role: "cell" }, String(j)),
      scale,
      h("td", { role: "cell", class: "lab-text-cell" }, describe(sources.scale)),
      min,
      h("td", { role: "cell", class: "lab-text-cell" }, describe(sources.min)),
    );
    return { node, scale, min };
  });
  const label = "the eight 6-bit scales and mins unpacked from the 12 metadata bytes";
  const table = stackingTable(
    label,
    h(
      "table",
      { class: "lab-table", role: "table", "aria-label": label },
      h("thead", { role: "rowgroup" }, h("tr", { role: "row" }, ["j", "sⱼ", "sⱼ comes from", "mⱼ", "mⱼ comes from"].map((t) => h("th", { scope: "col", role: "columnheader" }, t)))),
      h(
        "tbody",
        { role: "rowgroup" },
        rows.map((row) => row.node),
      ),
    ),
  );
  return {
    node: table.node,
    values(block) {
      const { scales, mins } = q4kUnpackScaleMin(block.slice(Q4K_METADATA_OFFSET, Q4K_PAYLOAD_OFFSET));
      rows.forEach((row, j) => {
        setText(row.scale, `${scales[j]} = ${binary(scales[j], 6)}`);
        setText(row.min, `${mins[j]} = ${binary(mins[j], 6)}`);
      });
      table.fit();
    },
    mark(traced) {
      rows.forEach((row, j) => setAttr(row.node, "class", j === traced.low.subblock || j === traced.high.subblock ? "lab-current" : ""));
    },
  };
}

// The twelve metadata bytes bit by bit (bit 7 on the left), with the bits that make s_j and m_j
// of the two traced subblocks coloured: for j = 4..7 each field is two pieces in two bytes. Drawn
// to its width on screen (ui.js svgWidth), so its 16 px text stays 16 px on a phone. Each byte's
// hex and field names follow its bits where every row's fit beside them, else go on a line below.
function metadataBits() {
  const cell = 22;
  let width = DRAWN_WIDTH;
  const rows = Array.from({ length: 12 }, (_, index) => {
    const bits = [7, 6, 5, 4, 3, 2, 1, 0].map((bit) => {
      const title = svg("title", {});
      return {
        bit,
        title,
        rect: svg("rect", { width: cell - 2, height: cell }, title),
        value: svg("text", { "text-anchor": "middle", class: "lab-tick" }),
      };
    });
    const name = svg("text", { x: 0, class: "lab-tick" }, `B[${index}]`);
    const hex = svg("text", { class: "lab-tick" });
    return { bits, name, hex, nodes: [name, bits.map((each) => [each.rect, each.value]), hex] };
  });
  const node = svg("svg", { class: "lab-metadata-bits", role: "img" }, rows.map((row) => row.nodes));
  let metadata = null;
  let owners = new Map(); // "byte:bit" -> field label and colour class

  // Every row placed for this width and these texts.
  function layout() {
    const bitsLeft = Math.ceil(Math.max(...rows.map((row) => textWidth(row.name)))) + 12;
    const bitsRight = bitsLeft + 8 * cell;
    const beside = bitsRight + 10 + Math.max(...rows.map((row) => textWidth(row.hex))) <= width;
    const rowHeight = beside ? cell + 4 : cell + 26; // below: a 20-unit line for 16 px type
    setAttr(node, "viewBox", `0 0 ${width} ${12 * rowHeight}`);
    rows.forEach((row, index) => {
      const y = index * rowHeight;
      setAttr(row.name, "y", y + 16);
      row.bits.forEach((each, column) => {
        const x = bitsLeft + column * cell;
        setAttrs(each.rect, { x, y });
        setAttrs(each.value, { x: x + (cell - 2) / 2, y: y + 16 });
      });
      setAttrs(row.hex, beside ? { x: bitsRight + 10, y: y + 16 } : { x: bitsLeft, y: y + cell + 18 });
    });
  }

  // Laid out again on the page (its text measured, not estimated) and at every new width; the
  // frame is HTML, since the sentinel that watches it cannot sit in an SVG.
  const frame = h("div", {}, node);
  watchSize(frame, () => {
    width = svgWidth(node);
    if (metadata !== null) layout();
  });
  function patchRow(index) {
    const row = rows[index];
    const byte = metadata[index];
    const labels = [];
    for (const each of row.bits) {
      const owner = owners.get(`${index}:${each.bit}`);
      setAttr(each.rect, "class", owner ? `lab-bitcell ${owner.className}` : "lab-bitcell");
      setText(each.title, owner ? `B[${index}] bit ${each.bit}: part of ${owner.label}` : `B[${index}] bit ${each.bit}`);
      setText(each.value, String((byte >> each.bit) & 1));
      if (owner && !labels.includes(owner.label)) labels.push(owner.label);
    }
    setText(row.hex, `${hexByte(byte)}${labels.length ? "  → " + labels.join(", ") : ""}`);
  }
  return {
    node: frame,
    values(block) {
      const next = block.slice(Q4K_METADATA_OFFSET, Q4K_PAYLOAD_OFFSET);
      const before = metadata;
      metadata = next;
      next.forEach((byte, index) => {
        if (before === null || before[index] !== byte) patchRow(index);
      });
      layout();
    },
    mark(traced) {
      owners = new Map();
      const fields = [
        [traced.low.subblock, "scale", "lab-field-low-scale"],
        [traced.low.subblock, "min", "lab-field-low-min"],
        [traced.high.subblock, "scale", "lab-field-high-scale"],
        [traced.high.subblock, "min", "lab-field-high-min"],
      ];
      for (const [j, kind, className] of fields) {
        for (const piece of q4kMetadataSources(j)[kind]) {
          for (let bit = piece.byteBits[0]; bit <= piece.byteBits[1]; bit += 1) {
            owners.set(`${piece.byte}:${bit}`, { label: `${kind === "scale" ? "s" : "m"}${j}`, className });
          }
        }
      }
      setAttr(
        node,
        "aria-label",
        `the 12 metadata bytes bit by bit; coloured bits make s${traced.low.subblock}, m${traced.low.subblock}, s${traced.high.subblock} and m${traced.high.subblock}`,
      );
      rows.forEach((_, index) => patchRow(index));
      layout();
    },
  };
}

// All 256 weights as bars from a zero line, subblocks in alternating colours, the traced lanes
// highlighted. The vertical range covers the weights and zero, so no space is spent on a sign
// the block does not use. Drawn to its width on screen (ui.js svgWidth), so its 16 px labels stay
// 16 px on a phone: each subblock is numbered below its 32 lanes, and one line below says so.
function laneView() {
  const plotHeight = 160;
  let width = DRAWN_WIDTH;
  const bars = Array.from({ length: 256 }, (_, lane) => {
    const title = svg("title", {});
    return { title, rect: svg("rect", {}, title) };
  });
  const axis = svg("line", { x1: 0, class: "lab-axis" });
  const numbers = [0, 1, 2, 3, 4, 5, 6, 7].map((j) => svg("text", { y: plotHeight + 18, "text-anchor": "middle", class: "lab-tick" }, String(j)));
  const numbersTitle = svg("text", { y: plotHeight + 40, "text-anchor": "middle", class: "lab-tick" }, "subblock (32 lanes each)");
  const node = svg("svg", { viewBox: `0 0 ${width} ${plotHeight + 46}`, class: "lab-lanes", role: "img" }, axis, bars.map((bar) => bar.rect), numbers, numbersTitle);

  // Everything placed along x, for this width.
  function layout() {
    const lanePitch = width / 256;
    setAttr(node, "viewBox", `0 0 ${width} ${plotHeight + 46}`);
    setAttr(axis, "x2", width);
    bars.forEach((bar, lane) => setAttrs(bar.rect, { x: lane * lanePitch, width: 0.87 * lanePitch })); // a gap between neighbours
    numbers.forEach((number, j) => setAttr(number, "x", (j + 0.5) * 32 * lanePitch));
    setAttr(numbersTitle, "x", width / 2);
  }

  // Laid out again at every new width; the frame is HTML, since the sentinel that watches it
  // cannot sit in an SVG.
  const frame = h("div", {}, node);
  watchSize(frame, () => {
    width = svgWidth(node);
    layout();
  });
  let current = [];
  const className = (lane) => (current.includes(lane) ? "lab-lane-current" : Math.floor(lane / 32) % 2 ? "lab-lane-odd" : "lab-lane");
  return {
    node: frame,
    weights(weights) {
      const finite = weights.filter(Number.isFinite);
      const highest = Math.max(0, ...finite);
      const lowest = Math.min(0, ...finite);
      const span = highest - lowest || 1;
      const y = (value) => 4 + ((highest - (Number.isFinite(value) ? value : 0)) / span) * (plotHeight - 8);
      const zero = y(0);
      setAttrs(axis, { y1: zero, y2: zero });
      weights.forEach((value, lane) => {
        const bar = bars[lane];
        setAttrs(bar.rect, { y: Math.min(y(value), zero), height: Math.abs(y(value) - zero) || 1 });
        setText(bar.title, `lane ${lane}: ${formatNumber(value)}`);
      });
    },
    mark(traced) {
      const before = current;
      current = [traced.low.lane, traced.high.lane];
      const touched = before.length ? new Set([...before, ...current]) : bars.keys();
      for (const lane of touched) setAttr(bars[lane].rect, "class", className(lane));
      setAttr(node, "aria-label", `all 256 weights by lane; lanes ${traced.low.lane} and ${traced.high.lane} highlighted`);
    },
  };
}

function figure(model, first) {
  let shownPair = null; // the two subblocks the metadata figures mark
  const bytes = byteMap(model);
  const traceView = trace();
  const where = h("h4", {});
  const bits = metadataBits();
  const table = metadataTable();
  const lanes = laneView();

  // The block's bytes, metadata and weights change only with the block; which cells, bits, rows
  // and lanes are marked only with the traced byte (its two subblocks and two lanes); the trace
  // with either.
  function update(view, changed) {
    const traced = q4kExplainByte(view.block, view.payloadIndex);
    if (changed.has("block")) {
      bytes.bytes(view.block);
      bits.values(view.block);
      table.values(view.block);
      lanes.weights(q4kDecodeBlock(view.block));
    }
    if (changed.has("payload_index")) {
      bytes.mark(view.payloadIndex, traced);
      lanes.mark(traced);
      // Bytes in the same 32-byte chunk share their two subblocks, and so the marked metadata.
      const pair = `${traced.low.subblock} ${traced.high.subblock}`;
      if (pair !== shownPair) {
        setText(where, `Where s${traced.low.subblock}, m${traced.low.subblock}, s${traced.high.subblock} and m${traced.high.subblock} live in the metadata bytes`);
        bits.mark(traced);
        table.mark(traced);
      }
      shownPair = pair;
    }
    traceView.patch(traced);
  }
  update(first, new Set(["block", "payload_index"]));
  return { nodes: [bytes.node, traceView.node, where, bits.node, table.node, lanes.node], update };
}

function render({ model, el }) {
  return mountInPlace({
    model,
    el,
    className: "lab-q4k",
    traits: ["block", "payload_index"],
    validate: validState,
    controls: (ui) => editors(model, ui),
    figure: (view) => figure(model, view),
  });
}

export default { render, check: checker(validState) };
