"""Q4_K's byte map: the constants, the 12-byte metadata packing and where each payload nibble lands."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from lab._arrays import (
    as_byte_array,
    as_code_array,
    as_code_scalar,
)
from lab.errors import ShapeError
from lab.formats._tensor import gguf_block

BLOCK = gguf_block("Q4_K", 256, 144)
BLOCK_BYTES = BLOCK.gguf.bytes  # 144
BLOCK_WEIGHTS = BLOCK.weights  # 256
BITS_PER_WEIGHT = BLOCK.bits_per_weight  # 4.5
SUBBLOCKS = 8
SUBBLOCK_WEIGHTS = 32
METADATA_OFFSET = 4
METADATA_BYTES = 12
PAYLOAD_OFFSET = 16
PAYLOAD_BYTES = 128
CODE_MAX = 15
FIELD_MAX = 63

_F32 = np.float32


# --------------------------------------------------------------------------------------------
# Metadata: eight 6-bit scales and eight 6-bit minimums in twelve bytes
# --------------------------------------------------------------------------------------------


def unpack_scale_min(b12: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """The eight subblock scales s_j and minimums m_j (uint8, 0..63) from metadata bytes [..., 12]."""
    metadata = as_byte_array(b12, what="Q4_K metadata bytes")
    if metadata.ndim == 0 or metadata.shape[-1] != METADATA_BYTES:
        raise ShapeError(f"Q4_K metadata is {METADATA_BYTES} bytes per block, got shape {metadata.shape}")
    return _scale_min_from_words(np.ascontiguousarray(metadata).view("<u4"))


def _scale_min_from_words(words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """unpack_scale_min on the metadata read as three little-endian uint32 words [..., 3]."""
    both = _scale_min_bytes(words)
    return both[..., :SUBBLOCKS], both[..., SUBBLOCKS:]


def _scale_min_bytes(words: np.ndarray) -> np.ndarray:
    """s_0..s_7 then m_0..m_7 as one uint8 array [..., 16], from the metadata's uint32 words [..., 3].

    Word 0 holds B[0..3], word 1 B[4..7], word 2 B[8..11], byte i of a word in bits 8i..8i+7, so
    one integer operation works on four metadata bytes at once; the masks keep each byte's bits
    from spilling into its neighbour, and no loop over the 12 bytes is needed. Decoding reads the
    sixteen fields as one row (two 8-byte items) and so wants them whole, not split.
    """
    scale_word, min_word, split_word = words[..., 0], words[..., 1], words[..., 2]
    fields = np.empty((*words.shape[:-1], 4), dtype="<u4")
    # j = 0..3: the low six bits of B[j] (scales) and B[j+4] (minimums).
    fields[..., 0] = scale_word & 0x3F3F3F3F
    fields[..., 2] = min_word & 0x3F3F3F3F
    # j = 4..7: four bits from B[j+4], and bits 6..7 of B[j-4] (scales) or B[j] (minimums) moved
    # to bits 4..5 of the same byte: (b >> 6) << 4 is (b >> 2) & 0x30.
    fields[..., 1] = (split_word & 0x0F0F0F0F) | ((scale_word >> 2) & 0x30303030)
    fields[..., 3] = ((split_word >> 4) & 0x0F0F0F0F) | ((min_word >> 2) & 0x30303030)
    # Read back as bytes (little-endian words): s_0..s_7, then m_0..m_7.
    return fields.view(np.uint8)


def pack_scale_min(scales: ArrayLike, mins: ArrayLike) -> np.ndarray:
    """Twelve metadata bytes [..., 12] from scales and minimums [..., 8]; the inverse of unpack_scale_min."""
    subblock_scale = as_code_array(scales, limit=FIELD_MAX + 1, what="6-bit subblock scale")
    subblock_min = as_code_array(mins, limit=FIELD_MAX + 1, what="6-bit subblock minimum")
    for name, array in (("scales", subblock_scale), ("mins", subblock_min)):
        if array.ndim == 0 or array.shape[-1] != SUBBLOCKS:
            raise ShapeError(f"Q4_K has {SUBBLOCKS} subblock {name} per block, got shape {array.shape}")
    if subblock_scale.shape != subblock_min.shape:
        raise ShapeError(
            f"scales and mins must have the same shape, got {subblock_scale.shape} and {subblock_min.shape}"
        )
    first_scales, later_scales = subblock_scale[..., :4], subblock_scale[..., 4:]
    first_mins, later_mins = subblock_min[..., :4], subblock_min[..., 4:]
    scale_bytes = first_scales | ((later_scales >> 4) << 6)
    min_bytes = first_mins | ((later_mins >> 4) << 6)
    split_bytes = (later_scales & 15) | ((later_mins & 15) << 4)
    return np.concatenate([scale_bytes, min_bytes, split_bytes], axis=-1).astype(np.uint8)


def metadata_sources(subblock: int) -> dict:
    """Where subblock j's scale and minimum live in B: a list of (byte, byte bits, field bits) pieces."""
    j = as_code_scalar(subblock, limit=SUBBLOCKS, what="subblock")
    if j < 4:
        return {
            "scale": [{"byte": j, "byte_bits": (0, 5), "field_bits": (0, 5)}],
            "min": [{"byte": j + 4, "byte_bits": (0, 5), "field_bits": (0, 5)}],
        }
    return {
        "scale": [
            {"byte": j + 4, "byte_bits": (0, 3), "field_bits": (0, 3)},
            {"byte": j - 4, "byte_bits": (6, 7), "field_bits": (4, 5)},
        ],
        "min": [
            {"byte": j + 4, "byte_bits": (4, 7), "field_bits": (0, 3)},
            {"byte": j, "byte_bits": (6, 7), "field_bits": (4, 5)},
        ],
    }


def explain_metadata(b12: ArrayLike, subblock: int) -> dict:
    """How s_j and m_j are read out of the twelve metadata bytes, with the arithmetic spelled out."""
    metadata = as_byte_array(b12, what="Q4_K metadata bytes")
    if metadata.shape != (METADATA_BYTES,):
        raise ShapeError(
            f"explain_metadata takes one block's {METADATA_BYTES} metadata bytes, got shape {metadata.shape}"
        )
    B = [int(b) for b in metadata]
    sources = metadata_sources(subblock)
    j = int(subblock)
    scales, mins = unpack_scale_min(metadata)
    s, m = int(scales[j]), int(mins[j])
    if j < 4:
        scale_formula = f"s{j} = B[{j}] & 63 = {B[j]} & 63 = {s}"
        min_formula = f"m{j} = B[{j + 4}] & 63 = {B[j + 4]} & 63 = {m}"
    else:
        s_low, s_high = B[j + 4] & 15, (B[j - 4] >> 6) << 4
        m_low, m_high = B[j + 4] >> 4, (B[j] >> 6) << 4
        scale_formula = (
            f"s{j} = (B[{j + 4}] & 15) | ((B[{j - 4}] >> 6) << 4)"
            f" = ({B[j + 4]} & 15) | (({B[j - 4]} >> 6) << 4) = {s_low} | {s_high} = {s}"
        )
        min_formula = (
            f"m{j} = (B[{j + 4}] >> 4) | ((B[{j}] >> 6) << 4)"
            f" = ({B[j + 4]} >> 4) | (({B[j]} >> 6) << 4) = {m_low} | {m_high} = {m}"
        )

    def describe(pieces):
        described = []
        for piece in pieces:
            low_bit, high_bit = piece["byte_bits"]
            byte_value = B[piece["byte"]]
            piece_value = (byte_value >> low_bit) & ((1 << (high_bit - low_bit + 1)) - 1)
            described.append(
                {
                    **piece,
                    "byte_value": byte_value,
                    "byte_binary": f"{byte_value:08b}",
                    "piece_value": piece_value,
                    "piece_binary": f"{piece_value:0{high_bit - low_bit + 1}b}",
                    "text": f"bits {piece['field_bits'][0]}..{piece['field_bits'][1]} come from "
                    f"B[{piece['byte']}] bits {low_bit}..{high_bit}",
                }
            )
        return described

    return {
        "subblock": j,
        "split": j >= 4,
        "scale": s,
        "min": m,
        "scale_sources": describe(sources["scale"]),
        "min_sources": describe(sources["min"]),
        "scale_formula": scale_formula,
        "min_formula": min_formula,
    }


# --------------------------------------------------------------------------------------------
# Payload placement
# --------------------------------------------------------------------------------------------


def lanes(payload_index: ArrayLike) -> tuple:
    """(low_lane, high_lane) fed by payload byte p = 32c + l: (64c + l, 64c + 32 + l)."""
    index = as_code_array(payload_index, limit=PAYLOAD_BYTES, what="payload index").astype(np.int64)
    chunk, position = index // 32, index % 32
    low_lane = 64 * chunk + position
    high_lane = low_lane + 32
    return _scalar_or_array(low_lane), _scalar_or_array(high_lane)


def subblocks(payload_index: ArrayLike) -> tuple:
    """(low subblock, high subblock) for payload byte p = 32c + l: (2c, 2c + 1)."""
    index = as_code_array(payload_index, limit=PAYLOAD_BYTES, what="payload index").astype(np.int64)
    chunk = index // 32
    return _scalar_or_array(2 * chunk), _scalar_or_array(2 * chunk + 1)


def payload_of_lane(lane: ArrayLike) -> tuple:
    """(payload_index, is_high_nibble) that feeds an output lane 0..255; the inverse of `lanes`."""
    lane_index = as_code_array(lane, limit=BLOCK_WEIGHTS, what="lane").astype(np.int64)
    chunk, within_chunk = lane_index // 64, lane_index % 64
    payload_index = 32 * chunk + within_chunk % 32
    return _scalar_or_array(payload_index), _scalar_or_array(within_chunk >= 32)


def _codes_in_lane_order(payload: np.ndarray) -> np.ndarray:
    """Payload bytes [..., 128] -> codes [..., 256] in output-lane order."""
    codes = np.empty((*payload.shape[:-1], BLOCK_WEIGHTS), dtype=np.uint8)
    _write_lane_codes(payload, codes)
    return codes


def _write_lane_codes(payload: np.ndarray, out: np.ndarray) -> None:
    """Write the codes of payload bytes [..., 128] into the contiguous array `out` [..., 256]
    (any number type, e.g. float32 straight away) in lane order."""
    by_chunk = payload.reshape(*payload.shape[:-1], 4, 32)  # (chunk c, position l)
    lanes = out.reshape(*payload.shape[:-1], 4, 2, 32)  # (chunk c, nibble h, position l)
    # Lane 64c + 32h + l takes nibble h (0 = bits 0..3, 1 = bits 4..7) of byte 32c + l.
    np.bitwise_and(by_chunk, 15, out=lanes[..., 0, :])
    np.right_shift(by_chunk, 4, out=lanes[..., 1, :])


def _payload_from_codes(codes: np.ndarray) -> np.ndarray:
    """Codes [..., 256] in lane order -> payload bytes [..., 128]; the inverse of _codes_in_lane_order."""
    by_chunk = codes.reshape(*codes.shape[:-1], 4, 2, 32)
    low_lane_codes, high_lane_codes = by_chunk[..., 0, :], by_chunk[..., 1, :]
    payload = low_lane_codes | (high_lane_codes << 4)
    return payload.reshape(*codes.shape[:-1], PAYLOAD_BYTES).astype(np.uint8)


def _scalar_or_array(array: np.ndarray):
    return array[()] if array.ndim == 0 else array
