// Reading tests/js/golden.json, and comparing with it bit for bit: shared by the golden tests.
//
// golden.json is written by tests/js/make_golden.py from lab/; floats there are IEEE bit
// patterns ("f64:<hex>", "f32:<hex>", "f64:NaN"), so these helpers compare bits, never
// approximate values: -0 and +0 differ, and a float32 rounded at the wrong place fails.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

const bits = new DataView(new ArrayBuffer(8));

function decodeFloat(text) {
  const [width, hex] = text.split(":");
  if (hex === "NaN") return NaN;
  if (width === "f64") {
    bits.setBigUint64(0, BigInt(`0x${hex}`));
    return bits.getFloat64(0);
  }
  bits.setUint32(0, Number.parseInt(hex, 16));
  return bits.getFloat32(0);
}

const camelCase = (key) => key.replace(/_([a-z0-9])/g, (_, letter) => letter.toUpperCase());

/** Floats decoded from their bits; keys renamed from Python's snake_case to the codec's camelCase. */
function revive(key, value) {
  if (typeof value === "string" && /^f(32:[0-9a-f]{8}|64:[0-9a-f]{16}|32:NaN|64:NaN)$/.test(value)) {
    return decodeFloat(value);
  }
  if (value && typeof value === "object" && !Array.isArray(value)) {
    return Object.fromEntries(Object.entries(value).map(([name, item]) => [camelCase(name), item]));
  }
  return value;
}

export const golden = JSON.parse(readFileSync(new URL("./golden.json", import.meta.url), "utf8"), revive);

export const hexBytes = (hex) => Array.from({ length: hex.length / 2 }, (_, i) => Number.parseInt(hex.slice(2 * i, 2 * i + 2), 16));

// ---------------------------------------------------------------------------------------------
// Bit-exact comparison
// ---------------------------------------------------------------------------------------------

function float64Hex(x) {
  bits.setFloat64(0, x);
  return bits.getBigUint64(0).toString(16).padStart(16, "0");
}

/** Deep equality where numbers must have identical float64 bits (any NaN equals any NaN). */
export function assertSameBits(actual, expected, path = "value") {
  if (typeof expected === "number") {
    assert.equal(typeof actual, "number", `${path}: expected a number, got ${typeof actual} ${actual}`);
    if (Number.isNaN(expected)) {
      assert.ok(Number.isNaN(actual), `${path}: expected NaN, got ${actual}`);
      return;
    }
    assert.equal(
      float64Hex(actual),
      float64Hex(expected),
      `${path}: expected ${Object.is(expected, -0) ? "-0" : expected}, got ${Object.is(actual, -0) ? "-0" : actual}`,
    );
    return;
  }
  if (Array.isArray(expected)) {
    assert.ok(Array.isArray(actual), `${path}: expected an array, got ${actual}`);
    assert.equal(actual.length, expected.length, `${path}: length`);
    expected.forEach((item, i) => assertSameBits(actual[i], item, `${path}[${i}]`));
    return;
  }
  if (expected !== null && typeof expected === "object") {
    assert.ok(actual !== null && typeof actual === "object", `${path}: expected an object, got ${actual}`);
    assert.deepEqual(Object.keys(actual).sort(), Object.keys(expected).sort(), `${path}: keys`);
    for (const key of Object.keys(expected)) assertSameBits(actual[key], expected[key], `${path}.${key}`);
    return;
  }
  assert.equal(actual, expected, path);
}

/** The call throws an Error whose name is the Python exception class name. */
export function assertThrowsNamed(call, name, path) {
  assert.throws(call, (error) => error instanceof Error && error.name === name, `${path}: expected ${name}`);
}
