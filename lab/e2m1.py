"""E2M1: the 4-bit float element of MXFP4 and NVFP4.

Bit layout of one code (a nibble):  s e1 e0 m0
    sign = bit 3, exponent field = bits 2..1 (bias 1), fraction = bit 0.
    exponent field 0  -> subnormal: (-1)^s * 0.5 * m0            (0 or 0.5)
    exponent field >0 -> normal:    (-1)^s * 2^(e-1) * (1 + m0/2)
There is no infinity and no NaN; 1000 is negative zero.

Encoding is a rounding choice, and the lab names each rule after who uses it:
    "rne" - round half to even, saturating at +-6 (the OCP spec's rounding; ml_dtypes and torchao).
    "mlx" - MLX 0.32.4 and ggml: nearest table entry with the first (lower) index winning a tie,
            so ties go toward zero, and anything that rounds to zero is stored as +0 (never 1000).
"""

from __future__ import annotations

import numpy as np

from ._arrays import as_code_array, as_float_array
from ._blocks import fmt
from .errors import RuleError

#: value of every code 0..15, negative zero included
VALUES = np.array(
    [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0], dtype=np.float32
)
#: the eight magnitudes, in code order
MAGNITUDES = VALUES[:8].copy()
MAX = 6.0
#: emax: the exponent of the largest normal value (6 = 1.5 * 2^2); the OCP scale rule subtracts it
EMAX = 2
ROUNDING_RULES = ("rne", "mlx")
#: the bits a code costs
BITS = 4


def decode(code) -> np.ndarray | np.float32:
    """Value of each 4-bit code (0..15), sign of zero kept. Same shape as the input."""
    codes = as_code_array(code, limit=16, what="E2M1 code")
    values = VALUES[codes]
    return values[()] if values.ndim == 0 else values


def encode(x, rounding: str = "rne") -> np.ndarray | np.uint8:
    """Nearest E2M1 code for each value, under a named rounding rule (see the module docstring).

    Values beyond +-6 saturate to +-6 under both rules; NaN and infinity are rejected.
    """
    values = as_float_array(x, what="value to encode as E2M1")
    magnitude = np.abs(values)
    # Midpoints between neighbouring magnitudes: 0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.
    midpoints = (MAGNITUDES[:-1] + MAGNITUDES[1:]) / 2
    if rounding == "mlx":
        # A value exactly on a midpoint stays with the lower magnitude (toward zero).
        magnitude_code = np.searchsorted(midpoints, magnitude, side="left")
        sign = (values < 0) & (magnitude_code > 0)
    elif rounding == "rne":
        below = np.searchsorted(midpoints, magnitude, side="left")
        above = np.searchsorted(midpoints, magnitude, side="right")
        tie = below != above
        # On a tie pick the neighbour whose mantissa bit (code bit 0) is 0: the even one.
        magnitude_code = np.where(tie & (below % 2 == 1), above, below)
        sign = np.signbit(values)
    else:
        raise RuleError(f"unknown E2M1 rounding rule {rounding!r}; expected one of {ROUNDING_RULES}")
    codes = (magnitude_code.astype(np.uint8) | (sign.astype(np.uint8) << 3)).astype(np.uint8)
    return codes[()] if codes.ndim == 0 else codes


def fields(code) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(sign, exponent field, fraction bit) of each code."""
    codes = as_code_array(code, limit=16, what="E2M1 code")
    return codes >> 3, (codes >> 1) & 3, codes & 1


def explain(code: int) -> dict:
    """Everything a learner needs to decode one code by hand."""
    (code_value,) = np.atleast_1d(as_code_array(code, limit=16, what="E2M1 code"))
    code_value = int(code_value)
    sign, exponent, fraction = (int(f) for f in fields(code_value))
    value = float(VALUES[code_value])
    sign_text = "+1" if sign == 0 else "\u22121"
    if exponent == 0:
        kind = "zero" if fraction == 0 else "subnormal"
        formula = f"({sign_text}) \u00d7 2^(1 \u2212 1) \u00d7 (0 + {fraction}/2) = {fmt(value)}"
    else:
        kind = "normal"
        formula = (
            f"({sign_text}) \u00d7 2^({exponent} \u2212 1) \u00d7 (1 + {fraction}/2) = {fmt(value)}"
        )
    return {
        "code": code_value,
        "bits": f"{code_value:04b}",
        "sign": sign,
        "exponent_field": exponent,
        "fraction": fraction,
        "kind": kind,
        "value": value,
        "formula": formula,
    }

