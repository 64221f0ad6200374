// GGUF Q5_1 (Python lab.formats.q5_1): 32 five-bit codes, a float16 scale d and minimum m; 24 bytes.
//
//   byte  0    1    2    3    4    5    6    7    8        9        ...   23
//        [ d (fp16, LE) ][ m (fp16, LE) ][ qh (uint32, LE)   ][ c16|c0 ][ c17|c1 ] ... [ c31|c15 ]
//   qh bit j = bit 4 of the code of weight j: byte 4 + j // 8, bit j % 8
//   byte 8 + j: low nibble = bits 3..0 of the code of weight j, high nibble = of weight j + 16
//
//   weight = d × code + m: d × code rounded to float32, then the sum, as ggml does.
import { formatLabNumber } from "../numbers.js";
import { ggmlBlock, ggmlBytes, ggmlFiveBitCode, ggmlFiveBitFields, ggmlFiveBitParts, ggmlHalf, ggmlHalfParts, ggmlLane } from "./ggml.js";

const Q5_1_QH_START = 4;

export const Q5_1_BLOCK = ggmlBlock({
  title: "Q5_1",
  weights: 32,
  rule: "weight = d \u00d7 code + m",
  parts: [
    ["d", 2, "d", "super"],
    ["m", 2, "m", "super"],
    ["qh", 4, "fifth bits", "high"],
    ["qs", 16, "low nibbles", "codes"],
  ],
});

/** The 32 weights of one 24-byte Q5_1 block. */
export function q5_1DecodeBlock(bytes) {
  const values = ggmlBytes(bytes, Q5_1_BLOCK);
  const d = ggmlHalf(values, 0);
  const m = ggmlHalf(values, 2);
  return Float32Array.from(
    { length: Q5_1_BLOCK.weights },
    (_, lane) => Math.fround(d * ggmlFiveBitCode(values, lane, Q5_1_QH_START)) + m,
  );
}

/** Python Q5_1Tensor.explain of one block's weight, and the parts of the block it is read from. */
export function q5_1ExplainWeight(bytes, index) {
  const values = ggmlBytes(bytes, Q5_1_BLOCK);
  const lane = ggmlLane(index, Q5_1_BLOCK);
  const code = ggmlFiveBitCode(values, lane, Q5_1_QH_START);
  const d = ggmlHalf(values, 0);
  const m = ggmlHalf(values, 2);
  const weight = Math.fround(Math.fround(d * code) + m);
  return {
    positionInBlock: lane,
    ...ggmlFiveBitFields(lane, code, Q5_1_QH_START),
    d,
    m,
    weight,
    formula: `${formatLabNumber(d)} \u00d7 ${code} + ${formatLabNumber(m)} = ${formatLabNumber(weight)}`,
    parts: [...ggmlHalfParts(values, "d", 0), ...ggmlHalfParts(values, "m", 2), ...ggmlFiveBitParts(values, lane, Q5_1_QH_START)],
  };
}
