// The course page's text fitted to the screen (widgets/page_fit.js): which spaces become no-break
// spaces, which table cells are kept on one line, and what a wide table says of the columns out of
// view. The browser side (every page at 390 and 1440 px) is tests/browser/test_table_layout.py.
// Run: node --test tests/js/
import assert from "node:assert/strict";
import { test } from "node:test";

import { WHOLE_CELL_CHARS, hiddenColumnsText, joinedNumbers, keptWhole } from "../../widgets/page_fit.js";

const NBSP = "\u00a0";

test("a number keeps its operator, its × and its unit on its line", () => {
  // notebook 5's worked arithmetic, its metadata table, notebook 6's shapes, notebook 7's payloads
  // a line may still break before an "=" or a "×", never after one
  assert.equal(joinedNumbers("gain 0.125 × 2 = 0.25, offset 0"), `gain 0.125${NBSP}×${NBSP}2 =${NBSP}0.25, offset 0`);
  assert.equal(joinedNumbers("s₄ = 33"), `s₄ =${NBSP}33`);
  assert.equal(joinedNumbers("256 × 512"), `256${NBSP}×${NBSP}512`);
  assert.equal(joinedNumbers("3.71875 GB"), `3.71875${NBSP}GB`);
  assert.equal(joinedNumbers("253,113,024 bytes, 12.5 %"), `253,113,024${NBSP}bytes, 12.5${NBSP}%`);
  assert.equal(joinedNumbers("(33 >> 4) | ((68 >> 6) << 4) = 2 | 16"), `(33 >>${NBSP}4) | ((68 >>${NBSP}6) <<${NBSP}4) =${NBSP}2 | 16`);
  assert.equal(joinedNumbers("x = −0.0157"), `x =${NBSP}−0.0157`);
});

test("words, and numbers with no operator or unit, are left as they are", () => {
  for (const text of ["the block on each rule's grid", "7 weights per row in 4 groups", "a GB of weights", "2 Bytes", "= x"]) {
    assert.equal(joinedNumbers(text), text);
  }
  // a unit only as a word of its own: "4 bitsy" and "3 GBs" are not "4 bits" and "3 GB"
  assert.equal(joinedNumbers("4 bitsy, 3 GBs"), "4 bitsy, 3 GBs");
  assert.equal(joinedNumbers(joinedNumbers("= 0.25")), joinedNumbers("= 0.25")); // once is enough
});

test("a cell of up to WHOLE_CELL_CHARS characters is kept whole, a sentence is not", () => {
  assert.equal(WHOLE_CELL_CHARS, 24);
  for (const cell of ["3.71875 GB", "256 × 512", "s₄ = 33", "blk.0.attn_output.weight", "Q4_K"]) assert.ok(keptWhole(cell), cell);
  // characters, not UTF-16 units: 13 mathematical letters are 26 units and 13 characters
  assert.ok(keptWhole("𝑥".repeat(13)) && !keptWhole("𝑥".repeat(25)));
  for (const cell of ["", "   ", "blk.0.post_attention_norm.weight", "eight 6-bit scales and eight 6-bit mins"]) {
    assert.ok(!keptWhole(cell), cell);
  }
});

test("a wide table names the columns out of view and on which side", () => {
  assert.equal(hiddenColumnsText([], []), "");
  assert.equal(hiddenColumnsText([], ["bits/weight"]), "1 more column to the right: bits/weight →");
  assert.equal(hiddenColumnsText([], ["bytes", "bits/weight"]), "2 more columns to the right: bytes, bits/weight →");
  assert.equal(
    hiddenColumnsText(["tensor"], ["max ulps", ""]),
    "← 1 column to the left: tensor · 2 more columns to the right: max ulps, (unnamed) →",
  );
});
