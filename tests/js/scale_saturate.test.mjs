// The scale lab saturates a weight beyond ±6·scale to ±6·scale (the documented rule). Far out,
// every distance to the sixteen scaled codes rounds to the same float64, so a plain nearest search
// with "lowest code wins a tie" would return code 0 (ŵ = 0) for a weight it also flags as clipped.
// Expected values are worked by hand: E2M1 code 7 is +6 and code 15 is −6.
// Run: node --test tests/js/
import assert from "node:assert/strict";
import { test } from "node:test";

import * as codec from "../../widgets/codec/index.js";

const TINY = 2 ** -60;

test("w = 1e17 at scale 1 saturates to +6 (code 7), flagged clipped", () => {
  assert.deepEqual(codec.scaleQuantizeCodes([1e17], 1), [7]);
  assert.deepEqual(codec.scaleReconstruct([1e17], 1), [6]);
  const row = codec.scaleAnalyse([1e17], [1], 1);
  assert.deepEqual(row.wHat, [6]);
  assert.deepEqual(row.clipped, [true]);
  assert.deepEqual(row.weightError, [6 - 1e17]);
});

test("w = −1 at scale 2^−60 saturates to −6·2^−60 (code 15)", () => {
  assert.deepEqual(codec.scaleQuantizeCodes([-1], TINY), [15]);
  assert.deepEqual(codec.scaleReconstruct([-1], TINY), [-6 * TINY]);
  assert.deepEqual(codec.scaleAnalyse([-1], [1], TINY).clipped, [true]);
  assert.deepEqual(codec.scaleReconstruct([-1e300, 1e300], 1), [-6, 6]);
});

test("weights at or just inside ±6·scale still take the nearest code, unclipped", () => {
  const justInside = 6 * TINY * (1 - 2 ** -52); // the float64 just below 6·2^−60
  assert.deepEqual(codec.scaleReconstruct([justInside, -justInside], TINY), [6 * TINY, -6 * TINY]);
  assert.deepEqual(codec.scaleAnalyse([justInside], [1], TINY).clipped, [false]);
  assert.deepEqual(codec.scaleReconstruct([6, -6], 1), [6, -6]);
  assert.deepEqual(codec.scaleAnalyse([6], [1], 1).clipped, [false]);
  // 5 sits halfway between 4 (code 6) and 6 (code 7): the lowest code wins the tie.
  assert.deepEqual(codec.scaleReconstruct([5], 1), [4]);
  assert.deepEqual(codec.scaleReconstruct([5 * TINY], TINY), [4 * TINY]);
  // 6.5 is beyond 6·1 but close: saturation and the nearest search agree on 6.
  assert.deepEqual(codec.scaleReconstruct([6.5, -6.5], 1), [6, -6]);
});
