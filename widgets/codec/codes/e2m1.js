// E2M1 (Python lab.codes.e2m1): the 4-bit float every MXFP4 and NVFP4 element is stored as.
import { checkCode } from "../arrays.js";
import { describe, labError } from "../errors.js";
import { signbit } from "../floats.js";
import { formatLabNumber } from "../numbers.js";
import { binary } from "./bits.js";

// E2M1 code (a nibble), bit 3 first:  s e1 e0 m0
//   sign = bit 3, exponent field = bits 2..1 (bias 1), fraction = bit 0
//   exponent field 0  -> (-1)^s * 0.5 * m0            zero or the subnormal 0.5
//   exponent field >0 -> (-1)^s * 2^(e-1) * (1 + m0/2)
// No infinity, no NaN; code 8 (1000) is negative zero.

/** Value of every E2M1 code 0..15, negative zero included. */
export const E2M1_VALUES = Object.freeze([
  0, 0.5, 1, 1.5, 2, 3, 4, 6, -0, -0.5, -1, -1.5, -2, -3, -4, -6,
]);
export const E2M1_MAX = 6;

export function e2m1Decode(code) {
  return E2M1_VALUES[checkCode(code, 16, "E2M1 code")];
}

// Midpoints between neighbouring magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6 (exact in float64).
const E2M1_MIDPOINTS = Object.freeze([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5]);
/** The E2M1 rounding rules by the name lab.codes.e2m1 gives them. */
export const E2M1_ROUNDING_RULES = Object.freeze(["rne", "mlx"]);

/**
 * Nearest E2M1 code to x (Python lab.codes.e2m1.encode), saturating at ±6:
 *   "rne": round half to even with the sign kept, so −0 and −1e-9 give 1000 (−0); the OCP
 *          spec's rounding, and ml_dtypes' float4_e2m1fn cast.
 *   "mlx": a tie keeps the lower magnitude, and whatever rounds to zero is stored as +0 (0000);
 *          MLX, ggml and the scale lab's convention.
 */
export function e2m1Encode(x, rounding = "rne") {
  if (!E2M1_ROUNDING_RULES.includes(rounding)) {
    throw labError("RuleError", `unknown E2M1 rounding rule ${describe(rounding)}; expected one of ${E2M1_ROUNDING_RULES.join(", ")}`);
  }
  if (typeof x !== "number") throw labError("DTypeError", `value to encode as E2M1 must be a number, got ${describe(x)}`);
  if (!Number.isFinite(x)) throw labError("NonFiniteError", `value to encode as E2M1 is NaN or infinity: ${x}`);
  const magnitude = Math.abs(x);
  // The magnitude code is how many midpoints the magnitude gets past; exactly on one is a tie,
  // which "rne" sends to the even code (the upper one where the lower code is odd).
  let magnitudeCode = 0;
  E2M1_MIDPOINTS.forEach((midpoint, lowerCode) => {
    const tieGoesUp = rounding === "rne" && lowerCode % 2 === 1;
    if (magnitude > midpoint || (tieGoesUp && magnitude === midpoint)) magnitudeCode += 1;
  });
  const negative = signbit(x) && (rounding === "rne" || magnitudeCode > 0);
  return magnitudeCode | (negative ? 8 : 0);
}

/** Everything needed to decode one E2M1 code by hand (Python lab.codes.e2m1.explain). */
export function e2m1Explain(code) {
  checkCode(code, 16, "E2M1 code");
  const sign = code >> 3;
  const exponentField = (code >> 1) & 3;
  const fraction = code & 1;
  const value = E2M1_VALUES[code];
  const signText = sign === 0 ? "+1" : "\u22121";
  let kind;
  let formula;
  if (exponentField === 0) {
    kind = fraction === 0 ? "zero" : "subnormal";
    formula = `(${signText}) \u00d7 2^(1 \u2212 1) \u00d7 (0 + ${fraction}/2) = ${formatLabNumber(value)}`;
  } else {
    kind = "normal";
    formula = `(${signText}) \u00d7 2^(${exponentField} \u2212 1) \u00d7 (1 + ${fraction}/2) = ${formatLabNumber(value)}`;
  }
  return { code, bits: binary(code, 4), sign, exponentField, fraction, kind, value, formula };
}
