"""Q4_K decoding, bit for bit as gguf-py does it, and the repack into MLX's affine groups of 32."""

from __future__ import annotations

import numpy as np

from lab._arrays import (
    as_byte_array,
    require_last_multiple,
)
from lab.formats.q4k.layout import (
    BLOCK_BYTES,
    BLOCK_WEIGHTS,
    METADATA_OFFSET,
    PAYLOAD_OFFSET,
    SUBBLOCK_WEIGHTS,
    SUBBLOCKS,
    _codes_in_lane_order,
    _scale_min_from_words,
    _write_lane_codes,
    unpack_scale_min,
)

# --------------------------------------------------------------------------------------------
# Decoding
# --------------------------------------------------------------------------------------------


def _as_raw(raw) -> np.ndarray:
    array = as_byte_array(raw, what="Q4_K raw bytes")
    require_last_multiple(array, BLOCK_BYTES, what="Q4_K raw bytes (144 per block)")
    return array


def _split_blocks(raw: np.ndarray) -> dict:
    """Field views of raw [..., 144k]: d and dmin float32 [..., k], metadata [..., k, 12], payload [..., k, 128]."""
    blocks = raw.reshape(*raw.shape[:-1], raw.shape[-1] // BLOCK_BYTES, BLOCK_BYTES)
    return {
        "d": _fp16_at(blocks, 0),
        "dmin": _fp16_at(blocks, 2),
        "metadata": blocks[..., METADATA_OFFSET:PAYLOAD_OFFSET],
        "payload": blocks[..., PAYLOAD_OFFSET:],
    }


def _fp16_at(blocks: np.ndarray, offset: int) -> np.ndarray:
    # GGUF is little-endian: the first byte holds the low eight bits of the float16 pattern.
    bits = blocks[..., offset].astype(np.uint16) | (blocks[..., offset + 1].astype(np.uint16) << 8)
    return bits.view(np.float16).astype(np.float32)


def _gains_and_offsets(parts: dict) -> tuple[np.ndarray, np.ndarray]:
    """float32 gain d*s_j and offset dmin*m_j, shape [..., k, 8], each rounded once like gguf-py."""
    subblock_scale, subblock_min = unpack_scale_min(parts["metadata"])
    return _gain_offset(parts["d"], parts["dmin"], subblock_scale, subblock_min)


def _gain_offset(d, dmin, subblock_scale, subblock_min) -> tuple[np.ndarray, np.ndarray]:
    with np.errstate(invalid="ignore", over="ignore"):  # inf * 0 is NaN: the format's own answer
        gain = d[..., None] * subblock_scale.astype(np.float32)
        offset = dmin[..., None] * subblock_min.astype(np.float32)
    return gain, offset


def _block_gains_and_offsets(raw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """_gains_and_offsets for every block of raw [..., 144k], read as little-endian uint32 words.

    144 is a multiple of 4, so word 0 of a block is d and dmin and words 1..3 are the metadata:
    one strided pass per field instead of many small byte-wise ones (this was most of decode's time).
    """
    words = np.ascontiguousarray(raw).view("<u4")
    words = words.reshape(*raw.shape[:-1], raw.shape[-1] // BLOCK_BYTES, BLOCK_BYTES // 4)
    # d is the low half of word 0 (bytes 0..1), dmin the high half (bytes 2..3).
    d = (words[..., 0] & 0xFFFF).astype(np.uint16).view(np.float16).astype(np.float32)
    dmin = (words[..., 0] >> 16).astype(np.uint16).view(np.float16).astype(np.float32)
    first, stop = METADATA_OFFSET // 4, PAYLOAD_OFFSET // 4
    subblock_scale, subblock_min = _scale_min_from_words(words[..., first:stop])
    return _gain_offset(d, dmin, subblock_scale, subblock_min)


#: blocks decoded per pass: 256 blocks are 256 KiB of float32 weights, which stay in the CPU's
#: cache together with their gains and offsets spread out per lane
_DECODE_CHUNK_BLOCKS = 256


def decode(raw) -> np.ndarray:
    """Weights float32 [..., 256k] from Q4_K bytes [..., 144k]; bit-identical to gguf-py's dequantize."""
    raw = _as_raw(raw)
    gain, offset = _block_gains_and_offsets(raw)
    payload = raw.reshape(-1, BLOCK_BYTES)[:, PAYLOAD_OFFSET:]
    gain = gain.reshape(-1)
    offset = offset.reshape(-1)
    weights = np.empty((payload.shape[0], BLOCK_WEIGHTS), dtype=np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        for start in range(0, payload.shape[0], _DECODE_CHUNK_BLOCKS):
            blocks = slice(start, start + _DECODE_CHUNK_BLOCKS)
            subblocks = slice(start * SUBBLOCKS, (start + _DECODE_CHUNK_BLOCKS) * SUBBLOCKS)
            chunk = weights[blocks]
            _write_lane_codes(payload[blocks], chunk)  # codes 0..15, exact in float32
            # Two separate float32 roundings (no fused multiply-add), as gguf-py computes it. The
            # gains and offsets are repeated out to one per lane: a flat multiply is faster than
            # one that broadcasts a value over each run of 32 lanes.
            lanes = chunk.reshape(-1)
            lanes *= np.repeat(gain[subblocks], SUBBLOCK_WEIGHTS)
            lanes -= np.repeat(offset[subblocks], SUBBLOCK_WEIGHTS)
    return weights.reshape(*raw.shape[:-1], raw.shape[-1] // BLOCK_BYTES * BLOCK_WEIGHTS)


def to_mlx_affine(raw) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The same weights laid out like `mx.quantize(w, group_size=32, bits=4)`: (packed, scales, biases).

    packed uint32 [..., 256k/8]: eight lane-order codes per word, code i in bits 4i..4i+3.
    scales float32 [..., 256k/32] = d*s_j, biases float32 [..., 256k/32] = -dmin*m_j, one per
    32-lane subblock: a Q4_K subblock is exactly an MLX affine group of 32.
    """
    raw = _as_raw(raw)
    gain, offset = _block_gains_and_offsets(raw)
    codes = _codes_in_lane_order(_split_blocks(raw)["payload"])
    lead = raw.shape[:-1]
    lanes_total = raw.shape[-1] // BLOCK_BYTES * BLOCK_WEIGHTS
    packed = _pack_codes_uint32(codes.reshape(*lead, lanes_total))
    return packed, gain.reshape(*lead, -1), (-offset).reshape(*lead, -1)


def _pack_codes_uint32(codes: np.ndarray) -> np.ndarray:
    groups = codes.reshape(*codes.shape[:-1], -1, 8).astype(np.uint32)
    shifts = np.arange(0, 32, 4, dtype=np.uint32)
    return np.bitwise_or.reduce(groups << shifts, axis=-1)
