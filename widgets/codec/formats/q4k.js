// Q4_K (Python lab.formats.q4k): 256 weights in a 144-byte super-block.
import { checkCode, checkCodes } from "../arrays.js";
import { binary, hexByte } from "../codes/bits.js";
import { fp16Decode } from "../codes/fp16.js";
import { labError } from "../errors.js";
import { formatFloat32 } from "../numbers.js";

// bytes   0..1    d      float16, little-endian (first byte = low 8 bits): scale of the gains
// bytes   2..3    dmin   float16, little-endian: scale of the offsets
// bytes   4..15   B[0..11]: eight 6-bit subblock scales s_j and eight 6-bit minimums m_j
// bytes  16..143  payload: 128 bytes, two 4-bit codes each
//
// Subblock j (32 lanes) reconstructs code q as  w = d·s_j·q − dmin·m_j, in float32 with each of
// d·s_j, dmin·m_j, gain·q and the final subtraction rounded (gguf-py's order, no fused multiply-add).
export const Q4K_BLOCK_BYTES = 144;
export const Q4K_BLOCK_WEIGHTS = 256;
export const Q4K_METADATA_OFFSET = 4;
export const Q4K_PAYLOAD_OFFSET = 16;
export const Q4K_PAYLOAD_BYTES = 128;

// Metadata packing, bit 7 first:
//   B[0..3]   = hh ssssss   s_0..s_3 in bits 0..5; bits 6..7 are bits 4..5 of s_4..s_7
//   B[4..7]   = hh mmmmmm   m_0..m_3 in bits 0..5; bits 6..7 are bits 4..5 of m_4..m_7
//   B[8..11]  = mmmm ssss   bits 0..3 of s_4..s_7 (low nibble) and of m_4..m_7 (high nibble)
// so for j = 0..3:  s_j = B[j] & 63,  m_j = B[j+4] & 63
//    for j = 4..7:  s_j = (B[j+4] & 15) | ((B[j-4] >> 6) << 4)
//                   m_j = (B[j+4] >> 4) | ((B[j]   >> 6) << 4)

function checkBytes(bytes, length, what) {
  const values = checkCodes(bytes, 256, `${what} byte`);
  if (values.length !== length) throw labError("ShapeError", `${what} is ${length} bytes, got ${values.length}`);
  return values;
}

/** The eight 6-bit subblock scales and minimums packed in the twelve metadata bytes B[0..11]. */
export function q4kUnpackScaleMin(b12) {
  const B = checkBytes(b12, 12, "Q4_K metadata");
  const scales = [];
  const mins = [];
  for (let j = 0; j < 4; j += 1) {
    scales.push(B[j] & 63);
    mins.push(B[j + 4] & 63);
  }
  for (let j = 4; j < 8; j += 1) {
    scales.push((B[j + 4] & 15) | ((B[j - 4] >> 6) << 4));
    mins.push((B[j + 4] >> 4) | ((B[j] >> 6) << 4));
  }
  return { scales, mins };
}

/** Twelve metadata bytes from eight scales and eight minimums (0..63); inverse of q4kUnpackScaleMin. */
export function q4kPackScaleMin(scales, mins) {
  const s = checkCodes(scales, 64, "6-bit subblock scale");
  const m = checkCodes(mins, 64, "6-bit subblock minimum");
  if (s.length !== 8 || m.length !== 8) {
    throw labError("ShapeError", `Q4_K has 8 subblock scales and 8 mins per block, got ${s.length} and ${m.length}`);
  }
  const scaleBytes = [0, 1, 2, 3].map((j) => s[j] | ((s[j + 4] >> 4) << 6));
  const minBytes = [0, 1, 2, 3].map((j) => m[j] | ((m[j + 4] >> 4) << 6));
  const splitBytes = [0, 1, 2, 3].map((j) => (s[j + 4] & 15) | ((m[j + 4] & 15) << 4));
  return [...scaleBytes, ...minBytes, ...splitBytes];
}

/** Where s_j and m_j live in B: pieces {byte, byteBits: [low, high], fieldBits: [low, high]}. */
export function q4kMetadataSources(j) {
  checkCode(j, 8, "subblock");
  if (j < 4) {
    return {
      scale: [{ byte: j, byteBits: [0, 5], fieldBits: [0, 5] }],
      min: [{ byte: j + 4, byteBits: [0, 5], fieldBits: [0, 5] }],
    };
  }
  return {
    scale: [
      { byte: j + 4, byteBits: [0, 3], fieldBits: [0, 3] },
      { byte: j - 4, byteBits: [6, 7], fieldBits: [4, 5] },
    ],
    min: [
      { byte: j + 4, byteBits: [4, 7], fieldBits: [0, 3] },
      { byte: j, byteBits: [6, 7], fieldBits: [4, 5] },
    ],
  };
}

/** How s_j and m_j are read out of B, with the arithmetic spelled out (Python lab.formats.q4k.explain_metadata). */
export function q4kExplainMetadata(b12, j) {
  const B = checkBytes(b12, 12, "Q4_K metadata");
  const sources = q4kMetadataSources(j);
  const { scales, mins } = q4kUnpackScaleMin(B);
  const scale = scales[j];
  const min = mins[j];
  let scaleFormula;
  let minFormula;
  if (j < 4) {
    scaleFormula = `s${j} = B[${j}] & 63 = ${B[j]} & 63 = ${scale}`;
    minFormula = `m${j} = B[${j + 4}] & 63 = ${B[j + 4]} & 63 = ${min}`;
  } else {
    const scaleLow = B[j + 4] & 15;
    const scaleHigh = (B[j - 4] >> 6) << 4;
    const minLow = B[j + 4] >> 4;
    const minHigh = (B[j] >> 6) << 4;
    scaleFormula =
      `s${j} = (B[${j + 4}] & 15) | ((B[${j - 4}] >> 6) << 4)` +
      ` = (${B[j + 4]} & 15) | ((${B[j - 4]} >> 6) << 4) = ${scaleLow} | ${scaleHigh} = ${scale}`;
    minFormula =
      `m${j} = (B[${j + 4}] >> 4) | ((B[${j}] >> 6) << 4)` +
      ` = (${B[j + 4]} >> 4) | ((${B[j]} >> 6) << 4) = ${minLow} | ${minHigh} = ${min}`;
  }
  const describePieces = (pieces) =>
    pieces.map((piece) => {
      const [lowBit, highBit] = piece.byteBits;
      const width = highBit - lowBit + 1;
      const byteValue = B[piece.byte];
      const pieceValue = (byteValue >> lowBit) & ((1 << width) - 1);
      return {
        ...piece,
        byteValue,
        byteBinary: binary(byteValue, 8),
        pieceValue,
        pieceBinary: binary(pieceValue, width),
        text: `bits ${piece.fieldBits[0]}..${piece.fieldBits[1]} come from B[${piece.byte}] bits ${lowBit}..${highBit}`,
      };
    });
  return {
    subblock: j,
    split: j >= 4,
    scale,
    min,
    scaleSources: describePieces(sources.scale),
    minSources: describePieces(sources.min),
    scaleFormula,
    minFormula,
  };
}

// Payload placement: byte p = 32c + l (chunk c = 0..3, position l = 0..31) feeds two lanes 32 apart:
//   low nibble  (bits 0..3) -> lane 64c + l        subblock 2c
//   high nibble (bits 4..7) -> lane 64c + 32 + l   subblock 2c + 1

/** [low lane, high lane] fed by payload byte p: [64c + l, 64c + 32 + l]. */
export function q4kLanes(payloadIndex) {
  checkCode(payloadIndex, Q4K_PAYLOAD_BYTES, "payload index");
  const chunk = Math.floor(payloadIndex / 32);
  const lowLane = 64 * chunk + (payloadIndex % 32);
  return [lowLane, lowLane + 32];
}

/** [low subblock, high subblock] used by payload byte p: [2c, 2c + 1]. */
export function q4kSubblocks(payloadIndex) {
  checkCode(payloadIndex, Q4K_PAYLOAD_BYTES, "payload index");
  const chunk = Math.floor(payloadIndex / 32);
  return [2 * chunk, 2 * chunk + 1];
}

function q4kParts(block) {
  const bytes = checkBytes(block, Q4K_BLOCK_BYTES, "one Q4_K block");
  const d = fp16Decode(bytes[0] | (bytes[1] << 8));
  const dmin = fp16Decode(bytes[2] | (bytes[3] << 8));
  const metadata = bytes.slice(Q4K_METADATA_OFFSET, Q4K_PAYLOAD_OFFSET);
  const { scales, mins } = q4kUnpackScaleMin(metadata);
  return {
    bytes,
    d,
    dmin,
    metadata,
    scales,
    mins,
    gains: scales.map((s) => Math.fround(d * s)),
    offsets: mins.map((m) => Math.fround(dmin * m)),
  };
}

function q4kWeight(parts, subblock, code) {
  return Math.fround(Math.fround(parts.gains[subblock] * code) - parts.offsets[subblock]);
}

/** The 256 weights (float32 values) of one 144-byte Q4_K block, bit-identical to gguf-py. */
export function q4kDecodeBlock(bytes144) {
  const parts = q4kParts(bytes144);
  const weights = new Array(Q4K_BLOCK_WEIGHTS);
  for (let p = 0; p < Q4K_PAYLOAD_BYTES; p += 1) {
    const byte = parts.bytes[Q4K_PAYLOAD_OFFSET + p];
    const [lowLane, highLane] = q4kLanes(p);
    const [lowSubblock, highSubblock] = q4kSubblocks(p);
    weights[lowLane] = q4kWeight(parts, lowSubblock, byte & 15);
    weights[highLane] = q4kWeight(parts, highSubblock, byte >> 4);
  }
  return weights;
}

/**
 * Everything needed to decode payload byte p of one block by hand (Python lab.formats.q4k.explain_byte):
 * both nibbles, their lanes and subblocks, the metadata they use, and the arithmetic.
 */
export function q4kExplainByte(block, payloadIndex) {
  const parts = q4kParts(block);
  checkCode(payloadIndex, Q4K_PAYLOAD_BYTES, "payload index");
  const weights = q4kDecodeBlock(parts.bytes);
  const byte = parts.bytes[Q4K_PAYLOAD_OFFSET + payloadIndex];
  const [lowLane, highLane] = q4kLanes(payloadIndex);
  const [lowSubblock, highSubblock] = q4kSubblocks(payloadIndex);
  const d = formatFloat32(parts.d);
  const dmin = formatFloat32(parts.dmin);
  const nibble = (side, code, lane, j) => {
    const gain = parts.gains[j];
    const offset = parts.offsets[j];
    const weight = weights[lane];
    const s = parts.scales[j];
    const m = parts.mins[j];
    return {
      nibble: side,
      code,
      codeBits: binary(code, 4),
      lane,
      subblock: j,
      scale: s,
      min: m,
      gain,
      offset,
      weight,
      gainFormula: `${d} \u00d7 ${s} = ${formatFloat32(gain)}`,
      offsetFormula: `${dmin} \u00d7 ${m} = ${formatFloat32(offset)}`,
      formula: `${formatFloat32(gain)} \u00d7 ${code} \u2212 ${formatFloat32(offset)} = ${formatFloat32(weight)}`,
      fullFormula: `${d} \u00d7 ${s} \u00d7 ${code} \u2212 ${dmin} \u00d7 ${m} = ${formatFloat32(weight)}`,
      metadata: q4kExplainMetadata(parts.metadata, j),
    };
  };
  const low = nibble("low", byte & 15, lowLane, lowSubblock);
  const high = nibble("high", byte >> 4, highLane, highSubblock);
  const fp16Hex = (offset) =>
    `0x${((parts.bytes[offset + 1] << 8) | parts.bytes[offset]).toString(16).toUpperCase().padStart(4, "0")}`;
  return {
    payloadIndex,
    byteOffset: Q4K_PAYLOAD_OFFSET + payloadIndex,
    chunk: Math.floor(payloadIndex / 32),
    position: payloadIndex % 32,
    byte,
    hex: hexByte(byte),
    byteBits: `${binary(byte >> 4, 4)} ${binary(byte & 15, 4)}`,
    d: parts.d,
    dmin: parts.dmin,
    dHex: fp16Hex(0),
    dminHex: fp16Hex(2),
    lowNibble: low.code,
    highNibble: high.code,
    lowLane,
    highLane,
    lowSubblock,
    highSubblock,
    weights: [low.weight, high.weight],
    low,
    high,
  };
}
