// Exercises that check themselves: seeded instances for each course notebook, and a checker that
// computes the answer with the same codec functions that compute the lab's numbers (never a table
// of expected answers). The worked arithmetic shown after an attempt comes from the codec's
// explain functions, so it cannot disagree with the figures.
//
// An instance is reproducible from (seed, kind, round): mulberry32 seeded with
// exerciseSeed(seed, kind, round) draws its parameters. tests/js/make_golden.py runs the same
// PRNG in Python and writes instance parameters with the answers lab/ computes for them.
import { binary } from "../codes/bits.js";
import { E2M1_VALUES, e2m1Decode, e2m1Explain } from "../codes/e2m1.js";
import { e4m3Decode, e4m3Explain } from "../codes/e4m3.js";
import { e8m0Encode, e8m0Explain } from "../codes/e8m0.js";
import { int4, uint4 } from "../codes/nibble.js";
import { labError } from "../errors.js";
import { mxExplain } from "../formats/mxfp4.js";
import { NVFP4_TENSOR_SCALE_RANGE, nvExplain, nvfp4Dequantize } from "../formats/nvfp4.js";
import { q4kExplainMetadata, q4kLanes } from "../formats/q4k.js";
import { FORMATS } from "../formats/registry.js";
import { bitsPerWeight } from "../formats/sizes.js";
import { fsum } from "../fsum.js";
import { formatLabNumber, parseByte, parseNumber } from "../numbers.js";
import { scaleAnalyse } from "./scale.js";
import { ZOO_CHECK_TITLES, ZOO_WRONG_SPECIMENS } from "./zoo.js";

/** mulberry32: a small, fast 32-bit PRNG; returns a function giving floats in [0, 1). */
export function mulberry32(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The PRNG seed of one instance: FNV-1a of the kind's name, mixed with the page seed and the round. */
export function exerciseSeed(seed, kind, round) {
  let hash = 0x811c9dc5;
  for (const char of kind) hash = Math.imul(hash ^ char.charCodeAt(0), 0x01000193) >>> 0;
  return (hash ^ (seed >>> 0) ^ Math.imul(round, 0x9e3779b9)) >>> 0;
}

const whole = (rng, low, high) => low + Math.floor(rng() * (high - low + 1));
const choose = (rng, list) => list[Math.floor(rng() * list.length)];
const n = formatLabNumber;
const GGUF_TYPES = ["Q4_K", "Q8_0"];
const CAPACITY_FORMATS = ["BF16", "ideal 4-bit", "MXFP4", "NVFP4", "Q4_K", "Q8_0"];
const WRONG_VALUE_SPECIMENS = ["raw E8M0 byte as the scale", "INT4 instead of E2M1"];

// An exercise whose answer is one of a fixed set (a check's number, a code, a lane, a reading's
// values) declares it, and an answer outside the set is refused in the exercise's words, not
// graded: {allows(value), what (the set, named), type (how to answer)}.
// A set 0..2^k − 1 also says its width in bits, so that a byte answer's refusal only hints at
// codes the exercise takes (parseByte).
const wholeNumbers = (low, high, what) => ({
  allows: (value) => Number.isInteger(value) && value >= low && value <= high,
  what,
  type: `a whole number from ${n(low)} to ${n(high)}`,
  bits: low === 0 && Number.isInteger(Math.log2(high + 1)) ? Math.log2(high + 1) : null,
});
const BYTES = wholeNumbers(0, 255, "a byte");
const E2M1_MAGNITUDES = [...new Set(E2M1_VALUES.map(Math.abs))].sort((a, b) => a - b);
const E2M1_WORDS = E2M1_MAGNITUDES.map((magnitude) => (magnitude === 0 ? "0" : `±${n(magnitude)}`));
const READINGS = {
  E2M1: {
    allows: (value) => E2M1_MAGNITUDES.includes(Math.abs(value)),
    what: "an E2M1 value",
    type: `one of ${E2M1_WORDS.slice(0, -1).join(", ")} or ${E2M1_WORDS.at(-1)}`,
  },
  UINT4: wholeNumbers(0, 15, "a UINT4 value"),
  INT4: wholeNumbers(-8, 7, "an INT4 value"),
};

const READING_HINTS = {
  E2M1: "E2M1 is the bits s e e m: a sign, a 2-bit exponent and one mantissa bit. Exponent 0 gives 0.5 · m; otherwise (1 + m/2) · 2^(e − 1).",
  UINT4: "UINT4 weighs the four bits 8, 4, 2 and 1, from the left.",
  INT4: "INT4 is two's complement: the leftmost bit weighs −8, the others 4, 2 and 1.",
};

function registered(title) {
  const entry = FORMATS.find((format) => format.title === title);
  return { ...entry, blockBytes: (entry.blockSize * entry.bitsPerWeight) / 8 };
}

function nibbleReading(code, reading) {
  const b = binary(code, 4);
  if (reading === "E2M1") return { answer: e2m1Decode(code), worked: [`${b}: ${e2m1Explain(code).formula}`] };
  const weights = reading === "UINT4" ? "8·b3" : "−8·b3";
  const answer = reading === "UINT4" ? uint4(code) : int4(code);
  return { answer, worked: [`${b} as ${reading}: ${weights} + 4·b2 + 2·b1 + b0 = ${weights.replace("b3", b[0])} + 4·${b[1]} + 2·${b[2]} + ${b[3]} = ${n(answer)}`] };
}

// Notebooks 9..12: what formats do to real models, in numbers small enough for a hand.
const PARAMETER_BITS = { float32: 32, bfloat16: 16 };
const RECIPE_FORMATS = ["Q4_K", "Q5_0", "Q6_K", "Q8_0", "Q4_0", "IQ4_XS"];
const PARETO_FORMATS = ["MXFP4", "NVFP4", "Q4_K", "Q4_0", "NF4", "IQ4_XS", "Q5_0", "Q6_K", "Q8_0", "Q3_K"];
const DEPARTING_FORMATS = ["MXFP4", "NVFP4", "Q4_K", "Q4_0", "NF4", "IQ4_NL", "MLX affine 4-bit g64"];
// Next-token probabilities in percent (each at least 5, so a move of up to 20 leaves every one above 0).
const NEXT_TOKEN_SHAPES = [
  [50, 25, 15, 10],
  [40, 30, 20, 10],
  [70, 10, 10, 10],
  [60, 20, 15, 5],
  [35, 35, 20, 10],
];
const REFERENCE_ANSWERS = [
  ["Water", "boils", "at", "100", "degrees", "Celsius", "at", "sea", "level"],
  ["The", "capital", "of", "France", "is", "Paris", "on", "the", "Seine"],
  ["A", "byte", "holds", "eight", "bits", "or", "two", "nibbles", "of", "four"],
];
const SWAP_WORDS = ["the", "a", "is", "in", "about", "river", "two", "heat", "city", "of"];

// A number as a term of a sum or a difference: in parentheses when negative, so "− −" never shows.
const term = (value) => (value < 0 || Object.is(value, -0) ? `(${n(value)})` : n(value));
// The answer as asked for, to `places` decimals, as the lab writes numbers (a true minus sign).
const toPlaces = (value, places) => n(Number(value.toFixed(places)));

// lab.study.behaviour's cosine, ‖·‖ in float64 with an exact sum.
function cosine(a, b) {
  const length = (vector) => Math.sqrt(fsum(vector.map((value) => value * value)));
  return fsum(a.map((value, i) => value * b[i])) / (length(a) * length(b));
}

// lab.study.compare.pareto_front's rule: each row no other beats on both bits and error, and
// strictly on one. The dominated rows: [{index, by: [indices of the rows that beat it]}].
function dominatedRows(rows) {
  const bits = rows.map((row) => registered(row.format).bitsPerWeight);
  return rows
    .map((row, index) => ({
      index,
      by: rows.map((_, other) => other).filter((other) => other !== index && bits[other] <= bits[index] && rows[other].error <= row.error && (bits[other] !== bits[index] || rows[other].error !== row.error)),
    }))
    .filter((entry) => entry.by.length > 0);
}

// lab.study.chat_study.first_divergence: the first index where two answers differ (one ending
// early counts), or null when they are the same.
function firstDivergence(ours, theirs) {
  const shorter = Math.min(ours.length, theirs.length);
  for (let i = 0; i < shorter; i += 1) if (ours[i] !== theirs[i]) return i;
  return ours.length === theirs.length ? null : shorter;
}

// Each kind: its notebook (topic), a title, how its parameters are drawn, the question, the kind
// of answer ("number", "byte" read by parseByte, or "choice" of a listed option, which may also be
// typed by its name: names), the answers it can have if they are a fixed set (choices; a byte is
// 0..255 unless they say less), the decimal places a number is asked to (places, for answers no
// hand gets exactly: a logarithm, a square root), the hint a first wrong try gets (the method in
// words, never the answer) and its solution.
const KINDS = {
  "nibble-decode": {
    topic: 1,
    title: "Decode a nibble",
    hint: ({ reading }) => READING_HINTS[reading],
    answer: "number",
    generate: (rng) => ({ code: whole(rng, 0, 15), reading: choose(rng, ["E2M1", "UINT4", "INT4"]) }),
    prompt: ({ code, reading }) => `What is the nibble ${binary(code, 4)} read as ${reading}?`,
    choices: ({ reading }) => READINGS[reading],
    solve: ({ code, reading }) => nibbleReading(code, reading),
  },
  "e2m1-code": {
    topic: 1,
    title: "Find the E2M1 code",
    hint: () => "Write the value as ±(1 + m/2) · 2^(e − 1) with a 2-bit exponent e from 1 to 3 and one mantissa bit m, or as 0.5 · m when e = 0; the code is the bits s e e m, the sign first.",
    answer: "byte",
    generate: (rng) => ({ value: E2M1_VALUES[choose(rng, [1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13, 14, 15])] }),
    prompt: ({ value }) => `Which nibble stores ${n(value)} in E2M1? Type its code (0..15, or bits such as 0b0101).`,
    choices: () => wholeNumbers(0, 15, "a nibble's code"),
    // Any code that decodes to the value is right; the codec's decoder is the judge.
    accepts: ({ value }, typed) => e2m1Decode(typed) === value,
    solve: ({ value }) => {
      const code = E2M1_VALUES.indexOf(value);
      return { answer: code, worked: [`code ${code} = ${binary(code, 4)}: ${e2m1Explain(code).formula}`] };
    },
  },
  "scale-nearest": {
    topic: 2,
    title: "Nearest value on the ruler",
    hint: ({ scale }) => `The ruler's marks are ${n(scale)} × each E2M1 value (0, 0.5, 1, 1.5, 2, 3, 4, 6) with either sign: the weight becomes the nearest mark, and beyond the last mark it clips to it.`,
    answer: "number",
    generate: (rng) => ({ w: whole(rng, -400, 400) / 100, scale: 2 ** whole(rng, -3, 0) }),
    prompt: ({ w, scale }) => `At scale ${n(scale)} (the lab convention: nearest scale × E2M1 value, clipping at ±6·scale), what does w = ${n(w)} become?`,
    solve: ({ w, scale }) => {
      const row = scaleAnalyse([w], [1], scale);
      const code = row.codes[0];
      const lines = [`the ruler at scale ${n(scale)} reaches ±${n(6 * scale)}; nearest to ${n(w)} is code ${binary(code, 4)}`];
      lines.push(`${n(scale)} × ${n(E2M1_VALUES[code])} = ${n(row.wHat[0])}${row.clipped[0] ? " (clipped)" : ""}, an error of ${n(row.weightError[0])}`);
      return { answer: row.wHat[0], worked: lines };
    },
  },
  "scale-delta-y": {
    topic: 2,
    title: "The output error Δy",
    hint: () => "First put each weight on the ruler (its nearest mark: scale × an E2M1 value), then add up each weight's error ŵᵢ − wᵢ times its input xᵢ.",
    answer: "number",
    generate: (rng) => ({
      w: [whole(rng, -30, 30) / 10, whole(rng, -30, 30) / 10],
      x: [choose(rng, [-3, -2, -1, 1, 2, 3]), choose(rng, [-3, -2, -1, 1, 2, 3])],
      scale: 2 ** whole(rng, -2, 0),
    }),
    prompt: ({ w, x, scale }) => `w = (${w.map(n).join(", ")}), x = (${x.map(n).join(", ")}), scale ${n(scale)}. What is Δy = ŷ − y?`,
    solve: ({ w, x, scale }) => {
      const row = scaleAnalyse(w, x, scale);
      return {
        answer: row.deltaY,
        worked: [
          `ŵ = (${row.wHat.map(n).join(", ")})`,
          `Δy = Σ(ŵᵢ − wᵢ)xᵢ = ${row.terms.map((term) => `(${n(term)})`).join(" + ")} = ${n(row.deltaY)}`,
        ],
      };
    },
  },
  "e8m0-rule": {
    topic: 3,
    title: "Choose the E8M0 scale byte",
    hint: ({ rule }) =>
      rule === "ocp"
        ? "The OCP rule takes the exponent of the block's largest magnitude, floor(log2(amax)), less E2M1's largest exponent, 2; the byte stores that exponent plus the bias 127."
        : "The MLX rule takes the smallest exponent e with amax / 2^e ≤ 6 (E2M1's largest value), ceil(log2(amax / 6)); the byte stores that exponent plus the bias 127.",
    answer: "byte",
    generate: (rng) => ({ amax: (whole(rng, 100, 999) / 100) * 2 ** whole(rng, -4, 4), rule: choose(rng, ["ocp", "mlx"]) }),
    prompt: ({ amax, rule }) =>
      `A block of E2M1 elements has absolute maximum ${n(amax)}. Which E8M0 byte does the ${rule === "ocp" ? "OCP floor rule" : "MLX ceil rule"} store?`,
    solve: ({ amax, rule }) => {
      const byte = e8m0Encode(amax, rule);
      const exponent = byte - 127;
      const rule_ = rule === "ocp" ? `floor(log2(${n(amax)})) − 2 = ${exponent}` : `ceil(log2(${n(amax)} / 6)) = ${exponent}`;
      return { answer: byte, worked: [`exponent = ${rule_}; byte = exponent + 127 = ${byte}`, e8m0Explain(byte).formula] };
    },
  },
  "mxfp4-decode": {
    topic: 3,
    title: "Decode an MXFP4 element",
    hint: () => "Two factors: the element read as E2M1, and the block's scale, 2^(byte − 127). The weight is their product.",
    answer: "number",
    generate: (rng) => ({ code: whole(rng, 0, 15), scaleByte: whole(rng, 122, 131) }),
    prompt: ({ code, scaleByte }) => `An MXFP4 element ${binary(code, 4)} in a block whose E8M0 scale byte is ${scaleByte}. What weight does it decode to?`,
    solve: ({ code, scaleByte }) => {
      const traced = mxExplain([code, ...new Array(31).fill(0)], [scaleByte], 0);
      return { answer: traced.weight, worked: [traced.element.formula, traced.scale.formula, traced.formula] };
    },
  },
  "nvfp4-decode": {
    topic: 4,
    title: "Decode an NVFP4 element",
    hint: () => "Three factors: the element read as E2M1, the block's scale byte read as E4M3 (4 exponent bits with bias 7, 3 mantissa bits), and the tensor scale amax / 2688.",
    answer: "number",
    generate: (rng) => ({ code: whole(rng, 0, 15), scaleByte: whole(rng, 0x28, 0x48), globalScale: choose(rng, [672, 1344, 2688, 5376, 10752]) }),
    prompt: ({ code, scaleByte, globalScale }) =>
      `An NVFP4 element ${binary(code, 4)}, its block's E4M3 scale byte ${e4m3Explain(scaleByte).hex}, and a tensor amax of ${n(globalScale)} (tensor scale ${n(globalScale)} / 2688). What weight?`,
    solve: ({ code, scaleByte, globalScale }) => {
      const traced = nvExplain([code, ...new Array(15).fill(0)], [scaleByte], 0, globalScale);
      return {
        answer: traced.weight,
        worked: [traced.element.formula, traced.scale.formula, `tensor scale ${n(globalScale)} / ${NVFP4_TENSOR_SCALE_RANGE} = ${n(traced.tensorFactor)}`, traced.formula],
      };
    },
  },
  "nvfp4-reciprocal": {
    topic: 4,
    title: "The reciprocal-scale trap",
    hint: () => "q is what the API multiplied by to quantize. To reconstruct a weight, undo it: divide the E2M1 value by q, which is multiplying by 1 / q.",
    answer: "number",
    // Power-of-two block scales (E4M3 fraction 0), so the reciprocal the API reports is exact.
    generate: (rng) => ({ code: whole(rng, 1, 15), scaleByte: whole(rng, 3, 10) << 3 }),
    prompt: ({ code, scaleByte }) =>
      `An API reports the quantization scale q = ${n(1 / e4m3Decode(scaleByte))} (it quantizes w × q). An element ${binary(code, 4)} of that block: what weight does it reconstruct?`,
    solve: ({ code, scaleByte }) => {
      const scale = e4m3Decode(scaleByte);
      const weight = nvfp4Dequantize([code, ...new Array(15).fill(0)], [scaleByte])[0];
      return {
        answer: weight,
        worked: [
          `the multiplier is the reciprocal: s = 1 / ${n(1 / scale)} = ${n(scale)} (${e4m3Explain(scaleByte).formula})`,
          `${n(e2m1Decode(code))} × ${n(scale)} = ${n(weight)}; multiplying by q instead (the trap) gives ${n(e2m1Decode(code) / scale)}`,
        ],
      };
    },
  },
  "q4k-lane": {
    topic: 5,
    title: "Where does a nibble land?",
    hint: () => "Payload byte p sits in chunk c = floor(p / 32) at position l = p mod 32. A chunk of 32 bytes covers 64 lanes: its low nibbles fill the first 32, its high nibbles the next 32.",
    answer: "byte",
    generate: (rng) => ({ payloadIndex: whole(rng, 0, 127), nibble: choose(rng, ["low", "high"]) }),
    prompt: ({ payloadIndex, nibble }) => `In a Q4_K block, which lane (0..255) gets the ${nibble} nibble of payload byte ${payloadIndex}?`,
    choices: () => wholeNumbers(0, 255, "a lane of the block"),
    solve: ({ payloadIndex, nibble }) => {
      const [low, high] = q4kLanes(payloadIndex);
      const chunk = Math.floor(payloadIndex / 32);
      const position = payloadIndex % 32;
      const lane = nibble === "low" ? low : high;
      const rule = nibble === "low" ? `64·${chunk} + ${position}` : `64·${chunk} + 32 + ${position}`;
      return { answer: lane, worked: [`p = 32·c + l = 32·${chunk} + ${position}`, `${nibble} nibble → lane ${nibble === "low" ? "64c + l" : "64c + 32 + l"} = ${rule} = ${lane}`] };
    },
  },
  "q4k-metadata": {
    topic: 5,
    title: "Unpack a 6-bit scale or minimum",
    hint: ({ subblock }) =>
      subblock < 4
        ? "Subblocks 0..3 keep their scale in the low 6 bits of B[0]..B[3] and their minimum in the low 6 bits of B[4]..B[7]."
        : "Subblocks 4..7 keep the low 4 bits of their scale in the low nibble of B[8]..B[11] (the minimum: the high nibble), and their top 2 bits in the top 2 bits of B[0]..B[3] (the minimum: of B[4]..B[7]).",
    answer: "byte",
    generate: (rng) => ({ metadata: Array.from({ length: 12 }, () => whole(rng, 0, 255)), subblock: whole(rng, 0, 7), field: choose(rng, ["s", "m"]) }),
    prompt: ({ metadata, subblock, field }) => `The twelve metadata bytes are B = [${metadata.join(", ")}]. What is ${field}${subblock}?`,
    choices: () => wholeNumbers(0, 63, "a 6-bit field"),
    solve: ({ metadata, subblock, field }) => {
      const explained = q4kExplainMetadata(metadata, subblock);
      return field === "s" ? { answer: explained.scale, worked: [explained.scaleFormula] } : { answer: explained.min, worked: [explained.minFormula] };
    },
  },
  "gguf-bytes": {
    topic: 6,
    title: "Bytes of a GGUF tensor",
    hint: ({ type }) => `Count the blocks (weights / ${registered(type).blockSize}), then multiply by the bytes one ${type} block takes.`,
    answer: "number",
    generate: (rng) => ({ type: choose(rng, GGUF_TYPES), rows: choose(rng, [1, 2, 4, 32, 128, 4096]), columns: 256 * whole(rng, 1, 16) }),
    prompt: ({ type, rows, columns }) => `A ${type} tensor of shape ${rows} × ${columns}: how many bytes do its blocks take?`,
    solve: ({ type, rows, columns }) => {
      const { blockSize, blockBytes } = registered(type);
      const blocks = (rows * columns) / blockSize;
      return { answer: blocks * blockBytes, worked: [`${rows} × ${columns} / ${blockSize} = ${blocks} blocks of ${blockBytes} bytes = ${n(blocks * blockBytes)} bytes`] };
    },
  },
  "gguf-bpw": {
    topic: 6,
    title: "Bits per weight of a block type",
    hint: () => "Bits per weight = the block's bytes × 8 bits, shared by the weights it holds.",
    answer: "number",
    generate: (rng) => ({ type: choose(rng, GGUF_TYPES) }),
    prompt: ({ type }) => `A ${type} block holds ${registered(type).blockSize} weights in ${registered(type).blockBytes} bytes. How many bits per weight?`,
    solve: ({ type }) => {
      const { blockSize, blockBytes, bitsPerWeight: bits } = registered(type);
      return { answer: bits, worked: [`${blockBytes} bytes × 8 / ${blockSize} weights = ${n(bits)} bits per weight`] };
    },
  },
  "capacity-gb": {
    topic: 7,
    title: "How many gigabytes?",
    hint: () => "Bytes = weights × bits per weight / 8; a GB here is 10^9 bytes. Find the format's bits per weight first, its scales included.",
    answer: "number",
    generate: (rng) => ({ billions: choose(rng, [1, 3, 7, 8, 13, 70, 405]), format: choose(rng, CAPACITY_FORMATS) }),
    prompt: ({ billions, format }) => `${billions} B weights in ${format}: how many GB (10^9 bytes) of payload?`,
    solve: ({ billions, format }) => {
      const bits = bitsPerWeight(format);
      const gigabytes = (billions * bits) / 8;
      return { answer: gigabytes, worked: [`${format} is ${n(bits)} bits per weight`, `${billions}·10^9 × ${n(bits)} / 8 / 10^9 = ${n(gigabytes)} GB`] };
    },
  },
  "capacity-affine": {
    topic: 7,
    title: "Bits per weight of MLX affine",
    hint: () => "Each weight has its code's bits; each group of weights shares one scale and one bias, so spread their bits over the group.",
    answer: "number",
    generate: (rng) => ({ bits: choose(rng, [2, 3, 4, 8]), groupSize: choose(rng, [32, 64, 128]) }),
    prompt: ({ bits, groupSize }) => `MLX affine, ${bits}-bit codes, group size ${groupSize}, a 16-bit scale and a 16-bit bias per group: bits per weight?`,
    solve: ({ bits, groupSize }) => {
      const total = bitsPerWeight("affine", { bits, groupSize });
      return { answer: total, worked: [`${bits} + 2 × 16 / ${groupSize} = ${n(total)} bits per weight`] };
    },
  },
  "zoo-check": {
    topic: 8,
    title: "Which check catches it?",
    hint: () => "Ask which property the mistake breaks (a value, where a nibble lands, the scale's exponent, a round trip…), then which check looks at that property.",
    answer: "choice",
    generate: (rng) => ({ specimen: choose(rng, ZOO_WRONG_SPECIMENS).name }),
    prompt: ({ specimen }) => {
      const entry = ZOO_WRONG_SPECIMENS.find((each) => each.name === specimen);
      return `A ${entry.kind} is wrong: ${entry.whatIsWrong}. Which check (1..6, or its name) is meant to catch it?`;
    },
    options: () => Object.entries(ZOO_CHECK_TITLES).map(([number, title]) => `${number}. ${title}`),
    names: () => ZOO_CHECK_TITLES,
    choices: () => wholeNumbers(1, Object.keys(ZOO_CHECK_TITLES).length, "one of the listed checks"),
    accepts: ({ specimen }, typed) => ZOO_WRONG_SPECIMENS.find((each) => each.name === specimen).caughtBy.includes(typed),
    solve: ({ specimen }) => {
      const entry = ZOO_WRONG_SPECIMENS.find((each) => each.name === specimen);
      const names = entry.caughtBy.map((check) => `${check} (${ZOO_CHECK_TITLES[check]})`).join(" or ");
      return { answer: entry.caughtBy[0], worked: [`“${entry.name}” is caught by check ${names}`] };
    },
  },
  "zoo-wrong-value": {
    topic: 8,
    title: "What does the broken decoder say?",
    hint: ({ specimen }) =>
      specimen === "raw E8M0 byte as the scale"
        ? "This decoder reads the element as E2M1 correctly, but multiplies by the scale byte as an ordinary number instead of 2^(byte − 127)."
        : "This decoder applies the right scale, 2^(byte − 127), but reads the four bits as a two's complement integer (INT4) instead of E2M1.",
    answer: "number",
    generate: (rng) => ({ specimen: choose(rng, WRONG_VALUE_SPECIMENS), code: whole(rng, 1, 15), scaleByte: whole(rng, 124, 129) }),
    prompt: ({ specimen, code, scaleByte }) => `The decoder “${specimen}” reads MXFP4 element ${binary(code, 4)} with scale byte ${scaleByte}. What does it output?`,
    solve: ({ specimen, code, scaleByte }) => {
      const right = mxExplain([code, ...new Array(31).fill(0)], [scaleByte], 0);
      let answer;
      let wrongLine;
      if (specimen === "raw E8M0 byte as the scale") {
        answer = Math.fround(e2m1Decode(code) * scaleByte);
        wrongLine = `it multiplies by the byte itself: ${n(e2m1Decode(code))} × ${scaleByte} = ${n(answer)}`;
      } else {
        answer = Math.fround(int4(code) * e8m0Explain(scaleByte).value);
        wrongLine = `it reads ${binary(code, 4)} as INT4 ${n(int4(code))}: ${n(int4(code))} × ${n(e8m0Explain(scaleByte).value)} = ${n(answer)}`;
      }
      return { answer, worked: [wrongLine, `a right decoder gives ${right.formula}`] };
    },
  },
  "affine-scale-dtype": {
    topic: 9,
    title: "Bits per weight: float32 or bfloat16 scales",
    hint: ({ dtype }) => `Each weight has its code's bits; each group shares one scale and one bias, each a ${dtype} of ${PARAMETER_BITS[dtype]} bits, spread over the group's weights.`,
    answer: "number",
    generate: (rng) => ({ bits: choose(rng, [2, 3, 4, 8]), groupSize: choose(rng, [32, 64, 128]), dtype: choose(rng, ["float32", "bfloat16"]) }),
    prompt: ({ bits, groupSize, dtype }) =>
      `MLX affine, ${bits}-bit codes, group size ${groupSize}, on a ${dtype} model: each group keeps its scale and its bias as ${dtype} (${PARAMETER_BITS[dtype]} bits each). How many bits per weight?`,
    solve: ({ bits, groupSize, dtype }) => {
      const parameterBits = PARAMETER_BITS[dtype];
      const total = bitsPerWeight("affine", { bits, groupSize, parameterBits });
      return { answer: total, worked: [`${bits} + 2 × ${parameterBits} / ${groupSize} = ${n(total)} bits per weight (${dtype} scale and bias)`] };
    },
  },
  "relative-error": {
    topic: 9,
    title: "How much a format hurts a row",
    hint: () => "Put each weight on the ruler first (its nearest mark, scale × an E2M1 value). Then divide the length of the error, √Σ(ŵᵢ − wᵢ)², by the length of the row, √Σwᵢ².",
    answer: "number",
    places: 3,
    generate: (rng) => ({ w: Array.from({ length: 4 }, () => choose(rng, [-1, 1]) * whole(rng, 1, 30) / 10), scale: 2 ** whole(rng, -2, 0) }),
    prompt: ({ w, scale }) =>
      `The row w = (${w.map(n).join(", ")}) is stored on the E2M1 ruler at scale ${n(scale)} (each weight to its nearest mark, clipping at ±6·scale). What is its relative error ‖ŵ − w‖ / ‖w‖, to three decimal places?`,
    solve: ({ w, scale }) => {
      const row = scaleAnalyse(w, w.map(() => 1), scale);
      const error = Math.sqrt(fsum(row.weightError.map((e) => e * e)));
      const norm = Math.sqrt(fsum(w.map((value) => value * value)));
      const answer = error / norm;
      return {
        answer,
        worked: [`ŵ = (${row.wHat.map(n).join(", ")})`, `‖ŵ − w‖ = √(${row.weightError.map((e) => `${term(e)}²`).join(" + ")}) = ${n(error)}; ‖w‖ = ${n(norm)}`, `${n(error)} / ${n(norm)} = ${n(answer)} ≈ ${toPlaces(answer, 3)}`],
      };
    },
  },
  "cosine-similarity": {
    topic: 10,
    title: "Does the meaning survive?",
    hint: () => "cos = a · b / (‖a‖ ‖b‖): the sum of the products of matching entries, over the product of the two lengths.",
    answer: "number",
    places: 3,
    generate: (rng) => {
      const a = Array.from({ length: 3 }, () => whole(rng, -4, 4));
      if (a.every((value) => value === 0)) a[0] = 3;
      const b = a.map((value) => value + whole(rng, -1, 1));
      if (b.every((value) => value === 0)) b[1] = 1;
      return { a, b };
    },
    prompt: ({ a, b }) =>
      `A sentence's embedding is a = (${a.map(n).join(", ")}) under the float32 model and b = (${b.map(n).join(", ")}) under a 4-bit format. What is their cosine similarity, to three decimal places?`,
    solve: ({ a, b }) => {
      const dot = fsum(a.map((value, i) => value * b[i]));
      const lengths = [a, b].map((vector) => Math.sqrt(fsum(vector.map((value) => value * value))));
      const answer = dot / (lengths[0] * lengths[1]);
      return {
        answer,
        worked: [`a · b = ${a.map((value, i) => `${term(value)}·${term(b[i])}`).join(" + ")} = ${n(dot)}`, `‖a‖ = ${n(lengths[0])}, ‖b‖ = ${n(lengths[1])}`, `${n(dot)} / (${n(lengths[0])} × ${n(lengths[1])}) = ${n(answer)} ≈ ${toPlaces(answer, 3)}`],
      };
    },
  },
  "retrieval-margin": {
    topic: 10,
    title: "The margin over the best wrong answer",
    hint: () => "Work out the query's cosine with each passage (a · b / (‖a‖ ‖b‖)). The margin is the right passage's cosine less the largest of the wrong ones'.",
    answer: "number",
    places: 3,
    generate: (rng) => {
      const vector = () => {
        const drawn = [whole(rng, -3, 3), whole(rng, -3, 3)];
        return drawn[0] === 0 && drawn[1] === 0 ? [1, 2] : drawn;
      };
      return { query: vector(), passages: [vector(), vector(), vector()] };
    },
    prompt: ({ query, passages }) =>
      `A query's embedding is q = (${query.map(n).join(", ")}); passage A = (${passages[0].map(n).join(", ")}) is its right answer, B = (${passages[1].map(n).join(", ")}) and C = (${passages[2].map(n).join(", ")}) are wrong. What is the margin, cos(q, A) less the larger of cos(q, B) and cos(q, C), to three decimal places? (Below 0, a wrong passage is retrieved.)`,
    solve: ({ query, passages }) => {
      const cosines = passages.map((passage) => cosine(query, passage));
      const answer = cosines[0] - Math.max(cosines[1], cosines[2]);
      const best = cosines[1] >= cosines[2] ? "B" : "C";
      return {
        answer,
        worked: [`cos(q, A) = ${n(cosines[0])}, cos(q, B) = ${n(cosines[1])}, cos(q, C) = ${n(cosines[2])}`, `margin = cos(q, A) − cos(q, ${best}) = ${n(cosines[0])} − ${term(Math.max(cosines[1], cosines[2]))} = ${n(answer)} ≈ ${toPlaces(answer, 3)}`],
      };
    },
  },
  "recipe-bpw": {
    topic: 11,
    title: "Bits per weight of a recipe",
    hint: () => "Add up each part's bits (its weights × its format's bits per weight, scales included), then divide by all the weights.",
    answer: "number",
    places: 3,
    generate: (rng) => {
      const formats = [...RECIPE_FORMATS];
      const parts = [];
      for (let i = 0; i < 3; i += 1) parts.push({ format: formats.splice(Math.floor(rng() * formats.length), 1)[0], millions: whole(rng, 1, 40) });
      return { parts };
    },
    prompt: ({ parts }) =>
      `A file's recipe keeps ${parts.map((part) => `${part.millions} M weights in ${part.format}`).join(", ")} (GGUF block types, each with its own scales). How many bits per weight does the file spend on average, to three decimal places?`,
    solve: ({ parts }) => {
      const bits = parts.map((part) => registered(part.format).bitsPerWeight);
      const total = fsum(parts.map((part, i) => part.millions * bits[i]));
      const weights = fsum(parts.map((part) => part.millions));
      const answer = total / weights;
      return {
        answer,
        worked: [parts.map((part, i) => `${part.format} is ${n(bits[i])} bits per weight`).join("; "), `(${parts.map((part, i) => `${part.millions} × ${n(bits[i])}`).join(" + ")}) / ${n(weights)} = ${n(total)} / ${n(weights)} = ${n(answer)} ≈ ${toPlaces(answer, 3)}`],
      };
    },
  },
  "pareto-dominated": {
    topic: 11,
    title: "Off the Pareto front",
    hint: () => "A format is dominated when another one costs at most as many bits per weight and errs at most as much, and is better in at least one of the two. Compare each row with every other.",
    answer: "choice",
    generate: (rng) => {
      // Drawn again until some row is dominated, so the question always has an answer.
      for (;;) {
        const formats = [...PARETO_FORMATS];
        const rows = Array.from({ length: 4 }, () => ({ format: formats.splice(Math.floor(rng() * formats.length), 1)[0], error: whole(rng, 10, 200) / 1000 }));
        if (dominatedRows(rows).length) return { rows };
      }
    },
    prompt: () => "Four formats on the same tensor, with their bits per weight and relative error. Which one is off the Pareto front: another format costs at most as many bits and errs at most as much, and is better in one? Type its number or its name.",
    options: ({ rows }) => rows.map((row, i) => `${i + 1}. ${row.format}: ${n(registered(row.format).bitsPerWeight)} bits per weight, error ${n(row.error)}`),
    names: ({ rows }) => Object.fromEntries(rows.map((row, i) => [i + 1, row.format])),
    choices: ({ rows }) => wholeNumbers(1, rows.length, "one of the listed formats"),
    accepts: ({ rows }, typed) => dominatedRows(rows).some((row) => row.index + 1 === typed),
    solve: ({ rows }) => {
      const dominated = dominatedRows(rows);
      const lines = dominated.map(({ index, by }) => `${index + 1}. ${rows[index].format} is dominated by ${by.map((other) => `${other + 1}. ${rows[other].format}`).join(" and ")}`);
      return { answer: dominated[0].index + 1, worked: lines };
    },
  },
  "kl-divergence": {
    topic: 12,
    title: "KL divergence of one next token",
    hint: () => "KL(P ‖ Q) = Σ P·ln(P / Q), over the tokens: each reference probability times the natural log of how much larger it is than the format's. A token with P = 0 adds nothing.",
    answer: "number",
    places: 3,
    generate: (rng) => {
      const p = choose(rng, NEXT_TOKEN_SHAPES);
      const q = [...p];
      const from = whole(rng, 0, 3);
      let to = whole(rng, 0, 2);
      if (to >= from) to += 1;
      const moved = Math.min(q[from] - 1, whole(rng, 5, 20));
      q[from] -= moved;
      q[to] += moved;
      return { p: p.map((share) => share / 100), q: q.map((share) => share / 100) };
    },
    prompt: ({ p, q }) =>
      `The file's own weights give the next token the probabilities P = (${p.map(n).join(", ")}); a 4-bit format gives Q = (${q.map(n).join(", ")}). What is KL(P ‖ Q) in nats, to three decimal places?`,
    solve: ({ p, q }) => {
      const terms = p.map((share, i) => (share === 0 ? 0 : share * Math.log(share / q[i])));
      const answer = fsum(terms);
      return {
        answer,
        worked: [`KL = ${p.map((share, i) => `${n(share)}·ln(${n(share)} / ${n(q[i])})`).join(" + ")}`, `= ${terms.map(term).join(" + ")} = ${n(answer)} ≈ ${toPlaces(answer, 3)} nats`],
      };
    },
  },
  "first-departure": {
    topic: 12,
    title: "Which format departs first?",
    hint: () => "Compare each answer with the reference word by word from the start: the first word that differs (or an answer that stops early) is where it departs. The earliest departure wins.",
    answer: "choice",
    generate: (rng) => {
      const reference = choose(rng, REFERENCE_ANSWERS);
      const formats = [...DEPARTING_FORMATS];
      const positions = [];
      while (positions.length < 3) {
        const position = whole(rng, 1, reference.length - 1);
        if (!positions.includes(position)) positions.push(position);
      }
      const answers = positions.map((position) => {
        const format = formats.splice(Math.floor(rng() * formats.length), 1)[0];
        const swap = choose(rng, SWAP_WORDS.filter((word) => word !== reference[position]));
        return { format, words: [...reference.slice(0, position), swap, ...reference.slice(position + 1)] };
      });
      return { reference, answers };
    },
    prompt: ({ reference }) => `The file's own weights answer “${reference.join(" ")}”. Three formats answer as below. Which one departs from the reference first? Type its number or its name.`,
    options: ({ answers }) => answers.map((answer, i) => `${i + 1}. ${answer.format}: “${answer.words.join(" ")}”`),
    names: ({ answers }) => Object.fromEntries(answers.map((answer, i) => [i + 1, answer.format])),
    choices: ({ answers }) => wholeNumbers(1, answers.length, "one of the listed formats"),
    solve: ({ reference, answers }) => {
      const departures = answers.map((answer) => firstDivergence(answer.words, reference));
      const first = departures.indexOf(Math.min(...departures.map((at) => (at === null ? Infinity : at))));
      return {
        answer: first + 1,
        worked: answers.map((answer, i) =>
          departures[i] === null ? `${answer.format} never departs` : `${answer.format} departs at word ${departures[i] + 1}: “${answer.words[departures[i]] ?? "(it stops)"}” for “${reference[departures[i]] ?? "(the reference stops)"}”`,
        ),
      };
    },
  },
};

/** Every exercise kind: {kind, topic, title}, in notebook order. */
export const EXERCISE_KINDS = Object.freeze(Object.entries(KINDS).map(([kind, entry]) => Object.freeze({ kind, topic: entry.topic, title: entry.title })));

/** The kinds for one notebook (1..12), or every kind for topic 0. */
export function exerciseKinds(topic) {
  return EXERCISE_KINDS.filter((entry) => topic === 0 || entry.topic === topic).map((entry) => entry.kind);
}

/**
 * Each answered kind's verdict, its answer checked again against the instance drawn from `seed`
 * and the kind's round: {kind: "correct" or "wrong"}. An answer that is no answer at all (text a
 * link or a browser's store carried) gets none. This is the only verdict there is: a verdict
 * claimed anywhere else (a link's progress) never counts, so only the answers themselves can.
 */
export function exerciseVerdicts(seed, rounds, answers) {
  const verdicts = {};
  for (const [kind, typed] of Object.entries(answers)) {
    if (!Object.hasOwn(KINDS, kind) || typeof typed !== "string") continue;
    const checked = exerciseCheck(kind, exerciseInstance(kind, seed, rounds[kind] ?? 0).params, typed);
    if (checked.ok) verdicts[kind] = checked.correct ? "correct" : "wrong";
  }
  return verdicts;
}

/** The count: how many of a topic's kinds have a right last checked answer (exerciseVerdicts), of how many. */
export function exerciseScore(topic, seed, rounds, answers) {
  const verdicts = exerciseVerdicts(seed, rounds, answers);
  const kinds = exerciseKinds(topic);
  return { correct: kinds.filter((kind) => verdicts[kind] === "correct").length, of: kinds.length, verdicts };
}

function kindOf(kind) {
  if (!Object.hasOwn(KINDS, kind)) throw labError("ValueError", `unknown exercise kind ${JSON.stringify(kind)}`);
  return KINDS[kind];
}

/** One instance: {kind, title, params, prompt, options, answerType, places}, reproducible from (seed, kind, round). */
export function exerciseInstance(kind, seed, round = 0) {
  const entry = kindOf(kind);
  const params = entry.generate(mulberry32(exerciseSeed(seed, kind, round)));
  return exercisePresent(kind, params);
}

/** The question for given parameters (the golden tests feed Python's parameters here). */
export function exercisePresent(kind, params) {
  const entry = kindOf(kind);
  return { kind, title: entry.title, params, prompt: entry.prompt(params), options: entry.options ? entry.options(params) : [], answerType: entry.answer, places: entry.places ?? null };
}

/** The answer the codec computes for these parameters and the worked arithmetic: {answer, worked: [lines]}. */
export function exerciseSolve(kind, params) {
  return kindOf(kind).solve(params);
}

// The typed answer as a number, or {ok: false, message} when it is no answer at all: not a number,
// or a number outside the exercise's choices.
function readAnswer(entry, params, text) {
  // A listed option typed by its name, in any case and spacing, is its number; the names are
  // distinct, so this is never ambiguous.
  if (entry.names) {
    const typed = text.trim().replace(/\s+/g, " ").toLowerCase();
    const named = Object.entries(entry.names(params)).find(([, name]) => name.toLowerCase() === typed);
    if (named) return { ok: true, value: Number(named[0]), message: "" };
  }
  const choices = entry.choices ? entry.choices(params) : entry.answer === "byte" ? BYTES : null;
  const outside = (value) => {
    // 0101 reads as a hundred and one; someone who typed it most likely meant bits.
    const bits = /^[01]{2,}$/.test(text.trim()) ? ` For bits, start with 0b: 0b${text.trim()}.` : "";
    return { ok: false, message: `${formatLabNumber(value)} is not ${choices.what}: type ${choices.type}.${bits}` };
  };
  const parsed = entry.answer === "byte" ? parseByte(text) : parseNumber(text);
  if (parsed.ok) return choices === null || choices.allows(parsed.value) ? parsed : outside(parsed.value);
  if (choices === null) return parsed;
  // A number that is no byte (−1, 2.5, 300) is still a number: the exercise says which it takes.
  const number = entry.answer === "byte" ? parseNumber(text) : parsed;
  if (number.ok) return outside(number.value);
  // The parser's advice is for any number or byte; the exercise's says what this answer can be.
  const reread = entry.answer === "byte" && choices.bits !== null ? parseByte(text, choices.bits) : parsed;
  let why = reread.message.replace(/\s*(?:Type|Try) .*$/, "");
  if (why && entry.names) why = `“${text.trim()}” is neither a number nor a name on the list.`;
  const examples = entry.answer === "byte" ? ", such as 5, 0x05 or 0b0101" : "";
  return { ok: false, message: `${why ? `${why} ` : ""}Type ${choices.type}${examples}.` };
}

// A number typed as the lab prints it (ten significant digits) or as a fraction such as 3/8
// counts as the computed double: 0.1 + 0.2 style rounding is not what an exercise tests. An
// exercise that asks for `places` decimal places (a logarithm, a square root) takes any number
// that rounds to the same: within half a unit of the last place asked for.
function sameNumber(typed, answer, places) {
  if (typed === answer) return true;
  if (formatLabNumber(typed) === formatLabNumber(answer)) return true;
  if (places !== undefined && Math.abs(typed - answer) <= 0.5 * 10 ** -places + 1e-12) return true;
  return Math.abs(typed - answer) <= 1e-9 * Math.abs(answer);
}

// What a wrong number most likely got wrong, said without the answer: the sign, or a power of two
// (a scale's exponent, a bias, a factor of the group) in one direction, or nothing recognisable.
function diagnosis(typed, answer) {
  if (!Number.isFinite(typed) || !Number.isFinite(answer) || answer === 0 || typed === 0) return "";
  if (sameNumber(-typed, answer)) return "Your number has the right size but the wrong sign.";
  const ratio = Math.log2(Math.abs(typed / answer));
  if (Number.isInteger(Math.round(ratio)) && Math.round(ratio) !== 0 && Math.abs(ratio - Math.round(ratio)) < 1e-9 && Math.abs(ratio) <= 10) {
    // the direction, not the factor: the factor and the number typed would be the answer
    const sign = Math.sign(typed) === Math.sign(answer) ? "" : ", and its sign is wrong too";
    return `Your number is too ${ratio > 0 ? "large" : "small"} by a power of two${sign}: look again at an exponent, a scale or a bias.`;
  }
  return "";
}

/**
 * The hint for a wrong first try: the kind's method, in words, and what the typed number most
 * likely got wrong; never the answer or its working.
 */
export function exerciseHint(kind, params, typed) {
  const entry = kindOf(kind);
  const method = entry.hint(params);
  if (entry.answer !== "number" || typeof typed !== "number") return method;
  const said = diagnosis(typed, entry.solve(params).answer);
  return said ? `${said} ${method}` : method;
}

/**
 * Check what a learner typed: {ok: false, message} when it is not an answer at all (the field
 * says why), else {ok: true, correct, typed, answer, worked}.
 */
export function exerciseCheck(kind, params, text) {
  const entry = kindOf(kind);
  const read = readAnswer(entry, params, text);
  if (!read.ok) return { ok: false, message: read.message };
  const { answer, worked } = entry.solve(params);
  const correct = entry.accepts ? entry.accepts(params, read.value) : entry.answer === "number" ? sameNumber(read.value, answer, entry.places) : read.value === answer;
  return { ok: true, correct, typed: read.value, answer, worked };
}
