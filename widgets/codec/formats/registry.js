// The format registry's constants (Python lab.formats.FORMATS), in registry order: what the
// widgets need to name a format, size its blocks and price its bits. The rows are written from the
// Python registry by widgets/codec_tables.py, and tests/apps/test_codec_tables.py fails when they
// differ from what it writes now, so a format added there and not here fails the tests.
// generated from lab.formats.FORMATS by python -m widgets.codec_tables; do not edit
const REGISTRY_ROWS = [
  { name: "mxfp4", title: "MXFP4", blockSize: 32, bitsPerWeight: 4.25, nanScaleBytes: [0xff] },
  { name: "mxfp8", title: "MXFP8", blockSize: 32, bitsPerWeight: 8.25, nanScaleBytes: [0xff] },
  { name: "nvfp4", title: "NVFP4", blockSize: 16, bitsPerWeight: 4.5, nanScaleBytes: [0x7f, 0xff] },
  { name: "affine2_g64", title: "MLX affine 2-bit g64", blockSize: 64, bitsPerWeight: 2.5, nanScaleBytes: [] },
  { name: "affine3_g64", title: "MLX affine 3-bit g64", blockSize: 64, bitsPerWeight: 3.5, nanScaleBytes: [] },
  { name: "affine4_g32", title: "MLX affine 4-bit g32", blockSize: 32, bitsPerWeight: 5, nanScaleBytes: [] },
  { name: "affine4_g64", title: "MLX affine 4-bit g64", blockSize: 64, bitsPerWeight: 4.5, nanScaleBytes: [] },
  { name: "affine4_g128", title: "MLX affine 4-bit g128", blockSize: 128, bitsPerWeight: 4.25, nanScaleBytes: [] },
  { name: "affine8_g32", title: "MLX affine 8-bit g32", blockSize: 32, bitsPerWeight: 9, nanScaleBytes: [] },
  { name: "affine8_g64", title: "MLX affine 8-bit g64", blockSize: 64, bitsPerWeight: 8.5, nanScaleBytes: [] },
  { name: "affine8_g128", title: "MLX affine 8-bit g128", blockSize: 128, bitsPerWeight: 8.25, nanScaleBytes: [] },
  { name: "q4k", title: "Q4_K", blockSize: 256, bitsPerWeight: 4.5, nanScaleBytes: [] },
  { name: "q8_0", title: "Q8_0", blockSize: 32, bitsPerWeight: 8.5, nanScaleBytes: [] },
  { name: "q4_0", title: "Q4_0", blockSize: 32, bitsPerWeight: 4.5, nanScaleBytes: [] },
  { name: "q4_1", title: "Q4_1", blockSize: 32, bitsPerWeight: 5, nanScaleBytes: [] },
  { name: "q6_k", title: "Q6_K", blockSize: 256, bitsPerWeight: 6.5625, nanScaleBytes: [] },
  { name: "iq4_nl", title: "IQ4_NL", blockSize: 32, bitsPerWeight: 4.5, nanScaleBytes: [] },
  { name: "iq4_xs", title: "IQ4_XS", blockSize: 256, bitsPerWeight: 4.25, nanScaleBytes: [] },
  { name: "nf4", title: "NF4", blockSize: 64, bitsPerWeight: 4.5, nanScaleBytes: [] },
  { name: "q5_0", title: "Q5_0", blockSize: 32, bitsPerWeight: 5.5, nanScaleBytes: [] },
  { name: "q5_1", title: "Q5_1", blockSize: 32, bitsPerWeight: 6, nanScaleBytes: [] },
  { name: "q5_k", title: "Q5_K", blockSize: 256, bitsPerWeight: 5.5, nanScaleBytes: [] },
  { name: "q3_k", title: "Q3_K", blockSize: 256, bitsPerWeight: 3.4375, nanScaleBytes: [] },
  { name: "q2_k", title: "Q2_K", blockSize: 256, bitsPerWeight: 2.625, nanScaleBytes: [] },
  { name: "tq1_0", title: "TQ1_0", blockSize: 256, bitsPerWeight: 1.6875, nanScaleBytes: [] },
  { name: "tq2_0", title: "TQ2_0", blockSize: 256, bitsPerWeight: 2.0625, nanScaleBytes: [] },
];
// end of generated text

export const FORMATS = Object.freeze(
  REGISTRY_ROWS.map((entry) => Object.freeze({ ...entry, nanScaleBytes: Object.freeze(entry.nanScaleBytes) })),
);
