// Bits per weight (Python lab.teach.sizes): element and scale storage only. The tables mirror
// Python's (sizes.FORMAT_BITS_PER_WEIGHT, lab.formats.affine.SUPPORTED_BITS and
// SUPPORTED_GROUP_SIZES); golden vectors written from those compare them whole and in order, and
// bitsPerWeight on every supported affine pair, so a change on either side fails the JS tests.
import { describe, labError } from "../errors.js";
import { FORMATS } from "./registry.js";

// Two reference points, then every registered format by its title (NVFP4 is 4.5 plus 32/N with
// an FP32 tensor scale).
export const FORMAT_BITS_PER_WEIGHT = Object.freeze({
  BF16: 16,
  "ideal 4-bit": 4,
  ...Object.fromEntries(FORMATS.map((entry) => [entry.title, entry.bitsPerWeight])),
});
export const AFFINE_BITS = Object.freeze([1, 2, 3, 4, 5, 6, 8]);
export const AFFINE_GROUP_SIZES = Object.freeze([32, 64, 128]);

/**
 * Bits per weight of a format: "BF16", "ideal 4-bit", a registered format's title ("MXFP4",
 * "Q4_K", "NVFP4": opts.nWeights adds one FP32 tensor scale, + 32/N) and "affine" (MLX: opts.bits +
 * 2 · opts.parameterBits / opts.groupSize, parameterBits 16 by default).
 */
export function bitsPerWeight(format, opts = {}) {
  if (format === "affine") {
    const { bits, groupSize, parameterBits = 16 } = opts;
    if (!AFFINE_BITS.includes(bits)) {
      throw labError("BitsError", `affine mode supports bits ${AFFINE_BITS.join(", ")}, got ${describe(bits)}`);
    }
    if (!AFFINE_GROUP_SIZES.includes(groupSize)) {
      throw labError(
        "GroupSizeError",
        `affine mode supports group sizes ${AFFINE_GROUP_SIZES.join(", ")}, got ${describe(groupSize)}`,
      );
    }
    return bits + (2 * parameterBits) / groupSize;
  }
  if (!Object.hasOwn(FORMAT_BITS_PER_WEIGHT, format)) {
    const known = [...Object.keys(FORMAT_BITS_PER_WEIGHT), "affine"].join(", ");
    throw labError("ValueError", `unknown format ${describe(format)}; expected one of ${known}`);
  }
  if (format === "NVFP4" && opts.nWeights !== undefined && opts.nWeights !== null) {
    if (typeof opts.nWeights !== "number" || !(opts.nWeights > 0)) {
      throw labError("ValueError", `a tensor has a positive number of weights, got ${describe(opts.nWeights)}`);
    }
    return FORMAT_BITS_PER_WEIGHT.NVFP4 + 32 / opts.nWeights;
  }
  return FORMAT_BITS_PER_WEIGHT[format];
}
