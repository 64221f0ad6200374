// NVFP4 (Python lab.formats.nvfp4), one row in the lab's logical order.
import { E2M1_MAX, e2m1Explain, E2M1_VALUES } from "../codes/e2m1.js";
import { e4m3Decode, e4m3Explain } from "../codes/e4m3.js";
import { describe, labError } from "../errors.js";
import { formatLabNumber } from "../numbers.js";
import { checkBlocks, checkIndex } from "./blocks.js";

// 16 E2M1 codes share one E4M3 scale byte:    weight = E2M1(code) × E4M3(byte) × tensor factor
// Python multiplies in float64 and rounds the weight to float32 once; so does this code.
export const NVFP4_GROUP_SIZE = 16;
export const NVFP4_TENSOR_SCALE_RANGE = E2M1_MAX * 448; // 2688: largest E2M1 times largest E4M3

function checkGlobalScale(globalScale) {
  // Checked as the float32 it is stored as: 1e39 would become Infinity and 1e-50 zero.
  const stored = typeof globalScale === "number" ? Math.fround(globalScale) : NaN;
  if (!Number.isFinite(stored) || stored <= 0) {
    const asFloat32 = Number.isFinite(globalScale) && globalScale > 0 ? `, which is ${describe(stored)} as a float32` : "";
    throw labError(
      "NonFiniteError",
      `global_scale must be a positive finite float32 (the tensor amax), got ${describe(globalScale)}${asFloat32}`,
    );
  }
  return stored;
}

/**
 * What NVFP4 decoding multiplies by on top of the block scale (NVFP4Tensor.tensor_factor): the
 * tensor amax g over 2688 in float32, or 1 without a tensor scale (null or undefined).
 */
export function nvfp4TensorFactor(globalScale = null) {
  if (globalScale === null || globalScale === undefined) return 1;
  return Math.fround(checkGlobalScale(globalScale) / NVFP4_TENSOR_SCALE_RANGE);
}

/** Weights (float32 values) of one NVFP4 row: value × (block scale × tensor factor), rounded once. */
export function nvfp4Dequantize(codes, scaleBytes, tensorFactor = 1) {
  const { elementCodes, bytes } = checkBlocks(codes, scaleBytes, NVFP4_GROUP_SIZE, "nvfp4", "E4M3 scale byte");
  if (typeof tensorFactor !== "number") {
    throw labError("DTypeError", `tensor factor must be a number, got ${describe(tensorFactor)}`);
  }
  const blockScales = bytes.map((byte) => e4m3Decode(byte) * tensorFactor);
  return elementCodes.map((code, i) => Math.fround(E2M1_VALUES[code] * blockScales[Math.floor(i / NVFP4_GROUP_SIZE)]));
}

/** One NVFP4 weight traced (Python NVFP4Tensor.explain); globalScale is the tensor amax or null. */
export function nvExplain(codes, scaleBytes, index, globalScale = null) {
  const tensorFactor = nvfp4TensorFactor(globalScale);
  const weights = nvfp4Dequantize(codes, scaleBytes, tensorFactor);
  const position = checkIndex(index, weights.length);
  const code = codes[position];
  const block = Math.floor(position / NVFP4_GROUP_SIZE);
  const scaleByte = scaleBytes[block];
  const element = e2m1Explain(code);
  const scale = e4m3Explain(scaleByte);
  const weight = weights[position];
  return {
    format: "nvfp4",
    index: position,
    block,
    positionInBlock: position % NVFP4_GROUP_SIZE,
    code,
    element,
    scaleByte,
    scale,
    tensorFactor,
    globalScale: globalScale === null || globalScale === undefined ? null : Math.fround(globalScale),
    weight,
    formula:
      `${formatLabNumber(element.value)} \u00d7 ${formatLabNumber(scale.value)} \u00d7 ` +
      `${formatLabNumber(tensorFactor)} = ${formatLabNumber(weight)}`,
  };
}
