// GGUF Q4_0's element code (Python lab.formats.q4_0): the nibble minus 8, before the block's scale d.
import { checkCode } from "../arrays.js";

/** What Q4_0 subtracts from every code: 0..15 becomes -8..7, the extra step at the negative end. */
export const Q4_0_CODE_OFFSET = 8;

/** The value one Q4_0 code stands for before the scale: code - 8 (weight = d * (code - 8)). */
export function q4_0Value(code) {
  return checkCode(code, 16, "Q4_0 code") - Q4_0_CODE_OFFSET;
}
