// GGUF Q6_K (Python lab.formats.q6_k): 256 six-bit codes, an int8 scale per 16 weights, one
// float16 d; 210 bytes.
//
//   bytes    0..127  ql      the low 4 bits of every code
//   bytes  128..191  qh      the high 2 bits of every code, four codes a byte
//   bytes  192..207  scales  s_0 .. s_15, int8, one per 16 weights
//   bytes  208..209  d       float16, little-endian
//
// In half h (weights 128h .. 128h + 127) the four weights 128h + l + 32k, k = 0..3, share qh byte
// 32h + l (bits 2k + 1..2k); k = 0 and 2 share ql byte 64h + l (low and high nibble), k = 1 and 3
// ql byte 64h + 32 + l.
//
//   weight = d × s_j × (code − 32): the gain d × s_j rounded to float32 first.
import { binary } from "../codes/bits.js";
import { formatLabNumber } from "../numbers.js";
import { ggmlBlock, ggmlBytes, ggmlHalf, ggmlHalfParts, ggmlLane, ggmlPart } from "./ggml.js";

const Q6_K_SUBBLOCK_WEIGHTS = 16;
const Q6_K_CODE_OFFSET = 32;
const Q6_K_QH_OFFSET = 128;
const Q6_K_SCALES_OFFSET = 192;
const Q6_K_D_OFFSET = 208;

export const Q6_K_BLOCK = ggmlBlock({
  title: "Q6_K",
  weights: 256,
  subblockWeights: 16,
  rule: "weight = d \u00d7 s_j \u00d7 (code \u2212 32)",
  parts: [
    ["ql", 128, "low nibbles", "codes"],
    ["qh", 64, "high bits", "high"],
    ["scales", 16, "int8 scales", "scales"],
    ["d", 2, "d", "super"],
  ],
});

function q6kPlace(lane) {
  const half = Math.floor(lane / 128);
  const quarter = Math.floor((lane % 128) / 32);
  const column = lane % 32;
  return {
    quarter,
    qlByte: 64 * half + 32 * (quarter % 2) + column,
    qlBits: quarter < 2 ? [0, 3] : [4, 7],
    qhByte: Q6_K_QH_OFFSET + 32 * half + column,
    qhBits: [2 * quarter, 2 * quarter + 1],
  };
}

function q6kCode(values, lane) {
  const place = q6kPlace(lane);
  const low = (values[place.qlByte] >> place.qlBits[0]) & 15;
  return low | (((values[place.qhByte] >> place.qhBits[0]) & 3) << 4);
}

function q6kScale(values, subblock) {
  const byte = values[Q6_K_SCALES_OFFSET + subblock];
  return byte >= 128 ? byte - 256 : byte;
}

/** The 256 weights of one 210-byte Q6_K block. */
export function q6kDecodeBlock(bytes) {
  const values = ggmlBytes(bytes, Q6_K_BLOCK);
  const d = ggmlHalf(values, Q6_K_D_OFFSET);
  const gains = Array.from({ length: 16 }, (_, j) => Math.fround(d * q6kScale(values, j)));
  return Float32Array.from(
    { length: Q6_K_BLOCK.weights },
    (_, lane) => gains[Math.floor(lane / Q6_K_SUBBLOCK_WEIGHTS)] * (q6kCode(values, lane) - Q6_K_CODE_OFFSET),
  );
}

/** Python Q6KTensor.explain of one block's weight, and the parts of the block it is read from. */
export function q6kExplainWeight(bytes, index) {
  const values = ggmlBytes(bytes, Q6_K_BLOCK);
  const lane = ggmlLane(index, Q6_K_BLOCK);
  const subblock = Math.floor(lane / Q6_K_SUBBLOCK_WEIGHTS);
  const place = q6kPlace(lane);
  const code = q6kCode(values, lane);
  const scale = q6kScale(values, subblock);
  const d = ggmlHalf(values, Q6_K_D_OFFSET);
  const gain = Math.fround(d * scale);
  const weight = Math.fround(gain * (code - Q6_K_CODE_OFFSET));
  const gainText = formatLabNumber(gain);
  return {
    positionInBlock: lane,
    subblock,
    qlByte: place.qlByte,
    qlNibble: place.quarter < 2 ? "low" : "high",
    qhByte: place.qhByte,
    qhBits: [place.qhBits[1], place.qhBits[0]], // high bit first, as Python's tuple
    scaleByte: Q6_K_SCALES_OFFSET + subblock,
    code,
    codeBits: `${binary(code >> 4, 2)} ${binary(code & 15, 4)}`,
    value: code - Q6_K_CODE_OFFSET,
    scale,
    d,
    gain,
    weight,
    // the int8 scale as Python's f-string prints an int: an ASCII minus
    gainFormula: `${formatLabNumber(d)} \u00d7 ${scale} = ${gainText}`,
    formula: `${gainText} \u00d7 (${code} \u2212 32) = ${formatLabNumber(weight)}`,
    parts: [
      ggmlPart(values, "ql", place.qlByte, place.qlBits, "code", [0, 3]),
      ggmlPart(values, "qh", place.qhByte, place.qhBits, "code", [4, 5]),
      ggmlPart(values, "scales", Q6_K_SCALES_OFFSET + subblock, [0, 7], "scale", [0, 7]),
      ...ggmlHalfParts(values, "d", Q6_K_D_OFFSET),
    ],
  };
}
