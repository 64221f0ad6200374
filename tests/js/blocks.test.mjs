// The GGUF block formats' codec modules (widgets/codec/formats/, through gguf_blocks.js) against
// the Python codec, and each weight's trace against the decoder.
//
// golden.json holds, per format, its layout and errors, and blocks quantized, planted (random
// float16 scales, -0 ones, sub-block scales all different) and of random bytes, each with
// Python's weights and explain() of a spread of weights. Decoding must match bit for bit and
// explainWeight key for key; its `parts` (the bits a weight is read from) must rebuild the fields
// explain names, and be the only bits the weight depends on: flipping any other bit of the block
// leaves it as it was, and flipping a bit of its code changes that bit of the code.
// Run: node --test tests/js/
import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { fp16Decode } from "../../widgets/codec/codes/fp16.js";
import { GGUF_BLOCK_CODECS, ggufBlockCodec } from "../../widgets/codec/formats/gguf_blocks.js";
import blockExplorer from "../../widgets/block_explorer.js";
import { assertSameBits, assertThrowsNamed, golden, hexBytes } from "./golden.mjs";

const HALF_FIELDS = new Set(["d", "dmin", "m"]);

function withoutParts(explained) {
  const { parts, ...rest } = explained;
  return rest;
}

function expectedExplain(expected) {
  const { index, ...rest } = expected;
  return rest;
}

/** Each field the parts name, rebuilt from them: {field: {value, width}}. */
function rebuilt(parts) {
  const fields = {};
  for (const part of parts) {
    const field = (fields[part.field] ??= { value: 0, width: 0 });
    field.value += part.value * 2 ** part.fieldBits[0];
    field.width = Math.max(field.width, part.fieldBits[1] + 1);
  }
  return fields;
}

/** The bits a weight's parts name, as "byte:bit" keys. */
function partBits(parts) {
  const owned = new Set();
  for (const part of parts) for (let bit = part.bits[0]; bit <= part.bits[1]; bit += 1) owned.add(`${part.byte}:${bit}`);
  return owned;
}

const casesOf = (typeName) => golden.ggufBlocks.filter((entry) => entry.typeName === typeName);

describe("GGUF block formats against the Python codec", () => {
  test("the explorer opens the GGUF types Python sends to it, in the registry's order", () => {
    assert.deepEqual(
      Object.keys(GGUF_BLOCK_CODECS),
      golden.ggufBlockFormats.map((format) => format.typeName),
    );
    assertThrowsNamed(() => ggufBlockCodec("Q4_K"), "UnsupportedTypeError", "Q4_K");
    assertThrowsNamed(() => ggufBlockCodec("toString"), "UnsupportedTypeError", "an Object.prototype name");
  });

  for (const format of golden.ggufBlockFormats) {
    const { block, decodeBlock, explainWeight } = ggufBlockCodec(format.typeName);

    test(`${format.typeName}: layout, sizes and refusals`, () => {
      assert.equal(block.weights, format.weights);
      assert.equal(block.subblockWeights, format.subblockWeights);
      assert.equal(block.bytes, format.bytes);
      assert.deepEqual(
        block.parts.map((part) => [part.name, part.size, part.words]),
        format.layout,
      );
      block.parts.forEach((part, i) => assert.equal(part.start, i === 0 ? 0 : block.parts[i - 1].start + block.parts[i - 1].size));
      const bytes = hexBytes(casesOf(format.typeName)[0].block);
      assertThrowsNamed(() => decodeBlock(bytes.slice(0, -1)), format.shortBlock, "short block");
      assertThrowsNamed(() => explainWeight(bytes.slice(0, -1), 0), format.shortBlock, "short block");
      assertThrowsNamed(() => explainWeight(bytes, format.weights), format.indexPastTheEnd, "index past the end");
      assertThrowsNamed(() => explainWeight(bytes, -format.weights - 1), format.indexBeforeTheStart, "index before the start");
    });

    test(`${format.typeName}: weights bit for bit and explain key for key`, () => {
      const cases = casesOf(format.typeName);
      assert.equal(cases.length, 5);
      for (const [n, entry] of cases.entries()) {
        const bytes = hexBytes(entry.block);
        assert.ok(decodeBlock(bytes) instanceof Float32Array);
        assertSameBits(Array.from(decodeBlock(bytes)), entry.weights, `case ${n} weights`);
        assertSameBits(Array.from(decodeBlock(Uint8Array.from(bytes))), entry.weights, `case ${n} weights from a Uint8Array`);
        for (const expected of entry.explain) {
          const where = `case ${n} weight ${expected.index}`;
          assertSameBits(withoutParts(explainWeight(bytes, expected.index)), expectedExplain(expected), where);
        }
      }
    });

    test(`${format.typeName}: each weight's parts rebuild the fields its explanation names`, () => {
      for (const [n, entry] of casesOf(format.typeName).entries()) {
        const bytes = hexBytes(entry.block);
        for (const { index } of entry.explain) {
          const explained = explainWeight(bytes, index);
          const where = `case ${n} weight ${index}`;
          for (const part of explained.parts) {
            const region = block.parts.find((candidate) => candidate.name === part.name);
            assert.ok(part.byte >= region.start && part.byte < region.start + region.size, `${where}: byte ${part.byte} in ${part.name}`);
            assert.equal(part.bits[1] - part.bits[0], part.fieldBits[1] - part.fieldBits[0], `${where}: widths`);
            assert.equal(part.value, (bytes[part.byte] >> part.bits[0]) & ((1 << (part.bits[1] - part.bits[0] + 1)) - 1), where);
          }
          const fields = rebuilt(explained.parts);
          assert.ok("code" in fields, `${where}: the code's parts`);
          for (const [field, { value, width }] of Object.entries(fields)) {
            if (HALF_FIELDS.has(field)) assertSameBits(fp16Decode(value), explained[field], `${where}: ${field}`);
            else assert.equal(value, explained[field] & (2 ** width - 1), `${where}: ${field}`);
          }
        }
      }
    });

    test(`${format.typeName}: a weight depends on its parts' bits and on no others`, () => {
      const entry = casesOf(format.typeName)[0];
      const bytes = hexBytes(entry.block);
      const weights = decodeBlock(bytes);
      const traced = entry.explain.map(({ index }) => explainWeight(bytes, index));
      const owned = traced.map((explained) => partBits(explained.parts));
      for (let byte = 0; byte < bytes.length; byte += 1) {
        for (let bit = 0; bit < 8; bit += 1) {
          const flipped = [...bytes];
          flipped[byte] ^= 1 << bit;
          const after = decodeBlock(flipped);
          traced.forEach((explained, i) => {
            const lane = explained.positionInBlock;
            if (!owned[i].has(`${byte}:${bit}`)) {
              assertSameBits(after[lane], weights[lane], `weight ${lane} after flipping byte ${byte} bit ${bit}`);
              return;
            }
            const codePart = explained.parts.find((part) => part.field === "code" && part.byte === byte && bit >= part.bits[0] && bit <= part.bits[1]);
            if (!codePart) return;
            const width = rebuilt(explained.parts).code.width;
            const again = explainWeight(flipped, lane);
            const codeBit = codePart.fieldBits[0] + bit - codePart.bits[0];
            assert.equal(again.code & (2 ** width - 1), (explained.code ^ (1 << codeBit)) & (2 ** width - 1), `weight ${lane}: code bit ${codeBit}`);
            assertSameBits(after[lane], again.weight, `weight ${lane} decoded as explained after flipping code bit ${codeBit}`);
          });
        }
      }
    });
  }
});

describe("the fifth bit and the high-bit mask, by hand", () => {
  test("Q5_0: qh bit 0 gives weight 0 its fifth bit; weight 16 shares its qs byte", () => {
    // d = 0.5 (0x3800), qh = 0x00000001, byte 6 = 0x3A: weight 0 is 16 + 10, weight 16 is 3
    const block = [0x00, 0x38, 0x01, 0, 0, 0, 0x3a, ...Array(15).fill(0)];
    const { decodeBlock, explainWeight } = ggufBlockCodec("Q5_0");
    const weights = decodeBlock(block);
    assert.equal(weights[0], 5); // 0.5 × (26 − 16)
    assert.equal(weights[16], -6.5); // 0.5 × (3 − 16)
    const traced = explainWeight(block, 0);
    assert.equal(traced.codeBits, "1 1010");
    assert.deepEqual(
      traced.parts.filter((part) => part.field === "code").map(({ name, byte, bits }) => [name, byte, bits]),
      [
        ["qh", 2, [0, 0]],
        ["qs", 6, [0, 3]],
      ],
    );
    assert.equal(traced.formula, "0.5 \u00d7 (26 \u2212 16) = 5");
  });

  test("Q3_K: a set hmask bit keeps the low bits as the level, a clear one subtracts 4", () => {
    // d = 1; u_0 = 33 (s_0 = 1): low nibble 1 in byte 96, top bits 10 in byte 104 bits 1..0
    const block = Array(110).fill(0);
    block[108] = 0x00;
    block[109] = 0x3c;
    block[96] = 0x01;
    block[104] = 0x02;
    block[32] = 0b10; // weight 0's low bits: 2
    block[0] = 0b1; // weight 0's hmask bit set: code 6, level 2
    const { decodeBlock, explainWeight } = ggufBlockCodec("Q3_K");
    assert.equal(decodeBlock(block)[0], 2);
    assert.equal(decodeBlock(block)[1], -4); // code 0: hmask clear, low bits 0
    const traced = explainWeight(block, 0);
    assert.equal(traced.valueFormula, "2 \u2212 0 = 2 (hmask bit 1)");
    assert.equal(traced.scaleFormula, "33 \u2212 32 = 1");
    assert.equal(explainWeight(block, 1).valueFormula, "0 \u2212 4 = \u22124 (hmask bit 0)");
  });
});

describe("the block explorer's state check", () => {
  const block = hexBytes(casesOf("Q5_0")[0].block);

  test("takes a whole block and a weight inside it", () => {
    assert.equal(blockExplorer.check({ type_name: "Q5_0", block, weight: 31 }), null);
  });

  test("refuses a weight outside the block, a block of the wrong size and a type it does not open", () => {
    assert.match(blockExplorer.check({ type_name: "Q5_0", block, weight: 32 }), /0\.\.31/);
    assert.match(blockExplorer.check({ type_name: "Q5_0", block, weight: 1.5 }), /whole number/);
    assert.match(blockExplorer.check({ type_name: "Q5_0", block: block.slice(1), weight: 0 }), /22 bytes/);
    assert.match(blockExplorer.check({ type_name: "Q4_K", block, weight: 0 }), /Q5_0/);
  });
});
