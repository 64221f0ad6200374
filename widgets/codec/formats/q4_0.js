// GGUF Q4_0 (Python lab.formats.q4_0): 32 four-bit codes share one float16 scale d; 18 bytes.
//
//   byte  0    1    2        3        ...   17
//        [ d (fp16, LE) ][ c16|c0 ][ c17|c1 ] ... [ c31|c15 ]
//   byte 2 + j: low nibble = code of weight j, high nibble = code of weight j + 16
//
//   weight = d × (code − 8), the product rounded to float32 as gguf-py does.
import { checkCode } from "../arrays.js";
import { formatLabNumber } from "../numbers.js";
import { ggmlBlock, ggmlBytes, ggmlHalf, ggmlHalfParts, ggmlHalvesCode, ggmlHalvesPlace, ggmlLane, ggmlPart } from "./ggml.js";

/** What Q4_0 subtracts from every code: 0..15 becomes -8..7, the extra step at the negative end. */
export const Q4_0_CODE_OFFSET = 8;

export const Q4_0_BLOCK = ggmlBlock({
  title: "Q4_0",
  weights: 32,
  rule: "weight = d \u00d7 (code \u2212 8)",
  parts: [
    ["d", 2, "d", "super"],
    ["qs", 16, "nibbles", "codes"],
  ],
});

/** The value one Q4_0 code stands for before the scale: code - 8 (weight = d * (code - 8)). */
export function q4_0Value(code) {
  return checkCode(code, 16, "Q4_0 code") - Q4_0_CODE_OFFSET;
}

/** The 32 weights of one 18-byte Q4_0 block. */
export function q4_0DecodeBlock(bytes) {
  const values = ggmlBytes(bytes, Q4_0_BLOCK);
  const d = ggmlHalf(values, 0);
  return Float32Array.from({ length: Q4_0_BLOCK.weights }, (_, lane) => d * (ggmlHalvesCode(values, lane, 2) - Q4_0_CODE_OFFSET));
}

/** Python Q4_0Tensor.explain of one block's weight, and the parts of the block it is read from. */
export function q4_0ExplainWeight(bytes, index) {
  const values = ggmlBytes(bytes, Q4_0_BLOCK);
  const lane = ggmlLane(index, Q4_0_BLOCK);
  const place = ggmlHalvesPlace(lane, 2);
  const code = ggmlHalvesCode(values, lane, 2);
  const d = ggmlHalf(values, 0);
  const weight = Math.fround(d * (code - Q4_0_CODE_OFFSET));
  return {
    positionInBlock: lane,
    byte: place.byte,
    nibble: place.nibble,
    code,
    value: code - Q4_0_CODE_OFFSET,
    d,
    weight,
    formula: `${formatLabNumber(d)} \u00d7 (${code} \u2212 ${Q4_0_CODE_OFFSET}) = ${formatLabNumber(weight)}`,
    parts: [...ggmlHalfParts(values, "d", 0), ggmlPart(values, "qs", place.byte, place.bits, "code", [0, 3])],
  };
}
