"""E4M3 ("fn" variant): the MXFP8 element and the NVFP4 block scale.

Bit layout of one byte:  s eeee mmm   (exponent bias 7)
    exponent field 0       -> subnormal: (-1)^s * 2^-6 * (m/8)     (steps of 2^-9)
    exponent field 1..15   -> normal:    (-1)^s * 2^(e-7) * (1 + m/8)
    0x7F and 0xFF          -> NaN (the "fn" variant has no infinities; 0x7E is the largest, 448)

Encoding rounds half to even and saturates at +-448 (OCP and MLX agree here).

GGUF's NVFP4 stores its block scales as *unsigned* E4M3 as ggml decodes it: the top bit is not
a sign, and 0x7F means zero rather than NaN. `decode_ggml_unsigned` reproduces that reading.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from lab._arrays import as_code_array, as_code_scalar, as_float_array
from lab.numbers import format_number

BIAS = 7
MAX = 448.0
MAX_BYTE = 0x7E
MIN_NORMAL = 2.0**-6
SUBNORMAL_STEP = 2.0**-9
BITS = 8
#: the bytes E4M3fn reads as NaN (it has no infinities)
NAN_BYTES = (0x7F, 0xFF)


def _value_of(codes: np.ndarray) -> np.ndarray:
    """The value each byte stands for, straight from the bit layout in the module docstring."""
    codes = codes.astype(np.int32)
    sign = np.where(codes >> 7, -1.0, 1.0)
    exponent = (codes >> 3) & 15
    mantissa = codes & 7
    magnitude = np.where(
        exponent == 0,
        mantissa * SUBNORMAL_STEP,
        np.ldexp(1.0 + mantissa / 8.0, exponent - BIAS),
    )
    values = (sign * magnitude).astype(np.float32)
    return np.where((codes & 0x7F) == 0x7F, np.float32(np.nan), values).astype(np.float32)


#: the value of every byte 0..255, worked out once: decoding is then a table lookup
VALUES = _value_of(np.arange(256))


def decode(byte: ArrayLike) -> np.ndarray | np.float32:
    codes = as_code_array(byte, limit=256, what="E4M3 byte")
    values = VALUES[codes]
    return values[()] if values.ndim == 0 else values


def encode(x: ArrayLike) -> np.ndarray | np.uint8:
    """Nearest E4M3 byte, round half to even, saturating at +-448; the sign of zero is kept."""
    # float32 input stays float32: every step below is exact in either width.
    values = as_float_array(x, what="value to encode as E4M3", keep_float32=True)
    codes = encode_magnitude(np.abs(values), np.signbit(values))
    return codes[()] if codes.ndim == 0 else codes


def encode_magnitude(magnitude: ArrayLike, negative: ArrayLike) -> np.ndarray:
    """E4M3 bytes from magnitudes |x| (finite) and signs (signbit of x) given separately.

    The arithmetic runs in the magnitudes' own float type and is exact in float32 as in
    float64: frexp is exact, and scaling by a power of two to a quotient of at most 16 only
    moves the exponent.
    """
    magnitude = np.asarray(magnitude)
    _, binary_exponent = np.frexp(magnitude)  # magnitude = m * 2^binary_exponent, m in [0.5, 1)
    # Subnormals (and zero) share the step of exponent -6.
    exponent = np.where(magnitude < MIN_NORMAL, -6, binary_exponent - 1)
    # The magnitude in units of the step 2^(exponent - 3): 8..16 for normals, 0..8 for
    # subnormals; rint rounds half to even.
    steps = np.rint(np.ldexp(magnitude, 3 - exponent))
    # Codes are contiguous across binades: code = (exponent + 7) * 8 + steps - 8, and the
    # subnormal codes come out of the same expression because their exponent is pinned at -6.
    # A magnitude that rounds up to 16 steps moves into the next binade's code by itself.
    magnitude_code = (exponent + BIAS - 1) * 8 + steps.astype(np.int32)
    magnitude_code = np.minimum(magnitude_code, MAX_BYTE).astype(np.uint8)  # saturate at 448
    return magnitude_code | (np.asarray(negative).astype(np.uint8) << np.uint8(7))


def decode_ggml_unsigned(byte: ArrayLike) -> np.ndarray:
    """GGUF NVFP4's block scale as ggml reads it: bits 6..3 exponent, 2..0 mantissa, bit 7 ignored,
    and 0x7F (plus 0x00) decode to zero. No NaN exists in this reading."""
    codes = as_code_array(byte, limit=256, what="GGUF NVFP4 scale byte").astype(np.int32)
    exponent = (codes >> 3) & 15
    mantissa = codes & 7
    magnitude = np.where(exponent == 0, mantissa * SUBNORMAL_STEP, np.ldexp(1.0 + mantissa / 8.0, exponent - BIAS))
    return np.where(codes == 0x7F, 0.0, magnitude).astype(np.float32)


def explain(byte: int) -> dict:
    code = as_code_scalar(byte, limit=256, what="E4M3 byte")
    sign, exponent, mantissa = code >> 7, (code >> 3) & 15, code & 7
    value = float(decode(code))
    sign_text = "+1" if sign == 0 else "\u22121"
    if (code & 0x7F) == 0x7F:
        kind, formula = "NaN", f"0x{code:02X} is NaN in E4M3fn (exponent 1111, fraction 111)"
    elif exponent == 0:
        kind = "zero" if mantissa == 0 else "subnormal"
        formula = f"({sign_text}) \u00d7 2^(1 \u2212 7) \u00d7 (0 + {mantissa}/8) = {format_number(value)}"
    else:
        kind = "normal"
        formula = f"({sign_text}) \u00d7 2^({exponent} \u2212 7) \u00d7 (1 + {mantissa}/8) = {format_number(value)}"
    return {
        "byte": code,
        "hex": f"0x{code:02X}",
        "bits": f"{code:08b}",
        "sign": sign,
        "exponent_field": exponent,
        "fraction": mantissa,
        "kind": kind,
        "value": value,
        "formula": formula.replace("-", "\u2212"),
    }
