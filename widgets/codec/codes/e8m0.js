// E8M0 (Python lab.codes.e8m0): the MX scale byte, a bare power of two.
import { checkCode } from "../arrays.js";
import { describe, labError } from "../errors.js";
import { frexpExponent, pow2 } from "../floats.js";
import { formatLabNumber } from "../numbers.js";
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
    formula: `2^(${byte} \u2212 127) = 2^${exponent} = ${formatLabNumber(value)}`.replace(/-/g, "\u2212"),
  };
}

// Choosing a byte is a rule (Python lab.codes.e8m0.encode), and the rules disagree by one step:
//   "ocp" floor: exponent = floor(log2(amax)) − emax, emax = floor(log2(elementMax)) (2 for E2M1's 6)
//   "mlx" ceil:  exponent = ceil(log2(float32(amax / elementMax)))
// A zero amax gets exponent 0; exponents are clamped to −127..127.
export const E8M0_SCALE_RULES = Object.freeze(["ocp", "mlx"]);

/** The E8M0 byte a rule stores for a block with absolute maximum `amax` (lab.codes.e8m0.encode). */
export function e8m0Encode(amax, rule = "ocp", elementMax = 6) {
  if (typeof amax !== "number" || Number.isNaN(amax)) throw labError("NonFiniteError", `block absolute maximum must be a number, got ${describe(amax)}`);
  if (amax < 0) throw labError("NonFiniteError", "a block absolute maximum cannot be negative");
  let exponent;
  if (rule === "ocp") {
    exponent = frexpExponent(amax) - 1 - (frexpExponent(elementMax) - 1);
  } else if (rule === "mlx") {
    const ratio = Math.fround(amax / elementMax);
    // ceil(log2(ratio)), exact: a power of two sits one below its frexp exponent.
    // A ratio past float32 is infinite; numpy's frexp gives it exponent 0, and so does Python.
    exponent = Number.isFinite(ratio) ? frexpExponent(ratio) - (isPowerOfTwo(ratio) ? 1 : 0) : 0;
  } else {
    throw labError("RuleError", `unknown E8M0 scale rule ${describe(rule)}; expected one of ${E8M0_SCALE_RULES.join(", ")}`);
  }
  if (amax === 0) exponent = 0;
  return Math.min(Math.max(exponent, -E8M0_BIAS), E8M0_BIAS) + E8M0_BIAS;
}

function isPowerOfTwo(magnitude) {
  return magnitude > 0 && Number.isFinite(magnitude) && magnitude === pow2(frexpExponent(magnitude) - 1);
}

/**
 * The E8M0 byte ml_dtypes' float8_e8m0fnu cast gives a float32: the nearest power of two, a tie
 * (1.5 · 2^e) going up, as IEEE round-half-even of a significand with no fraction bits does;
 * below 2^−127 it stays at 2^−127 (byte 0), and zero, a negative, NaN or a value rounding past
 * 2^127 becomes the NaN byte 0xFF.
 */
export function e8m0Nearest(x) {
  const value = Math.fround(x);
  if (!(value > 0) || !Number.isFinite(value)) return E8M0_NAN_BYTE;
  const exponent = frexpExponent(value) - 1; // value in [2^exponent, 2^(exponent+1))
  const rounded = value >= 1.5 * pow2(exponent) ? exponent + 1 : exponent;
  if (rounded > E8M0_BIAS) return E8M0_NAN_BYTE;
  return Math.max(rounded, -E8M0_BIAS) + E8M0_BIAS;
}
