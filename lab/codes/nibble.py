"""Three of the nibble lesson's decoders: the same four bits read as E2M1, as UINT4 and as INT4.

UINT4 - the Q4_K element code: 0..15, before the block's gain and offset.
INT4  - two's complement: bit 3 weighs -8, so 1000 is -8 and 1111 is -1.
E2M1  - the MXFP4/NVFP4 float element (see lab.codes.e2m1).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from lab._arrays import as_code_array, as_code_scalar
from lab.codes import e2m1


def as_uint4(code: ArrayLike) -> np.ndarray | np.uint8:
    codes = as_code_array(code, limit=16, what="nibble")
    return codes[()] if codes.ndim == 0 else codes


def as_int4(code: ArrayLike) -> np.ndarray | np.int8:
    codes = as_code_array(code, limit=16, what="nibble").astype(np.int8)
    signed = np.where(codes >= 8, codes - 16, codes).astype(np.int8)
    return signed[()] if signed.ndim == 0 else signed


def three_decoders(code: int) -> dict:
    """The same nibble under all three readings."""
    nibble = as_code_scalar(code, limit=16, what="nibble")
    return {
        "bits": f"{nibble:04b}",
        "uint4": int(as_uint4(nibble)),
        "int4": int(as_int4(nibble)),
        "e2m1": float(e2m1.decode(nibble)),
    }
