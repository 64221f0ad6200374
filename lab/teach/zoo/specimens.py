"""The specimens: a correct decoder, unpacker and quantizer of each kind, and deliberately wrong ones.

Every wrong specimen is a mistake that produces plausible numbers: the right shape, the right
magnitude, often the right value in most places. Each names the checks from the article's list
meant to catch it (`caught_by`); `lab.teach.zoo.table` runs every pairing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from lab._arrays import round_to, to_float32_input
from lab.codes import e2m1, e8m0, nibble
from lab.formats import mxfp4, q4k
from lab.formats._blocks import grouped
from lab.formats._mx import MXTensor

_F32 = np.float32

# --------------------------------------------------------------------------------------------
# Q4_K decoders: raw bytes [..., 144k] -> weights float32 [..., 256k]
# --------------------------------------------------------------------------------------------


def _reconstruct(d, dmin, scales, mins, codes) -> np.ndarray:
    """(d*s_j)*q - dmin*m_j in float32 for codes [..., k, 8, 32] in lane order, fields [..., k, 8]."""
    gain = d[..., None] * scales.astype(_F32)
    offset = dmin[..., None] * mins.astype(_F32)
    with np.errstate(invalid="ignore", over="ignore"):
        weights = gain[..., None] * codes.astype(_F32) - offset[..., None]
    return weights.reshape(*codes.shape[:-3], -1)


def _subblock_codes(codes: np.ndarray) -> np.ndarray:
    return codes.reshape(*codes.shape[:-1], -1, q4k.SUBBLOCKS, q4k.SUBBLOCK_WEIGHTS)


def decode_q4k_lanes_interleaved(raw) -> np.ndarray:
    """DELIBERATELY WRONG: payload byte p feeds lanes 2p and 2p+1 instead of 64c+l and 64c+32+l.

    The nibbles are split correctly and every weight gets its lane's metadata, but the low and
    high codes of a byte land next to each other, the way a packed int4 array would read.
    """
    tensor = q4k.Q4KTensor(raw)
    payload = tensor.blocks[..., q4k.PAYLOAD_OFFSET :]
    neighbours = np.stack([payload & 15, payload >> 4], axis=-1)  # byte p -> lanes 2p, 2p + 1
    codes = neighbours.reshape(*payload.shape[:-1], q4k.SUBBLOCKS, q4k.SUBBLOCK_WEIGHTS)
    scales, mins = q4k.unpack_scale_min(tensor.blocks[..., q4k.METADATA_OFFSET : q4k.PAYLOAD_OFFSET])
    return _reconstruct(tensor.d, tensor.dmin, scales, mins, codes)


def decode_q4k_shared_metadata(raw) -> np.ndarray:
    """DELIBERATELY WRONG: the high nibbles of chunk c use subblock 2c's scale and minimum.

    Placement is right (lanes 64c+l and 64c+32+l) but both halves of the chunk share the low
    subblock's metadata, as if one byte meant one subblock. Subblocks 1, 3, 5 and 7 come out
    wrong whenever their metadata differs from their neighbour's.
    """
    tensor = q4k.Q4KTensor(raw)
    scales, mins = q4k.unpack_scale_min(tensor.blocks[..., q4k.METADATA_OFFSET : q4k.PAYLOAD_OFFSET])
    scales, mins = np.repeat(scales[..., 0::2], 2, axis=-1), np.repeat(mins[..., 0::2], 2, axis=-1)
    return _reconstruct(tensor.d, tensor.dmin, scales, mins, _subblock_codes(tensor.codes))


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
    values = grouped(e2m1.decode(codes).astype(np.float64), mxfp4.GROUP_SIZE)
    scales = np.asarray(scale_bytes, dtype=np.float64)[..., None]
    return (values * scales).reshape(np.shape(codes)).astype(_F32)


def decode_mxfp4_int4_elements(codes, scale_bytes) -> np.ndarray:
    """DELIBERATELY WRONG: element codes read as two's-complement INT4 (0111 = 7, 1000 = -8)."""
    values = grouped(nibble.as_int4(codes).astype(np.float64), mxfp4.GROUP_SIZE)
    exponents = np.asarray(scale_bytes, dtype=np.int64) - e8m0.BIAS
    return np.ldexp(values, exponents[..., None]).reshape(np.shape(codes)).astype(_F32)


# --------------------------------------------------------------------------------------------
# MXFP4 quantizers: float weights [..., 32k] -> MXTensor
# --------------------------------------------------------------------------------------------


def quantize_mxfp4_mlx(w) -> MXTensor:
    return mxfp4.quantize(w, rule="mlx")


def _quantize_mxfp4_with(w, scale_rule: str, element_rounding: str) -> MXTensor:
    """MXFP4 under a chosen scale rule and element rounding, storing zero as +0 as MLX does,
    so that the two rules are the only difference from MLX."""
    weights, _ = to_float32_input(w)
    blocks = grouped(weights, mxfp4.GROUP_SIZE).astype(np.float64)
    amax = np.abs(blocks).max(axis=-1)
    exponent = np.clip(e8m0.exponent_for(amax, scale_rule, e2m1.MAX), -e8m0.BIAS, e8m0.BIAS)
    scale_bytes = np.where(amax == 0, e8m0.BIAS, exponent + e8m0.BIAS).astype(np.uint8)
    scaled = blocks / np.ldexp(1.0, scale_bytes.astype(np.int64) - e8m0.BIAS)[..., None]
    codes = np.asarray(e2m1.encode(scaled, element_rounding)).reshape(weights.shape)
    negative_zero = np.uint8(8)
    return mxfp4.from_parts(np.where(codes == negative_zero, np.uint8(0), codes), scale_bytes)


def quantize_mxfp4_floor_scale(w) -> MXTensor:
    """DELIBERATELY WRONG for MLX: the OCP floor scale rule, floor(log2(amax)) - 2, where MLX 0.32.4
    takes ceil(log2(amax / 6)). Both are legitimate rules; feeding one's bytes to a kernel that
    expects the other's is the bug. Elements follow MLX (ties toward zero)."""
    return _quantize_mxfp4_with(w, scale_rule="ocp", element_rounding="mlx")


def quantize_mxfp4_ties_to_even(w) -> MXTensor:
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
        decode_q4k_lanes_interleaved,
        True,
        "the two nibbles of a payload byte go to neighbouring lanes instead of lanes 32 apart",
        (3,),
    ),
    Specimen(
        "one subblock's metadata for both nibbles",
        "q4k decoder",
        decode_q4k_shared_metadata,
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


def wrong_q4k_decoder_matching(raw, values: np.ndarray, rounding_dtype: str) -> Specimen | None:
    """The deliberately wrong Q4_K decoder whose output, rounded to `rounding_dtype`, equals
    `values` at every element (NaN matching NaN), or None when none does.

    The on-device pane asks this when a library's decode of Q4_K bytes disagrees with gguf-py:
    a named, reproducible mistake says more than a count of differing weights.
    """
    for decoder in Q4K_DECODERS:
        if not decoder.deliberately_wrong:
            continue
        with np.errstate(invalid="ignore", over="ignore"):
            candidate = round_to(decoder.function(raw), rounding_dtype)
        if np.array_equal(candidate.reshape(np.shape(values)), values, equal_nan=True):
            return decoder
    return None
