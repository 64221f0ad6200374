"""Input checking and dtype emulation shared by the codecs.

MLX computes its quantizers in the input's own dtype, so reproducing MLX byte for byte
means rounding intermediate results to float16 or bfloat16 exactly as MLX's CPU does
(compute in float32, round to nearest even into the narrow type). numpy has float16;
bfloat16 is emulated here on the float32 bit pattern so the core package does not
depend on ml_dtypes (the tests use ml_dtypes as an independent oracle).
"""

from __future__ import annotations

import numpy as np

from lab.errors import CodeRangeError, DTypeError, NonFiniteError, ShapeError

FLOAT_DTYPES = ("float32", "float16", "bfloat16")


def is_integer(value) -> bool:
    """True for a Python or numpy integer; False for bools (True is not a bit width or an index) and floats."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def as_array(values, *, what: str) -> np.ndarray:
    """np.asarray in the lab's words: a ragged nested list is a ShapeError, complex numbers a DTypeError.

    numpy would refuse a ragged list with a bare ValueError, and casting complex numbers to float
    drops the imaginary part with only a warning; the lab names both instead.
    """
    try:
        array = np.asarray(values)
    except ValueError:
        raise ShapeError(
            f"{what} must be a rectangular array: its nested lists have different lengths (a ragged list)"
        ) from None
    if np.iscomplexobj(array):
        raise DTypeError(
            f"{what} must be real numbers, got complex numbers ({array.dtype}); the lab will not drop the imaginary part"
        )
    return array


def as_float_scalar(value, *, what: str) -> float:
    """One real number as a Python float (NaN and infinity pass; the caller says what range it needs)."""
    array = as_float_array(value, what=what, allow_nonfinite=True)
    if array.ndim != 0:
        raise ShapeError(f"{what} must be a single number, got an array of shape {array.shape}")
    return float(array)


def as_code_array(code, *, limit: int, what: str) -> np.ndarray:
    """Integer codes in 0..limit-1 as a uint8/uint16 array; floats, bools and out-of-range values are rejected."""
    array = as_array(code, what=what)
    if array.dtype == np.bool_ or not np.issubdtype(array.dtype, np.integer):
        raise DTypeError(f"{what} must be integers in 0..{limit - 1}, got dtype {array.dtype}")
    if array.size and (array.min() < 0 or array.max() >= limit):
        bad = array[(array < 0) | (array >= limit)].flat[0]
        raise CodeRangeError(f"{what} must be in 0..{limit - 1}, got {int(bad)}")
    return array.astype(np.uint8 if limit <= 256 else np.uint16)


def as_code_scalar(code, *, limit: int, what: str) -> int:
    """One integer code in 0..limit-1 as a Python int, for the explain functions that trace one code."""
    array = as_code_array(code, limit=limit, what=what)
    if array.ndim != 0:
        raise ShapeError(f"{what} must be a single code, got an array of shape {array.shape}")
    return int(array)


def as_float_array(
    values, *, what: str = "input", allow_nonfinite: bool = False, keep_float32: bool = False
) -> np.ndarray:
    """A float64 copy of `values`; NaN or inf raise unless allowed.

    With keep_float32, a float32 array comes back as it is, not copied, so the caller must only
    read it. That is for code whose arithmetic is exact in float32 (comparisons, abs, scaling by
    a power of two): widening 16 M weights to float64 first costs time and gives the same answer.
    """
    array = as_array(values, what=what)
    if array.dtype == np.bool_ or not (
        np.issubdtype(array.dtype, np.floating) or np.issubdtype(array.dtype, np.integer) or _is_bfloat16(array)
    ):
        raise DTypeError(f"{what} must be real numbers, got dtype {array.dtype}")
    if not (keep_float32 and array.dtype == np.float32):
        array = array.astype(np.float64)
    if not allow_nonfinite and not np.all(np.isfinite(array)):
        where = np.argwhere(~np.isfinite(array))[0]
        raise NonFiniteError(f"{what} contains NaN or infinity (first at index {tuple(int(i) for i in where)})")
    return array


def as_byte_array(raw, *, what: str) -> np.ndarray:
    """bytes, bytearray, memoryview or an integer array in 0..255 as a uint8 array."""
    if isinstance(raw, (bytes, bytearray, memoryview)):
        return np.frombuffer(bytes(raw), dtype=np.uint8)
    array = as_array(raw, what=what)
    if array.dtype == np.uint8:
        return array
    return as_code_array(array, limit=256, what=what)


def require_last_multiple(array: np.ndarray, multiple: int, *, what: str) -> None:
    if array.ndim == 0:
        raise ShapeError(f"{what} must be an array whose last dimension is a multiple of {multiple}, got a scalar")
    if array.shape[-1] == 0 or array.shape[-1] % multiple:
        raise ShapeError(
            f"{what} must have a last dimension that is a non-zero multiple of {multiple}, got shape {array.shape}"
        )


def _is_bfloat16(array: np.ndarray) -> bool:
    return array.dtype.name == "bfloat16"


def dtype_name(values) -> str:
    """The float dtype a quantizer should emulate: float16 and bfloat16 stay, everything else is float32."""
    name = getattr(getattr(values, "dtype", None), "name", "float32")
    return name if name in ("float16", "bfloat16") else "float32"


def round_to(values: np.ndarray, dtype: str) -> np.ndarray:
    """Round float32/float64 values to `dtype` (nearest even), returned as float32.

    float64 inputs first round to float32; for the quotients and products the codecs form,
    float32 carries more than twice the narrow type's bits, so the double rounding is harmless.
    """
    as_f32 = np.asarray(values, dtype=np.float32)
    if dtype == "float32":
        return as_f32
    if dtype == "float16":
        with np.errstate(over="ignore"):  # beyond 65504 becomes inf, as it does in MLX
            return as_f32.astype(np.float16).astype(np.float32)
    if dtype == "bfloat16":
        return bfloat16_bits_to_float32(float32_to_bfloat16_bits(as_f32))
    raise DTypeError(f"unsupported float dtype {dtype!r}; expected one of {FLOAT_DTYPES}")


def float32_to_bfloat16_bits(values: np.ndarray) -> np.ndarray:
    """Round float32 to bfloat16 (nearest even, NaN kept quiet) and return the 16-bit patterns."""
    bits = np.asarray(values, dtype=np.float32).view(np.uint32)
    rounding_bias = np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))
    rounded = ((bits + rounding_bias) >> np.uint32(16)).astype(np.uint16)
    is_nan = np.isnan(np.asarray(values, dtype=np.float32))
    return np.where(is_nan, ((bits >> np.uint32(16)) | np.uint32(0x40)).astype(np.uint16), rounded)


def bfloat16_bits_to_float32(bits: np.ndarray) -> np.ndarray:
    return (np.asarray(bits, dtype=np.uint32) << np.uint32(16)).view(np.float32)


def to_float32_input(values, *, what: str = "w", copy: bool = True) -> tuple[np.ndarray, str]:
    """The input as float32 values (exact for float16/bfloat16 inputs) and the dtype name to emulate.

    Accepts numpy arrays (including ml_dtypes bfloat16) and MLX arrays. With copy=False a float32
    numpy input comes back as it is, not copied: for callers that only read it.
    """
    if type(values).__module__.startswith("mlx"):
        array, dtype = _mlx_to_numpy(values)
    else:
        array, dtype = as_array(values, what=what), dtype_name(values)
    if array.dtype == np.bool_ or not (np.issubdtype(array.dtype, np.number) or _is_bfloat16(array)):
        raise DTypeError(f"{what} must be a float array, got dtype {array.dtype}")
    # A float64 beyond float32's range becomes inf in the cast; it is reported below by value.
    with np.errstate(over="ignore"):
        as_f32 = array.astype(np.float32, copy=copy)
    if not np.all(np.isfinite(as_f32)):
        where = tuple(int(i) for i in np.argwhere(~np.isfinite(as_f32))[0])
        if np.isfinite(array[where]):
            raise NonFiniteError(
                f"{what} holds {float(array[where]):g} (first at index {where}), which is beyond float32's "
                f"largest finite value, about 3.4e38; the lab computes in float32, as MLX and ggml do"
            )
        raise NonFiniteError(f"{what} contains NaN or infinity (first at index {where})")
    return as_f32, dtype


def _mlx_to_numpy(values) -> tuple[np.ndarray, str]:
    import mlx.core as mx

    if values.dtype == mx.bfloat16:
        return np.array(values.astype(mx.float32)), "bfloat16"
    array = np.array(values)
    return array, dtype_name(array)


def pack_nibbles_uint32(codes: np.ndarray, bits: int) -> np.ndarray:
    """Pack codes along the last axis into uint32 words the way MLX does: element k of a word
    sits in bits [bits*k, bits*(k+1)), low bits first, and for 3/5/6-bit codes an element may
    straddle two words (MLX packs the whole row as one little-endian bit stream)."""
    codes = np.asarray(codes, dtype=np.uint64)
    *lead, length = codes.shape
    if (length * bits) % 32:
        raise ShapeError(f"{length} codes of {bits} bits do not fill whole 32-bit words")
    # Lay every code's bits out as a bit stream, then regroup 32 at a time.
    bit_index = np.arange(bits, dtype=np.uint64)
    stream = ((codes[..., None] >> bit_index) & np.uint64(1)).astype(np.uint32).reshape(*lead, -1, 32)
    weights = np.uint32(1) << np.arange(32, dtype=np.uint32)
    return (stream * weights).sum(axis=-1, dtype=np.uint32)


def unpack_uint32(words: np.ndarray, bits: int) -> np.ndarray:
    """Inverse of `pack_nibbles_uint32`."""
    words = np.asarray(words, dtype=np.uint32)
    *lead, n_words = words.shape
    stream = ((words[..., None] >> np.arange(32, dtype=np.uint32)) & np.uint32(1)).reshape(*lead, -1, bits)
    return (stream.astype(np.uint32) << np.arange(bits, dtype=np.uint32)).sum(axis=-1, dtype=np.uint32).astype(np.uint8)
