// The GGUF block formats the block explorer opens, by GGUF type name, in the registry's order:
// every format of lab.formats that GGUF has, but Q4_K (its own explorer) and MXFP4 and NVFP4 (the
// ownership view), as lab.teach.gguf_browser's EXPLORERS says. The imports and rows are written
// from the Python registry by widgets/codec_tables.py: a format's module is ./<registry name>.js,
// exporting <GGUF type>_BLOCK, <prefix>DecodeBlock and <prefix>ExplainWeight (the prefix is
// codec_tables.js_prefix of the name), and tests/apps/test_codec_tables.py fails when they differ
// from what it writes now.
import { describe, labError } from "../errors.js";
// generated from lab.formats.FORMATS by python -m widgets.codec_tables; do not edit
import { IQ4_NL_BLOCK, iq4NlDecodeBlock, iq4NlExplainWeight } from "./iq4_nl.js";
import { IQ4_XS_BLOCK, iq4XsDecodeBlock, iq4XsExplainWeight } from "./iq4_xs.js";
import { Q2_K_BLOCK, q2kDecodeBlock, q2kExplainWeight } from "./q2_k.js";
import { Q3_K_BLOCK, q3kDecodeBlock, q3kExplainWeight } from "./q3_k.js";
import { Q4_0_BLOCK, q4_0DecodeBlock, q4_0ExplainWeight } from "./q4_0.js";
import { Q4_1_BLOCK, q4_1DecodeBlock, q4_1ExplainWeight } from "./q4_1.js";
import { Q5_0_BLOCK, q5_0DecodeBlock, q5_0ExplainWeight } from "./q5_0.js";
import { Q5_1_BLOCK, q5_1DecodeBlock, q5_1ExplainWeight } from "./q5_1.js";
import { Q5_K_BLOCK, q5kDecodeBlock, q5kExplainWeight } from "./q5_k.js";
import { Q6_K_BLOCK, q6kDecodeBlock, q6kExplainWeight } from "./q6_k.js";
import { Q8_0_BLOCK, q8_0DecodeBlock, q8_0ExplainWeight } from "./q8_0.js";
import { TQ1_0_BLOCK, tq1_0DecodeBlock, tq1_0ExplainWeight, TQ2_0_BLOCK, tq2_0DecodeBlock, tq2_0ExplainWeight } from "./ternary.js";

const GGUF_BLOCK_ROWS = [
  [Q8_0_BLOCK, q8_0DecodeBlock, q8_0ExplainWeight],
  [Q4_0_BLOCK, q4_0DecodeBlock, q4_0ExplainWeight],
  [Q4_1_BLOCK, q4_1DecodeBlock, q4_1ExplainWeight],
  [Q6_K_BLOCK, q6kDecodeBlock, q6kExplainWeight],
  [IQ4_NL_BLOCK, iq4NlDecodeBlock, iq4NlExplainWeight],
  [IQ4_XS_BLOCK, iq4XsDecodeBlock, iq4XsExplainWeight],
  [Q5_0_BLOCK, q5_0DecodeBlock, q5_0ExplainWeight],
  [Q5_1_BLOCK, q5_1DecodeBlock, q5_1ExplainWeight],
  [Q5_K_BLOCK, q5kDecodeBlock, q5kExplainWeight],
  [Q3_K_BLOCK, q3kDecodeBlock, q3kExplainWeight],
  [Q2_K_BLOCK, q2kDecodeBlock, q2kExplainWeight],
  [TQ1_0_BLOCK, tq1_0DecodeBlock, tq1_0ExplainWeight],
  [TQ2_0_BLOCK, tq2_0DecodeBlock, tq2_0ExplainWeight],
];
// end of generated text

export const GGUF_BLOCK_CODECS = Object.freeze(
  Object.fromEntries(
    GGUF_BLOCK_ROWS.map(([block, decodeBlock, explainWeight]) => [
      block.title,
      Object.freeze({ block, decodeBlock, explainWeight }),
    ]),
  ),
);

/** The codec of GGUF type `typeName`, or an UnsupportedTypeError naming the types there are. */
export function ggufBlockCodec(typeName) {
  if (typeof typeName === "string" && Object.hasOwn(GGUF_BLOCK_CODECS, typeName)) return GGUF_BLOCK_CODECS[typeName];
  throw labError(
    "UnsupportedTypeError",
    `the block explorer opens ${Object.keys(GGUF_BLOCK_CODECS).join(", ")}; got ${describe(typeName)}`,
  );
}
