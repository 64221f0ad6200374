// The JS codec (widgets/codec/) against the Python codec, bit for bit.
//
// golden.json is written by tests/js/make_golden.py from lab/; floats there are IEEE bit
// patterns ("f64:<hex>", "f32:<hex>", "f64:NaN"), so these tests compare bits, never
// approximate values: -0 and +0 differ, and a float32 rounded at the wrong place fails.
// Run: node --test tests/js/
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { describe, test } from "node:test";

import * as codec from "../../widgets/codec/index.js";
import { assertSameBits, assertThrowsNamed, golden, hexBytes } from "./golden.mjs";

// ---------------------------------------------------------------------------------------------
// Golden vectors
// ---------------------------------------------------------------------------------------------

describe("golden vectors from the Python codec", () => {
  test("E2M1: all 16 codes, value and explain", () => {
    assert.equal(golden.e2m1.length, 16);
    for (const { code, value, explain } of golden.e2m1) {
      assertSameBits(codec.e2m1Decode(code), value, `e2m1Decode(${code})`);
      assertSameBits(codec.e2m1Explain(code), explain, `e2m1Explain(${code})`);
    }
    assertSameBits([...codec.E2M1_VALUES], golden.e2m1.map((c) => c.value), "E2M1_VALUES");
  });

  test("nibbles as UINT4 and INT4", () => {
    for (const { code, uint4, int4 } of golden.nibble) {
      assert.equal(codec.uint4(code), uint4);
      assert.equal(codec.int4(code), int4);
    }
  });

  test("nibbles under Q4_0, NF4 and IQ4_NL: the lab's decoders at unit scale, and their level tables", () => {
    const decoders = golden.nibbleDecoders;
    assert.equal(decoders.codes.length, 16);
    for (const { code, q40, nf4, iq4Nl } of decoders.codes) {
      assertSameBits(codec.q4_0Value(code), q40, `q4_0Value(${code})`);
      assertSameBits(codec.nf4Level(code), nf4, `nf4Level(${code})`);
      assertSameBits(codec.iq4NlValue(code), iq4Nl, `iq4NlValue(${code})`);
    }
    assertSameBits([...codec.NF4_LEVELS], decoders.nf4Levels, "NF4_LEVELS");
    assertSameBits([...codec.IQ4_NL_KVALUES], decoders.iq4NlKvalues, "IQ4_NL_KVALUES");
    assert.equal(codec.Q4_0_CODE_OFFSET, decoders.q40CodeOffset);
    for (const { code, error } of decoders.badCodes) {
      for (const decode of [codec.q4_0Value, codec.nf4Level, codec.iq4NlValue]) {
        assert.throws(() => decode(code), { name: error }, `${decode.name}(${code})`);
      }
    }
  });

  test("E8M0: all 256 bytes, value and explain", () => {
    assert.equal(golden.e8m0.length, 256);
    for (const { byte, value, explain } of golden.e8m0) {
      assertSameBits(codec.e8m0Decode(byte), value, `e8m0Decode(${byte})`);
      assertSameBits(codec.e8m0Explain(byte), explain, `e8m0Explain(${byte})`);
    }
  });

  test("E4M3: all 256 bytes, value and explain", () => {
    assert.equal(golden.e4m3.length, 256);
    for (const { byte, value, explain } of golden.e4m3) {
      assertSameBits(codec.e4m3Decode(byte), value, `e4m3Decode(${byte})`);
      assertSameBits(codec.e4m3Explain(byte), explain, `e4m3Explain(${byte})`);
    }
  });

  test("E2M1 encode under both rules: ±0, midpoints and their neighbours, saturation", () => {
    assert.ok(golden.e2m1Encode.length > 150);
    for (const { x, rounding, value, error } of golden.e2m1Encode) {
      const where = `e2m1Encode(${Object.is(x, -0) ? "-0" : x}, ${rounding})`;
      if (error) assertThrowsNamed(() => codec.e2m1Encode(x, rounding), error, where);
      else assert.equal(codec.e2m1Encode(x, rounding), value, where);
    }
    // the sign of zero: round half to even keeps it, MLX's rule stores +0
    assert.equal(codec.e2m1Encode(-0), 0b1000);
    assert.equal(codec.e2m1Encode(-1e-9), 0b1000);
    assert.equal(codec.e2m1Encode(-0, "mlx"), 0b0000);
  });

  test("E2M1 encode, round half to even, is ml_dtypes' float4_e2m1fn cast", () => {
    assert.ok(golden.e2m1EncodeMlDtypes.length > 80);
    for (const { x, code } of golden.e2m1EncodeMlDtypes) assert.equal(codec.e2m1Encode(x, "rne"), code, `e2m1Encode(${x})`);
  });

  test("E4M3 encode: midpoints, their neighbours, ±0, saturation, random values", () => {
    assert.ok(golden.e4m3Encode.length > 500);
    for (const { x, byte } of golden.e4m3Encode) assert.equal(codec.e4m3Encode(x), byte, `e4m3Encode(${x})`);
  });

  test("FP16 bit patterns", () => {
    for (const { bits: pattern, value } of golden.fp16) assertSameBits(codec.fp16Decode(pattern), value, `fp16Decode(${pattern})`);
  });

  test("FP16 encode: ties, double-rounding traps, subnormals, overflow", () => {
    assert.ok(golden.fp16Encode.length > 300);
    for (const { x, bits: pattern, error } of golden.fp16Encode) {
      const encoded = codec.fp16Encode(x);
      if (error) {
        assert.equal(encoded.ok, false, `fp16Encode(${x}) should fail (Python: ${error})`);
        assert.ok(encoded.message.length > 10);
        continue;
      }
      assert.equal(encoded.ok, true, `fp16Encode(${x}): ${encoded.message}`);
      assert.equal(encoded.bits, pattern, `fp16Encode(${x})`);
      assertSameBits(encoded.value, codec.fp16Decode(pattern), `fp16Encode(${x}).value`);
    }
  });

  test("fsum: CPython's exactly rounded sum, its errors included", () => {
    for (const [i, { values, value, error }] of golden.fsum.entries()) {
      if (error) assertThrowsNamed(() => codec.fsum(values), error, `fsum case ${i}`);
      else assertSameBits(codec.fsum(values), value, `fsum case ${i}`);
    }
  });

  test("scale lab: article rows, random rows with planted ties, bad input", () => {
    for (const [i, row] of golden.scaleLab.entries()) {
      const { w, x, scale } = row;
      const path = `scaleLab[${i}] (scale ${scale})`;
      if (row.error) {
        assertThrowsNamed(() => codec.scaleAnalyse(w, x, scale), row.error, path);
        continue;
      }
      const { error: _none, ...expected } = row;
      assertSameBits(codec.scaleAnalyse(w, x, scale), expected, path);
      assertSameBits(codec.scaleQuantizeCodes(w, scale), row.codes, `${path} codes`);
      assertSameBits(codec.scaleReconstruct(w, scale), row.wHat, `${path} wHat`);
      assertSameBits(codec.dot(w, x), row.y, `${path} dot`);
    }
  });

  test("scale lab: the representable values", () => {
    for (const { scale, values } of golden.scaleRepresentable) {
      assertSameBits(codec.scaleRepresentable(scale), values, `scaleRepresentable(${scale})`);
    }
  });

  test("MXFP4: random blocks and extreme scale bytes", () => {
    for (const [i, { codes, scaleBytes, weights, explain }] of golden.mxfp4.entries()) {
      assertSameBits(codec.mxfp4Dequantize(codes, scaleBytes), weights, `mxfp4[${i}]`);
      for (const expected of explain) {
        assertSameBits(codec.mxExplain(codes, scaleBytes, expected.index), expected, `mxfp4[${i}] explain`);
      }
    }
  });

  test("reading typed numbers and rows: same values and same messages as lab.text", () => {
    for (const { text, value, message } of golden.parse.numbers) {
      const parsed = codec.parseNumber(text);
      if (message !== undefined) assert.deepEqual([parsed.ok, parsed.message], [false, message], `parseNumber(${JSON.stringify(text)})`);
      else assertSameBits(parsed.value, value, `parseNumber(${JSON.stringify(text)})`);
    }
    for (const { text, value, message } of golden.parse.rows) {
      const parsed = codec.parseNumberRow(text, "weights");
      if (message !== undefined) assert.deepEqual([parsed.ok, parsed.message], [false, message], `parseNumberRow(${JSON.stringify(text)})`);
      else assertSameBits(parsed.values, value, `parseNumberRow(${JSON.stringify(text)})`);
    }
  });

  test("NVFP4: tensor scales at float32's edges are accepted or refused as in Python", () => {
    for (const { globalScale, value, error } of golden.nvfp4TensorFactor) {
      if (error) assert.throws(() => codec.nvfp4TensorFactor(globalScale), { name: error }, `global_scale ${globalScale}`);
      else assertSameBits(codec.nvfp4TensorFactor(globalScale), value, `global_scale ${globalScale}`);
    }
  });

  test("NVFP4: random blocks with and without a tensor scale", () => {
    for (const [i, row] of golden.nvfp4.entries()) {
      const { codes, scaleBytes, globalScale, tensorFactor, weights, explain } = row;
      assertSameBits(codec.nvfp4TensorFactor(globalScale), tensorFactor, `nvfp4[${i}] tensor factor`);
      assertSameBits(codec.nvfp4Dequantize(codes, scaleBytes, tensorFactor), weights, `nvfp4[${i}]`);
      for (const expected of explain) {
        const actual = codec.nvExplain(codes, scaleBytes, expected.index, globalScale);
        assertSameBits(actual, expected, `nvfp4[${i}] explain`);
      }
    }
  });

  test("Q4_K: random, quantized and planted blocks", () => {
    assert.ok(golden.q4k.length >= 100);
    for (const [i, { block, weights, scales, mins, explainBytes = [] }] of golden.q4k.entries()) {
      const bytes = hexBytes(block);
      assert.equal(bytes.length, codec.Q4K_BLOCK_BYTES);
      assertSameBits(codec.q4kDecodeBlock(bytes), weights, `q4k[${i}] weights`);
      assertSameBits(codec.q4kDecodeBlock(Uint8Array.from(bytes)), weights, `q4k[${i}] weights from a Uint8Array`);
      assertSameBits(codec.q4kUnpackScaleMin(bytes.slice(4, 16)), { scales, mins }, `q4k[${i}] scales/mins`);
      assert.deepEqual(codec.q4kPackScaleMin(scales, mins), bytes.slice(4, 16), `q4k[${i}] repacked`);
      for (const expected of explainBytes) {
        assertSameBits(codec.q4kExplainByte(bytes, expected.payloadIndex), expected, `q4k[${i}] explain`);
      }
    }
  });

  test("Q4_K: the presentation fixture", () => {
    const { block, weights, explainBytes } = golden.q4kPresentation;
    const bytes = hexBytes(block);
    assertSameBits(codec.q4kDecodeBlock(bytes), weights, "fixture weights");
    for (const expected of explainBytes) {
      assertSameBits(codec.q4kExplainByte(bytes, expected.payloadIndex), expected, `fixture byte ${expected.payloadIndex}`);
    }
  });

  test("Q4_K: metadata packing, placement, and where each field lives", () => {
    for (const { scales, mins, bytes: packed } of golden.q4kPack) {
      assert.deepEqual(codec.q4kPackScaleMin(scales, mins), packed);
      assert.deepEqual(codec.q4kUnpackScaleMin(packed), { scales, mins });
    }
    assert.equal(golden.q4kPlacement.length, 128);
    for (const { payloadIndex, lanes, subblocks } of golden.q4kPlacement) {
      assert.deepEqual(codec.q4kLanes(payloadIndex), lanes);
      assert.deepEqual(codec.q4kSubblocks(payloadIndex), subblocks);
    }
    for (const { subblock, sources } of golden.q4kMetadataSources) {
      assert.deepEqual(codec.q4kMetadataSources(subblock), sources);
    }
  });

  test("text from outside shown as lab.text.visible shows it: escapes and cuts, character for character", () => {
    for (const { text, limit, shown } of golden.visibleText) {
      assert.equal(codec.visibleText(text, limit), shown, `visibleText(${JSON.stringify(text)}, ${limit})`);
    }
    // a lone surrogate (which JSON written as UTF-8 cannot carry) is hidden, as Python's Cs is
    assert.equal(codec.visibleText("a\ud800b"), "a\\ud800b");
  });

  test("number text as the Python codec prints it", () => {
    for (const { value, text } of golden.formatLabNumber) {
      assert.equal(codec.formatLabNumber(value), text, `formatLabNumber(${value})`);
    }
    for (const { value, text } of golden.formatFloat32) {
      assert.equal(codec.formatFloat32(value), text, `formatFloat32(${value})`);
    }
  });

  test("the registry table, entry for entry", () => {
    assert.deepEqual(
      codec.FORMATS.map((entry) => ({ ...entry, nanScaleBytes: [...entry.nanScaleBytes] })),
      golden.registry,
    );
  });

  test("the size tables, entry for entry and in order", () => {
    assert.deepEqual(Object.entries(codec.FORMAT_BITS_PER_WEIGHT), golden.sizes.formatBitsPerWeight);
    assert.deepEqual([...codec.AFFINE_BITS], golden.sizes.affineBits);
    assert.deepEqual([...codec.AFFINE_GROUP_SIZES], golden.sizes.affineGroupSizes);
  });

  test("bits per weight", () => {
    for (const { format, opts, value, error } of golden.bitsPerWeight) {
      const path = `bitsPerWeight(${format}, ${JSON.stringify(opts)})`;
      if (error) assertThrowsNamed(() => codec.bitsPerWeight(format, opts), error, path);
      else assertSameBits(codec.bitsPerWeight(format, opts), value, path);
    }
  });
});

// ---------------------------------------------------------------------------------------------
// The article's numbers, worked in JS
// ---------------------------------------------------------------------------------------------

describe("the article's worked numbers", () => {
  test("1. 0101 is 5 as UINT4 and 3 as E2M1", () => {
    assert.equal(codec.uint4(0b0101), 5);
    assert.equal(codec.e2m1Decode(0b0101), 3);
    const explained = codec.e2m1Explain(0b0101);
    assert.equal(explained.bits, "0101");
    assert.equal(explained.exponentField, 0b10);
    assert.equal(explained.formula, "(+1) \u00d7 2^(2 \u2212 1) \u00d7 (1 + 1/2) = 3");
  });

  test("1. code 7 is 6, code 8 is −0 (and −8 as INT4)", () => {
    assert.equal(codec.e2m1Decode(7), 6);
    assert.ok(Object.is(codec.e2m1Decode(8), -0));
    assert.equal(codec.int4(8), -8);
    assert.equal(codec.e2m1Explain(8).formula, "(\u22121) \u00d7 2^(1 \u2212 1) \u00d7 (0 + 0/2) = \u22120");
  });

  test("2. scale 0.5 gives Δy = −0.25, scale 0.125 gives +0.125", () => {
    const half = codec.scaleAnalyse([-1, 0.3, 0.9, 1.7], [2, 1, -1, 0.5], 0.5);
    assert.deepEqual(half.wHat, [-1, 0.25, 1, 1.5]);
    assert.equal(half.y, -1.75);
    assert.equal(half.yHat, -2);
    assert.equal(half.deltaY, -0.25);
    const eighth = codec.scaleAnalyse([-1, 0.3, 0.9, 1.7], [2, 1, -1, 0.5], 0.125);
    assert.deepEqual(eighth.wHat, [-0.75, 0.25, 0.75, 0.75]);
    assert.equal(eighth.yHat, -1.625);
    assert.equal(eighth.deltaY, 0.125);
    assert.deepEqual(eighth.clipped, [true, false, true, true]);
  });

  test("2. positive representable weights at scale 0.5", () => {
    assert.deepEqual(
      codec.scaleRepresentable(0.5).filter((v) => v >= 0),
      [0, 0.25, 0.5, 0.75, 1, 1.5, 2, 3],
    );
  });

  test("3. E8M0 0x7E is 2^−1 = 0.5, and 3 × 0.5 = 1.5 in an MXFP4 block", () => {
    assert.equal(codec.e8m0Decode(0x7e), 0.5);
    assert.equal(codec.e8m0Explain(0x7e).formula, "2^(126 \u2212 127) = 2^\u22121 = 0.5");
    const codes = Array(32).fill(0b0101);
    assert.equal(codec.mxExplain(codes, [0x7e], 0).formula, "3 \u00d7 0.5 = 1.5");
    assert.equal(codec.bitsPerWeight("MXFP4"), 4.25);
  });

  test("4. E4M3 exponent 5 fraction 2 is 0.3125; 3 × 0.3125 × 1 = 0.9375", () => {
    const byte = (5 << 3) | 2;
    assert.equal(codec.e4m3Decode(byte), 0.3125);
    assert.equal(codec.e4m3Encode(0.3125), byte);
    const weights = codec.nvfp4Dequantize(Array(16).fill(0b0101), [byte]);
    assert.equal(weights[0], 0.9375);
    assert.equal(codec.nvExplain(Array(16).fill(0b0101), [byte], 0).formula, "3 \u00d7 0.3125 \u00d7 1 = 0.9375");
    assert.equal(codec.bitsPerWeight("NVFP4"), 4.5);
    assert.equal(codec.bitsPerWeight("NVFP4", { nWeights: 64 }), 5);
  });

  test("5. Q4_K fixture byte 0 (0xA5) gives 1.0 at lane 0 and 3.25 at lane 32", () => {
    const block = hexBytes(golden.q4kPresentation.block);
    const explained = codec.q4kExplainByte(block, 0);
    assert.equal(explained.byte, 0xa5);
    assert.deepEqual([explained.lowLane, explained.highLane], [0, 32]);
    assert.deepEqual(explained.weights, [1, 3.25]);
    assert.equal(explained.low.formula, "0.25 \u00d7 5 \u2212 0.25 = 1");
    assert.equal(explained.high.formula, "0.375 \u00d7 10 \u2212 0.5 = 3.25");
    const weights = codec.q4kDecodeBlock(block);
    assert.deepEqual([weights[0], weights[32]], [1, 3.25]);
    assert.deepEqual(codec.q4kExplainByte(block, 1).weights, [-0.25, -0.5]);
  });

  test("6. s4 = (33 & 15) | ((130 >> 6) << 4) = 33", () => {
    const metadata = hexBytes(golden.q4kPresentation.block).slice(4, 16);
    assert.equal(metadata[8], 33);
    assert.equal(metadata[0], 130);
    assert.equal(codec.q4kUnpackScaleMin(metadata).scales[4], 33);
    assert.equal(codec.q4kExplainMetadata(metadata, 4).scaleFormula, "s4 = (B[8] & 15) | ((B[0] >> 6) << 4) = (33 & 15) | ((130 >> 6) << 4) = 1 | 32 = 33");
  });
});

// ---------------------------------------------------------------------------------------------
// Robust input
// ---------------------------------------------------------------------------------------------

describe("reading what a learner types", () => {
  test("parseNumber accepts decimals, exponents, powers of two, fractions and the article's minus", () => {
    const cases = {
      "0.5": 0.5,
      "-1e-3": -1e-3,
      "2^-3": 0.125,
      " 1.5 ": 1.5,
      "2^(-3)": 0.125,
      "-2^4": -16,
      "\u22120.25": -0.25,
      "3/8": 0.375,
      ".5": 0.5,
      "+7": 7,
      "1E2": 100,
      "-0": -0,
    };
    for (const [text, value] of Object.entries(cases)) {
      const parsed = codec.parseNumber(text);
      assert.equal(parsed.ok, true, `${JSON.stringify(text)}: ${parsed.message}`);
      assert.ok(Object.is(parsed.value, value), `${JSON.stringify(text)} gave ${parsed.value}`);
    }
  });

  test("parseNumber rejects empty, words, NaN, infinities and overflow with a message", () => {
    for (const text of ["", "   ", "abc", "NaN", "nan", "inf", "-Infinity", "1e400", "2^2000", "1/0", "0x10", "1,5", "2^0.5", "--1", null, 3]) {
      const parsed = codec.parseNumber(text);
      assert.equal(parsed.ok, false, `${JSON.stringify(text)} should be rejected`);
      assert.equal(parsed.value, null);
      assert.ok(parsed.message.length > 10, `${JSON.stringify(text)} needs a message`);
    }
    assert.match(codec.parseNumber("").message, /Type a number/);
    assert.match(codec.parseNumber("abc").message, /“abc” is not a number/);
    assert.match(codec.parseNumber("NaN").message, /not a finite number/);
  });

  test("a megabyte of digits, of a fraction or of slashes is refused in well under a second", () => {
    // in a child node, killed after 20 s: a quadratic reader blocks the event loop, which no test timeout interrupts
    const numbers = new URL("../../widgets/codec/numbers.js", import.meta.url).href;
    const script = `
      import { parseNumber, parseNumberRow } from ${JSON.stringify(numbers)};
      const n = 1_000_000;
      const texts = { digits: "1".repeat(n), fraction: "1/" + "1".repeat(n), slashes: "1" + "/1".repeat(n / 2) };
      const results = {};
      for (const [name, text] of Object.entries(texts)) {
        const started = performance.now();
        const number = parseNumber(text);
        const row = parseNumberRow(text, "weights");
        results[name] = { ms: performance.now() - started, number, row };
      }
      console.log(JSON.stringify(results));`;
    const child = spawnSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8", timeout: 20_000 });
    assert.equal(child.status, 0, `the child node did not finish (${child.signal ?? child.stderr})`);
    for (const [name, { ms, number, row }] of Object.entries(JSON.parse(child.stdout))) {
      assert.ok(ms < 250, `${name}: ${ms.toFixed(0)} ms`);
      assert.equal(number.ok, false, name);
      assert.match(number.message, /” is 100000[0-2] characters long; a number is at most 100\.$/, name);
      assert.match(row.message, /^weights: the row is 100000[0-2] characters long; a row is at most 6528$/, name);
    }
  });

  test("parseByte accepts decimal, hex and binary in 0..255", () => {
    const cases = { "0x7E": 126, "0x7e": 126, "126": 126, "0b01111110": 126, " 0xA5 ": 0xa5, "0b1010 0101": 0xa5, "0": 0, "255": 255, "0xFF": 255 };
    for (const [text, value] of Object.entries(cases)) {
      assert.deepEqual(codec.parseByte(text), { ok: true, value, message: "" }, JSON.stringify(text));
    }
  });

  test("parseByte rejects out-of-range, negative and malformed text with a hint", () => {
    for (const text of ["", "256", "0x100", "-1", "1.5", "abc", "0b2", "0x", "1010 0101", null]) {
      const parsed = codec.parseByte(text);
      assert.equal(parsed.ok, false, `${JSON.stringify(text)} should be rejected`);
      assert.equal(parsed.value, null);
      assert.ok(parsed.message.length > 10);
    }
    assert.match(codec.parseByte("256").message, /does not fit in a byte/);
    assert.match(codec.parseByte("-1").message, /cannot be negative/);
    assert.match(codec.parseByte("A5").message, /0xA5/);
    assert.match(codec.parseByte("1010 0101").message, /0b1010 0101/);
    assert.match(codec.parseByte("10100101").message, /0b10100101/);
  });

  test("parseByte's hints only suggest what the field takes, and its refusals read naturally", () => {
    // Whatever "start with 0x: …" or "0b: …" suggests must itself be accepted, at the field's width.
    const texts = ["abc", "ABC", "1e999", "1e2", "A5", "a5", "ff", "fff", "F", "1F", "0b2", "0bad", "1010 0101", "1111 1111 1", "10100101", "100000000", "1010", "11111", "12 34"];
    for (const bits of [4, 6, 8]) {
      for (const text of texts) {
        const parsed = codec.parseByte(text, bits);
        for (const [, suggested] of parsed.message.matchAll(/start with 0[xb]: (0[xb][^.]*)\./g)) {
          assert.ok(codec.parseByte(suggested, bits).ok, `${bits} bits: ${JSON.stringify(text)} suggests ${suggested}, which is refused`);
        }
      }
    }
    assert.doesNotMatch(codec.parseByte("abc").message, /0xABC/);
    assert.doesNotMatch(codec.parseByte("1e999").message, /0x1E999/);
    assert.match(codec.parseByte("1e999").message, /^“1e999” is not a byte\. Type something like 126, 0x7E or 0b01111110\.$/);
    assert.equal(codec.parseByte("256").message, "256 does not fit in a byte. Type 0 to 255 or 0x00 to 0xFF.");
    assert.equal(codec.parseByte("0x1FF").message, "0x1FF (511) does not fit in a byte. Type 0 to 255 or 0x00 to 0xFF.");
    // a field narrower than a byte (an E2M1 code) says its own range and hints only within it
    assert.deepEqual(codec.parseByte("0b0101", 4), { ok: true, value: 5, message: "" });
    assert.equal(codec.parseByte("16", 4).message, "16 does not fit in 4 bits. Type 0 to 15 or 0x0 to 0xF.");
    assert.match(codec.parseByte("F", 4).message, /start with 0x: 0xF\./);
    assert.doesNotMatch(codec.parseByte("A5", 4).message, /0xA5/);
    assert.match(codec.parseByte("1010", 4).message, /start with 0b: 0b1010\./);
  });
});

describe("bad input throws the error Python raises", () => {
  test("a scale that is not positive and finite", () => {
    for (const scale of [0, -0, -0.5, NaN, Infinity, -Infinity]) {
      for (const call of [
        () => codec.scaleAnalyse([1], [1], scale),
        () => codec.scaleQuantizeCodes([1], scale),
        () => codec.scaleReconstruct([1], scale),
        () => codec.scaleRepresentable(scale),
      ]) {
        assert.throws(call, { name: "NonFiniteError", message: /scale must be a positive finite number/ });
      }
    }
    assert.throws(() => codec.scaleAnalyse([1], [1], "0.5"), { name: "DTypeError" });
  });

  test("rows of different lengths, empty rows, non-finite weights", () => {
    assert.throws(() => codec.scaleAnalyse([1, 2], [1], 0.5), { name: "ShapeError", message: /same length/ });
    assert.throws(() => codec.scaleAnalyse([], [], 0.5), { name: "ShapeError" });
    assert.throws(() => codec.scaleAnalyse([NaN], [1], 0.5), { name: "NonFiniteError" });
    assert.throws(() => codec.dot([1, 2], [1]), { name: "ShapeError" });
  });

  test("codes and bytes out of range, blocks of the wrong size", () => {
    assert.throws(() => codec.e2m1Decode(16), { name: "CodeRangeError" });
    assert.throws(() => codec.e2m1Decode(1.5), { name: "DTypeError" });
    assert.throws(() => codec.e8m0Decode(256), { name: "CodeRangeError" });
    assert.throws(() => codec.e4m3Encode(NaN), { name: "NonFiniteError" });
    assert.throws(() => codec.e2m1Encode(Infinity), { name: "NonFiniteError" });
    assert.throws(() => codec.e2m1Encode(1, "nearest"), { name: "RuleError" });
    assert.throws(() => codec.mxfp4Dequantize(Array(31).fill(0), [127]), { name: "ShapeError" });
    assert.throws(() => codec.nvfp4Dequantize(Array(16).fill(0), [56, 56]), { name: "ShapeError" });
    assert.throws(() => codec.nvfp4TensorFactor(0), { name: "NonFiniteError" });
    assert.throws(() => codec.q4kDecodeBlock(Array(143).fill(0)), { name: "ShapeError" });
    assert.throws(() => codec.q4kLanes(128), { name: "CodeRangeError" });
    assert.throws(() => codec.q4kPackScaleMin(Array(8).fill(64), Array(8).fill(0)), { name: "CodeRangeError" });
    assert.throws(() => codec.mxExplain(Array(32).fill(0), [127], 32), { name: "ShapeError" });
    assert.throws(() => codec.bitsPerWeight("INT3"), { name: "ValueError" });
  });
});
