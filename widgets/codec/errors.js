// Errors the codec throws: an Error whose `name` is the Python exception class the lab raises for
// the same input (lab.errors: ShapeError, CodeRangeError, ...), so tests and widgets can match on it.

/** An Error named after the Python exception the lab raises for the same input. */
export function labError(name, message) {
  const error = new Error(message);
  error.name = name;
  return error;
}

/** A value as an error message quotes it: strings in quotes, and -0 kept visible. */
export function describe(value) {
  if (typeof value === "string") return JSON.stringify(value);
  if (Object.is(value, -0)) return "-0";
  return String(value);
}
