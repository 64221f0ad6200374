// IEEE float16 (Q4_K's d and dmin), decoded and encoded exactly as numpy does.
import { checkCode } from "../arrays.js";
import { describe } from "../errors.js";
import { frexpExponent, pow2, roundHalfEven, signbit } from "../floats.js";

// IEEE binary16, bit 15 first:  s eeeee mmmmmmmmmm   (exponent bias 15)
//   exponent field 0      -> (-1)^s * m * 2^-24           zero and subnormals
//   exponent field 1..30  -> (-1)^s * (1024 + m) * 2^(e-25)
//   exponent field 31     -> ±infinity (m = 0) or NaN

export function fp16Decode(bits16) {
  checkCode(bits16, 65536, "float16 bit pattern");
  const sign = bits16 >> 15;
  const exponentField = (bits16 >> 10) & 31;
  const fraction = bits16 & 1023;
  let magnitude;
  if (exponentField === 31) magnitude = fraction === 0 ? Infinity : NaN;
  else if (exponentField === 0) magnitude = fraction * pow2(-24);
  else magnitude = (1024 + fraction) * pow2(exponentField - 25);
  return sign ? -magnitude : magnitude;
}

const FP16_OVERFLOW = 65520; // 65504 plus half a step: from here on float16 rounds to infinity
const FP16_MIN_NORMAL = pow2(-14);

/**
 * The float16 nearest to x (ties to even, rounded once straight from float64, as numpy's
 * astype(float16) does for Q4_K's d and dmin in lab.formats.q4k.from_parts). Returns {ok, bits, value,
 * message}: bits is the 16-bit pattern, value what it decodes to; a NaN, an infinity or a
 * magnitude that rounds beyond 65504 gives ok false and a message, where Python raises.
 */
export function fp16Encode(x) {
  if (typeof x !== "number" || !Number.isFinite(x)) {
    return { ok: false, bits: null, value: null, message: `a float16 here must be a finite number, got ${describe(x)}` };
  }
  const magnitude = Math.abs(x);
  if (magnitude >= FP16_OVERFLOW) {
    return { ok: false, bits: null, value: null, message: `${x} is beyond float16's largest finite value, ±65504` };
  }
  let magnitudeBits;
  if (magnitude < FP16_MIN_NORMAL) {
    // Zero and subnormals: steps of 2^-24; 1024 steps is the smallest normal, 0x0400, as it should be.
    magnitudeBits = roundHalfEven(magnitude / pow2(-24));
  } else {
    const exponent = frexpExponent(magnitude) - 1; // magnitude in [2^exponent, 2^(exponent+1))
    let significand = roundHalfEven(magnitude / pow2(exponent - 10)); // 1024..2048
    let field = exponent + 15;
    if (significand === 2048) {
      significand = 1024;
      field += 1;
    }
    magnitudeBits = (field << 10) | (significand - 1024);
  }
  const bits = magnitudeBits | (signbit(x) ? 0x8000 : 0);
  return { ok: true, bits, value: fp16Decode(bits), message: "" };
}
