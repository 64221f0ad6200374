// GGUF TQ1_0 and TQ2_0 (Python lab.formats.ternary): BitNet b1.58's ternary weights, -1, 0 or +1
// times one float16 scale d per 256 weights.
//
//   weight = d × (code − 1), code in 0..2 (TQ2_0's code 3 reads as +2); the product is exact in float32.
//
// TQ1_0, 54 bytes: [ qs: 48 bytes, 5 trits a byte ][ qh: 4 bytes, 4 trits a byte ][ d (fp16, LE) ]
//   qs byte j (j < 32): weights j + 32k; qs byte 32 + j (j < 16): weights 160 + j + 16k;
//   qh byte j (j < 4): weights 240 + j + 4k. Trit t_k of byte b is (b × 3^k mod 256) × 3 >> 8.
// TQ2_0, 66 bytes: [ qs: 64 bytes, four 2-bit codes a byte ][ d (fp16, LE) ]
//   byte 32g + j, bits 2k..2k+1: the code of weight 128g + 32k + j.
import { formatLabNumber } from "../numbers.js";
import { ggmlBlock, ggmlBytes, ggmlHalf, ggmlHalfParts, ggmlLane, ggmlPart } from "./ggml.js";

export const TQ1_0_BLOCK = ggmlBlock({
  title: "TQ1_0",
  weights: 256,
  rule: "weight = d \u00d7 (trit \u2212 1)",
  parts: [
    ["qs", 48, "trits, five a byte", "codes"],
    ["qh", 4, "trits, four a byte", "codes"],
    ["d", 2, "d", "super"],
  ],
});

export const TQ2_0_BLOCK = ggmlBlock({
  title: "TQ2_0",
  weights: 256,
  rule: "weight = d \u00d7 (code \u2212 1)",
  parts: [
    ["qs", 64, "2-bit codes, four a byte", "codes"],
    ["d", 2, "d", "super"],
  ],
});

// TQ1_0's runs of base-3 bytes, in byte order: [first weight, bytes, trits a byte]
const TRIT_RUNS = [
  [0, 32, 5],
  [160, 16, 5],
  [240, 4, 4],
];
const TQ1_0_QS_BYTES = 48;

/** Where TQ1_0 keeps the trit of weight `lane`: its byte in the block, and k (trit t_k, 0 the top). */
export function tq1_0TritPlace(lane) {
  let start = 0;
  for (const [first, bytes, perByte] of TRIT_RUNS) {
    if (lane < first + bytes * perByte) {
      return { byte: start + ((lane - first) % bytes), k: Math.floor((lane - first) / bytes) };
    }
    start += bytes;
  }
  throw new RangeError(`TQ1_0 has 256 weights, got lane ${lane}`);
}

/** Trit t_k of a TQ1_0 byte: multiplying by 3^k (mod 256) brings it to the top. */
export function tq1_0Trit(byte, k) {
  return (((byte * 3 ** k) % 256) * 3) >> 8;
}

/** Where TQ2_0 keeps the code of weight `lane`: its byte and the shift of its two bits. */
export function tq2_0CodePlace(lane) {
  const group = Math.floor(lane / 128);
  const rest = lane % 128;
  return { byte: 32 * group + (rest % 32), shift: 2 * Math.floor(rest / 32) };
}

function ternaryWeights(bytes, block, numberOf) {
  const d = ggmlHalf(bytes, block.bytes - 2);
  return Float32Array.from({ length: block.weights }, (_, lane) => d * (numberOf(lane) - 1));
}

function ternaryExplained(bytes, block, lane, fields, number, codeParts) {
  const d = ggmlHalf(bytes, block.bytes - 2);
  const weight = Math.fround(d * (number - 1));
  return {
    positionInBlock: lane,
    ...fields,
    value: number - 1,
    d,
    weight,
    formula: `${formatLabNumber(d)} \u00d7 (${number} \u2212 1) = ${formatLabNumber(weight)}`,
    parts: [...ggmlHalfParts(bytes, "d", block.bytes - 2), ...codeParts],
  };
}

/** The 256 weights of one 54-byte TQ1_0 block. */
export function tq1_0DecodeBlock(bytes) {
  const values = ggmlBytes(bytes, TQ1_0_BLOCK);
  return ternaryWeights(values, TQ1_0_BLOCK, (lane) => {
    const { byte, k } = tq1_0TritPlace(lane);
    return tq1_0Trit(values[byte], k);
  });
}

/** Python TQ1_0Tensor.explain of one block's weight: the byte is the code of its five (or four)
 * weights, and the weight's trit is read from all eight of its bits. */
export function tq1_0ExplainWeight(bytes, index) {
  const values = ggmlBytes(bytes, TQ1_0_BLOCK);
  const lane = ggmlLane(index, TQ1_0_BLOCK);
  const { byte, k } = tq1_0TritPlace(lane);
  const part = byte < TQ1_0_QS_BYTES ? "qs" : "qh";
  const code = values[byte];
  const trit = tq1_0Trit(code, k);
  const fields = {
    byte,
    part,
    code,
    tritPlace: k,
    trit,
    tritFormula: `(${code} \u00d7 ${3 ** k} mod 256) \u00d7 3 >> 8 = ${trit}`,
  };
  return ternaryExplained(values, TQ1_0_BLOCK, lane, fields, trit, [ggmlPart(values, part, byte, [0, 7], "code", [0, 7])]);
}

/** The 256 weights of one 66-byte TQ2_0 block. */
export function tq2_0DecodeBlock(bytes) {
  const values = ggmlBytes(bytes, TQ2_0_BLOCK);
  return ternaryWeights(values, TQ2_0_BLOCK, (lane) => {
    const { byte, shift } = tq2_0CodePlace(lane);
    return (values[byte] >> shift) & 3;
  });
}

/** Python TQ2_0Tensor.explain of one block's weight, and the two bits its code is read from. */
export function tq2_0ExplainWeight(bytes, index) {
  const values = ggmlBytes(bytes, TQ2_0_BLOCK);
  const lane = ggmlLane(index, TQ2_0_BLOCK);
  const { byte, shift } = tq2_0CodePlace(lane);
  const code = (values[byte] >> shift) & 3;
  const codeParts = [ggmlPart(values, "qs", byte, [shift, shift + 1], "code", [0, 1])];
  return ternaryExplained(values, TQ2_0_BLOCK, lane, { byte, shift, code }, code, codeParts);
}
