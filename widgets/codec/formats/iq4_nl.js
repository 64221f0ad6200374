// GGUF IQ4_NL's codebook (Python lab.formats.iq4_nl): a nibble indexes 16 fixed non-linear levels.
import { checkCode } from "../arrays.js";

/** llama.cpp's kvalues_iq4nl: dense near zero, wide at the ends, and lopsided (-127 against 113). */
export const IQ4_NL_KVALUES = Object.freeze([-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113]);

/** The codebook entry one IQ4_NL index stands for before the scale (weight = d * KVALUES[code]). */
export function iq4NlValue(code) {
  return IQ4_NL_KVALUES[checkCode(code, 16, "IQ4_NL index")];
}
