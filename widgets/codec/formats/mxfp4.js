// MXFP4 (Python lab.formats.mxfp4), one row in the lab's logical order.
import { e2m1Explain, E2M1_VALUES } from "../codes/e2m1.js";
import { e8m0Decode, e8m0Explain } from "../codes/e8m0.js";
import { formatLabNumber } from "../numbers.js";
import { checkBlocks, checkIndex } from "./blocks.js";

// 32 E2M1 codes share one E8M0 scale byte:    weight = E2M1(code) × 2^(byte − 127)
// Python multiplies in float64 and rounds the weight to float32 once; so does this code.
export const MXFP4_GROUP_SIZE = 32;

/** Weights (float32 values) of one MXFP4 row; a block whose scale byte is 0xFF is all NaN. */
export function mxfp4Dequantize(codes, scaleBytes) {
  const { elementCodes, bytes } = checkBlocks(codes, scaleBytes, MXFP4_GROUP_SIZE, "mxfp4", "E8M0 scale byte");
  return elementCodes.map((code, i) =>
    Math.fround(E2M1_VALUES[code] * e8m0Decode(bytes[Math.floor(i / MXFP4_GROUP_SIZE)])),
  );
}

/** One MXFP4 weight traced from its code and its block's scale byte (Python MXTensor.explain). */
export function mxExplain(codes, scaleBytes, index) {
  const weights = mxfp4Dequantize(codes, scaleBytes);
  const position = checkIndex(index, weights.length);
  const code = codes[position];
  const block = Math.floor(position / MXFP4_GROUP_SIZE);
  const scaleByte = scaleBytes[block];
  const element = e2m1Explain(code);
  const scale = e8m0Explain(scaleByte);
  const weight = weights[position];
  return {
    format: "mxfp4",
    index: position,
    block,
    positionInBlock: position % MXFP4_GROUP_SIZE,
    code,
    element,
    scaleByte,
    scale,
    weight,
    formula: `${formatLabNumber(element.value)} \u00d7 ${formatLabNumber(scale.value)} = ${formatLabNumber(weight)}`,
  };
}
