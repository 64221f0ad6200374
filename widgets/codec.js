// The four-bit lab's one JavaScript codec, shared by every browser widget.
//
// It mirrors the Python codec in lab/ number for number: tests/js/codec.test.mjs checks every
// function here against golden vectors that tests/js/make_golden.py writes from the Python
// code, comparing IEEE bits (so -0 and +0 differ, and float32 rounding must match exactly).
// Where Python rounds a float64 result to float32, this file calls Math.fround at the same
// place; a float32 operation on float32 inputs equals Math.fround of the float64 operation.
//
// Names follow the Python module they mirror, in camelCase: lab.e2m1.explain -> e2m1Explain,
// and its dict key "exponent_field" -> exponentField. Bad input throws an Error whose `name`
// is the Python error class for the same input (lab.errors: ShapeError, CodeRangeError, ...).
//
// A plain ES module: no imports, no DOM, no network.

// ---------------------------------------------------------------------------------------------
// Errors and input checks
// ---------------------------------------------------------------------------------------------

/** An Error named after the Python exception the lab raises for the same input. */
function labError(name, message) {
  const error = new Error(message);
  error.name = name;
  return error;
}

function isListLike(value) {
  return Array.isArray(value) || (ArrayBuffer.isView(value) && !(value instanceof DataView));
}

function describe(value) {
  if (typeof value === "string") return JSON.stringify(value);
  if (Object.is(value, -0)) return "-0";
  return String(value);
}

/** An integer code in 0..limit-1, or a DTypeError / CodeRangeError like lab._arrays.as_code_array. */
function checkCode(code, limit, what) {
  if (typeof code !== "number" || !Number.isInteger(code)) {
    throw labError("DTypeError", `${what} must be an integer in 0..${limit - 1}, got ${describe(code)}`);
  }
  if (code < 0 || code >= limit) {
    throw labError("CodeRangeError", `${what} must be in 0..${limit - 1}, got ${code}`);
  }
  return code;
}

function checkCodes(codes, limit, what) {
  if (!isListLike(codes)) {
    throw labError("DTypeError", `${what}s must be a list of integers in 0..${limit - 1}, got ${describe(codes)}`);
  }
  return Array.from(codes, (code) => checkCode(code, limit, what));
}

/** A list of finite numbers, like lab._arrays.as_float_array. */
function checkFiniteRow(values, what) {
  if (!isListLike(values)) throw labError("DTypeError", `${what} must be a list of numbers, got ${describe(values)}`);
  const row = Array.from(values);
  row.forEach((value, index) => {
    if (typeof value !== "number") {
      throw labError("DTypeError", `${what} must be real numbers, got ${describe(value)} at index ${index}`);
    }
    if (!Number.isFinite(value)) {
      throw labError("NonFiniteError", `${what} contains NaN or infinity (first at index ${index})`);
    }
  });
  return row;
}

// ---------------------------------------------------------------------------------------------
// Exact float helpers
// ---------------------------------------------------------------------------------------------

const bitView = new DataView(new ArrayBuffer(8));

function float64Bits(x) {
  bitView.setFloat64(0, x);
  return bitView.getBigUint64(0);
}

function float32Bits(x) {
  bitView.setFloat32(0, x);
  return bitView.getUint32(0);
}

/** Exactly 2^n for an integer n (built from the bit pattern, so no pow() rounding can creep in). */
function pow2(n) {
  if (n > 1023) return Infinity;
  if (n < -1074) return 0;
  if (n < -1022) return pow2(n + 64) * pow2(-64); // a subnormal: exact, since 2^n is representable
  bitView.setBigUint64(0, BigInt(n + 1023) << 52n);
  return bitView.getFloat64(0);
}

/** The exponent e of frexp(m) = (f, e), f in [0.5, 1), for a finite m >= 0; frexp(0) gives 0. */
function frexpExponent(magnitude) {
  if (magnitude === 0) return 0;
  const biased = Number((float64Bits(magnitude) >> 52n) & 0x7ffn);
  if (biased === 0) return frexpExponent(magnitude * pow2(64)) - 64; // subnormal
  return biased - 1022;
}

/** numpy.rint: nearest integer, ties to even. */
function roundHalfEven(value) {
  const below = Math.floor(value);
  const above = value - below; // exact: the fraction of a double is representable
  if (above > 0.5) return below + 1;
  if (above < 0.5) return below;
  return below % 2 === 0 ? below : below + 1;
}

function signbit(x) {
  return x < 0 || Object.is(x, -0);
}

// ---------------------------------------------------------------------------------------------
// Number text, exactly as the Python codec prints it
// ---------------------------------------------------------------------------------------------

/** Exact decimal expansion of a finite double > 0: value = BigInt(digits) * 10^exponent. */
function exactDecimal(magnitude) {
  const bits = float64Bits(magnitude);
  const biased = Number(bits >> 52n);
  const fraction = bits & 0xfffffffffffffn;
  const mantissa = biased === 0 ? fraction : fraction | (1n << 52n);
  const twos = (biased === 0 ? 1 : biased) - 1075;
  if (twos >= 0) return { digits: (mantissa << BigInt(twos)).toString(), exponent: 0 };
  // m * 2^-k = m * 5^k / 10^k
  return { digits: (mantissa * 5n ** BigInt(-twos)).toString(), exponent: twos };
}

/** The exact value rounded half to even to `precision` significant digits (as Python's dtoa does). */
function roundSignificant(magnitude, precision) {
  const { digits, exponent } = exactDecimal(magnitude);
  let firstExponent = digits.length - 1 + exponent;
  if (digits.length <= precision) return { digits: digits.padEnd(precision, "0"), firstExponent };
  let kept = BigInt(digits.slice(0, precision));
  const rest = digits.slice(precision);
  const pastHalf = rest[0] > "5" || (rest[0] === "5" && /[1-9]/.test(rest.slice(1)));
  const exactlyHalf = rest[0] === "5" && !/[1-9]/.test(rest.slice(1));
  if (pastHalf || (exactlyHalf && kept % 2n === 1n)) kept += 1n;
  let text = kept.toString();
  if (text.length > precision) {
    text = text.slice(0, precision); // 99.. rounded up to 100..
    firstExponent += 1;
  }
  return { digits: text, firstExponent };
}

function trimFraction(text) {
  return text.includes(".") ? text.replace(/0+$/, "").replace(/\.$/, "") : text;
}

function exponentText(exponent) {
  return `e${exponent < 0 ? "-" : "+"}${String(Math.abs(exponent)).padStart(2, "0")}`;
}

/** Python's format(x, f".{precision}g"), ASCII minus. */
function formatG(x, precision) {
  if (Number.isNaN(x)) return "nan";
  if (!Number.isFinite(x)) return x > 0 ? "inf" : "-inf";
  const sign = signbit(x) ? "-" : "";
  if (x === 0) return `${sign}0`;
  const { digits, firstExponent } = roundSignificant(Math.abs(x), precision);
  if (firstExponent >= -4 && firstExponent < precision) {
    const fixed =
      firstExponent >= 0
        ? `${digits.slice(0, firstExponent + 1)}.${digits.slice(firstExponent + 1)}`
        : `0.${"0".repeat(-firstExponent - 1)}${digits}`;
    return sign + trimFraction(fixed);
  }
  return sign + trimFraction(`${digits[0]}.${digits.slice(1)}`) + exponentText(firstExponent);
}

/**
 * A number as the lab writes it for learners (Python lab._blocks.fmt): up to ten significant
 * digits, a real minus sign (U+2212), and -0 kept as "−0".
 */
export function formatLabNumber(value) {
  if (value === 0) return signbit(value) ? "\u22120" : "0";
  if (Number.isNaN(value)) return "NaN";
  return formatG(value, 10).replace(/-/g, "\u2212");
}

/**
 * Shortest decimal digits that read back as this float32 (numpy's Dragon4 in "unique" mode):
 * value ~ BigInt(digits) * 10^lastExponent. Margins are half the gaps to the neighbouring
 * float32 values; an even mantissa owns the midpoints (IEEE round-half-even on reading back).
 */
function shortestFloat32Digits(magnitude) {
  const bits = float32Bits(magnitude);
  const biased = bits >>> 23;
  const fraction = bits & 0x7fffff;
  const mantissa = BigInt(biased === 0 ? fraction : fraction | 0x800000);
  const exponent = (biased === 0 ? 1 : biased) - 150; // magnitude = mantissa * 2^exponent
  // At a power of two (not the smallest normal) the float32 below is twice as close as the one above.
  const unequalMargins = biased > 1 && fraction === 0;
  const ownsMidpoints = mantissa % 2n === 0n;
  // Scale everything by 2^shift so the value and both margins are integers.
  const shift = Math.max(0, -exponent) + 2;
  const denominator = 1n << BigInt(shift);
  const value = mantissa << BigInt(exponent + shift);
  const marginHigh = 1n << BigInt(exponent - 1 + shift);
  const marginLow = unequalMargins ? 1n << BigInt(exponent - 2 + shift) : marginHigh;

  const digitAt = (position) => {
    // value / 10^position as quotient and remainder over a common integer unit
    const multiplier = position >= 0 ? 1n : 10n ** BigInt(-position);
    const unit = position >= 0 ? denominator * 10n ** BigInt(position) : denominator;
    const scaled = value * multiplier;
    return { quotient: scaled / unit, remainder: scaled % unit, unit, multiplier };
  };
  let position = Math.floor(Math.log10(magnitude));
  while (digitAt(position).quotient === 0n) position -= 1;
  while (digitAt(position).quotient >= 10n) position += 1;

  for (;;) {
    const { quotient, remainder, unit, multiplier } = digitAt(position);
    const lowSlack = marginLow * multiplier;
    const highReach = remainder + marginHigh * multiplier;
    const canRoundDown = ownsMidpoints ? remainder <= lowSlack : remainder < lowSlack;
    const canRoundUp = ownsMidpoints ? highReach >= unit : highReach > unit;
    if (canRoundDown || canRoundUp) {
      let roundDown = canRoundDown;
      if (canRoundDown && canRoundUp) {
        const twice = 2n * remainder;
        roundDown = twice < unit || (twice === unit && quotient % 2n === 0n);
      }
      let digits = (roundDown ? quotient : quotient + 1n).toString();
      let lastExponent = position;
      const trimmed = digits.replace(/0+$/, "");
      lastExponent += digits.length - trimmed.length;
      digits = trimmed;
      return { digits, firstExponent: lastExponent + digits.length - 1 };
    }
    position -= 1;
  }
}

const FLOAT32_POSITIONAL_FROM = Math.fround(1e-4); // numpy compares in float32 (NEP 50)
const FLOAT32_POSITIONAL_BELOW = 1e7;

/**
 * A float32 as Python lab.q4k writes it: the shortest text that reads back as the same float32,
 * positional from 1e-4 up to 1e7 and scientific outside, with a real minus sign.
 */
export function formatFloat32(value) {
  const value32 = Math.fround(value);
  let text;
  if (value32 === 0) text = "0";
  else if (Number.isNaN(value32)) text = "nan";
  else if (!Number.isFinite(value32)) text = value32 > 0 ? "inf" : "-inf";
  else {
    const magnitude = Math.abs(value32);
    const { digits, firstExponent } = shortestFloat32Digits(magnitude);
    const sign = value32 < 0 ? "-" : "";
    if (magnitude >= FLOAT32_POSITIONAL_FROM && magnitude < FLOAT32_POSITIONAL_BELOW) {
      if (firstExponent >= 0) {
        const whole = digits.slice(0, firstExponent + 1).padEnd(firstExponent + 1, "0");
        const fractionDigits = digits.slice(firstExponent + 1);
        text = sign + whole + (fractionDigits ? `.${fractionDigits}` : "");
      } else {
        text = `${sign}0.${"0".repeat(-firstExponent - 1)}${digits}`;
      }
    } else {
      const significand = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
      text = sign + significand + exponentText(firstExponent);
    }
  }
  return text.replace(/-/g, "\u2212");
}

function hexByte(byte) {
  return `0x${byte.toString(16).toUpperCase().padStart(2, "0")}`;
}

function binary(value, width) {
  return value.toString(2).padStart(width, "0");
}

// ---------------------------------------------------------------------------------------------
// E2M1 and the nibble readings
// ---------------------------------------------------------------------------------------------

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

/** Everything needed to decode one E2M1 code by hand (Python lab.e2m1.explain). */
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

/** The nibble as an unsigned integer 0..15: the Q4_K element code before gain and offset. */
export function uint4(code) {
  return checkCode(code, 16, "nibble");
}

/** The nibble as two's complement: bit 3 weighs -8, so 1000 is -8 and 1111 is -1. */
export function int4(code) {
  checkCode(code, 16, "nibble");
  return code >= 8 ? code - 16 : code;
}

// ---------------------------------------------------------------------------------------------
// E8M0: the MX scale byte
// ---------------------------------------------------------------------------------------------

// E8M0: eight exponent bits, bias 127, no sign, no fraction.
//   byte 0..254 -> 2^(byte - 127)   (there is no zero)
//   byte 255    -> NaN
const E8M0_BIAS = 127;
const E8M0_NAN_BYTE = 0xff;

export function e8m0Decode(byte) {
  checkCode(byte, 256, "E8M0 byte");
  return byte === E8M0_NAN_BYTE ? NaN : pow2(byte - E8M0_BIAS);
}

/** Python lab.e8m0.explain. */
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

// ---------------------------------------------------------------------------------------------
// E4M3 ("fn"): the MXFP8 element and the NVFP4 block scale
// ---------------------------------------------------------------------------------------------

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

/** Nearest E4M3 byte: round half to even, saturating at ±448, the sign of zero kept (lab.e4m3.encode). */
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

/** Python lab.e4m3.explain. */
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
    formula = `(${signText}) \u00d7 2^(1 \u2212 7) \u00d7 (0 + ${fraction}/8) = ${formatG(value, 6)}`;
  } else {
    kind = "normal";
    formula = `(${signText}) \u00d7 2^(${exponentField} \u2212 7) \u00d7 (1 + ${fraction}/8) = ${formatG(value, 6)}`;
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

// ---------------------------------------------------------------------------------------------
// FP16 (Q4_K's d and dmin)
// ---------------------------------------------------------------------------------------------

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
 * astype(float16) does for Q4_K's d and dmin in lab.q4k.from_parts). Returns {ok, bits, value,
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

// ---------------------------------------------------------------------------------------------
// Exactly rounded sums: CPython's math.fsum
// ---------------------------------------------------------------------------------------------

/**
 * math.fsum: the sum of the values, exact up to one final rounding (half to even), by Shewchuk's
 * non-overlapping partials, ported step for step from CPython's mathmodule.c, including its
 * errors: OverflowError "intermediate overflow in fsum" and ValueError "-inf + inf in fsum".
 */
export function fsum(values) {
  if (!isListLike(values)) throw labError("TypeError", `fsum needs a list of numbers, got ${describe(values)}`);
  const partials = [];
  let specialSum = 0;
  let infSum = 0;
  for (const item of values) {
    if (typeof item !== "number") throw labError("TypeError", `fsum needs numbers, got ${describe(item)}`);
    let x = item;
    let kept = 0;
    for (let j = 0; j < partials.length; j += 1) {
      let y = partials[j];
      if (Math.abs(x) < Math.abs(y)) [x, y] = [y, x];
      const hi = x + y;
      const lo = y - (hi - x);
      if (lo !== 0) partials[kept++] = lo;
      x = hi;
    }
    partials.length = kept;
    if (x !== 0) {
      if (!Number.isFinite(x)) {
        // Either the running sum overflowed, or the summand itself was inf or NaN.
        if (Number.isFinite(item)) throw labError("OverflowError", "intermediate overflow in fsum");
        if (!Number.isNaN(item)) infSum += item;
        specialSum += item;
        partials.length = 0;
      } else {
        partials.push(x);
      }
    }
  }
  if (specialSum !== 0) {
    if (Number.isNaN(infSum)) throw labError("ValueError", "-inf + inf in fsum");
    return specialSum;
  }
  let n = partials.length;
  let hi = 0;
  if (n > 0) {
    hi = partials[--n];
    let lo = 0;
    // Add from the top down; stop as soon as a sum is inexact.
    while (n > 0) {
      const x = hi;
      const y = partials[--n];
      hi = x + y;
      lo = y - (hi - x);
      if (lo !== 0) break;
    }
    // Half-way correction: when the dropped remainder and the next partial have the same sign,
    // the true sum lies beyond the half-way point that hi + lo rounded to even.
    if (n > 0 && ((lo < 0 && partials[n - 1] < 0) || (lo > 0 && partials[n - 1] > 0))) {
      const y = lo * 2;
      const x = hi + y;
      if (y === x - hi) hi = x;
    }
  }
  return hi;
}

/** Σ aᵢbᵢ with each product rounded once and the sum exactly rounded (fsum of the products). */
export function dot(a, b) {
  if (!isListLike(a) || !isListLike(b) || a.length !== b.length) {
    throw labError("ShapeError", `dot needs two lists of the same length, got ${a?.length} and ${b?.length}`);
  }
  return fsum(Array.from(a, (value, index) => value * b[index]));
}

// ---------------------------------------------------------------------------------------------
// The article's scale lab (lab.scale): the lab convention, not a vendor recipe
// ---------------------------------------------------------------------------------------------

// Every weight becomes the nearest scale × E2M1(code) over all sixteen codes; on an exact tie
// the lowest unsigned code wins (ties go toward zero, zero is stored as +0). Distances are
// compared directly, not after dividing by the scale.

function checkScale(scale) {
  if (typeof scale !== "number") throw labError("DTypeError", `scale must be a real number, got ${describe(scale)}`);
  if (!Number.isFinite(scale) || scale <= 0) {
    throw labError("NonFiniteError", `scale must be a positive finite number, got ${describe(scale)}`);
  }
  return scale;
}

function nearestScaledCode(weight, scale) {
  let best = 0;
  let bestDistance = Math.abs(weight - scale * E2M1_VALUES[0]);
  for (let code = 1; code < 16; code += 1) {
    const distance = Math.abs(weight - scale * E2M1_VALUES[code]);
    if (distance < bestDistance) {
      best = code;
      bestDistance = distance;
    }
  }
  return best;
}

/** The E2M1 code of each weight under the lab convention. */
export function scaleQuantizeCodes(w, scale) {
  const weights = checkFiniteRow(w, "weights");
  checkScale(scale);
  return weights.map((weight) => nearestScaledCode(weight, scale));
}

/** ŵ: each weight replaced by its nearest scaled E2M1 value. */
export function scaleReconstruct(w, scale) {
  checkScale(scale);
  return scaleQuantizeCodes(w, scale).map((code) => scale * E2M1_VALUES[code]);
}

/**
 * One row through the scale lab (Python lab.scale.analyse): codes, ŵ, the signed weight errors
 * ŵ − w, which weights clipped (|w| > 6·scale), y = w·x, ŷ = ŵ·x (both fsum-exact), Δy = ŷ − y,
 * and each weight's share of Δy, terms[i] = (ŵᵢ − wᵢ)·xᵢ.
 */
// The scale lab's dot product (lab.scale._exact_dot): Infinity where a product or the sum leaves
// float64's range, so the caller can say so instead of showing a meaningless number.
function dotOrInfinity(a, b) {
  if (Array.from(a, (value, index) => value * b[index]).some((product) => !Number.isFinite(product))) return Infinity;
  try {
    return dot(a, b);
  } catch (error) {
    if (error.name === "OverflowError") return Infinity;
    throw error;
  }
}

export function scaleAnalyse(w, x, scale) {
  const weights = checkFiniteRow(w, "weights");
  const inputs = checkFiniteRow(x, "inputs");
  if (weights.length !== inputs.length || weights.length === 0) {
    throw labError(
      "ShapeError",
      `weights and inputs must be non-empty rows of the same length, got ${weights.length} and ${inputs.length}`,
    );
  }
  checkScale(scale);
  const codes = weights.map((weight) => nearestScaledCode(weight, scale));
  const wHat = codes.map((code) => scale * E2M1_VALUES[code]);
  const weightError = wHat.map((value, i) => value - weights[i]);
  const y = dotOrInfinity(weights, inputs);
  const yHat = dotOrInfinity(wHat, inputs);
  if (!Number.isFinite(y) || !Number.isFinite(yHat)) {
    throw labError("NonFiniteError", "y = w · x or ŷ = ŵ · x overflows float64 (beyond about 1.8e308); use smaller numbers");
  }
  return {
    w: weights,
    x: inputs,
    scale,
    codes,
    wHat,
    weightError,
    clipped: weights.map((weight) => Math.abs(weight) > E2M1_MAX * scale),
    y,
    yHat,
    deltaY: yHat - y,
    terms: weightError.map((error, i) => error * inputs[i]),
  };
}

/** The fifteen distinct values the scaled E2M1 ruler reaches (one zero, +0), ascending. */
export function scaleRepresentable(scale) {
  checkScale(scale);
  const magnitudes = E2M1_VALUES.slice(0, 8).map((magnitude) => scale * magnitude);
  const values = [...magnitudes, ...magnitudes.map((value) => -value)].sort((a, b) => a - b);
  // The sort is stable, so of the equal zeros the +0 from the magnitudes comes first and is kept.
  return values.filter((value, i) => i === 0 || value !== values[i - 1]);
}

// ---------------------------------------------------------------------------------------------
// MXFP4 and NVFP4 blocks (lab.mxfp4, lab.nvfp4), one row in the lab's logical order
// ---------------------------------------------------------------------------------------------

// MXFP4: 32 E2M1 codes share one E8M0 scale byte:    weight = E2M1(code) × 2^(byte − 127)
// NVFP4: 16 E2M1 codes share one E4M3 scale byte:    weight = E2M1(code) × E4M3(byte) × tensor factor
// Python multiplies in float64 and rounds the weight to float32 once; so does this code.
export const MXFP4_GROUP_SIZE = 32;
export const NVFP4_GROUP_SIZE = 16;
export const NVFP4_TENSOR_SCALE_RANGE = E2M1_MAX * 448; // 2688: largest E2M1 times largest E4M3

function checkBlocks(codes, scaleBytes, groupSize, format, scaleName) {
  const elementCodes = checkCodes(codes, 16, "E2M1 code");
  const bytes = checkCodes(scaleBytes, 256, scaleName);
  if (elementCodes.length === 0 || elementCodes.length % groupSize || bytes.length !== elementCodes.length / groupSize) {
    throw labError(
      "ShapeError",
      `${format} needs ${groupSize}k codes and one scale byte per ${groupSize} codes, ` +
        `got ${elementCodes.length} codes and ${bytes.length} scale bytes`,
    );
  }
  return { elementCodes, bytes };
}

function checkIndex(index, length) {
  if (typeof index !== "number" || !Number.isInteger(index) || index < -length || index >= length) {
    throw labError("ShapeError", `element index ${describe(index)} is outside a row of ${length} weights`);
  }
  return index < 0 ? index + length : index;
}

/** Weights (float32 values) of one MXFP4 row; a block whose scale byte is 0xFF is all NaN. */
export function mxfp4Dequantize(codes, scaleBytes) {
  const { elementCodes, bytes } = checkBlocks(codes, scaleBytes, MXFP4_GROUP_SIZE, "mxfp4", "E8M0 scale byte");
  return elementCodes.map((code, i) =>
    Math.fround(E2M1_VALUES[code] * e8m0Decode(bytes[Math.floor(i / MXFP4_GROUP_SIZE)])),
  );
}

/** One MXFP4 weight traced from its code and its block's scale byte (Python MXTensor.explain). */
export function mxExplain(codes, scaleBytes, index) {
  const weights = mxfp4Dequantize(codes, scaleBytes);
  const position = checkIndex(index, weights.length);
  const code = codes[position];
  const block = Math.floor(position / MXFP4_GROUP_SIZE);
  const scaleByte = scaleBytes[block];
  const element = e2m1Explain(code);
  const scale = e8m0Explain(scaleByte);
  const weight = weights[position];
  return {
    format: "mxfp4",
    index: position,
    block,
    positionInBlock: position % MXFP4_GROUP_SIZE,
    code,
    element,
    scaleByte,
    scale,
    weight,
    formula: `${formatLabNumber(element.value)} \u00d7 ${formatLabNumber(scale.value)} = ${formatLabNumber(weight)}`,
  };
}

function checkGlobalScale(globalScale) {
  // Checked as the float32 it is stored as: 1e39 would become Infinity and 1e-50 zero.
  const stored = typeof globalScale === "number" ? Math.fround(globalScale) : NaN;
  if (!Number.isFinite(stored) || stored <= 0) {
    const asFloat32 = Number.isFinite(globalScale) && globalScale > 0 ? `, which is ${describe(stored)} as a float32` : "";
    throw labError(
      "NonFiniteError",
      `global_scale must be a positive finite float32 (the tensor amax), got ${describe(globalScale)}${asFloat32}`,
    );
  }
  return stored;
}

/**
 * What NVFP4 decoding multiplies by on top of the block scale (NVFP4Tensor.tensor_factor): the
 * tensor amax g over 2688 in float32, or 1 without a tensor scale (null or undefined).
 */
export function nvfp4TensorFactor(globalScale = null) {
  if (globalScale === null || globalScale === undefined) return 1;
  return Math.fround(checkGlobalScale(globalScale) / NVFP4_TENSOR_SCALE_RANGE);
}

/** Weights (float32 values) of one NVFP4 row: value × (block scale × tensor factor), rounded once. */
export function nvfp4Dequantize(codes, scaleBytes, tensorFactor = 1) {
  const { elementCodes, bytes } = checkBlocks(codes, scaleBytes, NVFP4_GROUP_SIZE, "nvfp4", "E4M3 scale byte");
  if (typeof tensorFactor !== "number") {
    throw labError("DTypeError", `tensor factor must be a number, got ${describe(tensorFactor)}`);
  }
  const blockScales = bytes.map((byte) => e4m3Decode(byte) * tensorFactor);
  return elementCodes.map((code, i) => Math.fround(E2M1_VALUES[code] * blockScales[Math.floor(i / NVFP4_GROUP_SIZE)]));
}

/** One NVFP4 weight traced (Python NVFP4Tensor.explain); globalScale is the tensor amax or null. */
export function nvExplain(codes, scaleBytes, index, globalScale = null) {
  const tensorFactor = nvfp4TensorFactor(globalScale);
  const weights = nvfp4Dequantize(codes, scaleBytes, tensorFactor);
  const position = checkIndex(index, weights.length);
  const code = codes[position];
  const block = Math.floor(position / NVFP4_GROUP_SIZE);
  const scaleByte = scaleBytes[block];
  const element = e2m1Explain(code);
  const scale = e4m3Explain(scaleByte);
  const weight = weights[position];
  return {
    format: "nvfp4",
    index: position,
    block,
    positionInBlock: position % NVFP4_GROUP_SIZE,
    code,
    element,
    scaleByte,
    scale,
    tensorFactor,
    globalScale: globalScale === null || globalScale === undefined ? null : Math.fround(globalScale),
    weight,
    formula:
      `${formatLabNumber(element.value)} \u00d7 ${formatLabNumber(scale.value)} \u00d7 ` +
      `${formatLabNumber(tensorFactor)} = ${formatLabNumber(weight)}`,
  };
}

// ---------------------------------------------------------------------------------------------
// Q4_K (lab.q4k): 256 weights in a 144-byte super-block
// ---------------------------------------------------------------------------------------------

// bytes   0..1    d      float16, little-endian (first byte = low 8 bits): scale of the gains
// bytes   2..3    dmin   float16, little-endian: scale of the offsets
// bytes   4..15   B[0..11]: eight 6-bit subblock scales s_j and eight 6-bit minimums m_j
// bytes  16..143  payload: 128 bytes, two 4-bit codes each
//
// Subblock j (32 lanes) reconstructs code q as  w = d·s_j·q − dmin·m_j, in float32 with each of
// d·s_j, dmin·m_j, gain·q and the final subtraction rounded (gguf-py's order, no fused multiply-add).
export const Q4K_BLOCK_BYTES = 144;
export const Q4K_BLOCK_WEIGHTS = 256;
export const Q4K_METADATA_OFFSET = 4;
export const Q4K_PAYLOAD_OFFSET = 16;
export const Q4K_PAYLOAD_BYTES = 128;

// Metadata packing, bit 7 first:
//   B[0..3]   = hh ssssss   s_0..s_3 in bits 0..5; bits 6..7 are bits 4..5 of s_4..s_7
//   B[4..7]   = hh mmmmmm   m_0..m_3 in bits 0..5; bits 6..7 are bits 4..5 of m_4..m_7
//   B[8..11]  = mmmm ssss   bits 0..3 of s_4..s_7 (low nibble) and of m_4..m_7 (high nibble)
// so for j = 0..3:  s_j = B[j] & 63,  m_j = B[j+4] & 63
//    for j = 4..7:  s_j = (B[j+4] & 15) | ((B[j-4] >> 6) << 4)
//                   m_j = (B[j+4] >> 4) | ((B[j]   >> 6) << 4)

function checkBytes(bytes, length, what) {
  const values = checkCodes(bytes, 256, `${what} byte`);
  if (values.length !== length) throw labError("ShapeError", `${what} is ${length} bytes, got ${values.length}`);
  return values;
}

/** The eight 6-bit subblock scales and minimums packed in the twelve metadata bytes B[0..11]. */
export function q4kUnpackScaleMin(b12) {
  const B = checkBytes(b12, 12, "Q4_K metadata");
  const scales = [];
  const mins = [];
  for (let j = 0; j < 4; j += 1) {
    scales.push(B[j] & 63);
    mins.push(B[j + 4] & 63);
  }
  for (let j = 4; j < 8; j += 1) {
    scales.push((B[j + 4] & 15) | ((B[j - 4] >> 6) << 4));
    mins.push((B[j + 4] >> 4) | ((B[j] >> 6) << 4));
  }
  return { scales, mins };
}

/** Twelve metadata bytes from eight scales and eight minimums (0..63); inverse of q4kUnpackScaleMin. */
export function q4kPackScaleMin(scales, mins) {
  const s = checkCodes(scales, 64, "6-bit subblock scale");
  const m = checkCodes(mins, 64, "6-bit subblock minimum");
  if (s.length !== 8 || m.length !== 8) {
    throw labError("ShapeError", `Q4_K has 8 subblock scales and 8 mins per block, got ${s.length} and ${m.length}`);
  }
  const scaleBytes = [0, 1, 2, 3].map((j) => s[j] | ((s[j + 4] >> 4) << 6));
  const minBytes = [0, 1, 2, 3].map((j) => m[j] | ((m[j + 4] >> 4) << 6));
  const splitBytes = [0, 1, 2, 3].map((j) => (s[j + 4] & 15) | ((m[j + 4] & 15) << 4));
  return [...scaleBytes, ...minBytes, ...splitBytes];
}

/** Where s_j and m_j live in B: pieces {byte, byteBits: [low, high], fieldBits: [low, high]}. */
export function q4kMetadataSources(j) {
  checkCode(j, 8, "subblock");
  if (j < 4) {
    return {
      scale: [{ byte: j, byteBits: [0, 5], fieldBits: [0, 5] }],
      min: [{ byte: j + 4, byteBits: [0, 5], fieldBits: [0, 5] }],
    };
  }
  return {
    scale: [
      { byte: j + 4, byteBits: [0, 3], fieldBits: [0, 3] },
      { byte: j - 4, byteBits: [6, 7], fieldBits: [4, 5] },
    ],
    min: [
      { byte: j + 4, byteBits: [4, 7], fieldBits: [0, 3] },
      { byte: j, byteBits: [6, 7], fieldBits: [4, 5] },
    ],
  };
}

/** How s_j and m_j are read out of B, with the arithmetic spelled out (Python lab.q4k.explain_metadata). */
export function q4kExplainMetadata(b12, j) {
  const B = checkBytes(b12, 12, "Q4_K metadata");
  const sources = q4kMetadataSources(j);
  const { scales, mins } = q4kUnpackScaleMin(B);
  const scale = scales[j];
  const min = mins[j];
  let scaleFormula;
  let minFormula;
  if (j < 4) {
    scaleFormula = `s${j} = B[${j}] & 63 = ${B[j]} & 63 = ${scale}`;
    minFormula = `m${j} = B[${j + 4}] & 63 = ${B[j + 4]} & 63 = ${min}`;
  } else {
    const scaleLow = B[j + 4] & 15;
    const scaleHigh = (B[j - 4] >> 6) << 4;
    const minLow = B[j + 4] >> 4;
    const minHigh = (B[j] >> 6) << 4;
    scaleFormula =
      `s${j} = (B[${j + 4}] & 15) | ((B[${j - 4}] >> 6) << 4)` +
      ` = (${B[j + 4]} & 15) | ((${B[j - 4]} >> 6) << 4) = ${scaleLow} | ${scaleHigh} = ${scale}`;
    minFormula =
      `m${j} = (B[${j + 4}] >> 4) | ((B[${j}] >> 6) << 4)` +
      ` = (${B[j + 4]} >> 4) | ((${B[j]} >> 6) << 4) = ${minLow} | ${minHigh} = ${min}`;
  }
  const describePieces = (pieces) =>
    pieces.map((piece) => {
      const [lowBit, highBit] = piece.byteBits;
      const width = highBit - lowBit + 1;
      const byteValue = B[piece.byte];
      const pieceValue = (byteValue >> lowBit) & ((1 << width) - 1);
      return {
        ...piece,
        byteValue,
        byteBinary: binary(byteValue, 8),
        pieceValue,
        pieceBinary: binary(pieceValue, width),
        text: `bits ${piece.fieldBits[0]}..${piece.fieldBits[1]} come from B[${piece.byte}] bits ${lowBit}..${highBit}`,
      };
    });
  return {
    subblock: j,
    split: j >= 4,
    scale,
    min,
    scaleSources: describePieces(sources.scale),
    minSources: describePieces(sources.min),
    scaleFormula,
    minFormula,
  };
}

// Payload placement: byte p = 32c + l (chunk c = 0..3, position l = 0..31) feeds two lanes 32 apart:
//   low nibble  (bits 0..3) -> lane 64c + l        subblock 2c
//   high nibble (bits 4..7) -> lane 64c + 32 + l   subblock 2c + 1

/** [low lane, high lane] fed by payload byte p: [64c + l, 64c + 32 + l]. */
export function q4kLanes(payloadIndex) {
  checkCode(payloadIndex, Q4K_PAYLOAD_BYTES, "payload index");
  const chunk = Math.floor(payloadIndex / 32);
  const lowLane = 64 * chunk + (payloadIndex % 32);
  return [lowLane, lowLane + 32];
}

/** [low subblock, high subblock] used by payload byte p: [2c, 2c + 1]. */
export function q4kSubblocks(payloadIndex) {
  checkCode(payloadIndex, Q4K_PAYLOAD_BYTES, "payload index");
  const chunk = Math.floor(payloadIndex / 32);
  return [2 * chunk, 2 * chunk + 1];
}

function q4kParts(block) {
  const bytes = checkBytes(block, Q4K_BLOCK_BYTES, "one Q4_K block");
  const d = fp16Decode(bytes[0] | (bytes[1] << 8));
  const dmin = fp16Decode(bytes[2] | (bytes[3] << 8));
  const metadata = bytes.slice(Q4K_METADATA_OFFSET, Q4K_PAYLOAD_OFFSET);
  const { scales, mins } = q4kUnpackScaleMin(metadata);
  return {
    bytes,
    d,
    dmin,
    metadata,
    scales,
    mins,
    gains: scales.map((s) => Math.fround(d * s)),
    offsets: mins.map((m) => Math.fround(dmin * m)),
  };
}

function q4kWeight(parts, subblock, code) {
  return Math.fround(Math.fround(parts.gains[subblock] * code) - parts.offsets[subblock]);
}

/** The 256 weights (float32 values) of one 144-byte Q4_K block, bit-identical to gguf-py. */
export function q4kDecodeBlock(bytes144) {
  const parts = q4kParts(bytes144);
  const weights = new Array(Q4K_BLOCK_WEIGHTS);
  for (let p = 0; p < Q4K_PAYLOAD_BYTES; p += 1) {
    const byte = parts.bytes[Q4K_PAYLOAD_OFFSET + p];
    const [lowLane, highLane] = q4kLanes(p);
    const [lowSubblock, highSubblock] = q4kSubblocks(p);
    weights[lowLane] = q4kWeight(parts, lowSubblock, byte & 15);
    weights[highLane] = q4kWeight(parts, highSubblock, byte >> 4);
  }
  return weights;
}

/**
 * Everything needed to decode payload byte p of one block by hand (Python lab.q4k.explain_byte):
 * both nibbles, their lanes and subblocks, the metadata they use, and the arithmetic.
 */
export function q4kExplainByte(block, payloadIndex) {
  const parts = q4kParts(block);
  checkCode(payloadIndex, Q4K_PAYLOAD_BYTES, "payload index");
  const weights = q4kDecodeBlock(parts.bytes);
  const byte = parts.bytes[Q4K_PAYLOAD_OFFSET + payloadIndex];
  const [lowLane, highLane] = q4kLanes(payloadIndex);
  const [lowSubblock, highSubblock] = q4kSubblocks(payloadIndex);
  const d = formatFloat32(parts.d);
  const dmin = formatFloat32(parts.dmin);
  const nibble = (side, code, lane, j) => {
    const gain = parts.gains[j];
    const offset = parts.offsets[j];
    const weight = weights[lane];
    const s = parts.scales[j];
    const m = parts.mins[j];
    return {
      nibble: side,
      code,
      codeBits: binary(code, 4),
      lane,
      subblock: j,
      scale: s,
      min: m,
      gain,
      offset,
      weight,
      gainFormula: `${d} \u00d7 ${s} = ${formatFloat32(gain)}`,
      offsetFormula: `${dmin} \u00d7 ${m} = ${formatFloat32(offset)}`,
      formula: `${formatFloat32(gain)} \u00d7 ${code} \u2212 ${formatFloat32(offset)} = ${formatFloat32(weight)}`,
      fullFormula: `${d} \u00d7 ${s} \u00d7 ${code} \u2212 ${dmin} \u00d7 ${m} = ${formatFloat32(weight)}`,
      metadata: q4kExplainMetadata(parts.metadata, j),
    };
  };
  const low = nibble("low", byte & 15, lowLane, lowSubblock);
  const high = nibble("high", byte >> 4, highLane, highSubblock);
  const fp16Hex = (offset) =>
    `0x${((parts.bytes[offset + 1] << 8) | parts.bytes[offset]).toString(16).toUpperCase().padStart(4, "0")}`;
  return {
    payloadIndex,
    byteOffset: Q4K_PAYLOAD_OFFSET + payloadIndex,
    chunk: Math.floor(payloadIndex / 32),
    position: payloadIndex % 32,
    byte,
    hex: hexByte(byte),
    byteBits: `${binary(byte >> 4, 4)} ${binary(byte & 15, 4)}`,
    d: parts.d,
    dmin: parts.dmin,
    dHex: fp16Hex(0),
    dminHex: fp16Hex(2),
    lowNibble: low.code,
    highNibble: high.code,
    lowLane,
    highLane,
    lowSubblock,
    highSubblock,
    weights: [low.weight, high.weight],
    low,
    high,
  };
}

// ---------------------------------------------------------------------------------------------
// Bits per weight (lab.sizes): element and scale storage only
// ---------------------------------------------------------------------------------------------

const FORMAT_BITS_PER_WEIGHT = {
  BF16: 16,
  "ideal 4-bit": 4,
  MXFP4: (32 * 4 + 8) / 32, // 4.25
  NVFP4: (16 * 4 + 8) / 16, // 4.5, plus 32/N with an FP32 tensor scale
  MXFP8: (32 * 8 + 8) / 32, // 8.25
  Q4_K: (144 * 8) / 256, // 4.5: fp16 d and dmin, 12 metadata bytes, 128 code bytes
};
const AFFINE_BITS = [1, 2, 3, 4, 5, 6, 8];
const AFFINE_GROUP_SIZES = [32, 64, 128];

/**
 * Bits per weight of a format: "BF16", "ideal 4-bit", "MXFP4", "MXFP8", "Q4_K", "NVFP4"
 * (opts.nWeights adds one FP32 tensor scale: + 32/N) and "affine" (MLX: opts.bits +
 * 2 · opts.parameterBits / opts.groupSize, parameterBits 16 by default).
 */
export function bitsPerWeight(format, opts = {}) {
  if (format === "affine") {
    const { bits, groupSize, parameterBits = 16 } = opts;
    if (!AFFINE_BITS.includes(bits)) {
      throw labError("BitsError", `affine mode supports bits ${AFFINE_BITS.join(", ")}, got ${describe(bits)}`);
    }
    if (!AFFINE_GROUP_SIZES.includes(groupSize)) {
      throw labError(
        "GroupSizeError",
        `affine mode supports group sizes ${AFFINE_GROUP_SIZES.join(", ")}, got ${describe(groupSize)}`,
      );
    }
    return bits + (2 * parameterBits) / groupSize;
  }
  if (!Object.hasOwn(FORMAT_BITS_PER_WEIGHT, format)) {
    const known = [...Object.keys(FORMAT_BITS_PER_WEIGHT), "affine"].join(", ");
    throw labError("ValueError", `unknown format ${describe(format)}; expected one of ${known}`);
  }
  if (format === "NVFP4" && opts.nWeights !== undefined && opts.nWeights !== null) {
    if (typeof opts.nWeights !== "number" || !(opts.nWeights > 0)) {
      throw labError("ValueError", `a tensor has a positive number of weights, got ${describe(opts.nWeights)}`);
    }
    return FORMAT_BITS_PER_WEIGHT.NVFP4 + 32 / opts.nWeights;
  }
  return FORMAT_BITS_PER_WEIGHT[format];
}

// ---------------------------------------------------------------------------------------------
// Reading what a learner types
// ---------------------------------------------------------------------------------------------

const NUMBER_EXAMPLES = "0.5, -1e-3, 3/8 or 2^-3";
const DECIMAL = "(?:\\d+\\.?\\d*|\\.\\d+)";
const DECIMAL_NUMBER = new RegExp(`^[+-]?${DECIMAL}(?:e[+-]?\\d+)?$`, "i");
const FRACTION = new RegExp(`^([+-]?${DECIMAL})\\s*/\\s*(${DECIMAL})$`);
const POWER_OF_TWO = /^([+-]?)2\s*\^\s*(?:\(\s*([+-]?\d+)\s*\)|([+-]?\d+))$/;
const NOT_FINITE_WORD = /^[+-]?(?:nan|inf|infinity)$/i;

function accepted(value) {
  return { ok: true, value, message: "" };
}

function rejected(message) {
  return { ok: false, value: null, message };
}

/**
 * A finite number from text: "0.5", "-1e-3", " 1.5 ", "3/8", "2^-3" or "2^(−3)"; the article's
 * minus sign (U+2212) is read as "-". Returns {ok, value, message}; on failure value is null and
 * message says what to type instead.
 */
export function parseNumber(text) {
  if (typeof text !== "string") return rejected(`Expected text to read a number from, got ${describe(text)}.`);
  const cleaned = text.trim().replace(/\u2212/g, "-");
  if (cleaned === "") return rejected(`Type a number, for example ${NUMBER_EXAMPLES}.`);
  if (NOT_FINITE_WORD.test(cleaned)) {
    return rejected(`${cleaned} is not a finite number, and the lab needs one here. Try ${NUMBER_EXAMPLES}.`);
  }
  let value;
  const power = POWER_OF_TWO.exec(cleaned);
  const fraction = FRACTION.exec(cleaned);
  if (DECIMAL_NUMBER.test(cleaned)) {
    value = Number(cleaned);
  } else if (power) {
    const magnitude = pow2(Number(power[2] ?? power[3]));
    value = power[1] === "-" ? -magnitude : magnitude;
  } else if (fraction) {
    const denominator = Number(fraction[2]);
    if (denominator === 0) return rejected(`${cleaned} divides by zero. Use a non-zero number below the line.`);
    value = Number(fraction[1]) / denominator;
  } else {
    return rejected(`“${text.trim()}” is not a number the lab can read. Type something like ${NUMBER_EXAMPLES}.`);
  }
  if (!Number.isFinite(value)) {
    return rejected(`${cleaned} is too large: it is beyond the largest float64 (about 1.8e308).`);
  }
  return accepted(value);
}

const BYTE_EXAMPLES = "126, 0x7E or 0b01111110";

const MAX_ROW_LENGTH = 64;

/** A row of numbers separated by commas, semicolons or spaces, at most 64 (lab.text.parse_number_row). */
export function parseNumberRow(text, label) {
  const items = String(text).split(/[,;\s]+/).filter((item) => item.length > 0);
  if (items.length === 0) return { ok: false, values: null, message: `${label}: enter at least one number, separated by commas` };
  if (items.length > MAX_ROW_LENGTH) return { ok: false, values: null, message: `${label}: at most ${MAX_ROW_LENGTH} numbers, got ${items.length}` };
  const values = [];
  for (const [position, item] of items.entries()) {
    const parsed = parseNumber(item);
    if (!parsed.ok) return { ok: false, values: null, message: `${label}, item ${position + 1} ("${item}"): ${parsed.message}` };
    values.push(parsed.value);
  }
  return { ok: true, values, message: "" };
}

/**
 * A byte 0..255 from text: decimal "126", hex "0x7E" or binary "0b01111110" (hex and binary may
 * group digits with spaces or underscores: "0b1010 0101"). Returns {ok, value, message}.
 */
export function parseByte(text) {
  if (typeof text !== "string") return rejected(`Expected text to read a byte from, got ${describe(text)}.`);
  const cleaned = text.trim();
  if (cleaned === "") return rejected(`Type a byte from 0 to 255, for example ${BYTE_EXAMPLES}.`);
  let value;
  const hex = /^0x([0-9a-f](?:[_ ]?[0-9a-f])*)$/i.exec(cleaned);
  const bin = /^0b([01](?:[_ ]?[01])*)$/i.exec(cleaned);
  if (hex) value = parseInt(hex[1].replace(/[_ ]/g, ""), 16);
  else if (bin) value = parseInt(bin[1].replace(/[_ ]/g, ""), 2);
  else if (/^\+?\d+$/.test(cleaned)) value = parseInt(cleaned, 10);
  else if (/^[-\u2212]\s*(?:0x|0b)?[0-9a-f]+$/i.test(cleaned)) {
    return rejected(`A byte cannot be negative: type a value from 0 to 255, for example ${BYTE_EXAMPLES}.`);
  } else {
    let hint = "";
    if (/^[01]+(?:[_ ][01]+)+$/.test(cleaned)) hint = ` For binary, start with 0b: 0b${cleaned}.`;
    else if (/^[0-9a-f]+$/i.test(cleaned)) hint = ` For hexadecimal, start with 0x: 0x${cleaned.toUpperCase()}.`;
    return rejected(`“${cleaned}” is not a byte.${hint} Type something like ${BYTE_EXAMPLES}.`);
  }
  if (value > 255) {
    const hint = /^[01]{5,}$/.test(cleaned) ? ` For binary, start with 0b: 0b${cleaned}.` : "";
    return rejected(`${cleaned} is ${value}, which does not fit in a byte (0 to 255).${hint}`);
  }
  return accepted(value);
}
