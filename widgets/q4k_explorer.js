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
import { h, svg, formatNumber, mount, setTraits, checker, scrollBox } from "./ui.js";

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
    return { problem: `payload index must be 0..${Q4K_PAYLOAD_BYTES - 1}, got ${JSON.stringify(payloadIndex)}` };
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

function byteMap(model, view, traced) {
  const feeding = metadataBytesFeeding([traced.low.subblock, traced.high.subblock]);
  const cells = view.block.map((byte, offset) => {
    const region = regionOf(offset);
    const isPayload = offset >= Q4K_PAYLOAD_OFFSET;
    const payloadIndex = offset - Q4K_PAYLOAD_OFFSET;
    const selected = isPayload && payloadIndex === view.payloadIndex;
    const classes = ["lab-cell", region.className, selected ? "lab-selected" : "", feeding.has(offset) ? "lab-feeds" : ""].join(" ");
    const label = isPayload ? `payload byte ${payloadIndex} = ${hexByte(byte)}` : `${region.name} byte ${offset} = ${hexByte(byte)}`;
    return isPayload
      ? h("button", { type: "button", class: classes, "aria-pressed": selected ? "true" : "false", "aria-label": label, "data-focus": `byte-${offset}`, onclick: () => setTraits(model, { payload_index: payloadIndex }) }, hexByte(byte).slice(2))
      : h("div", { class: classes, title: label, "aria-label": label, role: "img" }, hexByte(byte).slice(2));
  });
  return h(
    "div",
    {},
    h("p", { class: "lab-caption" }, "144 bytes: d (2), dmin (2), metadata (12), payload (128). Dashed: the metadata bytes the two subblocks read."),
    h("div", { class: "lab-cells-frame" }, h("div", { class: "lab-cells lab-cells-bytes", role: "group", "aria-label": "the 144 bytes of the block" }, cells)),
  );
}

function trace(traced) {
  const step = (half) =>
    h(
      "div",
      { class: "lab-card" },
      h("h4", {}, `${half.nibble} nibble ${half.codeBits} = ${half.code}`),
      h("p", {}, `lane ${half.lane}, subblock ${half.subblock}`),
      h("p", { class: "lab-formula" }, `gain d × s${half.subblock} = ${half.gainFormula}`),
      h("p", { class: "lab-formula" }, `offset dmin × m${half.subblock} = ${half.offsetFormula}`),
      h("p", { class: "lab-big", "data-testid": `${half.nibble}-weight` }, formatNumber(half.weight)),
      h("p", { class: "lab-formula", "data-testid": `${half.nibble}-formula` }, half.formula),
    );
  return h(
    "div",
    {},
    h(
      "p",
      { class: "lab-formula" },
      `payload byte ${traced.payloadIndex} = 32 × ${traced.chunk} + ${traced.position} holds ${traced.hex} = ${traced.byteBits}`,
    ),
    h("div", { class: "lab-readouts" }, step(traced.low), step(traced.high)),
  );
}

// The three editors. They are drawn even when the traits have a problem (a bad block sent from
// Python), so the learner keeps them; they edit only a valid block.
function editors(model, ui, view) {
  const valid = !view.problem;
  const blockProblem = { ok: false, message: `the block itself has a problem: ${view.problem}` };
  const fp16At = (offset) => (valid ? formatNumber(fp16Decode(view.block[offset] | (view.block[offset + 1] << 8))) : "");
  const setFp16 = (offset, label) => (text) => {
    if (!valid) return blockProblem;
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
    if (!valid) return blockProblem;
    const parsed = parseByte(text);
    if (!parsed.ok) return { ok: false, message: `payload byte: ${parsed.message}` };
    const block = [...view.block];
    block[Q4K_PAYLOAD_OFFSET + view.payloadIndex] = parsed.value;
    return { ok: true, values: { block } };
  };
  return h(
    "div",
    { class: "lab-row lab-controls" },
    ui.field({
      key: "edit-byte",
      label: valid ? `payload byte ${view.payloadIndex}` : "payload byte",
      value: valid ? hexByte(view.block[Q4K_PAYLOAD_OFFSET + view.payloadIndex]) : "",
      commit: setPayloadByte,
    }),
    ui.field({ key: "edit-d", label: "d (fp16)", value: fp16At(0), commit: setFp16(0, "d") }),
    ui.field({ key: "edit-dmin", label: "dmin (fp16)", value: fp16At(2), commit: setFp16(2, "dmin") }),
    valid ? storedAs(view.block) : null,
  );
}

// What d and dmin hold after a typed value is rounded to the nearest float16 (ties to even):
// the bit pattern, little-endian in the block, and the value it decodes to.
function storedAs(block) {
  const stored = (offset, name) => {
    const bits = block[offset] | (block[offset + 1] << 8);
    return `${name} = ${hexByte(block[offset + 1])}${hexByte(block[offset]).slice(2)} = ${binary(bits >> 15, 1)} ${binary((bits >> 10) & 31, 5)} ${binary(bits & 1023, 10)} → ${formatNumber(fp16Decode(bits))}`;
  };
  return h(
    "p",
    { class: "lab-caption lab-formula", "data-testid": "fp16-stored" },
    `stored as the nearest float16 (sign exponent fraction): ${stored(0, "d")}; ${stored(2, "dmin")}`,
  );
}

function metadataTable(view, traced) {
  const metadata = view.block.slice(Q4K_METADATA_OFFSET, Q4K_PAYLOAD_OFFSET);
  const { scales, mins } = q4kUnpackScaleMin(metadata);
  const describe = (pieces) => pieces.map((piece) => `B[${piece.byte}] bits ${piece.byteBits[0]}..${piece.byteBits[1]} → bits ${piece.fieldBits[0]}..${piece.fieldBits[1]}`).join(" + ");
  const rows = scales.map((scale, j) => {
    const sources = q4kMetadataSources(j);
    const inUse = j === traced.low.subblock || j === traced.high.subblock;
    return h(
      "tr",
      { class: inUse ? "lab-current" : "" },
      h("td", {}, String(j)),
      h("td", {}, `${scale} = ${binary(scale, 6)}`),
      h("td", { class: "lab-text-cell" }, describe(sources.scale)),
      h("td", {}, `${mins[j]} = ${binary(mins[j], 6)}`),
      h("td", { class: "lab-text-cell" }, describe(sources.min)),
    );
  });
  return scrollBox(
    "the eight 6-bit scales and mins unpacked from the 12 metadata bytes",
    h(
      "table",
      { class: "lab-table", "aria-label": "the eight 6-bit scales and mins unpacked from the 12 metadata bytes" },
      h("thead", {}, h("tr", {}, ["j", "s_j", "s_j comes from", "m_j", "m_j comes from"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, rows),
    ),
  );
}

// The twelve metadata bytes bit by bit (bit 7 on the left), with the bits that make s_j and m_j
// of the two traced subblocks coloured: for j = 4..7 each field is two pieces in two bytes.
function metadataBits(view, traced) {
  const metadata = view.block.slice(Q4K_METADATA_OFFSET, Q4K_PAYLOAD_OFFSET);
  const owners = new Map(); // "byte:bit" -> field label and colour class
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
  const cell = 22;
  const rows = metadata.map((byte, index) => {
    const y = index * (cell + 4);
    const bitCells = [7, 6, 5, 4, 3, 2, 1, 0].map((bit, column) => {
      const owner = owners.get(`${index}:${bit}`);
      const x = 70 + column * cell;
      return [
        svg("rect", { x, y, width: cell - 2, height: cell, class: owner ? `lab-bitcell ${owner.className}` : "lab-bitcell" }, svg("title", {}, owner ? `B[${index}] bit ${bit}: part of ${owner.label}` : `B[${index}] bit ${bit}`)),
        svg("text", { x: x + (cell - 2) / 2, y: y + 16, "text-anchor": "middle", class: "lab-tick" }, String((byte >> bit) & 1)),
      ];
    });
    const labels = [...new Set([7, 6, 5, 4, 3, 2, 1, 0].map((bit) => owners.get(`${index}:${bit}`)?.label).filter(Boolean))];
    return [
      svg("text", { x: 0, y: y + 16, class: "lab-tick" }, `B[${index}]`),
      bitCells,
      svg("text", { x: 70 + 8 * cell + 10, y: y + 16, class: "lab-tick" }, `${hexByte(byte)}${labels.length ? "  → " + labels.join(", ") : ""}`),
    ];
  });
  return svg(
    "svg",
    {
      viewBox: `0 0 520 ${12 * (cell + 4)}`,
      class: "lab-metadata-bits",
      role: "img",
      "aria-label": `the 12 metadata bytes bit by bit; coloured bits make s${traced.low.subblock}, m${traced.low.subblock}, s${traced.high.subblock} and m${traced.high.subblock}`,
    },
    rows,
  );
}

// All 256 weights as bars from a zero line, subblocks in alternating colours, the traced lanes
// highlighted. The vertical range covers the weights and zero, so no space is spent on a sign
// the block does not use.
function laneView(weights, traced) {
  const width = 768;
  const plotHeight = 160;
  const finite = weights.filter(Number.isFinite);
  const highest = Math.max(0, ...finite);
  const lowest = Math.min(0, ...finite);
  const span = highest - lowest || 1;
  const y = (value) => 4 + ((highest - (Number.isFinite(value) ? value : 0)) / span) * (plotHeight - 8);
  const zero = y(0);
  const bars = weights.map((value, lane) => {
    const current = lane === traced.low.lane || lane === traced.high.lane;
    const className = current ? "lab-lane-current" : Math.floor(lane / 32) % 2 ? "lab-lane-odd" : "lab-lane";
    const top = Math.min(y(value), zero);
    return svg("rect", { x: lane * 3, width: 2.6, y: top, height: Math.abs(y(value) - zero) || 1, class: className }, svg("title", {}, `lane ${lane}: ${formatNumber(value)}`));
  });
  return svg(
    "svg",
    { viewBox: `0 0 ${width} ${plotHeight + 22}`, class: "lab-lanes", role: "img", "aria-label": `all 256 weights by lane; lanes ${traced.low.lane} and ${traced.high.lane} highlighted` },
    svg("line", { x1: 0, x2: width, y1: zero, y2: zero, class: "lab-axis" }),
    bars,
    [0, 1, 2, 3, 4, 5, 6, 7].map((j) => svg("text", { x: j * 96 + 48, y: plotHeight + 18, "text-anchor": "middle", class: "lab-tick" }, `subblock ${j}`)),
  );
}

function figure(model, view) {
  const traced = q4kExplainByte(view.block, view.payloadIndex);
  const weights = q4kDecodeBlock(view.block);
  return [
    h(
      "div",
      {
        tabindex: "0",
        "data-focus": "explorer",
        "aria-label": "Q4_K block explorer; arrow keys move between payload bytes",
        onkeydown: (event) => {
          const step = { ArrowRight: 1, ArrowLeft: -1, ArrowDown: 16, ArrowUp: -16 }[event.key];
          if (step === undefined) return;
          event.preventDefault();
          setTraits(model, { payload_index: (view.payloadIndex + step + Q4K_PAYLOAD_BYTES) % Q4K_PAYLOAD_BYTES });
        },
      },
      byteMap(model, view, traced),
    ),
    trace(traced),
    h("h4", {}, `Where s${traced.low.subblock}, m${traced.low.subblock}, s${traced.high.subblock} and m${traced.high.subblock} live in the metadata bytes`),
    metadataBits(view, traced),
    metadataTable(view, traced),
    laneView(weights, traced),
  ];
}

function render({ model, el }) {
  return mount({
    model,
    el,
    className: "lab-q4k",
    traits: ["block", "payload_index"],
    validate: validState,
    controls: (ui, view) => editors(model, ui, view),
    build: (view) => figure(model, view),
  });
}

export default { render, check: checker(validState) };
