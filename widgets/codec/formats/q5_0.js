// GGUF Q5_0 (Python lab.formats.q5_0): 32 five-bit codes share one float16 scale d; 22 bytes.
//
//   byte  0    1    2    3    4    5    6        7        ...   21
//        [ d (fp16, LE) ][ qh (uint32, LE)   ][ c16|c0 ][ c17|c1 ] ... [ c31|c15 ]
//   qh bit j = bit 4 of the code of weight j: byte 2 + j // 8, bit j % 8
//   byte 6 + j: low nibble = bits 3..0 of the code of weight j, high nibble = of weight j + 16
//
//   weight = d × (code − 16), the product rounded to float32 as gguf-py does.
import { formatLabNumber } from "../numbers.js";
import { ggmlBlock, ggmlBytes, ggmlFiveBitCode, ggmlFiveBitFields, ggmlFiveBitParts, ggmlHalf, ggmlHalfParts, ggmlLane } from "./ggml.js";

export const Q5_0_CODE_OFFSET = 16;
const Q5_0_QH_START = 2;

export const Q5_0_BLOCK = ggmlBlock({
  title: "Q5_0",
  weights: 32,
  rule: "weight = d \u00d7 (code \u2212 16)",
  parts: [
    ["d", 2, "d", "super"],
    ["qh", 4, "fifth bits", "high"],
    ["qs", 16, "low nibbles", "codes"],
  ],
});

/** The 32 weights of one 22-byte Q5_0 block. */
export function q5_0DecodeBlock(bytes) {
  const values = ggmlBytes(bytes, Q5_0_BLOCK);
  const d = ggmlHalf(values, 0);
  return Float32Array.from(
    { length: Q5_0_BLOCK.weights },
    (_, lane) => d * (ggmlFiveBitCode(values, lane, Q5_0_QH_START) - Q5_0_CODE_OFFSET),
  );
}

/** Python Q5_0Tensor.explain of one block's weight, and the parts of the block it is read from. */
export function q5_0ExplainWeight(bytes, index) {
  const values = ggmlBytes(bytes, Q5_0_BLOCK);
  const lane = ggmlLane(index, Q5_0_BLOCK);
  const code = ggmlFiveBitCode(values, lane, Q5_0_QH_START);
  const d = ggmlHalf(values, 0);
  const weight = Math.fround(d * (code - Q5_0_CODE_OFFSET));
  return {
    positionInBlock: lane,
    ...ggmlFiveBitFields(lane, code, Q5_0_QH_START),
    value: code - Q5_0_CODE_OFFSET,
    d,
    weight,
    formula: `${formatLabNumber(d)} \u00d7 (${code} \u2212 ${Q5_0_CODE_OFFSET}) = ${formatLabNumber(weight)}`,
    parts: [...ggmlHalfParts(values, "d", 0), ...ggmlFiveBitParts(values, lane, Q5_0_QH_START)],
  };
}
