// Each module of the JS codec (widgets/codec/) loads on its own, and the index re-exports all of
// the public ones. Each module is imported in a fresh node process with nothing loaded before it:
// that links its imports (a name the named module does not export fails to link) and runs its
// top-level code (constants such as pow2(-6) need their imports at load time), so a module is
// known to stand alone, not only as part of the index that the golden tests load.
// Run: node --test tests/js/
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { test } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";

import * as codec from "../../widgets/codec/index.js";

const root = fileURLToPath(new URL("../../widgets/codec/", import.meta.url));

function modulesUnder(directory) {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) return modulesUnder(path);
    return entry.name.endsWith(".js") ? [path] : [];
  });
}

const modules = modulesUnder(root).sort();

test("the codec is split into modules", () => {
  assert.ok(modules.length > 10, `expected the codec's modules under ${root}, found ${modules.length}`);
});

for (const path of modules) {
  const name = relative(root, path);
  test(`${name} loads on its own, with only its own imports`, () => {
    const script = `const m = await import(${JSON.stringify(pathToFileURL(path).href)}); console.log(JSON.stringify(Object.keys(m)));`;
    const result = spawnSync(process.execPath, ["--input-type=module", "--eval", script], { encoding: "utf8" });
    assert.equal(result.status, 0, `${name} failed to load on its own:\n${result.stderr}`);
    if (name !== "index.js") assert.ok(JSON.parse(result.stdout).length > 0, `${name} exports nothing`);
  });
}

// `export *` silently drops a name two modules both export; this catches that.
const reExported = [...readFileSync(join(root, "index.js"), "utf8").matchAll(/^export \* from "\.\/(.+)";$/gm)].map((m) => m[1]);

for (const name of reExported) {
  test(`index.js re-exports every export of ${name}`, async () => {
    const module = await import(pathToFileURL(join(root, name)).href);
    for (const [key, value] of Object.entries(module)) {
      assert.ok(Object.is(codec[key], value), `${key} from ${name} is missing from index.js`);
    }
  });
}
