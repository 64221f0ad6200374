// ui.js labelRows: the rows that keep a figure's labels apart (the scale lab's marks above its
// chart, the nibble decoder's E2M1 ruler). Spans are worked by hand.
// Run: node --test tests/js/
import assert from "node:assert/strict";
import { test } from "node:test";

import { labelRows } from "../../widgets/ui.js";

test("labels far apart share the first row", () => {
  assert.deepEqual(labelRows([[0, 10], [16, 30], [40, 50]]), [0, 0, 0]);
});

test("a label closer than the gap to the last one in a row goes to the next row", () => {
  // 15 starts 5 after row 0's label ends: under the gap of 6, so row 1; 26 clears row 0 again
  assert.deepEqual(labelRows([[0, 10], [15, 20], [26, 30]]), [0, 1, 0]);
  assert.deepEqual(labelRows([[0, 10], [16, 20]]), [0, 0]);
});

test("each label takes the lowest row with room, opening rows as needed", () => {
  // four labels 12 apart, each 30 wide: rows 0, 1, 2, then row 0 has room again
  assert.deepEqual(labelRows([[0, 30], [12, 42], [24, 54], [36, 66]]), [0, 1, 2, 0]);
});

test("a label that no allowed row has room for gets −1 and leaves the rows as they were", () => {
  assert.deepEqual(labelRows([[0, 30], [12, 42], [24, 54], [36, 66]], 2), [0, 1, -1, 0]);
  assert.deepEqual(labelRows([[0, 30], [10, 20], [22, 40]], 1, 0), [0, -1, -1]);
});
