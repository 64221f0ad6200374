// What a link asks of the course-wide presenter mode (widgets/ui.js, presenterFromLink): a teacher
// opens a page with ?present or #present, and ?present=off leaves the mode.
import { test } from "node:test";
import assert from "node:assert/strict";
import { presenterFromLink } from "../../widgets/ui.js";

test("?present and #present turn presenter mode on", () => {
  assert.equal(presenterFromLink("?present", ""), true);
  assert.equal(presenterFromLink("?file=01_one_nibble.py&present", ""), true);
  assert.equal(presenterFromLink("?present=on", ""), true);
  assert.equal(presenterFromLink("", "#present"), true);
  assert.equal(presenterFromLink("", "#PRESENT=on"), true);
});

test("?present=off and its spellings turn it off", () => {
  for (const word of ["off", "0", "false", "no", " Off "]) assert.equal(presenterFromLink(`?present=${encodeURIComponent(word)}`, "#present"), false);
});

test("a link that says nothing leaves the remembered choice alone", () => {
  assert.equal(presenterFromLink("", ""), null);
  assert.equal(presenterFromLink("?file=01_one_nibble.py", "#%7B%22code%22%3A5%7D"), null);
  assert.equal(presenterFromLink("?presenter", "#presentation"), null);
});
