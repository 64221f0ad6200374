// The article's scale lab (Python lab.teach.scale): the lab convention, not a vendor recipe.
import { checkFiniteRow } from "../arrays.js";
import { E2M1_MAX, E2M1_VALUES } from "../codes/e2m1.js";
import { describe, labError } from "../errors.js";
import { dot } from "../fsum.js";

// Every weight becomes the nearest scale × E2M1(code) over all sixteen codes; on an exact tie
// the lowest unsigned code wins (ties go toward zero, zero is stored as +0). Distances are
// compared directly, not after dividing by the scale. A weight beyond ±6·scale saturates to the
// code for ±6 before any distance is computed: far out (w = 1e17 at scale 1) every distance
// rounds to the same float64, and the tie rule would otherwise pick code 0 and give ŵ = 0.

function checkScale(scale) {
  if (typeof scale !== "number") throw labError("DTypeError", `scale must be a real number, got ${describe(scale)}`);
  if (!Number.isFinite(scale) || scale <= 0) {
    throw labError("NonFiniteError", `scale must be a positive finite number, got ${describe(scale)}`);
  }
  return scale;
}

const CODE_PLUS_SIX = E2M1_VALUES.indexOf(E2M1_MAX);
const CODE_MINUS_SIX = E2M1_VALUES.indexOf(-E2M1_MAX);

function nearestScaledCode(weight, scale) {
  if (weight > E2M1_MAX * scale) return CODE_PLUS_SIX;
  if (weight < -E2M1_MAX * scale) return CODE_MINUS_SIX;
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

// The scale lab's dot product (lab.teach.scale._exact_dot): Infinity where a product or the sum leaves
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

/**
 * One row through the scale lab (Python lab.teach.scale.analyse): codes, ŵ, the signed weight errors
 * ŵ − w, which weights clipped (|w| > 6·scale), y = w·x, ŷ = ŵ·x (both fsum-exact), Δy = ŷ − y,
 * and each weight's share of Δy, terms[i] = (ŵᵢ − wᵢ)·xᵢ.
 */
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
