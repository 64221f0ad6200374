"""Moving the lab's arrays to and from MLX's quantized layout.

MLX stores quantized weights as uint32 words: 4-bit codes go eight to a word with element k in
bits [4k, 4k+4), low bits first; 8-bit codes four to a word, little-endian; 2-, 3-, 5- and 6-bit
codes form one little-endian bit stream per row. Scales (and biases for affine) have shape
w.shape[:-1] + (K / group_size,), row-major, with no swizzle.

MLX is optional: everything here that needs it imports it lazily and says how to install it.
"""

from __future__ import annotations

import platform
import sys

import numpy as np

from lab._arrays import pack_nibbles_uint32, unpack_uint32
from lab.errors import LabError, ShapeError

MLX_VERSION_PINNED = "0.32.4"


class MLXUnavailableError(LabError):
    """MLX is not installed on this machine."""


def install_hint() -> str:
    if sys.platform == "darwin" and platform.machine() == "arm64":
        return f"pip install mlx=={MLX_VERSION_PINNED}"
    if sys.platform.startswith("linux"):
        return f"pip install 'mlx[cpu]=={MLX_VERSION_PINNED}'"
    return (
        "MLX publishes wheels for Apple silicon macOS and for Linux only; on this platform "
        "run the lab under Linux (for example WSL) to see the on-device pane"
    )


def mlx_core():
    """The mlx.core module, or MLXUnavailableError saying how to get it."""
    try:
        import mlx.core as mx
    except ImportError as error:
        raise MLXUnavailableError(f"MLX is not installed ({error}); {install_hint()}") from None
    return mx


def mlx_available() -> bool:
    try:
        mlx_core()
    except MLXUnavailableError:
        return False
    return True


def require_matrix(shape: tuple[int, ...]) -> None:
    """MLX quantizes only arrays with two or more dimensions; say so in MLX's words."""
    if len(shape) < 2:
        raise ShapeError(
            "[quantize] The matrix to be quantized must have at least 2 dimension but it has only "
            f"{len(shape)}. (The lab quantizes 1-D rows itself; reshape to (1, K) for MLX.)"
        )


def pack(codes: np.ndarray, bits: int) -> np.ndarray:
    return pack_nibbles_uint32(codes, bits)


def unpack(words: np.ndarray, bits: int) -> np.ndarray:
    return unpack_uint32(words, bits)


def to_mx(array: np.ndarray, dtype: str):
    """A numpy array as an MLX array of the named dtype (float32 values are exact in it)."""
    mx = mlx_core()
    return mx.array(array).astype(getattr(mx, dtype))


def to_numpy(array) -> np.ndarray:
    """An MLX array as numpy; bfloat16 comes back as exact float32."""
    mx = mlx_core()
    if array.dtype == mx.bfloat16:
        array = array.astype(mx.float32)
    return np.array(array)
