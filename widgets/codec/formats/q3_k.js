// GGUF Q3_K (Python lab.formats.q3_k): 256 three-bit codes, a 6-bit scale per 16 weights, one
// float16 d; 110 bytes.
//
//   bytes    0..31   hmask   bit 2 of every code: hmask byte l bit b is that of weight 32b + l
//   bytes   32..95   qs      bits 1..0 of every code, four codes a byte (kquant.js)
//   bytes   96..107  scales  the sixteen s_j stored as u_j = s_j + 32, six bits each:
//                            u_j's low nibble in byte j % 8 (low for j < 8, high for j >= 8),
//                            its top two bits at bits 2(j // 4) + 1..2(j // 4) of byte 8 + j % 4
//   bytes  108..109  d       float16, little-endian
//
//   weight = d × s_j × (code − 4): the gain d × s_j rounded to float32 first. A set hmask bit
//   makes the code low + 4, whose level is the low bits themselves; a clear one subtracts 4.
import { binary } from "../codes/bits.js";
import { formatLabNumber } from "../numbers.js";
import { ggmlBlock, ggmlBytes, ggmlHalf, ggmlHalfParts, ggmlLane, ggmlPart } from "./ggml.js";
import { kquantCrumb, kquantCrumbPlace } from "./kquant.js";

const Q3_K_SUBBLOCK_WEIGHTS = 16;
const Q3_K_QS_OFFSET = 32;
const Q3_K_SCALES_OFFSET = 96;
const Q3_K_D_OFFSET = 108;
const Q3_K_CODE_OFFSET = 4;
const Q3_K_SCALE_OFFSET = 32;

export const Q3_K_BLOCK = ggmlBlock({
  title: "Q3_K",
  weights: 256,
  subblockWeights: 16,
  rule: "weight = d \u00d7 (u_j \u2212 32) \u00d7 (code \u2212 4)",
  parts: [
    ["hmask", 32, "high bits", "high"],
    ["qs", 64, "2-bit low codes", "codes"],
    ["scales", 12, "6-bit scales", "scales"],
    ["d", 2, "d", "super"],
  ],
});

function q3kScalePlaces(subblock) {
  const top = 2 * Math.floor(subblock / 4);
  return {
    low: { byte: Q3_K_SCALES_OFFSET + (subblock % 8), bits: subblock < 8 ? [0, 3] : [4, 7] },
    high: { byte: Q3_K_SCALES_OFFSET + 8 + (subblock % 4), bits: [top, top + 1] },
  };
}

function q3kStoredScale(values, subblock) {
  const places = q3kScalePlaces(subblock);
  const low = (values[places.low.byte] >> places.low.bits[0]) & 15;
  return low | (((values[places.high.byte] >> places.high.bits[0]) & 3) << 4);
}

function q3kCode(values, lane) {
  const high = (values[lane % 32] >> Math.floor(lane / 32)) & 1;
  return (high << 2) | kquantCrumb(values, lane, Q3_K_QS_OFFSET);
}

/** The 256 weights of one 110-byte Q3_K block. */
export function q3kDecodeBlock(bytes) {
  const values = ggmlBytes(bytes, Q3_K_BLOCK);
  const d = ggmlHalf(values, Q3_K_D_OFFSET);
  const gains = Array.from({ length: 16 }, (_, j) => Math.fround(d * (q3kStoredScale(values, j) - Q3_K_SCALE_OFFSET)));
  return Float32Array.from(
    { length: Q3_K_BLOCK.weights },
    (_, lane) => gains[Math.floor(lane / Q3_K_SUBBLOCK_WEIGHTS)] * (q3kCode(values, lane) - Q3_K_CODE_OFFSET),
  );
}

/** Python Q3KTensor.explain of one block's weight, and the parts of the block it is read from. */
export function q3kExplainWeight(bytes, index) {
  const values = ggmlBytes(bytes, Q3_K_BLOCK);
  const lane = ggmlLane(index, Q3_K_BLOCK);
  const subblock = Math.floor(lane / Q3_K_SUBBLOCK_WEIGHTS);
  const crumb = kquantCrumbPlace(lane);
  const hmaskByte = lane % 32;
  const hmaskBit = Math.floor(lane / 32);
  const code = q3kCode(values, lane);
  const highBit = code >> 2;
  const value = code - Q3_K_CODE_OFFSET;
  const places = q3kScalePlaces(subblock);
  const storedScale = q3kStoredScale(values, subblock);
  const scale = storedScale - Q3_K_SCALE_OFFSET;
  const d = ggmlHalf(values, Q3_K_D_OFFSET);
  const gain = Math.fround(d * scale);
  const weight = Math.fround(gain * value);
  const qsByte = Q3_K_QS_OFFSET + crumb.byte;
  return {
    positionInBlock: lane,
    subblock,
    qsByte,
    qsShift: crumb.shift,
    lowBits: code & 3,
    hmaskByte,
    hmaskBit,
    highBit,
    code,
    codeBits: `${highBit} ${binary(code & 3, 2)}`,
    value,
    scaleLowByte: places.low.byte,
    scaleLowNibble: subblock < 8 ? "low" : "high",
    scaleHighByte: places.high.byte,
    scaleHighBits: [places.high.bits[1], places.high.bits[0]], // high bit first, as Python's tuple
    storedScale,
    storedScaleBits: `${binary(storedScale >> 4, 2)} ${binary(storedScale & 15, 4)}`,
    scale,
    d,
    gain,
    weight,
    valueFormula: `${code & 3} \u2212 ${highBit ? 0 : Q3_K_CODE_OFFSET} = ${formatLabNumber(value)} (hmask bit ${highBit})`,
    scaleFormula: `${storedScale} \u2212 32 = ${formatLabNumber(scale)}`,
    gainFormula: `${formatLabNumber(d)} \u00d7 ${formatLabNumber(scale)} = ${formatLabNumber(gain)}`,
    formula: `${formatLabNumber(gain)} \u00d7 (${code} \u2212 4) = ${formatLabNumber(weight)}`,
    parts: [
      ggmlPart(values, "hmask", hmaskByte, [hmaskBit, hmaskBit], "code", [2, 2]),
      ggmlPart(values, "qs", qsByte, [crumb.shift, crumb.shift + 1], "code", [0, 1]),
      ggmlPart(values, "scales", places.low.byte, places.low.bits, "storedScale", [0, 3]),
      ggmlPart(values, "scales", places.high.byte, places.high.bits, "storedScale", [4, 5]),
      ...ggmlHalfParts(values, "d", Q3_K_D_OFFSET),
    ],
  };
}
