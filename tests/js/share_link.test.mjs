// What an explainer's link carries (widgets/host.js): only the inputs that differ from the widget's
// defaults, and from a page opened from disk a link relative to the explainer's own file.
import { test } from "node:test";
import assert from "node:assert/strict";
import { linkFragment, shareableLink } from "../../widgets/host.js";

const block = Array.from({ length: 144 }, (_, i) => (i * 37) % 256);
const defaults = { block, payload_index: 0 };
const inputs = ["block", "payload_index"];

test("a link carries the one input that changed, not the 144-byte block", () => {
  const fragment = linkFragment({ block: [...block], payload_index: 17 }, inputs, defaults);
  assert.equal(fragment, "#%7B%22payload_index%22%3A17%7D");
  assert.deepEqual(JSON.parse(decodeURIComponent(fragment.slice(1))), { payload_index: 17 });
});

test("a changed byte of the block carries the block", () => {
  const changed = [...block];
  changed[20] = 0;
  assert.deepEqual(JSON.parse(decodeURIComponent(linkFragment({ block: changed, payload_index: 0 }, inputs, defaults).slice(1))), { block: changed });
});

test("at the defaults the link says so, whatever the order of an object's keys", () => {
  assert.equal(linkFragment({ ...defaults }, inputs, defaults), "#%7B%7D");
  const answers = { defaults: { answers: { a: "1", b: "2" } }, now: { answers: { b: "2", a: "1" } } };
  assert.equal(linkFragment(answers.now, ["answers"], answers.defaults), "#%7B%7D");
  assert.equal(linkFragment({ answers: { a: "1" } }, ["answers"], answers.defaults), "#" + encodeURIComponent('{"answers":{"a":"1"}}'));
});

test("from disk the link names the file; served, it is the whole address", () => {
  assert.equal(shareableLink(new URL("file:///tmp/pytest-7/q4k-explorer.html#%7B%7D"), "q4k-explorer.html"), "q4k-explorer.html#%7B%7D");
  assert.equal(shareableLink(new URL("http://127.0.0.1:8000/explainers/q4k-explorer.html#%7B%7D"), "q4k-explorer.html"), "http://127.0.0.1:8000/explainers/q4k-explorer.html#%7B%7D");
});
