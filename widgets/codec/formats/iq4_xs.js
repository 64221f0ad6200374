// GGUF IQ4_XS (Python lab.formats.iq4_xs): IQ4_NL's codebook in 256-weight super-blocks with a
// 6-bit scale per 32 weights; 136 bytes.
//
//   bytes   0..1    d          float16, little-endian: the super-block scale
//   bytes   2..3    scales_h   uint16, little-endian: bits 2j..2j+1 = bits 5..4 of s_j
//   bytes   4..7    scales_l   byte b: low nibble = bits 3..0 of s_2b, high nibble = of s_2b+1
//   bytes   8..135  qs         subblock j in bytes 8 + 16j .. 8 + 16j + 15, by halves
//
//   weight = d × (s_j − 32) × KVALUES[code]: the gain d × (s_j − 32) rounded to float32 first.
import { formatLabNumber } from "../numbers.js";
import { ggmlBlock, ggmlBytes, ggmlHalf, ggmlHalfParts, ggmlHalvesCode, ggmlHalvesPlace, ggmlLane, ggmlPart } from "./ggml.js";
import { IQ4_NL_KVALUES } from "./iq4_nl.js";

const IQ4_XS_SUBBLOCK_WEIGHTS = 32;
const IQ4_XS_SCALE_OFFSET = 32;
const IQ4_XS_QS_OFFSET = 8;

export const IQ4_XS_BLOCK = ggmlBlock({
  title: "IQ4_XS",
  weights: 256,
  subblockWeights: 32,
  rule: "weight = d \u00d7 (s_j \u2212 32) \u00d7 KVALUES[code]",
  parts: [
    ["d", 2, "d", "super"],
    ["scales_h", 2, "scales' high bits", "scales"],
    ["scales_l", 4, "scales' low bits", "scales"],
    ["qs", 128, "nibbles", "codes"],
  ],
});

// Where subblock j's 6-bit scale lives: its low nibble in scales_l, its top two bits in scales_h.
function iq4XsScalePlaces(subblock) {
  const high = 2 * (subblock % 4);
  return {
    low: { byte: 4 + (subblock >> 1), bits: subblock % 2 ? [4, 7] : [0, 3] },
    high: { byte: 2 + (subblock >> 2), bits: [high, high + 1] },
  };
}

function iq4XsStoredScale(values, subblock) {
  const places = iq4XsScalePlaces(subblock);
  const low = (values[places.low.byte] >> places.low.bits[0]) & 15;
  return low | (((values[places.high.byte] >> places.high.bits[0]) & 3) << 4);
}

function iq4XsCodeOffset(subblock) {
  return IQ4_XS_QS_OFFSET + 16 * subblock;
}

/** The 256 weights of one 136-byte IQ4_XS block. */
export function iq4XsDecodeBlock(bytes) {
  const values = ggmlBytes(bytes, IQ4_XS_BLOCK);
  const d = ggmlHalf(values, 0);
  const gains = Array.from({ length: 8 }, (_, j) => Math.fround(d * (iq4XsStoredScale(values, j) - IQ4_XS_SCALE_OFFSET)));
  return Float32Array.from({ length: IQ4_XS_BLOCK.weights }, (_, lane) => {
    const subblock = Math.floor(lane / IQ4_XS_SUBBLOCK_WEIGHTS);
    return gains[subblock] * IQ4_NL_KVALUES[ggmlHalvesCode(values, lane % IQ4_XS_SUBBLOCK_WEIGHTS, iq4XsCodeOffset(subblock))];
  });
}

/** Python IQ4XSTensor.explain of one block's weight, and the parts of the block it is read from. */
export function iq4XsExplainWeight(bytes, index) {
  const values = ggmlBytes(bytes, IQ4_XS_BLOCK);
  const lane = ggmlLane(index, IQ4_XS_BLOCK);
  const subblock = Math.floor(lane / IQ4_XS_SUBBLOCK_WEIGHTS);
  const within = lane % IQ4_XS_SUBBLOCK_WEIGHTS;
  const place = ggmlHalvesPlace(within, iq4XsCodeOffset(subblock));
  const code = ggmlHalvesCode(values, within, iq4XsCodeOffset(subblock));
  const value = IQ4_NL_KVALUES[code];
  const storedScale = iq4XsStoredScale(values, subblock);
  const scale = storedScale - IQ4_XS_SCALE_OFFSET;
  const d = ggmlHalf(values, 0);
  const gain = Math.fround(d * scale);
  const weight = Math.fround(gain * value);
  const gainText = formatLabNumber(gain);
  const places = iq4XsScalePlaces(subblock);
  return {
    positionInBlock: lane,
    subblock,
    byte: place.byte,
    nibble: place.nibble,
    code,
    value,
    storedScale,
    scale,
    d,
    gain,
    weight,
    gainFormula: `${formatLabNumber(d)} \u00d7 (${storedScale} \u2212 32) = ${gainText}`,
    // the codebook entry as Python's f-string prints an int: an ASCII minus
    formula: `${gainText} \u00d7 KVALUES[${code}] = ${gainText} \u00d7 ${value} = ${formatLabNumber(weight)}`,
    parts: [
      ...ggmlHalfParts(values, "d", 0),
      ggmlPart(values, "scales_h", places.high.byte, places.high.bits, "storedScale", [4, 5]),
      ggmlPart(values, "scales_l", places.low.byte, places.low.bits, "storedScale", [0, 3]),
      ggmlPart(values, "qs", place.byte, place.bits, "code", [0, 3]),
    ],
  };
}
