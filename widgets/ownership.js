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
import { h, formatNumber, mount, setTraits, message } from "./ui.js";

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
  if (!Number.isInteger(selected) || selected < 0 || selected > 31) return { problem: `the traced element must be 0..31, got ${JSON.stringify(selected)}` };
  // The article's tensor scale is the multiplier applied on decode; MLX stores global_scale = 2688 × it.
  let tensorFactor;
  try {
    tensorFactor = nvfp4TensorFactor(tensorScale * NVFP4_TENSOR_SCALE_RANGE);
  } catch (error) {
    return { problem: `tensor scale ${tensorScale}: ${error.message}` };
  }
  return { codes, mxByte, nvBytes, tensorScale, tensorFactor, selected };
}

function byteEditor(label, value, focus, onValid, ui) {
  return h(
    "label",
    { class: "lab-field" },
    h("span", {}, label),
    h("input", {
      type: "text",
      value: hexByte(value),
      "data-focus": focus,
      "aria-label": label,
      onchange: (event) => {
        const parsed = parseByte(event.target.value);
        if (parsed.ok) onValid(parsed.value);
        else ui.reject(`${label}: ${parsed.message}`);
      },
    }),
  );
}

function cells(model, view, weights, ownerOf, label) {
  return h(
    "div",
    { class: "lab-cells", style: "grid-template-columns: repeat(16, minmax(0, 1fr));", role: "group", "aria-label": label },
    view.codes.map((code, index) =>
      h(
        "button",
        {
          type: "button",
          class: `lab-cell ${ownerOf(index)}`,
          "aria-pressed": index === view.selected ? "true" : "false",
          "aria-label": `element ${index}, code ${binary(code, 4)}, weight ${formatNumber(weights[index])}`,
          "data-focus": `${label}-${index}`,
          onclick: () => setTraits(model, { selected: index }),
        },
        h("div", {}, binary(code, 4)),
        h("div", {}, formatNumber(weights[index])),
      ),
    ),
  );
}

function figure(model, view, ui) {
  const mxScale = e8m0Decode(view.mxByte);
  const mxWeights = mxfp4Dequantize(view.codes, [view.mxByte]);
  const tensorFactor = view.tensorFactor;
  const nvWeights = nvfp4Dequantize(view.codes, view.nvBytes, tensorFactor);
  const nvScales = view.nvBytes.map(e4m3Decode);
  const element = e2m1Decode(view.codes[view.selected]);
  const group = view.selected < 16 ? 0 : 1;

  return [
    h("h4", {}, "MXFP4: 32 codes, one E8M0 scale"),
    h(
      "div",
      { class: "lab-row" },
      byteEditor("E8M0 scale byte", view.mxByte, "mx-byte", (value) => setTraits(model, { mx_scale_byte: value }), ui),
      h("span", { class: "lab-formula", "data-testid": "mx-scale" }, Number.isNaN(mxScale) ? "0xFF is NaN" : `2^(${view.mxByte} − 127) = ${formatNumber(mxScale)}`),
    ),
    Number.isNaN(mxScale) ? message("Scale byte 0xFF encodes NaN: every one of the 32 weights that shares it becomes NaN.", "note") : null,
    cells(model, view, mxWeights, () => "lab-owner-all", "mxfp4"),
    h(
      "p",
      { class: "lab-formula", "data-testid": "mx-trace" },
      `element ${view.selected}: ${formatNumber(element)} × ${formatNumber(mxScale)} = ${formatNumber(mxWeights[view.selected])}`,
    ),
    h("p", {}, `storage: (32 × 4 + 8) / 32 = ${formatNumber(bitsPerWeight("MXFP4"))} bits per weight`),
    h("h4", {}, "NVFP4: the same codes as two groups of 16, each with an E4M3 scale, plus a tensor scale"),
    h(
      "div",
      { class: "lab-row" },
      byteEditor("E4M3 scale, elements 0–15", view.nvBytes[0], "nv-byte-0", (value) => setTraits(model, { nv_scale_bytes: [value, view.nvBytes[1]] }), ui),
      byteEditor("E4M3 scale, elements 16–31", view.nvBytes[1], "nv-byte-1", (value) => setTraits(model, { nv_scale_bytes: [view.nvBytes[0], value] }), ui),
      h(
        "label",
        { class: "lab-field" },
        h("span", {}, "FP32 tensor scale (multiplier)"),
        h("input", {
          type: "text",
          value: String(view.tensorScale),
          "data-focus": "tensor-scale",
          "aria-label": "FP32 tensor scale (multiplier)",
          onchange: (event) => {
            const parsed = parseNumber(event.target.value);
            if (parsed.ok && parsed.value > 0) setTraits(model, { tensor_scale: parsed.value });
            else ui.reject(parsed.ok ? "the tensor scale must be greater than zero" : `tensor scale: ${parsed.message}`);
          },
        }),
      ),
    ),
    h("p", { class: "lab-caption" }, `local scales ${formatNumber(nvScales[0])} and ${formatNumber(nvScales[1])}; MLX would store this tensor scale as global_scale = 2688 × ${formatNumber(view.tensorScale)}`),
    cells(model, view, nvWeights, (index) => (index < 16 ? "lab-owner-a" : "lab-owner-b"), "nvfp4"),
    h(
      "p",
      { class: "lab-formula", "data-testid": "nv-trace" },
      `element ${view.selected}: ${formatNumber(element)} × ${formatNumber(nvScales[group])} × ${formatNumber(tensorFactor)} = ${formatNumber(nvWeights[view.selected])}`,
    ),
    h(
      "p",
      {},
      `storage: (16 × 4 + 8) / 16 = ${formatNumber(bitsPerWeight("NVFP4"))} bits per weight, plus 32/N for the FP32 tensor scale: ` +
        `${formatNumber(bitsPerWeight("NVFP4", { nWeights: 32 }))} for these 32 weights, ${formatNumber(bitsPerWeight("NVFP4", { nWeights: 4096 * 4096 }))} for a 4096 × 4096 matrix`,
    ),
  ];
}

function render({ model, el }) {
  return mount({
    model,
    el,
    className: "lab-ownership",
    traits: ["codes", "mx_scale_byte", "nv_scale_bytes", "tensor_scale", "selected"],
    validate: validState,
    build: (view, ui) => figure(model, view, ui),
  });
}

export default { render };
