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
from numpy.typing import ArrayLike

from lab._arrays import as_code_array, as_code_scalar, as_float_array
from lab.errors import RuleError
from lab.numbers import format_number

#: value of every code 0..15, negative zero included
VALUES = np.array(
    [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0], dtype=np.float32
)
#: the eight magnitudes, in code order
MAGNITUDES = VALUES[:8].copy()
#: midpoints between neighbouring magnitudes: 0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5 (exact in float32)
MIDPOINTS = (MAGNITUDES[:-1] + MAGNITUDES[1:]) / 2
MAX = 6.0
#: emax: the exponent of the largest normal value (6 = 1.5 * 2^2); the OCP scale rule subtracts it
EMAX = 2
ROUNDING_RULES = ("rne", "mlx")
#: the bits a code costs
BITS = 4


def decode(code: ArrayLike) -> np.ndarray | np.float32:
    """Value of each 4-bit code (0..15), sign of zero kept. Same shape as the input."""
    codes = as_code_array(code, limit=16, what="E2M1 code")
    values = VALUES[codes]
    return values[()] if values.ndim == 0 else values


def encode(x: ArrayLike, rounding: str = "rne") -> np.ndarray | np.uint8:
    """Nearest E2M1 code for each value, under a named rounding rule (see the module docstring).

    Values beyond +-6 saturate to +-6 under both rules; NaN and infinity are rejected.
    """
    # float32 input stays float32: comparing against the midpoints is exact in either width.
    values = as_float_array(x, what="value to encode as E2M1", keep_float32=True)
    codes = encode_magnitude(np.abs(values), np.signbit(values), rounding)
    return codes[()] if codes.ndim == 0 else codes


def encode_magnitude(magnitude: ArrayLike, negative: ArrayLike, rounding: str = "rne") -> np.ndarray:
    """E2M1 codes from magnitudes |x| (finite) and signs (signbit of x) given separately.

    The block quantizers call this directly: they divide the magnitudes by the block scale and
    read the signs off the unscaled weights (a positive scale never changes a sign).
    """
    if rounding not in ROUNDING_RULES:
        raise RuleError(f"unknown E2M1 rounding rule {rounding!r}; expected one of {ROUNDING_RULES}")
    magnitude = np.asarray(magnitude)
    # The magnitude code is the number of midpoints the magnitude gets past. Above a midpoint
    # is past it; exactly on one is a tie. "mlx" keeps a tie with the lower magnitude (toward
    # zero); "rne" sends it to the neighbour with an even code, which is the upper one where
    # the lower code is odd (midpoints 0.75, 1.75 and 3.5).
    # Seven comparisons over the whole array cost far less than a binary search per value.
    magnitude_code = np.zeros(magnitude.shape, dtype=np.uint8)
    past = np.empty(magnitude.shape, dtype=bool)
    for lower_code, midpoint in enumerate(MIDPOINTS):
        tie_goes_up = rounding == "rne" and lower_code % 2 == 1
        compare = np.greater_equal if tie_goes_up else np.greater
        compare(magnitude, midpoint, out=past)
        magnitude_code += past.view(np.uint8)  # True counts 1
    sign = np.asarray(negative)
    if rounding == "mlx":
        sign = sign & (magnitude_code > 0)  # anything that rounds to zero is stored as +0
    return magnitude_code | (sign.astype(np.uint8) << np.uint8(3))


def fields(code: ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(sign, exponent field, fraction bit) of each code."""
    codes = as_code_array(code, limit=16, what="E2M1 code")
    return codes >> 3, (codes >> 1) & 3, codes & 1


def explain(code: int) -> dict:
    """Everything a learner needs to decode one code by hand."""
    code_value = as_code_scalar(code, limit=16, what="E2M1 code")
    sign, exponent, fraction = (int(f) for f in fields(code_value))
    value = float(VALUES[code_value])
    sign_text = "+1" if sign == 0 else "\u22121"
    if exponent == 0:
        kind = "zero" if fraction == 0 else "subnormal"
        formula = f"({sign_text}) \u00d7 2^(1 \u2212 1) \u00d7 (0 + {fraction}/2) = {format_number(value)}"
    else:
        kind = "normal"
        formula = f"({sign_text}) \u00d7 2^({exponent} \u2212 1) \u00d7 (1 + {fraction}/2) = {format_number(value)}"
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
