// The same nibble read as an integer (Python lab.codes.nibble): UINT4 and INT4, next to E2M1.
import { checkCode } from "../arrays.js";

/** The nibble as an unsigned integer 0..15: the Q4_K element code before gain and offset. */
export function uint4(code) {
  return checkCode(code, 16, "nibble");
}

/** The nibble as two's complement: bit 3 weighs -8, so 1000 is -8 and 1111 is -1. */
export function int4(code) {
  checkCode(code, 16, "nibble");
  return code >= 8 ? code - 16 : code;
}
