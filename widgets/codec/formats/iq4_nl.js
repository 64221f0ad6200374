// GGUF IQ4_NL (Python lab.formats.iq4_nl): a nibble indexes 16 fixed non-linear levels; 18 bytes
// laid out as Q4_0's, byte 2 + j holding the index of weight j (low nibble) and of j + 16 (high).
//
//   weight = d × KVALUES[code], the product rounded to float32 as gguf-py does.
import { checkCode } from "../arrays.js";
import { formatLabNumber } from "../numbers.js";
import { ggmlBlock, ggmlBytes, ggmlHalf, ggmlHalfParts, ggmlHalvesCode, ggmlHalvesPlace, ggmlLane, ggmlPart } from "./ggml.js";

/** llama.cpp's kvalues_iq4nl: dense near zero, wide at the ends, and lopsided (-127 against 113). */
export const IQ4_NL_KVALUES = Object.freeze([-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113]);

export const IQ4_NL_BLOCK = ggmlBlock({
  title: "IQ4_NL",
  weights: 32,
  rule: "weight = d \u00d7 KVALUES[code]",
  parts: [
    ["d", 2, "d", "super"],
    ["qs", 16, "nibbles", "codes"],
  ],
});

/** The codebook entry one IQ4_NL index stands for before the scale (weight = d * KVALUES[code]). */
export function iq4NlValue(code) {
  return IQ4_NL_KVALUES[checkCode(code, 16, "IQ4_NL index")];
}

/** The 32 weights of one 18-byte IQ4_NL block. */
export function iq4NlDecodeBlock(bytes) {
  const values = ggmlBytes(bytes, IQ4_NL_BLOCK);
  const d = ggmlHalf(values, 0);
  return Float32Array.from({ length: IQ4_NL_BLOCK.weights }, (_, lane) => d * IQ4_NL_KVALUES[ggmlHalvesCode(values, lane, 2)]);
}

/** Python IQ4NLTensor.explain of one block's weight, and the parts of the block it is read from. */
export function iq4NlExplainWeight(bytes, index) {
  const values = ggmlBytes(bytes, IQ4_NL_BLOCK);
  const lane = ggmlLane(index, IQ4_NL_BLOCK);
  const place = ggmlHalvesPlace(lane, 2);
  const code = ggmlHalvesCode(values, lane, 2);
  const value = IQ4_NL_KVALUES[code];
  const d = ggmlHalf(values, 0);
  const weight = Math.fround(d * value);
  const dText = formatLabNumber(d);
  return {
    positionInBlock: lane,
    byte: place.byte,
    nibble: place.nibble,
    code,
    value,
    d,
    weight,
    // the codebook entry as Python's f-string prints an int: an ASCII minus
    formula: `${dText} \u00d7 KVALUES[${code}] = ${dText} \u00d7 ${value} = ${formatLabNumber(weight)}`,
    parts: [...ggmlHalfParts(values, "d", 0), ggmlPart(values, "qs", place.byte, place.bits, "code", [0, 3])],
  };
}
