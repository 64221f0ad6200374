// GGUF Q8_0 (Python lab.formats.q8_0): 32 int8 codes share one float16 scale d; 34 bytes.
//
//   byte  0    1    2    3   ...   33
//        [ d (fp16, LE) ][ q0 ][ q1 ] ... [ q31 ]    q_i int8 (two's complement)
//
//   weight i = d × q_i, the product rounded to float32 as gguf-py does.
import { formatLabNumber } from "../numbers.js";
import { ggmlBlock, ggmlBytes, ggmlHalf, ggmlHalfParts, ggmlLane, ggmlPart } from "./ggml.js";

export const Q8_0_BLOCK = ggmlBlock({
  title: "Q8_0",
  weights: 32,
  rule: "weight = d \u00d7 code",
  parts: [
    ["d", 2, "d", "super"],
    ["qs", 32, "codes", "codes"],
  ],
});

function q8_0Code(values, lane) {
  const byte = values[2 + lane];
  return byte >= 128 ? byte - 256 : byte;
}

/** The 32 weights of one 34-byte Q8_0 block. */
export function q8_0DecodeBlock(bytes) {
  const values = ggmlBytes(bytes, Q8_0_BLOCK);
  const d = ggmlHalf(values, 0);
  return Float32Array.from({ length: Q8_0_BLOCK.weights }, (_, lane) => d * q8_0Code(values, lane));
}

/** Python Q8_0Tensor.explain of one block's weight, and the parts of the block it is read from. */
export function q8_0ExplainWeight(bytes, index) {
  const values = ggmlBytes(bytes, Q8_0_BLOCK);
  const lane = ggmlLane(index, Q8_0_BLOCK);
  const code = q8_0Code(values, lane);
  const d = ggmlHalf(values, 0);
  const weight = Math.fround(d * code);
  return {
    positionInBlock: lane,
    code,
    d,
    weight,
    // the code as Python's f-string prints an int: an ASCII minus
    formula: `${formatLabNumber(d)} \u00d7 ${code} = ${formatLabNumber(weight)}`,
    parts: [...ggmlHalfParts(values, "d", 0), ggmlPart(values, "qs", 2 + lane, [0, 7], "code", [0, 7])],
  };
}
