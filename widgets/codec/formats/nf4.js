// QLoRA's NF4 levels (Python lab.formats.nf4): quantiles of N(0, 1) scaled to [-1, 1], with an exact 0.
import { checkCode } from "../arrays.js";

// bitsandbytes ships these as float32; Math.fround keeps each literal at exactly that float32.
/** The 16 NormalFloat levels, code 0 = -1 and code 15 = +1; code 7 is the exact zero. */
export const NF4_LEVELS = Object.freeze(
  [
    -1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635,
    -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725,
    0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0,
  ].map(Math.fround),
);

/** The level one NF4 code stands for before the block's absmax (weight = LEVELS[code] * absmax). */
export function nf4Level(code) {
  return NF4_LEVELS[checkCode(code, 16, "NF4 code")];
}
