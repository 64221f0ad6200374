// What the GGUF block formats' codec modules share (Python lab.formats._tensor's GGUF parts and
// lab.formats._ggml's nibble halves and fifth bits): a block's layout, its bytes checked, and the
// pieces of a weight's trace.
//
// Every format module exports a block description and two functions:
//   <format>DecodeBlock(bytes)          the block's weights as a Float32Array, bit for bit gguf-py's
//   <format>ExplainWeight(bytes, index) Python's explain(index) of the block, key for key, plus
//                                       `parts`: every run of bits the weight is read from
// A part is {name, byte, bits: [low, high], value, field, fieldBits: [low, high]}: bits low..high
// of block byte `byte` (in the layout part `name`) hold `value`, which is bits fieldBits of the
// field `field` ("code", "scale", "min", "d", "dmin", "m"). A weight depends on those bits and no
// others: tests/js/blocks.test.mjs flips every other bit of the block and sees the weight stay.
import { checkCodes } from "../arrays.js";
import { binary } from "../codes/bits.js";
import { fp16Decode } from "../codes/fp16.js";
import { labError } from "../errors.js";
import { checkIndex } from "./blocks.js";

/**
 * A format's block as the explorer draws it: its weights, the weights that share a sub-block
 * scale (null where one scale serves the block), the rule that makes a weight, and `parts` in byte
 * order, each [name, size, words, role] as Python's gguf_layout lists them (name, size, words);
 * role is what the part holds, for its colour: "super" (a float16 scale), "scales" (sub-block
 * scales and minimums), "high" (the top bits of codes kept apart) or "codes".
 */
export function ggmlBlock({ title, weights, subblockWeights = null, rule, parts }) {
  let start = 0;
  const laid = parts.map(([name, size, words, role]) => {
    const entry = Object.freeze({ name, start, size, words, role });
    start += size;
    return entry;
  });
  return Object.freeze({ title, weights, subblockWeights, bytes: start, rule, parts: Object.freeze(laid) });
}

/** The block's bytes as numbers 0..255, exactly one block of the format. */
export function ggmlBytes(bytes, block) {
  const values = checkCodes(bytes, 256, `${block.title} byte`);
  if (values.length !== block.bytes) {
    throw labError("ShapeError", `a ${block.title} block is ${block.bytes} bytes, got ${values.length}`);
  }
  return values;
}

/** The weight's place in the block, with negative indices counted from the end as Python does. */
export function ggmlLane(index, block) {
  return checkIndex(index, block.weights);
}

/** The little-endian float16 at `offset`. */
export function ggmlHalf(bytes, offset) {
  return fp16Decode(bytes[offset] | (bytes[offset + 1] << 8));
}

/** One part of a weight's trace: bits low..high of byte `byte`, which are bits fieldBits of `field`. */
export function ggmlPart(bytes, name, byte, [low, high], field, fieldBits) {
  const value = (bytes[byte] >> low) & ((1 << (high - low + 1)) - 1);
  return { name, byte, bits: [low, high], value, field, fieldBits };
}

/** The two bytes of a little-endian float16 `field` at `offset`, low byte first. */
export function ggmlHalfParts(bytes, name, offset, field = name) {
  return [ggmlPart(bytes, name, offset, [0, 7], field, [0, 7]), ggmlPart(bytes, name, offset + 1, [0, 7], field, [8, 15])];
}

// ggml's 32-weight blocks keep 32 four-bit codes in 16 bytes by halves (lab.formats._ggml):
//   byte j (0..15):   bits 7..4 = code of weight j + 16     bits 3..0 = code of weight j

/** Where the nibble of weight `lane` (0..31) sits in halves starting at block byte `start`. */
export function ggmlHalvesPlace(lane, start) {
  const high = lane >= 16;
  return { byte: start + (lane % 16), nibble: high ? "high" : "low", bits: high ? [4, 7] : [0, 3] };
}

/** The four-bit code of weight `lane` in halves starting at `start`. */
export function ggmlHalvesCode(bytes, lane, start) {
  const place = ggmlHalvesPlace(lane, start);
  return (bytes[place.byte] >> place.bits[0]) & 15;
}

// Q5_0 and Q5_1 add a fifth bit per code in qh, one little-endian uint32: bit j for weight j, so
// byte qhStart + j // 8, bit j % 8; the low four bits sit by halves in qs, right after qh.

/** The five-bit code of weight `lane` of a block whose qh starts at `qhStart`. */
export function ggmlFiveBitCode(bytes, lane, qhStart) {
  const fifth = (bytes[qhStart + Math.floor(lane / 8)] >> lane % 8) & 1;
  return (fifth << 4) | ggmlHalvesCode(bytes, lane, qhStart + 4);
}

/** Python lab.formats._ggml.five_bit_fields: where a five-bit code's bits sit, and the code. */
export function ggmlFiveBitFields(lane, code, qhStart) {
  return {
    qhBit: lane,
    qhByte: qhStart + Math.floor(lane / 8),
    qhBitInByte: lane % 8,
    fifthBit: code >> 4,
    byte: qhStart + 4 + (lane % 16),
    nibble: lane < 16 ? "low" : "high",
    lowBits: code & 15,
    code,
    codeBits: `${code >> 4} ${binary(code & 15, 4)}`,
  };
}

/** The trace parts of a five-bit code: its fifth bit in qh, then its low nibble in qs. */
export function ggmlFiveBitParts(bytes, lane, qhStart) {
  const place = ggmlHalvesPlace(lane, qhStart + 4);
  const bit = lane % 8;
  return [
    ggmlPart(bytes, "qh", qhStart + Math.floor(lane / 8), [bit, bit], "code", [4, 4]),
    ggmlPart(bytes, "qs", place.byte, place.bits, "code", [0, 3]),
  ];
}
