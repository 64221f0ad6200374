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
// The longest text read as one number, in characters (Python lab.numbers.MAX_NUMBER_CHARS, which
// says why 100); checked before anything else, so a megabyte in a link costs a length, never a parse.
const MAX_NUMBER_CHARS = 100;
const MAX_ROW_LENGTH = 64;
const MAX_ROW_CHARS = MAX_ROW_LENGTH * (MAX_NUMBER_CHARS + 2);
const QUOTED_CHARS = 20;
// The spaces both codecs read as spaces (Python lab.numbers.SPACES): written out, since JS's \s and
// trim() also take U+FEFF and Python's take U+001C..U+001F and U+0085.
const SPACES = "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000";
// What stands between two numbers of a row (Python lab.numbers._SEPARATOR): one comma or semicolon with
// spaces around it, or spaces alone; two commas in a row leave an empty item, which is refused.
const SEPARATOR = new RegExp(`[${SPACES}]*[,;][${SPACES}]*|[${SPACES}]+`);
const NOT_FINITE_WORDS = new Set(["nan", "inf", "infinity"]);

const isHighSurrogate = (unit) => unit >= 0xd800 && unit <= 0xdbff;
const isLowSurrogate = (unit) => unit >= 0xdc00 && unit <= 0xdfff;

/** How many characters Python counts in `text`: code points, a lone surrogate being one. */
function codePointCount(text) {
  let count = 0;
  for (let i = 0; i < text.length; i += 1) {
    // the second half of a surrogate pair belongs to the character its first half began
    if (!(isLowSurrogate(text.charCodeAt(i)) && i > 0 && isHighSurrogate(text.charCodeAt(i - 1)))) count += 1;
  }
  return count;
}

/** The first `count` code points of `text` (Python's text[:count]). */
function leadingCodePoints(text, count) {
  let end = 0;
  for (let taken = 0; taken < count && end < text.length; taken += 1) {
    end += isHighSurrogate(text.charCodeAt(end)) && isLowSurrogate(text.charCodeAt(end + 1)) ? 2 : 1;
  }
  return text.slice(0, end);
}

/** The first characters of a text too long to read, visible and cut with "…". */
const startOf = (text) => visibleText(leadingCodePoints(text, QUOTED_CHARS + 1), QUOTED_CHARS);

// The reader is one left-to-right pass (Python lab.numbers._value): each helper takes the position
// where its part starts and returns where it ends, and never looks back. (A backtracking pattern
// such as (?:\d+\.?\d*|\.\d+)\/… took seconds on long digit runs.)
const signEnd = (text, at) => (at < text.length && (text[at] === "+" || text[at] === "-") ? at + 1 : at);
const isDigit = (char) => char >= "0" && char <= "9";

function digitsEnd(text, at) {
  while (at < text.length && isDigit(text[at])) at += 1;
  return at;
}

function spacesEnd(text, at) {
  while (at < text.length && SPACES.includes(text[at])) at += 1;
  return at;
}

function stripSpaces(text) {
  let start = 0;
  let end = text.length;
  while (start < end && SPACES.includes(text[start])) start += 1;
  while (end > start && SPACES.includes(text[end - 1])) end -= 1;
  return text.slice(start, end);
}

/** Where an unsigned decimal from `at` ends ("12", "1.", "1.5", ".5"), or -1 if none starts there. */
function decimalEnd(text, at) {
  const wholeEnd = digitsEnd(text, at);
  if (wholeEnd < text.length && text[wholeEnd] === ".") {
    const fractionEnd = digitsEnd(text, wholeEnd + 1);
    return wholeEnd > at || fractionEnd > wholeEnd + 1 ? fractionEnd : -1;
  }
  return wholeEnd > at ? wholeEnd : -1;
}

/** The value of 2^exponent whose exponent starts at `at` (just past the "^"): "-3" or "(-3)"; null if none. */
function powerValue(text, at, negative) {
  at = spacesEnd(text, at);
  const bracketed = at < text.length && text[at] === "(";
  if (bracketed) at = spacesEnd(text, at + 1);
  const digitsStart = signEnd(text, at);
  let end = digitsEnd(text, digitsStart);
  if (end === digitsStart) return null;
  const exponent = Number(text.slice(at, end));
  if (bracketed) {
    end = spacesEnd(text, end);
    if (end === text.length || text[end] !== ")") return null;
    end += 1;
  }
  if (end !== text.length) return null;
  const magnitude = pow2(exponent);
  return negative ? -magnitude : magnitude;
}

/**
 * What `text` (stripped, with ASCII minus signs) spells: {value}, {value: null} when it spells no
 * number, or {message} for a fraction over zero.
 */
function scanValue(text) {
  const start = signEnd(text, 0);
  const end = decimalEnd(text, start);
  if (end < 0) return { value: null };
  if (end === text.length) return { value: Number(text) };
  if (text[end] === "e" || text[end] === "E") {
    const exponentEnd = digitsEnd(text, signEnd(text, end + 1));
    const plain = exponentEnd === text.length && isDigit(text[exponentEnd - 1]);
    return { value: plain ? Number(text) : null };
  }
  const operator = spacesEnd(text, end);
  if (operator < text.length && text[operator] === "^" && text.slice(start, end) === "2") {
    return { value: powerValue(text, operator + 1, text.slice(0, start) === "-") };
  }
  if (operator < text.length && text[operator] === "/") {
    const below = spacesEnd(text, operator + 1);
    if (decimalEnd(text, below) !== text.length) return { value: null };
    const denominator = Number(text.slice(below));
    if (denominator === 0) return { message: `${text} divides by zero. Use a non-zero number below the line.` };
    return { value: Number(text.slice(0, end)) / denominator };
  }
  return { value: null };
}

function accepted(value) {
  return { ok: true, value, message: "" };
}

function rejected(message) {
  return { ok: false, value: null, message };
}

/**
 * A finite number from text: "0.5", "-1e-3", " 1.5 ", "3/8", "2^-3" or "2^(−3)"; the article's
 * minus sign (U+2212) is read as "-". Returns {ok, value, message}; on failure value is null and
 * message says what to type instead. Text longer than 100 characters is refused before it is read.
 */
export function parseNumber(text) {
  if (typeof text !== "string") return rejected(`Expected text to read a number from, got ${describe(text)}.`);
  if (text.length > MAX_NUMBER_CHARS) {
    const length = codePointCount(text);
    if (length > MAX_NUMBER_CHARS) {
      return rejected(`“${startOf(text)}” is ${length} characters long; a number is at most ${MAX_NUMBER_CHARS}.`);
    }
  }
  const stripped = stripSpaces(text);
  const cleaned = stripped.replace(/\u2212/g, "-");
  if (cleaned === "") return rejected(`Type a number, for example ${NUMBER_EXAMPLES}.`);
  const unsigned = cleaned.slice(signEnd(cleaned, 0));
  if (/^[\x00-\x7f]*$/.test(unsigned) && NOT_FINITE_WORDS.has(unsigned.toLowerCase())) {
    return rejected(`${cleaned} is not a finite number, and the lab needs one here. Try ${NUMBER_EXAMPLES}.`);
  }
  const scanned = scanValue(cleaned);
  if (scanned.message) return rejected(scanned.message);
  if (scanned.value === null) {
    return rejected(`“${visibleText(stripped)}” is not a number the lab can read. Type something like ${NUMBER_EXAMPLES}.`);
  }
  if (!Number.isFinite(scanned.value)) {
    return rejected(`${cleaned} is too large: it is beyond the largest float64 (about 1.8e308).`);
  }
  return accepted(scanned.value);
}

/** A row of numbers separated by commas, semicolons or spaces, at most 64 (lab.numbers.parse_number_row). */
export function parseNumberRow(text, label) {
  const refused = (message) => ({ ok: false, values: null, message });
  text = String(text);
  if (text.length > MAX_ROW_CHARS) {
    const length = codePointCount(text);
    if (length > MAX_ROW_CHARS) return refused(`${label}: the row is ${length} characters long; a row is at most ${MAX_ROW_CHARS}`);
  }
  const stripped = stripSpaces(text);
  const items = stripped === "" ? [] : stripped.split(SEPARATOR);
  if (!items.some((item) => item.length > 0)) return refused(`${label}: enter at least one number, separated by commas`);
  if (items.includes("")) {
    return refused(`${label}, item ${items.indexOf("") + 1} is empty: write one number between two commas, or remove a comma`);
  }
  if (items.length > MAX_ROW_LENGTH) return refused(`${label}: at most ${MAX_ROW_LENGTH} numbers, got ${items.length}`);
  const values = [];
  for (const [position, item] of items.entries()) {
    const parsed = parseNumber(item);
    if (!parsed.ok) {
      // an item too long to read is quoted by its start (its own message says how long it is)
      const shown = codePointCount(item) <= MAX_NUMBER_CHARS ? visibleText(item) : startOf(item);
      return refused(`${label}, item ${position + 1} ("${shown}"): ${parsed.message}`);
    }
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
