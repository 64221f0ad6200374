// The four-bit lab's JavaScript codec, one module per Python module it mirrors; this index
// re-exports their public names so tests and node scripts can import one place. Widgets import
// from the module that defines a name, so a widget's bundle holds only the modules it uses.
//
// It mirrors the Python codec in lab/ number for number: tests/js/codec.test.mjs checks every
// function against golden vectors that tests/js/make_golden.py writes from the Python code,
// comparing IEEE bits (so -0 and +0 differ, and float32 rounding must match exactly). Where
// Python rounds a float64 result to float32, the codec calls Math.fround at the same place; a
// float32 operation on float32 inputs equals Math.fround of the float64 operation.
//
// Names follow the Python module they mirror, in camelCase: lab.codes.e2m1.explain -> e2m1Explain,
// and its dict key "exponent_field" -> exponentField. Bad input throws an Error whose `name`
// is the Python error class for the same input (errors.js).
//
// Plain ES modules: relative imports only, no DOM, no network. errors.js, arrays.js, floats.js,
// formats/blocks.js, formats/ggml.js and formats/kquant.js are the codec's own plumbing and are
// not re-exported. The format modules' re-exports, one a Python format module in the registry's
// order, are written by widgets/codec_tables.py; tests/apps/test_codec_tables.py fails on drift.
export * from "./numbers.js";
export * from "./text.js";
export * from "./fsum.js";
export * from "./codes/bits.js";
export * from "./codes/nibble.js";
export * from "./codes/e2m1.js";
export * from "./codes/e8m0.js";
export * from "./codes/e4m3.js";
export * from "./codes/fp16.js";
// generated from lab.formats.FORMATS by python -m widgets.codec_tables; do not edit
export * from "./formats/mxfp4.js";
export * from "./formats/nvfp4.js";
export * from "./formats/q4k.js";
export * from "./formats/q8_0.js";
export * from "./formats/q4_0.js";
export * from "./formats/q4_1.js";
export * from "./formats/q6_k.js";
export * from "./formats/iq4_nl.js";
export * from "./formats/iq4_xs.js";
export * from "./formats/nf4.js";
export * from "./formats/q5_0.js";
export * from "./formats/q5_1.js";
export * from "./formats/q5_k.js";
export * from "./formats/q3_k.js";
export * from "./formats/q2_k.js";
export * from "./formats/ternary.js";
// end of generated text
export * from "./formats/gguf_blocks.js";
export * from "./formats/registry.js";
export * from "./formats/sizes.js";
export * from "./teach/scale.js";
export * from "./teach/zoo.js";
export * from "./teach/exercises.js";
export * from "./teach/classroom.js";
