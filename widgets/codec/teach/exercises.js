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

// Each kind: its notebook (topic), a title, how its parameters are drawn, the question, the kind
// of answer ("number", "byte" read by parseByte, or "choice" of a listed option, which may also be
// typed by its name: names), the answers it can have if they are a fixed set (choices; a byte is
// 0..255 unless they say less) and its solution.
const KINDS = {
  "nibble-decode": {
    topic: 1,
    title: "Decode a nibble",
    answer: "number",
    generate: (rng) => ({ code: whole(rng, 0, 15), reading: choose(rng, ["E2M1", "UINT4", "INT4"]) }),
    prompt: ({ code, reading }) => `What is the nibble ${binary(code, 4)} read as ${reading}?`,
    choices: ({ reading }) => READINGS[reading],
    solve: ({ code, reading }) => nibbleReading(code, reading),
  },
  "e2m1-code": {
    topic: 1,
    title: "Find the E2M1 code",
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
};

/** Every exercise kind: {kind, topic, title}, in notebook order. */
export const EXERCISE_KINDS = Object.freeze(Object.entries(KINDS).map(([kind, entry]) => Object.freeze({ kind, topic: entry.topic, title: entry.title })));

/** The kinds for one notebook (1..8), or every kind for topic 0. */
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

/** One instance: {kind, title, params, prompt, options, answerType}, reproducible from (seed, kind, round). */
export function exerciseInstance(kind, seed, round = 0) {
  const entry = kindOf(kind);
  const params = entry.generate(mulberry32(exerciseSeed(seed, kind, round)));
  return exercisePresent(kind, params);
}

/** The question for given parameters (the golden tests feed Python's parameters here). */
export function exercisePresent(kind, params) {
  const entry = kindOf(kind);
  return { kind, title: entry.title, params, prompt: entry.prompt(params), options: entry.options ? entry.options(params) : [], answerType: entry.answer };
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
// counts as the computed double: 0.1 + 0.2 style rounding is not what an exercise tests.
function sameNumber(typed, answer) {
  if (typed === answer) return true;
  if (formatLabNumber(typed) === formatLabNumber(answer)) return true;
  return Math.abs(typed - answer) <= 1e-9 * Math.abs(answer);
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
  const correct = entry.accepts ? entry.accepts(params, read.value) : entry.answer === "number" ? sameNumber(read.value, answer) : read.value === answer;
  return { ok: true, correct, typed: read.value, answer, worked };
}
