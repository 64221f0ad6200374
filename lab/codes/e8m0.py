"""E8M0: the shared power-of-two scale byte of the MX formats (MXFP4, MXFP8).

Bit layout: eight exponent bits, bias 127, no sign and no fraction.
    byte 0..254 -> 2^(byte - 127)     (2^-127 .. 2^127; there is no zero)
    byte 255    -> NaN                (a NaN scale makes its whole block NaN)

Choosing the byte for a block is a rule, and the rules disagree by one step:
    "ocp" - OCP MX v1.0: exponent = floor(log2(amax)) - emax, where emax is the exponent of the
            element format's largest value (2 for E2M1's 6, 8 for E4M3's 448). Used by ggml and,
            with round-half-even elements, by torchao. The largest element may then exceed the
            element range and saturate.
    "mlx" - MLX 0.32.4: exponent = ceil(log2(amax / element_max)), so nothing saturates but small
            values lose a step of resolution.
Both exponents are clamped to -127..127. The clamp matters: ggml computes the byte in an
8-bit integer, and a tiny amax wraps it around to a huge scale.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from lab._arrays import as_code_array, as_code_scalar, as_float_array, round_to
from lab.errors import NonFiniteError, ReservedCodeError, RuleError
from lab.numbers import format_number

BIAS = 127
NAN_BYTE = 0xFF
SCALE_RULES = ("ocp", "mlx")
BITS = 8


def decode(byte: ArrayLike) -> np.ndarray | np.float32:
    """2^(byte-127) for each byte; 0xFF gives NaN."""
    codes = as_code_array(byte, limit=256, what="E8M0 byte")
    finite_codes = np.minimum(codes, NAN_BYTE - 1).astype(np.int32)
    scale = np.ldexp(np.float32(1.0), finite_codes - BIAS).astype(np.float32)
    scale = np.where(codes == NAN_BYTE, np.float32(np.nan), scale).astype(np.float32)
    return scale[()] if scale.ndim == 0 else scale


def decode_finite(byte: ArrayLike) -> np.ndarray:
    """Like decode, but a NaN byte is an error (for the places that must multiply by the scale)."""
    codes = as_code_array(byte, limit=256, what="E8M0 byte")
    if np.any(codes == NAN_BYTE):
        raise ReservedCodeError("E8M0 byte 0xFF is the NaN encoding, not a scale; a block with it decodes to NaN")
    return decode(codes)


def exponent_for(amax, rule: str = "ocp", element_max: float = 6.0, dtype: str = "float32") -> np.ndarray:
    """Unclamped integer scale exponent a rule picks for blocks with absolute maximum `amax`.

    `dtype` is the dtype the quantizer computes in: MLX divides amax by the element maximum in
    the input's dtype before taking the logarithm, and the "mlx" rule reproduces that.
    A block of zeros gets exponent 0 (scale 1) under both rules.
    """
    amax = as_float_array(amax, what="block absolute maximum")
    if np.any(amax < 0):
        raise NonFiniteError("a block absolute maximum cannot be negative")
    if rule == "ocp":
        element_emax = int(np.floor(np.log2(element_max)))
        _, binary_exponent = np.frexp(amax)  # amax = m * 2^binary_exponent with m in [0.5, 1)
        exponent = binary_exponent.astype(np.int64) - 1 - element_emax
    elif rule == "mlx":
        ratio = round_to(amax / element_max, dtype).astype(np.float64)
        mantissa, binary_exponent = np.frexp(ratio)
        # ceil(log2(ratio)), exact: a power of two (mantissa 0.5) sits one below the frexp exponent.
        exponent = binary_exponent.astype(np.int64) - (mantissa == 0.5)
    else:
        raise RuleError(f"unknown E8M0 scale rule {rule!r}; expected one of {SCALE_RULES}")
    return np.where(amax == 0, 0, exponent)


def encode(amax, rule: str = "ocp", element_max: float = 6.0, dtype: str = "float32") -> np.ndarray | np.uint8:
    """The E8M0 byte a rule stores for blocks with absolute maximum `amax`, exponent clamped to -127..127."""
    exponent = np.clip(exponent_for(amax, rule, element_max, dtype), -BIAS, BIAS)
    codes = (exponent + BIAS).astype(np.uint8)
    return codes[()] if codes.ndim == 0 else codes


def explain(byte: int) -> dict:
    code = as_code_scalar(byte, limit=256, what="E8M0 byte")
    if code == NAN_BYTE:
        return {
            "byte": code,
            "hex": "0xFF",
            "bits": "11111111",
            "kind": "NaN",
            "exponent": None,
            "value": float("nan"),
            "formula": "0xFF is reserved for NaN: every element that uses this scale decodes to NaN",
        }
    exponent = code - BIAS
    value = float(decode(code))
    return {
        "byte": code,
        "hex": f"0x{code:02X}",
        "bits": f"{code:08b}",
        "kind": "power of two",
        "exponent": exponent,
        "value": value,
        "formula": f"2^({code} \u2212 127) = 2^{exponent} = {format_number(value)}".replace("-", "\u2212"),
    }
