// GGUF Q5_K (Python lab.formats.q5_k): Q4_K's super-block with a fifth bit for every code; 256
// weights in 176 bytes.
//
//   bytes    0..1    d          float16, little-endian: the super-block scale for the gains
//   bytes    2..3    dmin       float16, little-endian: the super-block scale for the offsets
//   bytes    4..15   B[0..11]   s_0..s_7 and m_0..m_7, six bits each, packed exactly as Q4_K packs them
//   bytes   16..47   qh[0..31]  bit 4 of every code: qh[l] bit j is the fifth bit of weight 32j + l
//   bytes   48..175  qs[0..127] bits 3..0 of every code, placed as Q4_K's nibbles: weight
//                               64c + 32h + l in qs[32c + l], low nibble for h = 0, high for h = 1
//
//   weight = d × s_j × code − dmin × m_j: d × s_j, dmin × m_j, gain × code and the difference
//   each rounded to float32, ggml's and gguf-py's order.
import { binary } from "../codes/bits.js";
import { formatFloat32 } from "../numbers.js";
import { ggmlBlock, ggmlBytes, ggmlHalf, ggmlHalfParts, ggmlLane, ggmlPart } from "./ggml.js";
import { q4kExplainMetadata, q4kMetadataSources, q4kUnpackScaleMin } from "./q4k.js";

const Q5_K_SUBBLOCK_WEIGHTS = 32;
const Q5_K_SCALES_OFFSET = 4;
const Q5_K_QH_OFFSET = 16;
const Q5_K_QS_OFFSET = 48;

export const Q5_K_BLOCK = ggmlBlock({
  title: "Q5_K",
  weights: 256,
  subblockWeights: 32,
  rule: "weight = d \u00d7 s_j \u00d7 code \u2212 dmin \u00d7 m_j",
  parts: [
    ["d", 2, "d", "super"],
    ["dmin", 2, "dmin", "super"],
    ["scales", 12, "6-bit scales and minimums", "scales"],
    ["qh", 32, "fifth bits", "high"],
    ["qs", 128, "low nibbles", "codes"],
  ],
});

function q5kPlace(lane) {
  const chunk = Math.floor(lane / 64);
  const high = Math.floor((lane % 64) / 32);
  const position = lane % 32;
  return {
    chunk,
    position,
    subblock: Math.floor(lane / Q5_K_SUBBLOCK_WEIGHTS),
    nibble: high ? "high" : "low",
    qhByte: Q5_K_QH_OFFSET + position,
    qsByte: Q5_K_QS_OFFSET + 32 * chunk + position,
    qsBits: high ? [4, 7] : [0, 3],
  };
}

function q5kFields(values) {
  const metadata = values.slice(Q5_K_SCALES_OFFSET, Q5_K_QH_OFFSET);
  const { scales, mins } = q4kUnpackScaleMin(metadata);
  return { metadata, scales, mins, d: ggmlHalf(values, 0), dmin: ggmlHalf(values, 2) };
}

function q5kCode(values, lane) {
  const place = q5kPlace(lane);
  const fifth = (values[place.qhByte] >> place.subblock) & 1;
  return (fifth << 4) | ((values[place.qsByte] >> place.qsBits[0]) & 15);
}

/** The 256 weights of one 176-byte Q5_K block. */
export function q5kDecodeBlock(bytes) {
  const values = ggmlBytes(bytes, Q5_K_BLOCK);
  const { scales, mins, d, dmin } = q5kFields(values);
  const gains = scales.map((s) => Math.fround(d * s));
  const offsets = mins.map((m) => Math.fround(dmin * m));
  return Float32Array.from({ length: Q5_K_BLOCK.weights }, (_, lane) => {
    const subblock = Math.floor(lane / Q5_K_SUBBLOCK_WEIGHTS);
    return Math.fround(gains[subblock] * q5kCode(values, lane)) - offsets[subblock];
  });
}

/** Python Q5KTensor.explain of one block's weight, and the parts of the block it is read from. */
export function q5kExplainWeight(bytes, index) {
  const values = ggmlBytes(bytes, Q5_K_BLOCK);
  const lane = ggmlLane(index, Q5_K_BLOCK);
  const place = q5kPlace(lane);
  const { metadata, scales, mins, d, dmin } = q5kFields(values);
  const j = place.subblock;
  const code = q5kCode(values, lane);
  const fifth = code >> 4;
  const low = code & 15;
  const gain = Math.fround(d * scales[j]);
  const offset = Math.fround(dmin * mins[j]);
  const weight = Math.fround(Math.fround(gain * code) - offset);
  const gainText = formatFloat32(gain);
  const offsetText = formatFloat32(offset);
  const sources = q4kMetadataSources(j);
  const metadataParts = (pieces, field) =>
    pieces.map((piece) => ggmlPart(values, "scales", Q5_K_SCALES_OFFSET + piece.byte, piece.byteBits, field, piece.fieldBits));
  return {
    positionInBlock: lane,
    subblock: j,
    qsByte: place.qsByte,
    qsNibble: place.nibble,
    lowBits: low,
    qhByte: place.qhByte,
    qhBit: j,
    fifthBit: fifth,
    code,
    codeBits: `${fifth} ${binary(low, 4)}`,
    codeFormula:
      `16 \u00d7 ${fifth} (qh[${place.position}] = byte ${place.qhByte}, bit ${j}) + ${low} ` +
      `(${place.nibble} nibble of qs[${32 * place.chunk + place.position}] = byte ${place.qsByte}) = ${code}`,
    scale: scales[j],
    min: mins[j],
    d,
    dmin,
    gain,
    offset,
    weight,
    gainFormula: `${formatFloat32(d)} \u00d7 ${scales[j]} = ${gainText}`,
    offsetFormula: `${formatFloat32(dmin)} \u00d7 ${mins[j]} = ${offsetText}`,
    formula: `${gainText} \u00d7 ${code} \u2212 ${offsetText} = ${formatFloat32(weight)}`,
    metadata: q4kExplainMetadata(metadata, j),
    parts: [
      ...ggmlHalfParts(values, "d", 0),
      ...ggmlHalfParts(values, "dmin", 2),
      ...metadataParts(sources.scale, "scale"),
      ...metadataParts(sources.min, "min"),
      ggmlPart(values, "qh", place.qhByte, [j, j], "code", [4, 4]),
      ggmlPart(values, "qs", place.qsByte, place.qsBits, "code", [0, 3]),
    ],
  };
}
