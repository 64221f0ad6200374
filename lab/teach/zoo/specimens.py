"""The specimens: a correct decoder, unpacker and quantizer of each kind, and deliberately wrong ones.

Every wrong specimen is a mistake that produces plausible numbers: the right shape, the right
magnitude, often the right value in most places. Each names the checks from the article's list
meant to catch it (`caught_by`); `lab.teach.zoo.table` runs every pairing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from lab._arrays import to_float32_input
from lab.codes import e2m1, e8m0, nibble
from lab.formats import mxfp4, q4k
from lab.formats.q4k import misreadings

_F32 = np.float32


def _blocks_of(values: np.ndarray) -> np.ndarray:
    """[..., 32k] -> [..., k, 32]: MXFP4's blocks, each sharing one scale."""
    return values.reshape(*values.shape[:-1], -1, mxfp4.GROUP_SIZE)


# --------------------------------------------------------------------------------------------
# Q4_K metadata unpackers: twelve bytes [..., 12] -> (scales, mins) [..., 8]
# --------------------------------------------------------------------------------------------


def unpack_scale_min_unsplit(b12) -> tuple[np.ndarray, np.ndarray]:
    """DELIBERATELY WRONG: s_j = B[j] & 63 and m_j = B[j+4] & 63 for every j, ignoring the split.

    Right for j = 0..3. For j = 4..7 it reads B[4..7] (which hold m_0..m_3) as scales and the
    low six bits of B[8..11] as minimums, and never collects the top bits from B[0..7].
    """
    metadata = np.asarray(b12, dtype=np.uint8)
    return (metadata[..., 0:8] & 63).astype(np.uint8), (metadata[..., 4:12] & 63).astype(np.uint8)


# --------------------------------------------------------------------------------------------
# MXFP4 decoders: (E2M1 codes [..., 32k], E8M0 scale bytes [..., k]) -> weights float32
# --------------------------------------------------------------------------------------------


def decode_mxfp4(codes, scale_bytes) -> np.ndarray:
    return mxfp4.from_parts(codes, scale_bytes).dequantize()


def decode_mxfp4_raw_scale_byte(codes, scale_bytes) -> np.ndarray:
    """DELIBERATELY WRONG: the E8M0 byte used as the scale itself (127 means 127, not 2^0 = 1)."""
    values = _blocks_of(e2m1.decode(codes).astype(np.float64))
    scales = np.asarray(scale_bytes, dtype=np.float64)[..., None]
    return (values * scales).reshape(np.shape(codes)).astype(_F32)


def decode_mxfp4_int4_elements(codes, scale_bytes) -> np.ndarray:
    """DELIBERATELY WRONG: element codes read as two's-complement INT4 (0111 = 7, 1000 = -8)."""
    values = _blocks_of(nibble.as_int4(codes).astype(np.float64))
    exponents = np.asarray(scale_bytes, dtype=np.int64) - e8m0.BIAS
    return np.ldexp(values, exponents[..., None]).reshape(np.shape(codes)).astype(_F32)


# --------------------------------------------------------------------------------------------
# MXFP4 quantizers: float weights [..., 32k] -> MXTensor
# --------------------------------------------------------------------------------------------


def quantize_mxfp4_mlx(w) -> mxfp4.MXTensor:
    return mxfp4.quantize(w, rule="mlx")


def _quantize_mxfp4_with(w, scale_rule: str, element_rounding: str) -> mxfp4.MXTensor:
    """MXFP4 under a chosen scale rule and element rounding, storing zero as +0 as MLX does,
    so that the two rules are the only difference from MLX."""
    weights, _ = to_float32_input(w)
    blocks = _blocks_of(weights).astype(np.float64)
    amax = np.abs(blocks).max(axis=-1)
    exponent = np.clip(e8m0.exponent_for(amax, scale_rule, e2m1.MAX), -e8m0.BIAS, e8m0.BIAS)
    scale_bytes = np.where(amax == 0, e8m0.BIAS, exponent + e8m0.BIAS).astype(np.uint8)
    scaled = blocks / np.ldexp(1.0, scale_bytes.astype(np.int64) - e8m0.BIAS)[..., None]
    codes = np.asarray(e2m1.encode(scaled, element_rounding)).reshape(weights.shape)
    negative_zero = np.uint8(8)
    return mxfp4.from_parts(np.where(codes == negative_zero, np.uint8(0), codes), scale_bytes)


def quantize_mxfp4_floor_scale(w) -> mxfp4.MXTensor:
    """DELIBERATELY WRONG for MLX: the OCP floor scale rule, floor(log2(amax)) - 2, where MLX 0.32.4
    takes ceil(log2(amax / 6)). Both are legitimate rules; feeding one's bytes to a kernel that
    expects the other's is the bug. Elements follow MLX (ties toward zero)."""
    return _quantize_mxfp4_with(w, scale_rule="ocp", element_rounding="mlx")


def quantize_mxfp4_ties_to_even(w) -> mxfp4.MXTensor:
    """DELIBERATELY WRONG for MLX: elements rounded half to even (OCP, ml_dtypes) where MLX sends a
    tie toward zero. Only values exactly halfway between two E2M1 entries change, so random
    data almost never shows it; data with planted ties does. The scale follows MLX (ceil)."""
    return _quantize_mxfp4_with(w, scale_rule="mlx", element_rounding="rne")


# --------------------------------------------------------------------------------------------
# The specimens
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Specimen:
    name: str
    kind: str  # "q4k decoder", "metadata unpacker", "mxfp4 decoder", "mxfp4 quantizer"
    function: Callable
    deliberately_wrong: bool
    what_is_wrong: str
    caught_by: tuple[int, ...]  # the article's check numbers meant to catch it


Q4K_DECODERS = (
    Specimen("q4k.decode", "q4k decoder", q4k.decode, False, "", ()),
    Specimen(
        "lanes 0/1 (interleaved)",
        "q4k decoder",
        misreadings.decode_lanes_interleaved,
        True,
        "the two nibbles of a payload byte go to neighbouring lanes instead of lanes 32 apart",
        (3,),
    ),
    Specimen(
        "one subblock's metadata for both nibbles",
        "q4k decoder",
        misreadings.decode_shared_metadata,
        True,
        "the high nibbles of each 64-lane chunk use the low subblock's scale and minimum",
        (4, 5),
    ),
)
METADATA_UNPACKERS = (
    Specimen("q4k.unpack_scale_min", "metadata unpacker", q4k.unpack_scale_min, False, "", ()),
    Specimen(
        "B[4] read as s4 (split ignored)",
        "metadata unpacker",
        unpack_scale_min_unsplit,
        True,
        "s_j = B[j] & 63 and m_j = B[j+4] & 63 for j = 4..7 too: the split fields are never reassembled",
        (2,),
    ),
)
MXFP4_DECODERS = (
    Specimen("mxfp4 dequantize", "mxfp4 decoder", decode_mxfp4, False, "", ()),
    Specimen(
        "raw E8M0 byte as the scale",
        "mxfp4 decoder",
        decode_mxfp4_raw_scale_byte,
        True,
        "scale = byte instead of 2^(byte - 127)",
        (1,),
    ),
    Specimen(
        "INT4 instead of E2M1",
        "mxfp4 decoder",
        decode_mxfp4_int4_elements,
        True,
        "element codes read as two's-complement integers instead of E2M1 floats",
        (1,),
    ),
)
MXFP4_QUANTIZERS = (
    Specimen("mxfp4.quantize(rule='mlx')", "mxfp4 quantizer", quantize_mxfp4_mlx, False, "", ()),
    Specimen(
        "OCP floor scale rule against MLX",
        "mxfp4 quantizer",
        quantize_mxfp4_floor_scale,
        True,
        "scale exponent floor(log2(amax)) - 2 where MLX uses ceil(log2(amax / 6))",
        (6,),
    ),
    Specimen(
        "ties to even against MLX",
        "mxfp4 quantizer",
        quantize_mxfp4_ties_to_even,
        True,
        "an element exactly halfway between two E2M1 values rounds to the even code; MLX rounds toward zero",
        (6,),
    ),
)
SPECIMENS = Q4K_DECODERS + METADATA_UNPACKERS + MXFP4_DECODERS + MXFP4_QUANTIZERS
