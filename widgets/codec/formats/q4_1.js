// GGUF Q4_1 (Python lab.formats.q4_1): 32 four-bit codes, a float16 scale d and minimum m; 20 bytes.
//
//   byte  0    1    2    3    4        5        ...   19
//        [ d (fp16, LE) ][ m (fp16, LE) ][ c16|c0 ][ c17|c1 ] ... [ c31|c15 ]
//   byte 4 + j: low nibble = code of weight j, high nibble = code of weight j + 16
//
//   weight = d × code + m: d × code rounded to float32, then the sum, as ggml does.
import { formatLabNumber } from "../numbers.js";
import { ggmlBlock, ggmlBytes, ggmlHalf, ggmlHalfParts, ggmlHalvesCode, ggmlHalvesPlace, ggmlLane, ggmlPart } from "./ggml.js";

export const Q4_1_BLOCK = ggmlBlock({
  title: "Q4_1",
  weights: 32,
  rule: "weight = d \u00d7 code + m",
  parts: [
    ["d", 2, "d", "super"],
    ["m", 2, "m", "super"],
    ["qs", 16, "nibbles", "codes"],
  ],
});

/** The 32 weights of one 20-byte Q4_1 block. */
export function q4_1DecodeBlock(bytes) {
  const values = ggmlBytes(bytes, Q4_1_BLOCK);
  const d = ggmlHalf(values, 0);
  const m = ggmlHalf(values, 2);
  return Float32Array.from({ length: Q4_1_BLOCK.weights }, (_, lane) => Math.fround(d * ggmlHalvesCode(values, lane, 4)) + m);
}

/** Python Q4_1Tensor.explain of one block's weight, and the parts of the block it is read from. */
export function q4_1ExplainWeight(bytes, index) {
  const values = ggmlBytes(bytes, Q4_1_BLOCK);
  const lane = ggmlLane(index, Q4_1_BLOCK);
  const place = ggmlHalvesPlace(lane, 4);
  const code = ggmlHalvesCode(values, lane, 4);
  const d = ggmlHalf(values, 0);
  const m = ggmlHalf(values, 2);
  const weight = Math.fround(Math.fround(d * code) + m);
  return {
    positionInBlock: lane,
    byte: place.byte,
    nibble: place.nibble,
    code,
    d,
    m,
    weight,
    formula: `${formatLabNumber(d)} \u00d7 ${code} + ${formatLabNumber(m)} = ${formatLabNumber(weight)}`,
    parts: [...ggmlHalfParts(values, "d", 0), ...ggmlHalfParts(values, "m", 2), ggmlPart(values, "qs", place.byte, place.bits, "code", [0, 3])],
  };
}
