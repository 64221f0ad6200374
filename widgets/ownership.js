// Ownership view: the same 32 element codes read as one MXFP4 block (one E8M0 scale for all 32)
// and as two NVFP4 blocks (an E4M3 scale for each 16, plus one FP32 tensor scale). The learner
// edits the scale bytes and the tensor scale, picks an element, and sees who owns which scale.
// State: synced traits codes, mx_scale_byte, nv_scale_bytes, tensor_scale, selected.
import { binary, hexByte } from "./codec/codes/bits.js";
import { e2m1Decode } from "./codec/codes/e2m1.js";
import { e4m3Decode } from "./codec/codes/e4m3.js";
import { e8m0Decode } from "./codec/codes/e8m0.js";
import { mxfp4Dequantize } from "./codec/formats/mxfp4.js";
import { nvfp4Dequantize, nvfp4TensorFactor, NVFP4_TENSOR_SCALE_RANGE } from "./codec/formats/nvfp4.js";
import { bitsPerWeight } from "./codec/formats/sizes.js";
import { parseByte, parseNumber } from "./codec/numbers.js";
import { visibleText } from "./codec/text.js";
import { h, formatNumber, mountInPlace, setTraits, setText, setAttr, message, checker, pickOne, gridColumns, cellFrames } from "./ui.js";

function validState(model) {
  const codes = model.get("codes");
  const mxByte = model.get("mx_scale_byte");
  const nvBytes = model.get("nv_scale_bytes");
  const tensorScale = model.get("tensor_scale");
  const selected = model.get("selected");
  if (!Array.isArray(codes) || codes.length !== 32 || !codes.every((c) => Number.isInteger(c) && c >= 0 && c <= 15))
    return { problem: "codes must be 32 nibbles, each 0..15" };
  if (!Number.isInteger(mxByte) || mxByte < 0 || mxByte > 255) return { problem: "the E8M0 byte must be 0..255" };
  if (!Array.isArray(nvBytes) || nvBytes.length !== 2 || !nvBytes.every((b) => Number.isInteger(b) && b >= 0 && b <= 255))
    return { problem: "the two E4M3 scale bytes must each be 0..255" };
  if (!(Number.isFinite(tensorScale) && tensorScale > 0)) return { problem: "the tensor scale must be a positive finite number" };
  if (!Number.isInteger(selected) || selected < 0 || selected > 31) return { problem: `the traced element must be 0..31, got ${visibleText(JSON.stringify(selected), 40)}` };
  const factor = tensorFactorOf(tensorScale);
  if (!factor.ok) return { problem: factor.message };
  return { codes, mxByte, nvBytes, tensorScale, tensorFactor: factor.value, selected };
}

// The article's tensor scale is the multiplier applied on decode; MLX stores global_scale = 2688 × it
// as a float32, so the multiplier must keep that product a positive finite float32.
function tensorFactorOf(tensorScale) {
  const largest = 3.4028234663852886e38 / NVFP4_TENSOR_SCALE_RANGE;
  const refusal = {
    ok: false,
    message:
      `the tensor scale ${formatNumber(tensorScale)} cannot be stored: MLX keeps global_scale = ${NVFP4_TENSOR_SCALE_RANGE} × the tensor scale ` +
      `as a float32, so the tensor scale must be a positive number no larger than about ${formatNumber(Number(largest.toPrecision(4)))}`,
  };
  if (!(Number.isFinite(tensorScale) && tensorScale > 0)) return refusal;
  try {
    const value = nvfp4TensorFactor(tensorScale * NVFP4_TENSOR_SCALE_RANGE);
    return value > 0 && Number.isFinite(value) ? { ok: true, value } : refusal;
  } catch {
    return refusal;
  }
}

function commitByte(label, toTraits) {
  return (text) => {
    const parsed = parseByte(text);
    return parsed.ok ? { ok: true, values: toTraits(parsed.value) } : { ok: false, message: `${label}: ${parsed.message}` };
  };
}

function commitTensorScale(text) {
  const parsed = parseNumber(text);
  if (!parsed.ok) return { ok: false, message: `tensor scale: ${parsed.message}` };
  if (!(parsed.value > 0)) return { ok: false, message: "the tensor scale must be greater than zero" };
  const factor = tensorFactorOf(parsed.value);
  return factor.ok ? { ok: true, values: { tensor_scale: parsed.value } } : factor;
}

// A byte as hex when it is one; anything else (a bad trait from Python) as it is, to be corrected.
function byteText(value) {
  return Number.isInteger(value) && value >= 0 && value <= 255 ? hexByte(value) : String(value);
}

// The four editors, drawn once and kept even when the traits have a problem, so the learner can
// fix it. Their text is read from the traits on every change.
function editors(model, ui) {
  const nvBytes = () => (Array.isArray(model.get("nv_scale_bytes")) ? model.get("nv_scale_bytes") : [null, null]);
  const withNv = (index, value) => {
    const next = [...nvBytes()];
    next[index] = value;
    return { nv_scale_bytes: next };
  };
  const node = h(
    "div",
    { class: "lab-row lab-controls" },
    ui.field({ key: "mx-byte", label: "E8M0 scale byte", value: () => byteText(model.get("mx_scale_byte")), commit: commitByte("E8M0 scale byte", (value) => ({ mx_scale_byte: value })) }),
    ui.field({ key: "nv-byte-0", label: "E4M3 scale, elements 0–15", value: () => byteText(nvBytes()[0]), commit: commitByte("E4M3 scale, elements 0–15", (value) => withNv(0, value)) }),
    ui.field({ key: "nv-byte-1", label: "E4M3 scale, elements 16–31", value: () => byteText(nvBytes()[1]), commit: commitByte("E4M3 scale, elements 16–31", (value) => withNv(1, value)) }),
    ui.field({ key: "tensor-scale", label: "FP32 tensor scale (multiplier)", value: () => String(model.get("tensor_scale")), commit: commitTensorScale }),
  );
  return { node };
}

// 32 element buttons, one per code, one Tab stop (ui.js pickOne); `patch` writes their codes and
// weights, `select` the picked one. The grid goes in a frame made with the other format's grid.
function cells(model, ownerOf, label, format) {
  const buttons = Array.from({ length: 32 }, (_, index) => {
    const code = h("span", { class: "lab-cell-line" });
    const weight = h("span", { class: "lab-cell-line" });
    const node = h(
      "button",
      { type: "button", class: `lab-cell ${ownerOf(index)}`, "data-focus": `${label}-${index}`, onclick: () => setTraits(model, { selected: index }) },
      code,
      weight,
    );
    return { node, code, weight };
  });
  const grid = h(
    "div",
    { class: "lab-cells lab-cells-elements", role: "group", "aria-label": `the 32 ${format} elements; arrow keys move the traced element` },
    buttons.map((button) => button.node),
  );
  const picker = pickOne(
    buttons.map((button) => button.node),
    (index) => setTraits(model, { selected: index }),
    () => gridColumns(grid),
  );
  return {
    grid,
    patch(codes, weights) {
      buttons.forEach((button, index) => {
        const bits = binary(codes[index], 4);
        const weight = formatNumber(weights[index]);
        setAttr(button.node, "aria-label", `element ${index}, code ${bits}, weight ${weight}`);
        setText(button.code, bits);
        setText(button.weight, weight);
      });
    },
    select(selected) {
      buttons.forEach((button, index) => setAttr(button.node, "aria-pressed", index === selected ? "true" : "false"));
      picker.mark(selected);
    },
  };
}

function mxScaleText(view, mxScale) {
  return Number.isNaN(mxScale) ? "0xFF is NaN" : `2^(${view.mxByte} − 127) = ${formatNumber(mxScale)}`;
}

function figure(model, first) {
  const mxScaleLine = h("p", { class: "lab-formula", "data-testid": "mx-scale" });
  const nanNote = message("Scale byte 0xFF encodes NaN: every one of the 32 weights that shares it becomes NaN.", "note");
  const mxCells = cells(model, () => "lab-owner-all", "mxfp4", "MXFP4");
  const mxTrace = h("p", { class: "lab-formula", "data-testid": "mx-trace" });
  const nvCaption = h("p", { class: "lab-caption" });
  const nvCells = cells(model, (index) => (index < 16 ? "lab-owner-a" : "lab-owner-b"), "nvfp4", "NVFP4");
  // Both grids show the same 32 codes, so they take the same columns.
  const grids = cellFrames([mxCells.grid, nvCells.grid]);
  const nvTrace = h("p", { class: "lab-formula", "data-testid": "nv-trace" });
  const head = [h("h4", {}, "MXFP4: 32 codes, one E8M0 scale"), mxScaleLine];
  const rest = [
    grids.frames[0],
    mxTrace,
    h("p", {}, `storage: (32 × 4 + 8) / 32 = ${formatNumber(bitsPerWeight("MXFP4"))} bits per weight`),
    h("h4", {}, "NVFP4: the same codes as two groups of 16, each with an E4M3 scale, plus a tensor scale"),
    nvCaption,
    grids.frames[1],
    nvTrace,
    h(
      "p",
      {},
      `storage: (16 × 4 + 8) / 16 = ${formatNumber(bitsPerWeight("NVFP4"))} bits per weight, plus 32/N for the FP32 tensor scale: ` +
        `${formatNumber(bitsPerWeight("NVFP4", { nWeights: 32 }))} for these 32 weights, ${formatNumber(bitsPerWeight("NVFP4", { nWeights: 4096 * 4096 }))} for a 4096 × 4096 matrix`,
    ),
  ];
  let nan = false; // whether the note under the E8M0 line is shown

  // What depends on which trait: the MXFP4 half on the codes and the E8M0 byte, the NVFP4 half on
  // the codes, the two E4M3 bytes and the tensor scale, the traces on those and the selection.
  // Each is computed again only when what it depends on changes.
  let mxScale;
  let mxWeights;
  let nvScales;
  let nvWeights;
  function update(view, changed) {
    const mx = changed.has("codes") || changed.has("mx_scale_byte");
    const nv = changed.has("codes") || changed.has("nv_scale_bytes") || changed.has("tensor_scale");
    if (changed.has("mx_scale_byte")) mxScale = e8m0Decode(view.mxByte);
    if (mx) mxWeights = mxfp4Dequantize(view.codes, [view.mxByte]);
    if (changed.has("nv_scale_bytes")) nvScales = view.nvBytes.map(e4m3Decode);
    if (nv) nvWeights = nvfp4Dequantize(view.codes, view.nvBytes, view.tensorFactor);
    const element = e2m1Decode(view.codes[view.selected]);
    if (changed.has("mx_scale_byte")) {
      setText(mxScaleLine, mxScaleText(view, mxScale));
      nan = Number.isNaN(mxScale);
      if (!nan) nanNote.remove();
      else if (mxScaleLine.parentNode) mxScaleLine.after(nanNote);
    }
    if (mx) mxCells.patch(view.codes, mxWeights);
    if (nv) nvCells.patch(view.codes, nvWeights);
    if (changed.has("selected")) {
      mxCells.select(view.selected);
      nvCells.select(view.selected);
    }
    // New text, or a picked cell's thicker border, can need fewer columns (or allow more).
    if (mx || nv || changed.has("selected")) grids.fit();
    if (changed.has("nv_scale_bytes") || changed.has("tensor_scale")) {
      setText(nvCaption, `local scales ${formatNumber(nvScales[0])} and ${formatNumber(nvScales[1])}; MLX would store this tensor scale as global_scale = 2688 × ${formatNumber(view.tensorScale)}`);
    }
    const group = view.selected < 16 ? 0 : 1;
    if (mx || changed.has("selected")) {
      setText(mxTrace, `element ${view.selected}: ${formatNumber(element)} × ${formatNumber(mxScale)} = ${formatNumber(mxWeights[view.selected])}`);
    }
    if (nv || changed.has("selected")) {
      setText(nvTrace, `element ${view.selected}: ${formatNumber(element)} × ${formatNumber(nvScales[group])} × ${formatNumber(view.tensorFactor)} = ${formatNumber(nvWeights[view.selected])}`);
    }
  }
  update(first, new Set(TRAITS));
  return {
    get nodes() {
      return nan ? [...head, nanNote, ...rest] : [...head, ...rest];
    },
    update,
  };
}

const TRAITS = ["codes", "mx_scale_byte", "nv_scale_bytes", "tensor_scale", "selected"];

function render({ model, el }) {
  return mountInPlace({
    model,
    el,
    className: "lab-ownership",
    traits: TRAITS,
    validate: validState,
    controls: (ui) => editors(model, ui),
    figure: (view) => figure(model, view),
  });
}

export default { render, check: checker(validState) };
