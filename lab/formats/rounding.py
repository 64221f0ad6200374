"""Rounding presets for the MX formats.

Quantizing an MX block is two separate choices, and implementations that share a format name
make them differently:
    scale rule   - which power of two the block's E8M0 byte stores (see lab.codes.e8m0):
                   "ocp" floor(log2(amax)) - emax, or "mlx" ceil(log2(amax / element_max));
    element rule - how each scaled value becomes an element code (see lab.codes.e2m1):
                   "rne" round half to even, or "mlx" ties toward zero with -0 stored as +0.
A preset names the pair after the implementation that uses it, with where it comes from.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from lab.errors import RuleError


@dataclass(frozen=True)
class Preset:
    name: str
    scale_rule: str  # "ocp" (floor) or "mlx" (ceil)
    element_rounding: str  # "rne" or "mlx" (ties toward zero, +0 for zero)
    zero_block_byte: int  # the E8M0 byte stored for a block of zeros
    computes_in_input_dtype: bool  # MLX rounds intermediate results to float16/bfloat16 inputs
    source: str


#: the names PRESETS knows, for type checkers: quantize(w, rule="ocp")
RuleName = Literal["mlx", "ggml", "ocp"]

PRESETS: dict[str, Preset] = {
    "mlx": Preset(
        name="mlx",
        scale_rule="mlx",
        element_rounding="mlx",
        zero_block_byte=127,
        computes_in_input_dtype=True,
        source="MLX 0.32.4 mx.quantize on the CPU (ceil scale rule since PR #4353; "
        "nearest-table-entry elements, first index wins a tie; arithmetic in the input dtype)",
    ),
    "ggml": Preset(
        name="ggml",
        scale_rule="ocp",
        element_rounding="mlx",
        zero_block_byte=0,
        computes_in_input_dtype=False,
        source="ggml's MXFP4 reference quantizer as gguf-py 0.19 mirrors it (gguf.quants.MXFP4): "
        "floor scale rule, a zero block stores byte 0, nearest-table-entry elements with the "
        "first index winning a tie. ggml computes the byte in 8 bits and wraps for amax below "
        "2^-125; the lab clamps instead",
    ),
    "ocp": Preset(
        name="ocp",
        scale_rule="ocp",
        element_rounding="rne",
        zero_block_byte=127,
        computes_in_input_dtype=False,
        source="OCP Microscaling Formats v1.0, section 6.3 (floor scale rule), with elements "
        "rounded half to even and saturated as torchao's FLOOR mode does; the spec leaves an "
        "all-zero block open and the lab stores scale 1 (byte 127)",
    ),
}


def preset(name: str) -> Preset:
    try:
        return PRESETS[name]
    except KeyError:
        raise RuleError(f"unknown rounding preset {name!r}; expected one of {tuple(PRESETS)}") from None
