// Input checks shared by the codecs (Python lab._arrays): integer codes in range, rows of finite
// numbers. Each throws the error the Python check raises for the same input.
import { describe, labError } from "./errors.js";

export function isListLike(value) {
  return Array.isArray(value) || (ArrayBuffer.isView(value) && !(value instanceof DataView));
}

/** An integer code in 0..limit-1, or a DTypeError / CodeRangeError like lab._arrays.as_code_array. */
export function checkCode(code, limit, what) {
  if (typeof code !== "number" || !Number.isInteger(code)) {
    throw labError("DTypeError", `${what} must be an integer in 0..${limit - 1}, got ${describe(code)}`);
  }
  if (code < 0 || code >= limit) {
    throw labError("CodeRangeError", `${what} must be in 0..${limit - 1}, got ${code}`);
  }
  return code;
}

export function checkCodes(codes, limit, what) {
  if (!isListLike(codes)) {
    throw labError("DTypeError", `${what}s must be a list of integers in 0..${limit - 1}, got ${describe(codes)}`);
  }
  return Array.from(codes, (code) => checkCode(code, limit, what));
}

/** A list of finite numbers, like lab._arrays.as_float_array. */
export function checkFiniteRow(values, what) {
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
