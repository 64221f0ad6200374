// The lab's number grammar (Python lab.numbers): numbers as the Python codec writes them, and the
// numbers, rows and bytes a learner may type, read as Python reads them.
import { describe } from "./errors.js";
import { float32Bits, float64Bits, pow2, signbit } from "./floats.js";
import { visibleText } from "./text.js";

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
export function formatG(x, precision) {
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
 * A number as the lab writes it for learners (Python lab.numbers.format_number): up to ten significant
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
 * A float32 as Python lab.formats.q4k writes it: the shortest text that reads back as the same float32,
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
    return rejected(`“${visibleText(text.trim())}” is not a number the lab can read. Type something like ${NUMBER_EXAMPLES}.`);
  }
  if (!Number.isFinite(value)) {
    return rejected(`${cleaned} is too large: it is beyond the largest float64 (about 1.8e308).`);
  }
  return accepted(value);
}

const MAX_ROW_LENGTH = 64;

/** A row of numbers separated by commas, semicolons or spaces, at most 64 (lab.numbers.parse_number_row). */
export function parseNumberRow(text, label) {
  const items = String(text).split(/[,;\s]+/).filter((item) => item.length > 0);
  if (items.length === 0) return { ok: false, values: null, message: `${label}: enter at least one number, separated by commas` };
  if (items.length > MAX_ROW_LENGTH) return { ok: false, values: null, message: `${label}: at most ${MAX_ROW_LENGTH} numbers, got ${items.length}` };
  const values = [];
  for (const [position, item] of items.entries()) {
    const parsed = parseNumber(item);
    if (!parsed.ok) return { ok: false, values: null, message: `${label}, item ${position + 1} ("${visibleText(item)}"): ${parsed.message}` };
    values.push(parsed.value);
  }
  return { ok: true, values, message: "" };
}

// What a field of `bits` bits is called, and what typing into one looks like.
const BYTE_EXAMPLES = "126, 0x7E or 0b01111110";
function codeWords(bits) {
  if (bits === 8) return { what: "a byte", fits: "a byte", examples: BYTE_EXAMPLES };
  const example = 0b0101 & ((1 << bits) - 1); // 5 in four bits
  return { what: `a ${bits}-bit code`, fits: `${bits} bits`, examples: `${example}, 0x${example.toString(16).toUpperCase()} or 0b${example.toString(2).padStart(bits, "0")}` };
}

/**
 * A byte 0..255 from text (or a code of fewer `bits`, 0..2^bits − 1): decimal "126", hex "0x7E" or
 * binary "0b01111110" (hex and binary may group digits with spaces or underscores: "0b1010 0101").
 * Returns {ok, value, message}. A refusal's hint ("start with 0x") only ever suggests text this
 * field would take: "abc" gets none, since 0xABC is no byte.
 */
export function parseByte(text, bits = 8) {
  if (typeof text !== "string") return rejected(`Expected text to read a byte from, got ${describe(text)}.`);
  const largest = 2 ** bits - 1;
  const words = codeWords(bits);
  const cleaned = text.trim();
  if (cleaned === "") return rejected(`Type ${words.what} from 0 to ${largest}, for example ${words.examples}.`);
  const fits = (digits, base) => parseInt(digits.replace(/[_ ]/g, ""), base) <= largest;
  let value;
  const hex = /^0x([0-9a-f](?:[_ ]?[0-9a-f])*)$/i.exec(cleaned);
  const bin = /^0b([01](?:[_ ]?[01])*)$/i.exec(cleaned);
  if (hex) value = parseInt(hex[1].replace(/[_ ]/g, ""), 16);
  else if (bin) value = parseInt(bin[1].replace(/[_ ]/g, ""), 2);
  else if (/^\+?\d+$/.test(cleaned)) value = parseInt(cleaned, 10);
  else if (/^[-\u2212]\s*(?:0x|0b)?[0-9a-f]+$/i.test(cleaned)) {
    return rejected(`${words.what[0].toUpperCase()}${words.what.slice(1)} cannot be negative: type a value from 0 to ${largest}, for example ${words.examples}.`);
  } else {
    let hint = "";
    if (/^[01]+(?:[_ ][01]+)+$/.test(cleaned) && fits(cleaned, 2)) hint = ` For binary, start with 0b: 0b${cleaned}.`;
    // (not for a botched 0b or 0x prefix: "0b2" was never meant as hex)
    else if (/^[0-9a-f]+$/i.test(cleaned) && !/^0[bx]/i.test(cleaned) && fits(cleaned, 16)) hint = ` For hexadecimal, start with 0x: 0x${cleaned.toUpperCase()}.`;
    return rejected(`“${visibleText(cleaned)}” is not ${words.what}.${hint} Type something like ${words.examples}.`);
  }
  if (value > largest) {
    // Digits that are all 0 and 1 were most likely meant as bits.
    const hint = /^[01]{2,}$/.test(cleaned) && fits(cleaned, 2) ? ` For binary, start with 0b: 0b${cleaned}.` : "";
    const typed = String(value) === cleaned.replace(/^\+/, "") ? cleaned : `${cleaned} (${value})`;
    const digits = Math.ceil(bits / 4);
    return rejected(
      `${typed} does not fit in ${words.fits}.${hint} Type 0 to ${largest} or 0x${"0".repeat(digits)} to 0x${largest.toString(16).toUpperCase()}.`,
    );
  }
  return accepted(value);
}
