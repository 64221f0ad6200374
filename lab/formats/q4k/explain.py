"""Explaining one payload byte and one lane of a Q4_K block, with the arithmetic spelled out."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from lab._arrays import (
    as_byte_array,
    as_code_scalar,
)
from lab.errors import ShapeError
from lab.formats.q4k.decode import _gains_and_offsets, _split_blocks, decode
from lab.formats.q4k.layout import (
    BLOCK_BYTES,
    PAYLOAD_BYTES,
    PAYLOAD_OFFSET,
    explain_metadata,
    lanes,
    payload_of_lane,
    subblocks,
    unpack_scale_min,
)
from lab.numbers import format_float32

# --------------------------------------------------------------------------------------------
# Explaining one byte, one lane
# --------------------------------------------------------------------------------------------


def _one_block(block) -> np.ndarray:
    array = as_byte_array(block, what="Q4_K block")
    if array.shape != (BLOCK_BYTES,):
        raise ShapeError(f"one Q4_K block is {BLOCK_BYTES} bytes, got shape {array.shape}")
    return array


def explain_byte(block: ArrayLike, payload_index: int) -> dict:
    """Everything needed to decode payload byte p of one 144-byte block by hand: both nibbles,
    the lanes and subblocks they go to, the metadata they use and the arithmetic."""
    block = _one_block(block)
    index = as_code_scalar(payload_index, limit=PAYLOAD_BYTES, what="payload index")
    parts = _split_blocks(block)
    gain, offset = _gains_and_offsets(parts)
    subblock_scale, subblock_min = unpack_scale_min(parts["metadata"])
    weights = decode(block)
    d, dmin = float(parts["d"][0]), float(parts["dmin"][0])
    byte_value = int(block[PAYLOAD_OFFSET + index])
    low_lane, high_lane = (int(v) for v in lanes(index))
    low_subblock, high_subblock = (int(v) for v in subblocks(index))

    def nibble(side: str, code: int, lane: int, j: int) -> dict:
        g, o, w = float(gain[0, j]), float(offset[0, j]), float(weights[lane])
        s, m = int(subblock_scale[0, j]), int(subblock_min[0, j])
        return {
            "nibble": side,
            "code": code,
            "code_bits": f"{code:04b}",
            "lane": lane,
            "subblock": j,
            "scale": s,
            "min": m,
            "gain": g,
            "offset": o,
            "weight": w,
            "gain_formula": f"{format_float32(d)} \u00d7 {s} = {format_float32(g)}",
            "offset_formula": f"{format_float32(dmin)} \u00d7 {m} = {format_float32(o)}",
            "formula": f"{format_float32(g)} \u00d7 {code} \u2212 {format_float32(o)} = {format_float32(w)}",
            "full_formula": f"{format_float32(d)} \u00d7 {s} \u00d7 {code} \u2212 {format_float32(dmin)} \u00d7 {m} = {format_float32(w)}",
            "metadata": explain_metadata(parts["metadata"][0], j),
        }

    low = nibble("low", byte_value & 15, low_lane, low_subblock)
    high = nibble("high", byte_value >> 4, high_lane, high_subblock)
    return {
        "payload_index": index,
        "byte_offset": PAYLOAD_OFFSET + index,
        "chunk": index // 32,
        "position": index % 32,
        "byte": byte_value,
        "hex": f"0x{byte_value:02X}",
        "byte_bits": f"{byte_value >> 4:04b} {byte_value & 15:04b}",
        "d": d,
        "dmin": dmin,
        "d_hex": f"0x{int(block[1]) << 8 | int(block[0]):04X}",
        "dmin_hex": f"0x{int(block[3]) << 8 | int(block[2]):04X}",
        "low_nibble": low["code"],
        "high_nibble": high["code"],
        "low_lane": low_lane,
        "high_lane": high_lane,
        "low_subblock": low_subblock,
        "high_subblock": high_subblock,
        "weights": (low["weight"], high["weight"]),
        "low": low,
        "high": high,
    }


def explain(block: ArrayLike, lane: int) -> dict:
    """How output lane 0..255 of one block is made: which payload byte and nibble feed it, and the arithmetic."""
    payload_index, is_high = payload_of_lane(lane)
    by_byte = explain_byte(block, int(payload_index))
    side, partner = ("high", "low") if is_high else ("low", "high")
    return {
        **by_byte[side],
        "payload_index": by_byte["payload_index"],
        "byte_offset": by_byte["byte_offset"],
        "byte": by_byte["byte"],
        "hex": by_byte["hex"],
        "byte_bits": by_byte["byte_bits"],
        "d": by_byte["d"],
        "dmin": by_byte["dmin"],
        "partner_lane": by_byte[partner]["lane"],
    }
