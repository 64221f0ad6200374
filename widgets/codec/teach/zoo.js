// The zoo of wrong decoders (Python lab.teach.zoo): each deliberately wrong specimen, what is
// wrong with it and which of the article's checks are meant to catch it. Data only, mirrored from
// the Python zoo; golden vectors written from lab.teach.zoo.checks.CHECK_TITLES and
// lab.teach.zoo.specimens compare both entry for entry and in order, so a check or specimen added,
// dropped or changed on either side fails the JS tests.
export const ZOO_CHECK_TITLES = Object.freeze({
  1: "Decode individual codes",
  2: "Check metadata independently",
  3: "Check lane placement",
  4: "Compare reconstructed weights",
  5: "Compare a dot product",
  6: "Test the actual optimized path",
});

export const ZOO_WRONG_SPECIMENS = Object.freeze(
  [
    {
      name: "lanes 0/1 (interleaved)",
      kind: "q4k decoder",
      whatIsWrong: "the two nibbles of a payload byte go to neighbouring lanes instead of lanes 32 apart",
      caughtBy: [3],
    },
    {
      name: "one subblock's metadata for both nibbles",
      kind: "q4k decoder",
      whatIsWrong: "the high nibbles of each 64-lane chunk use the low subblock's scale and minimum",
      caughtBy: [4, 5],
    },
    {
      name: "B[4] read as s4 (split ignored)",
      kind: "metadata unpacker",
      whatIsWrong: "s_j = B[j] & 63 and m_j = B[j+4] & 63 for j = 4..7 too: the split fields are never reassembled",
      caughtBy: [2],
    },
    {
      name: "raw E8M0 byte as the scale",
      kind: "mxfp4 decoder",
      whatIsWrong: "scale = byte instead of 2^(byte - 127)",
      caughtBy: [1],
    },
    {
      name: "INT4 instead of E2M1",
      kind: "mxfp4 decoder",
      whatIsWrong: "element codes read as two's-complement integers instead of E2M1 floats",
      caughtBy: [1],
    },
    {
      name: "OCP floor scale rule against MLX",
      kind: "mxfp4 quantizer",
      whatIsWrong: "scale exponent floor(log2(amax)) - 2 where MLX uses ceil(log2(amax / 6))",
      caughtBy: [6],
    },
    {
      name: "ties to even against MLX",
      kind: "mxfp4 quantizer",
      whatIsWrong: "an element exactly halfway between two E2M1 values rounds to the even code; MLX rounds toward zero",
      caughtBy: [6],
    },
  ].map((entry) => Object.freeze({ ...entry, caughtBy: Object.freeze(entry.caughtBy) })),
);
