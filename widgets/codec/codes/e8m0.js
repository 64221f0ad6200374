// E8M0 (Python lab.codes.e8m0): the MX scale byte, a bare power of two.
import { checkCode } from "../arrays.js";
import { pow2 } from "../floats.js";
import { formatG } from "../numbers.js";
import { binary, hexByte } from "./bits.js";

// E8M0: eight exponent bits, bias 127, no sign, no fraction.
//   byte 0..254 -> 2^(byte - 127)   (there is no zero)
//   byte 255    -> NaN
const E8M0_BIAS = 127;
const E8M0_NAN_BYTE = 0xff;

export function e8m0Decode(byte) {
  checkCode(byte, 256, "E8M0 byte");
  return byte === E8M0_NAN_BYTE ? NaN : pow2(byte - E8M0_BIAS);
}

/** Python lab.codes.e8m0.explain. */
export function e8m0Explain(byte) {
  checkCode(byte, 256, "E8M0 byte");
  if (byte === E8M0_NAN_BYTE) {
    return {
      byte,
      hex: "0xFF",
      bits: "11111111",
      kind: "NaN",
      exponent: null,
      value: NaN,
      formula: "0xFF is reserved for NaN: every element that uses this scale decodes to NaN",
    };
  }
  const exponent = byte - E8M0_BIAS;
  const value = e8m0Decode(byte);
  return {
    byte,
    hex: hexByte(byte),
    bits: binary(byte, 8),
    kind: "power of two",
    exponent,
    value,
    formula: `2^(${byte} \u2212 127) = 2^${exponent} = ${formatG(value, 6)}`.replace(/-/g, "\u2212"),
  };
}
