// GGUF Q2_K (Python lab.formats.q2_k): 256 two-bit codes, a 4-bit scale and a 4-bit minimum per
// 16 weights, float16 d and dmin; 84 bytes.
//
//   bytes   0..15   scales  one byte per subblock j: bits 7..4 = m_j, bits 3..0 = s_j
//   bytes  16..79   qs      the 2-bit codes, four a byte (kquant.js)
//   bytes  80..81   d       float16, little-endian: the super-block scale of the s_j
//   bytes  82..83   dmin    float16, little-endian: the super-block scale of the m_j
//
//   weight = d × s_j × code − dmin × m_j: d × s_j, dmin × m_j, gain × code and the difference
//   each rounded to float32, as ggml and gguf-py do.
import { binary } from "../codes/bits.js";
import { formatLabNumber } from "../numbers.js";
import { ggmlBlock, ggmlBytes, ggmlHalf, ggmlHalfParts, ggmlLane, ggmlPart } from "./ggml.js";
import { kquantCrumb, kquantCrumbPlace } from "./kquant.js";

const Q2_K_SUBBLOCK_WEIGHTS = 16;
const Q2_K_QS_OFFSET = 16;
const Q2_K_D_OFFSET = 80;
const Q2_K_DMIN_OFFSET = 82;

export const Q2_K_BLOCK = ggmlBlock({
  title: "Q2_K",
  weights: 256,
  subblockWeights: 16,
  rule: "weight = d \u00d7 s_j \u00d7 code \u2212 dmin \u00d7 m_j",
  parts: [
    ["scales", 16, "4-bit scales and mins", "scales"],
    ["qs", 64, "2-bit codes", "codes"],
    ["d", 2, "d", "super"],
    ["dmin", 2, "dmin", "super"],
  ],
});

function q2kFields(values) {
  const d = ggmlHalf(values, Q2_K_D_OFFSET);
  const dmin = ggmlHalf(values, Q2_K_DMIN_OFFSET);
  const scales = values.slice(0, 16).map((byte) => byte & 15);
  const mins = values.slice(0, 16).map((byte) => byte >> 4);
  return {
    d,
    dmin,
    scales,
    mins,
    gains: scales.map((s) => Math.fround(d * s)),
    offsets: mins.map((m) => Math.fround(dmin * m)),
  };
}

/** The 256 weights of one 84-byte Q2_K block. */
export function q2kDecodeBlock(bytes) {
  const values = ggmlBytes(bytes, Q2_K_BLOCK);
  const { gains, offsets } = q2kFields(values);
  return Float32Array.from({ length: Q2_K_BLOCK.weights }, (_, lane) => {
    const subblock = Math.floor(lane / Q2_K_SUBBLOCK_WEIGHTS);
    return Math.fround(gains[subblock] * kquantCrumb(values, lane, Q2_K_QS_OFFSET)) - offsets[subblock];
  });
}

/** Python Q2KTensor.explain of one block's weight, and the parts of the block it is read from. */
export function q2kExplainWeight(bytes, index) {
  const values = ggmlBytes(bytes, Q2_K_BLOCK);
  const lane = ggmlLane(index, Q2_K_BLOCK);
  const subblock = Math.floor(lane / Q2_K_SUBBLOCK_WEIGHTS);
  const crumb = kquantCrumbPlace(lane);
  const qsByte = Q2_K_QS_OFFSET + crumb.byte;
  const code = kquantCrumb(values, lane, Q2_K_QS_OFFSET);
  const { d, dmin, scales, mins, gains, offsets } = q2kFields(values);
  const gain = gains[subblock];
  const offset = offsets[subblock];
  const weight = Math.fround(Math.fround(gain * code) - offset);
  return {
    positionInBlock: lane,
    subblock,
    qsByte,
    qsShift: crumb.shift,
    code,
    codeBits: binary(code, 2),
    scaleByte: subblock,
    scaleNibble: "low",
    minNibble: "high",
    scale: scales[subblock],
    min: mins[subblock],
    d,
    dmin,
    gain,
    offset,
    weight,
    gainFormula: `${formatLabNumber(d)} \u00d7 ${scales[subblock]} = ${formatLabNumber(gain)}`,
    offsetFormula: `${formatLabNumber(dmin)} \u00d7 ${mins[subblock]} = ${formatLabNumber(offset)}`,
    formula: `${formatLabNumber(gain)} \u00d7 ${code} \u2212 ${formatLabNumber(offset)} = ${formatLabNumber(weight)}`,
    parts: [
      ggmlPart(values, "qs", qsByte, [crumb.shift, crumb.shift + 1], "code", [0, 1]),
      ggmlPart(values, "scales", subblock, [0, 3], "scale", [0, 3]),
      ggmlPart(values, "scales", subblock, [4, 7], "min", [0, 3]),
      ...ggmlHalfParts(values, "d", Q2_K_D_OFFSET),
      ...ggmlHalfParts(values, "dmin", Q2_K_DMIN_OFFSET),
    ],
  };
}
