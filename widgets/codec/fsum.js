// Exactly rounded sums: CPython's math.fsum and the dot product the lab builds on it.
import { isListLike } from "./arrays.js";
import { describe, labError } from "./errors.js";

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
