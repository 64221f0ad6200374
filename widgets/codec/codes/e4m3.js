// E4M3 "fn" (Python lab.codes.e4m3): the MXFP8 element and the NVFP4 block scale.
import { checkCode } from "../arrays.js";
import { describe, labError } from "../errors.js";
import { frexpExponent, pow2, roundHalfEven, signbit } from "../floats.js";
import { formatLabNumber } from "../numbers.js";
import { binary, hexByte } from "./bits.js";

// E4M3 byte, bit 7 first:  s eeee mmm   (exponent bias 7)
//   exponent field 0      -> (-1)^s * 2^-6 * (m/8)          subnormal, steps of 2^-9
//   exponent field 1..15  -> (-1)^s * 2^(e-7) * (1 + m/8)
//   0x7F and 0xFF         -> NaN (no infinities; 0x7E = 448 is the largest)
const E4M3_BIAS = 7;
const E4M3_MAX_BYTE = 0x7e;
const E4M3_MIN_NORMAL = pow2(-6);
const E4M3_SUBNORMAL_STEP = pow2(-9);

function e4m3Fields(byte) {
  return { sign: byte >> 7, exponentField: (byte >> 3) & 15, fraction: byte & 7 };
}

export function e4m3Decode(byte) {
  checkCode(byte, 256, "E4M3 byte");
  if ((byte & 0x7f) === 0x7f) return NaN;
  const { sign, exponentField, fraction } = e4m3Fields(byte);
  const magnitude =
    exponentField === 0 ? fraction * E4M3_SUBNORMAL_STEP : (1 + fraction / 8) * pow2(exponentField - E4M3_BIAS);
  return sign ? -magnitude : magnitude;
}

/** Nearest E4M3 byte: round half to even, saturating at ±448, the sign of zero kept (lab.codes.e4m3.encode). */
export function e4m3Encode(x) {
  if (typeof x !== "number") throw labError("DTypeError", `value to encode as E4M3 must be a number, got ${describe(x)}`);
  if (!Number.isFinite(x)) throw labError("NonFiniteError", `value to encode as E4M3 is NaN or infinity: ${x}`);
  const magnitude = Math.abs(x);
  const exponent = Math.max(frexpExponent(magnitude) - 1, -6); // subnormals share the step of 2^-6
  const steps = roundHalfEven(magnitude / pow2(exponent - 3)); // 8..16 for normals, 0..8 below
  // Codes run on across binades: (exponent + 7) * 8 + steps - 8, and steps alone below 2^-6.
  const magnitudeCode = magnitude < E4M3_MIN_NORMAL ? steps : (exponent + E4M3_BIAS) * 8 + steps - 8;
  return Math.min(magnitudeCode, E4M3_MAX_BYTE) | (signbit(x) ? 0x80 : 0);
}

/** Python lab.codes.e4m3.explain. */
export function e4m3Explain(byte) {
  checkCode(byte, 256, "E4M3 byte");
  const { sign, exponentField, fraction } = e4m3Fields(byte);
  const value = e4m3Decode(byte);
  const signText = sign === 0 ? "+1" : "\u22121";
  let kind;
  let formula;
  if ((byte & 0x7f) === 0x7f) {
    kind = "NaN";
    formula = `${hexByte(byte)} is NaN in E4M3fn (exponent 1111, fraction 111)`;
  } else if (exponentField === 0) {
    kind = fraction === 0 ? "zero" : "subnormal";
    formula = `(${signText}) \u00d7 2^(1 \u2212 7) \u00d7 (0 + ${fraction}/8) = ${formatLabNumber(value)}`;
  } else {
    kind = "normal";
    formula = `(${signText}) \u00d7 2^(${exponentField} \u2212 7) \u00d7 (1 + ${fraction}/8) = ${formatLabNumber(value)}`;
  }
  return {
    byte,
    hex: hexByte(byte),
    bits: binary(byte, 8),
    sign,
    exponentField,
    fraction,
    kind,
    value,
    formula: formula.replace(/-/g, "\u2212"),
  };
}
