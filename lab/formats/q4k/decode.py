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
    _scale_min_bytes,
    _scale_min_from_words,
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


#: blocks decoded per pass: 1024 blocks are 1 MiB of float32 weights. The passes over a chunk run
#: from the CPU's cache; the chunk size mostly sets how many numpy calls the loop makes.
_DECODE_CHUNK_BLOCKS = 1024

#: the payload byte mask of every lane of a block, in lane order and as uint64 words (eight lanes
#: each): lanes 64c..64c+31 keep the low nibble of bytes 32c..32c+31, lanes 64c+32..64c+63 the
#: high nibble left where it is, which reads as 16 q
_LANE_MASKS = np.array(([0x0F0F0F0F0F0F0F0F] * 4 + [0xF0F0F0F0F0F0F0F0] * 4) * 4, dtype="<u8")
_CHUNK_LANE_MASKS = np.tile(_LANE_MASKS, _DECODE_CHUNK_BLOCKS).view(np.uint8).reshape(-1, BLOCK_WEIGHTS)

#: what s_j is multiplied by before d: 1/16 on the odd subblocks, whose high-nibble lanes read
#: 16 q. d*s_j is exact in float32 (11 by 6 significant bits, far from underflow), so d*(s_j/16)
#: is exactly d*s_j/16 and 16q * (d*s_j/16) is the same real number as q * d*s_j: the same
#: rounding, bit for bit. Tiled 64 blocks long, so that one multiply covers many blocks per loop.
_GAIN_SCALE = np.tile(np.array([1, 1 / 16] * (SUBBLOCKS // 2), dtype=np.float32), 64)


def _lane_factors(blocks: np.ndarray) -> np.ndarray:
    """Per-subblock factors of blocks [n, 144]: float32 [2, 8n], the gains d*s_j (/16 for odd j)
    and the offsets dmin*m_j, each one float32 product of the same two float32 factors as gguf-py's."""
    n = blocks.shape[0]
    # d, dmin and the metadata are bytes 0..15 of a block: copied out as one 16-byte item a block.
    head = blocks.view("V16")[:, 0].copy().view("<u4").reshape(n, 4)
    # Each transpose moves whole 2- or 8-byte items: d|dmin, and s_0..s_7|m_0..m_7.
    d_dmin = head[:, 0].copy().view("<u2").reshape(n, 2).T.copy().view("<f2").astype(np.float32)
    fields = _scale_min_bytes(head[:, 1:]).view("<u8")  # [n, 2]
    factors = fields.T.copy().view(np.uint8).astype(np.float32)  # [2, 8n]: s then m, block by block
    gains = factors[0]
    whole = n // 64 * _GAIN_SCALE.size
    gains[:whole].reshape(-1, _GAIN_SCALE.size)[...] *= _GAIN_SCALE
    gains[whole:] *= _GAIN_SCALE[: gains.size - whole]
    with np.errstate(invalid="ignore", over="ignore"):  # inf * 0 is NaN: the format's own answer
        factors *= np.repeat(d_dmin, SUBBLOCKS, axis=1)
    return factors


def decode(raw) -> np.ndarray:
    """Weights float32 [..., 256k] from Q4_K bytes [..., 144k]; bit-identical to gguf-py's dequantize.

    Each weight is fl(fl(d*s_j * q) - dmin*m_j), two float32 roundings as gguf-py computes them
    (no fused multiply-add). Per chunk of blocks, three passes write the weights: the masked
    payload bytes cast straight into the output (q, or 16 q for high nibbles), times the gains
    repeated out to one per lane, minus the offsets likewise.

    Why this way (CPU time on the bench's 4096 x 4096, 2-core machine): the fresh 64 MiB output
    alone costs 4.0 ms (page faults and write-back); the masked cast into it adds 0.6 ms, which
    is why it is the first pass, doubling the payload runs 0.8, the multiply and the subtract
    1.75 and 1.35, the two np.repeat 2.4, the factors 1.1: 12.6 ms in all, gguf-py 49 ms. Each
    alternative measured slower: a broadcast multiply or subtract over runs of 32 lanes instead of
    np.repeat, broadcasting assignment into kept buffers, a mixed uint8 * float32 multiply, a
    gather from per-subblock tables (np.take alone is 5 ms or more), and the float magic-number
    trick (its stride-4 byte stores cost three times the cast).
    """
    raw = _as_raw(raw)
    blocks = np.ascontiguousarray(raw).reshape(-1, BLOCK_BYTES)
    n = blocks.shape[0]
    gains, offsets = _lane_factors(blocks)  # [8n] each
    runs = blocks[:, PAYLOAD_OFFSET:].view("V32")  # [n, 4]: payload bytes 32c..32c+31
    weights = np.empty((n, BLOCK_WEIGHTS), dtype=np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        for start in range(0, n, _DECODE_CHUNK_BLOCKS):
            stop = min(start + _DECODE_CHUNK_BLOCKS, n)
            chunk = weights[start:stop]
            # Each 32-byte run twice over puts every lane's payload byte at the lane.
            doubled = np.repeat(runs[start:stop], 2, axis=1).view(np.uint8)
            np.bitwise_and(doubled, _CHUNK_LANE_MASKS[: stop - start], out=chunk)
            subblocks = slice(start * SUBBLOCKS, stop * SUBBLOCKS)
            chunk *= np.repeat(gains[subblocks], SUBBLOCK_WEIGHTS).reshape(-1, BLOCK_WEIGHTS)
            chunk -= np.repeat(offsets[subblocks], SUBBLOCK_WEIGHTS).reshape(-1, BLOCK_WEIGHTS)
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
