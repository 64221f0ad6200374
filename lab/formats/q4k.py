"""Q4_K: GGUF's 4-bit "k-quant" block, where every code gets a gain and an offset.

One super-block is 144 bytes and holds 256 weights, 4.5 bits per weight:

    bytes   0..1    d      float16, little-endian: the super-block scale for the gains
    bytes   2..3    dmin   float16, little-endian: the super-block scale for the offsets
    bytes   4..15   B[0..11]  eight 6-bit subblock scales s_j and eight 6-bit minimums m_j
    bytes  16..143  payload   128 bytes, two 4-bit codes per byte

Each 32-lane subblock j reconstructs its codes q (0..15) as

    w = d * s_j * q  -  dmin * m_j
        \\_ gain _/      \\_ offset _/

The offset is subtracted: m_j counts how far below zero the subblock reaches.

Payload placement. Payload byte p = 32c + l (chunk c = 0..3, position l = 0..31) feeds two
lanes that are 32 apart, not neighbours:
    low nibble  (bits 0..3) -> lane 64c + l        subblock 2c
    high nibble (bits 4..7) -> lane 64c + 32 + l   subblock 2c + 1

Metadata packing. 16 six-bit fields make 96 bits, so they share twelve bytes. Written bit 7 first:

    B[0..3]   = hh ssssss    s_0..s_3 in bits 0..5; bits 6..7 are bits 4..5 of s_4..s_7
    B[4..7]   = hh mmmmmm    m_0..m_3 in bits 0..5; bits 6..7 are bits 4..5 of m_4..m_7
    B[8..11]  = mmmm ssss    bits 0..3 of s_4..s_7 (low nibble) and of m_4..m_7 (high nibble)

so for j = 0..3:  s_j = B[j] & 63,  m_j = B[j+4] & 63
   for j = 4..7:  s_j = (B[j+4] & 15) | ((B[j-4] >> 6) << 4)
                  m_j = (B[j+4] >> 4) | ((B[j]   >> 6) << 4)

The decoder here reproduces gguf-py's float32 arithmetic bit for bit: the gain d*s_j and the
offset dmin*m_j are each rounded to float32, then gain*q is rounded, then the offset subtracted.

The quantizer reimplements the search of llama.cpp's reference Q4_K quantizer
(`quantize_row_q4_K_ref`): an importance-weighted least-squares fit of a scale and a minimum
per subblock, tried over 21 candidate grids, then both quantized to 6 bits against fp16 d and dmin.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lab._arrays import (
    as_byte_array,
    as_code_array,
    as_code_scalar,
    as_float_array,
    is_integer,
    require_last_multiple,
    to_float32_input,
)
from lab.errors import CodeRangeError, DTypeError, NonFiniteError, ShapeError
from lab.formats.registry import Format, register
from lab.numbers import format_float32

BLOCK_BYTES = 144
BLOCK_WEIGHTS = 256
BITS_PER_WEIGHT = BLOCK_BYTES * 8 / BLOCK_WEIGHTS  # 4.5
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


def unpack_scale_min(b12) -> tuple[np.ndarray, np.ndarray]:
    """The eight subblock scales s_j and minimums m_j (uint8, 0..63) from metadata bytes [..., 12]."""
    metadata = as_byte_array(b12, what="Q4_K metadata bytes")
    if metadata.ndim == 0 or metadata.shape[-1] != METADATA_BYTES:
        raise ShapeError(f"Q4_K metadata is {METADATA_BYTES} bytes per block, got shape {metadata.shape}")
    scale_bytes = metadata[..., 0:4]  # s_0..s_3, plus the top bits of s_4..s_7
    min_bytes = metadata[..., 4:8]  # m_0..m_3, plus the top bits of m_4..m_7
    split_bytes = metadata[..., 8:12]  # low four bits of s_4..s_7 and m_4..m_7
    low_scales = scale_bytes & 63
    low_mins = min_bytes & 63
    # j = 4..7: four bits from B[j+4], the other two from bits 6..7 of an earlier byte.
    high_scales = (split_bytes & 15) | ((scale_bytes >> 6) << 4)
    high_mins = (split_bytes >> 4) | ((min_bytes >> 6) << 4)
    scales = np.concatenate([low_scales, high_scales], axis=-1).astype(np.uint8)
    mins = np.concatenate([low_mins, high_mins], axis=-1).astype(np.uint8)
    return scales, mins


def pack_scale_min(scales, mins) -> np.ndarray:
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


def explain_metadata(b12, subblock: int) -> dict:
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


def lanes(payload_index) -> tuple:
    """(low_lane, high_lane) fed by payload byte p = 32c + l: (64c + l, 64c + 32 + l)."""
    index = as_code_array(payload_index, limit=PAYLOAD_BYTES, what="payload index").astype(np.int64)
    chunk, position = index // 32, index % 32
    low_lane = 64 * chunk + position
    high_lane = low_lane + 32
    return _scalar_or_array(low_lane), _scalar_or_array(high_lane)


def subblocks(payload_index) -> tuple:
    """(low subblock, high subblock) for payload byte p = 32c + l: (2c, 2c + 1)."""
    index = as_code_array(payload_index, limit=PAYLOAD_BYTES, what="payload index").astype(np.int64)
    chunk = index // 32
    return _scalar_or_array(2 * chunk), _scalar_or_array(2 * chunk + 1)


def payload_of_lane(lane) -> tuple:
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
    with np.errstate(invalid="ignore", over="ignore"):  # inf * 0 is NaN: the format's own answer
        gain = parts["d"][..., None] * subblock_scale.astype(np.float32)
        offset = parts["dmin"][..., None] * subblock_min.astype(np.float32)
    return gain, offset


#: blocks decoded per pass: 1024 blocks are 1 MiB of float32 weights, which stay in the CPU's
#: cache while their codes become weights in place
_DECODE_CHUNK_BLOCKS = 1024


def decode(raw) -> np.ndarray:
    """Weights float32 [..., 256k] from Q4_K bytes [..., 144k]; bit-identical to gguf-py's dequantize."""
    raw = _as_raw(raw)
    parts = _split_blocks(raw)
    gain, offset = _gains_and_offsets(parts)
    payload = parts["payload"].reshape(-1, PAYLOAD_BYTES)
    gain = gain.reshape(-1, SUBBLOCKS, 1)
    offset = offset.reshape(-1, SUBBLOCKS, 1)
    weights = np.empty((payload.shape[0], SUBBLOCKS, SUBBLOCK_WEIGHTS), dtype=np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        for start in range(0, payload.shape[0], _DECODE_CHUNK_BLOCKS):
            blocks = slice(start, start + _DECODE_CHUNK_BLOCKS)
            chunk = weights[blocks]
            _write_lane_codes(payload[blocks], chunk)  # codes 0..15, exact in float32
            # Two separate float32 roundings (no fused multiply-add), as gguf-py computes it.
            chunk *= gain[blocks]
            chunk -= offset[blocks]
    return weights.reshape(*raw.shape[:-1], raw.shape[-1] // BLOCK_BYTES * BLOCK_WEIGHTS)


def to_mlx_affine(raw) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The same weights laid out like `mx.quantize(w, group_size=32, bits=4)`: (packed, scales, biases).

    packed uint32 [..., 256k/8]: eight lane-order codes per word, code i in bits 4i..4i+3.
    scales float32 [..., 256k/32] = d*s_j, biases float32 [..., 256k/32] = -dmin*m_j, one per
    32-lane subblock: a Q4_K subblock is exactly an MLX affine group of 32.
    """
    raw = _as_raw(raw)
    parts = _split_blocks(raw)
    gain, offset = _gains_and_offsets(parts)
    codes = _codes_in_lane_order(parts["payload"])
    lead = raw.shape[:-1]
    lanes_total = raw.shape[-1] // BLOCK_BYTES * BLOCK_WEIGHTS
    packed = _pack_codes_uint32(codes.reshape(*lead, lanes_total))
    return packed, gain.reshape(*lead, -1), (-offset).reshape(*lead, -1)


def _pack_codes_uint32(codes: np.ndarray) -> np.ndarray:
    groups = codes.reshape(*codes.shape[:-1], -1, 8).astype(np.uint32)
    shifts = np.arange(0, 32, 4, dtype=np.uint32)
    return np.bitwise_or.reduce(groups << shifts, axis=-1)


# --------------------------------------------------------------------------------------------
# Building blocks from their parts
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Q4KTensor:
    """Q4_K bytes [..., 144k] standing for weights [..., 256k]; every view is read off `raw`."""

    raw: np.ndarray

    def __post_init__(self):
        array = np.ascontiguousarray(_as_raw(self.raw)).view()
        array.flags.writeable = False
        object.__setattr__(self, "raw", array)

    bits_per_weight = BITS_PER_WEIGHT
    block_bytes = BLOCK_BYTES
    block_weights = BLOCK_WEIGHTS

    @property
    def n_blocks(self) -> int:
        return self.raw.size // BLOCK_BYTES

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of the decoded weights."""
        return (*self.raw.shape[:-1], self.raw.shape[-1] // BLOCK_BYTES * BLOCK_WEIGHTS)

    @property
    def blocks(self) -> np.ndarray:
        """raw as [..., k, 144]."""
        return self.raw.reshape(*self.raw.shape[:-1], -1, BLOCK_BYTES)

    @property
    def d(self) -> np.ndarray:
        return _split_blocks(self.raw)["d"]

    @property
    def dmin(self) -> np.ndarray:
        return _split_blocks(self.raw)["dmin"]

    @property
    def subblock_scales(self) -> np.ndarray:
        return unpack_scale_min(_split_blocks(self.raw)["metadata"])[0]

    @property
    def subblock_mins(self) -> np.ndarray:
        return unpack_scale_min(_split_blocks(self.raw)["metadata"])[1]

    @property
    def codes(self) -> np.ndarray:
        """uint8 codes 0..15 in output-lane order, same shape as the decoded weights."""
        return _codes_in_lane_order(_split_blocks(self.raw)["payload"]).reshape(self.shape)

    def dequantize(self) -> np.ndarray:
        return decode(self.raw)

    def to_gguf(self) -> np.ndarray:
        """The blocks as GGUF stores them: the tensor's own 144-byte blocks, uint8 [..., 144k]."""
        return self.raw.copy()

    def to_mlx_affine(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return to_mlx_affine(self.raw)

    def explain(self, i: int) -> dict:
        """explain() for flat weight index i of the decoded tensor (row-major)."""
        # One integer only: a tuple, a float (which int() would truncate) or a bool is refused.
        if not is_integer(i):
            raise DTypeError(f"weight index must be an integer, got {i!r}")
        flat_index = int(i)
        total = int(np.prod(self.shape))
        if not 0 <= int(flat_index) < total:
            raise CodeRangeError(f"weight index must be in 0..{total - 1}, got {int(flat_index)}")
        block_index, lane = divmod(int(flat_index), BLOCK_WEIGHTS)
        block = self.raw.reshape(-1, BLOCK_BYTES)[block_index]
        return {
            "index": int(flat_index),
            "position": tuple(int(p) for p in np.unravel_index(int(flat_index), self.shape)),
            "block": block_index,
            **explain(block, lane),
        }


def from_parts(d, dmin, scales, mins, codes) -> Q4KTensor:
    """Assemble Q4_K bytes from the logical parts; the inverse of reading them off a Q4KTensor.

    d, dmin: per block, broadcastable to [..., k]; rounded to float16 (nearest even).
    scales, mins: 6-bit integers broadcastable to [..., k, 8].
    codes: 4-bit integers [..., 256k] in output-lane order (not payload order).
    """
    lane_codes = as_code_array(codes, limit=CODE_MAX + 1, what="4-bit code")
    require_last_multiple(lane_codes, BLOCK_WEIGHTS, what="codes (256 per block)")
    lead = lane_codes.shape[:-1]
    n_blocks = lane_codes.shape[-1] // BLOCK_WEIGHTS
    block_codes = lane_codes.reshape(*lead, n_blocks, BLOCK_WEIGHTS)
    try:
        subblock_scale = np.broadcast_to(
            as_code_array(scales, limit=FIELD_MAX + 1, what="6-bit subblock scale"), (*lead, n_blocks, SUBBLOCKS)
        )
        subblock_min = np.broadcast_to(
            as_code_array(mins, limit=FIELD_MAX + 1, what="6-bit subblock minimum"), (*lead, n_blocks, SUBBLOCKS)
        )
        d16 = np.broadcast_to(_to_fp16(d, "d"), (*lead, n_blocks))
        dmin16 = np.broadcast_to(_to_fp16(dmin, "dmin"), (*lead, n_blocks))
    except ValueError as error:
        if isinstance(error, (CodeRangeError, DTypeError, NonFiniteError)):
            raise
        raise ShapeError(
            f"parts do not match {n_blocks} block(s) of codes with shape {lane_codes.shape}: {error}"
        ) from None
    return Q4KTensor(_assemble(d16, dmin16, subblock_scale, subblock_min, block_codes))


def _to_fp16(values, what: str) -> np.ndarray:
    array = np.asarray(values)
    if array.dtype != np.float16:
        with np.errstate(over="ignore"):  # reported below as a NonFiniteError
            array = as_float_array(values, what=what).astype(np.float16)
    if not np.all(np.isfinite(array)):
        bad = np.asarray(values).reshape(-1)[int(np.argmin(np.isfinite(array).reshape(-1)))]
        raise NonFiniteError(f"{what} must be a finite float16 (|{what}| <= 65504), got {bad!r}")
    return array


def _assemble(d16, dmin16, subblock_scale, subblock_min, block_codes) -> np.ndarray:
    """Bytes [..., k*144] from fp16 d, dmin [..., k], fields [..., k, 8], lane codes [..., k, 256]."""
    lead = block_codes.shape[:-2]
    n_blocks = block_codes.shape[-2]
    blocks = np.empty((*lead, n_blocks, BLOCK_BYTES), dtype=np.uint8)
    for offset, value in ((0, d16), (2, dmin16)):
        bits = np.asarray(value, dtype=np.float16).view(np.uint16)
        blocks[..., offset] = bits & 0xFF  # little-endian: low byte first
        blocks[..., offset + 1] = bits >> 8
    blocks[..., METADATA_OFFSET:PAYLOAD_OFFSET] = pack_scale_min(subblock_scale, subblock_min)
    blocks[..., PAYLOAD_OFFSET:] = _payload_from_codes(block_codes)
    return blocks.reshape(*lead, n_blocks * BLOCK_BYTES)


# --------------------------------------------------------------------------------------------
# Quantizing (llama.cpp's reference search, vectorised over every subblock at once)
# --------------------------------------------------------------------------------------------

#: candidate grids: iscale = (START + STEP * i + 15) / (max - min), i = 0..20
SEARCH_START = -1.0
SEARCH_STEP = 0.1
SEARCH_STEPS = 21
#: subblocks fitted per pass; keeps the temporaries a few MiB so they stay in cache
_FIT_CHUNK = 1 << 13


def quantize(w) -> Q4KTensor:
    """Q4_K bytes for weights [..., 256k], with the quality of llama.cpp's quantize_row_q4_K_ref.

    All arithmetic is float32 in the C reference's order, so the bytes match a build of the
    reference that does not fuse multiplies into adds (FMA contraction can move a near-tie).
    """
    values, _ = to_float32_input(w, what="w")
    require_last_multiple(values, BLOCK_WEIGHTS, what="w (256 weights per Q4_K block)")
    lead = values.shape[:-1]
    n_blocks_per_row = values.shape[-1] // BLOCK_WEIGHTS
    x = np.ascontiguousarray(values).reshape(-1, SUBBLOCKS, SUBBLOCK_WEIGHTS)

    flat_x = x.reshape(-1, SUBBLOCK_WEIGHTS)
    subblock_step = np.empty(flat_x.shape[0], dtype=np.float32)
    subblock_floor = np.empty(flat_x.shape[0], dtype=np.float32)
    search_codes = np.empty(flat_x.shape, dtype=np.uint8)
    for start in range(0, flat_x.shape[0], _FIT_CHUNK):
        stop = start + _FIT_CHUNK
        subblock_step[start:stop], subblock_floor[start:stop], search_codes[start:stop] = _fit_subblocks(
            flat_x[start:stop]
        )
    subblock_step = subblock_step.reshape(-1, SUBBLOCKS)
    subblock_depth = -subblock_floor.reshape(-1, SUBBLOCKS)  # how far below zero: >= 0

    # Six-bit fields relative to the largest subblock value in the super-block.
    max_step = np.maximum(subblock_step.max(axis=1), _F32(0))
    max_depth = np.maximum(subblock_depth.max(axis=1), _F32(0))
    with np.errstate(over="ignore"):  # an overflow to inf is caught just below, with a clearer message
        d16 = (max_step / _F32(FIELD_MAX)).astype(np.float16)
        dmin16 = (max_depth / _F32(FIELD_MAX)).astype(np.float16)
    # Checked before the six-bit fields are worked out: an infinite step would make them NaN.
    if not (np.all(np.isfinite(d16)) and np.all(np.isfinite(dmin16))):
        raise NonFiniteError("w spans too wide a range: Q4_K's float16 d or dmin would overflow (max 65504)")
    subblock_scale = _six_bit_fields(subblock_step, max_step)
    subblock_min = _six_bit_fields(subblock_depth, max_depth)

    # Codes against the stored (rounded) gains and offsets, so decode sees what we aimed at.
    gain = d16.astype(np.float32)[:, None] * subblock_scale.astype(np.float32)
    offset = dmin16.astype(np.float32)[:, None] * subblock_min.astype(np.float32)
    has_gain = gain > 0
    safe_gain = np.where(has_gain, gain, _F32(1))
    codes = np.rint((x + offset[..., None]) / safe_gain[..., None])
    np.clip(codes, 0, CODE_MAX, out=codes)
    # Where the gain is zero the codes cannot change the weights; like the reference, keep the
    # codes the search picked there.
    codes = np.where(has_gain[..., None], codes, search_codes.reshape(x.shape)).astype(np.uint8)

    raw = _assemble(
        d16.reshape(*lead, n_blocks_per_row),
        dmin16.reshape(*lead, n_blocks_per_row),
        subblock_scale.reshape(*lead, n_blocks_per_row, SUBBLOCKS),
        subblock_min.reshape(*lead, n_blocks_per_row, SUBBLOCKS),
        codes.reshape(*lead, n_blocks_per_row, BLOCK_WEIGHTS),
    )
    return Q4KTensor(raw)


def _six_bit_fields(values: np.ndarray, largest: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):  # handled just below
        inverse = np.where(largest > 0, _F32(FIELD_MAX) / np.where(largest > 0, largest, _F32(1)), _F32(0))
        fields = inverse[:, None] * values
    # Below about 1.9e-37, 63 / largest overflows float32 (the C reference then rounds inf and
    # NaN, which is undefined). Such a super-block's fp16 d or dmin is 0 whatever the fields say,
    # so take the ratio the other way round there: same fields, no overflow.
    overflowed = ~np.isfinite(inverse)
    if overflowed.any():
        fields[overflowed] = values[overflowed] / largest[overflowed, None] * _F32(FIELD_MAX)
    # The C reference stores the rounded value straight into a uint8, so a negative one would
    # wrap around; clamping at 0 is the sane reading. (A winning step below zero needs a
    # subblock whose best line slopes the wrong way; it does not arise from real weights.)
    return np.clip(np.rint(fields), 0, FIELD_MAX).astype(np.uint8)


def _fit_subblocks(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Best (step, floor, codes) per 32-weight row of x, x ~ step * q + floor, q in 0..15, floor <= 0.

    Errors are weighted by importance av + |x|, where av is the row's root mean square, so large
    weights count for more without the small ones being ignored.

    The rows are transposed to position-major order (32, n): numpy then reduces over axis 0 one
    position after another, the same left-to-right float32 order as the C loops. That matters
    where two candidates are nearly tied (a constant subblock, for example, has a determinant
    that is zero up to rounding), and it makes the result byte-identical to the C reference
    built without fused multiply-add.
    """
    by_position = np.ascontiguousarray(x.T)  # (32, n)
    # The grid always includes zero: a subblock of positive weights still starts at 0.
    floor = np.minimum(by_position.min(axis=0), _F32(0))
    top = by_position.max(axis=0)
    flat = top == floor

    # Weights beyond about 3e18 overflow float32 in the squares and products below. Such a
    # subblock's plain grid step (top - floor) / 15 is then far beyond what float16 d and dmin
    # hold, and no candidate with an overflowed error beats it, so quantize reports the block
    # as a NonFiniteError; the infinities here never reach a stored byte.
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        rms = np.sqrt(np.sum(by_position * by_position, axis=0) / _F32(SUBBLOCK_WEIGHTS))
        importance = rms + np.abs(by_position)
        sum_w = importance.sum(axis=0)
        sum_x = (importance * by_position).sum(axis=0)

        # Starting point: the plain min/max grid.
        inverse_step = _F32(CODE_MAX) / (top - floor)
        best_step = _F32(1) / inverse_step
        best_floor = floor.copy()
        best_codes = _grid_codes(inverse_step, by_position - floor)
        best_error = _weighted_error(best_step, best_floor, best_codes, by_position, importance)

        for step_number in range(SEARCH_STEPS):
            # Stretch the grid from 14/(max-min) to 16/(max-min): 21 candidate code assignments.
            # The reference anchors each new grid at the best floor found so far, not at the
            # original minimum, so the candidates depend on the earlier winners.
            stretch = _F32(SEARCH_START) + _F32(SEARCH_STEP) * _F32(step_number) + _F32(CODE_MAX)
            codes = _grid_codes(stretch / (top - best_floor), by_position - best_floor)
            weighted_codes = importance * codes
            sum_l = weighted_codes.sum(axis=0)
            sum_l2 = (weighted_codes * codes).sum(axis=0)
            sum_xl = (weighted_codes * by_position).sum(axis=0)
            # For fixed codes, the weighted least-squares line x ~ step*q + floor in closed form.
            determinant = sum_w * sum_l2 - sum_l * sum_l
            step = (sum_w * sum_xl - sum_x * sum_l) / determinant
            line_floor = (sum_l2 * sum_x - sum_l * sum_xl) / determinant
            # A positive floor is not allowed (the offset is subtracted as dmin*m, m >= 0):
            # refit through the origin instead.
            positive = line_floor > 0
            step = np.where(positive, sum_xl / sum_l2, step)
            line_floor = np.where(positive, _F32(0), line_floor)
            error = _weighted_error(step, line_floor, codes, by_position, importance)
            better = (determinant > 0) & (error < best_error)
            best_error = np.where(better, error, best_error)
            best_step = np.where(better, step, best_step)
            best_floor = np.where(better, line_floor, best_floor)
            # The codes only survive where the final gain is zero (see quantize), but the
            # reference stores them there, so keep them for byte-identical output.
            np.copyto(best_codes, codes, where=better)

    # A constant subblock has no step; its value (if negative) is carried entirely by the floor.
    best_step = np.where(flat, _F32(0), best_step)
    best_floor = np.where(flat, floor, best_floor)
    best_codes[:, flat] = 0
    return best_step.astype(np.float32), best_floor.astype(np.float32), best_codes.T.astype(np.uint8)


def _grid_codes(inverse_step: np.ndarray, shifted: np.ndarray) -> np.ndarray:
    """Codes rint(inverse_step * shifted) clamped to 0..15, as float32 (position-major arrays)."""
    codes = inverse_step * shifted
    np.rint(codes, out=codes)
    # NaN (a degenerate grid) compares false everywhere and so contributes nothing; make it 0.
    codes[np.isnan(codes)] = 0
    return np.clip(codes, 0, CODE_MAX, out=codes)


def _weighted_error(step, floor, codes, x, importance) -> np.ndarray:
    """Sum over the 32 positions of importance * (step*q + floor - x)^2, left to right."""
    residual = step * codes
    residual += floor
    residual -= x
    residual *= residual
    residual *= importance
    return residual.sum(axis=0)


# --------------------------------------------------------------------------------------------
# Explaining one byte, one lane
# --------------------------------------------------------------------------------------------


def _one_block(block) -> np.ndarray:
    array = as_byte_array(block, what="Q4_K block")
    if array.shape != (BLOCK_BYTES,):
        raise ShapeError(f"one Q4_K block is {BLOCK_BYTES} bytes, got shape {array.shape}")
    return array


def explain_byte(block, payload_index: int) -> dict:
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


def explain(block, lane: int) -> dict:
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


def _scalar_or_array(array: np.ndarray):
    return array[()] if array.ndim == 0 else array


# --------------------------------------------------------------------------------------------
# The article's presentation fixture
# --------------------------------------------------------------------------------------------

PRESENTATION_D = 0.125
PRESENTATION_DMIN = 0.0625
#: all sixteen fields differ; s_4..s_7 and m_4..m_7 all have non-zero top bits, so reading
#: the split fields from the wrong byte changes the answer
PRESENTATION_SCALES = (2, 3, 6, 9, 33, 50, 21, 44)
PRESENTATION_MINS = (4, 8, 11, 15, 18, 59, 38, 29)
PRESENTATION_BYTE_A5_INDEX = 0
PRESENTATION_BYTE_ZERO_INDEX = 1
PRESENTATION_BYTE_FF_INDEX = 2
#: where the article's three bytes sit and what they decode to
PRESENTATION_BYTES = {
    0xA5: {"payload_index": PRESENTATION_BYTE_A5_INDEX, "lanes": (0, 32), "weights": (1.0, 3.25)},
    0x00: {"payload_index": PRESENTATION_BYTE_ZERO_INDEX, "lanes": (1, 33), "weights": (-0.25, -0.5)},
    0xFF: {"payload_index": PRESENTATION_BYTE_FF_INDEX, "lanes": (2, 34), "weights": (3.5, 5.125)},
}


def presentation_fixture() -> np.ndarray:
    """The article's 144-byte block: d=0.125, dmin=0.0625, (s0,m0)=(2,4), (s1,m1)=(3,8),
    B[0]=130 and B[8]=33 so that s4=33, payload byte 0 = 0xA5, byte 1 = 0x00, byte 2 = 0xFF.

    The other payload bytes are deterministic with two different nibbles each, so a low/high
    mix-up always shows.
    """
    index = np.arange(PAYLOAD_BYTES)
    low_nibble = (5 + 7 * index) % 16
    high_nibble = (low_nibble + 1 + index % 15) % 16  # 1..15 above the low nibble: never equal
    payload = (low_nibble | (high_nibble << 4)).astype(np.uint8)
    for byte_value, where in PRESENTATION_BYTES.items():
        payload[where["payload_index"]] = byte_value
    block = np.empty(BLOCK_BYTES, dtype=np.uint8)
    for offset, value in ((0, PRESENTATION_D), (2, PRESENTATION_DMIN)):
        block[offset : offset + 2] = np.frombuffer(np.array(value, dtype="<f2").tobytes(), dtype=np.uint8)
    block[METADATA_OFFSET:PAYLOAD_OFFSET] = pack_scale_min(PRESENTATION_SCALES, PRESENTATION_MINS)
    block[PAYLOAD_OFFSET:] = payload
    return block


def from_gguf(raw) -> Q4KTensor:
    """GGUF Q4_K bytes [..., 144k] -> the tensor they hold (the bytes are the tensor)."""
    return Q4KTensor(raw)


FORMAT = register(
    Format(
        name="q4k",
        title="Q4_K",
        block_size=BLOCK_WEIGHTS,
        bits_per_weight=BITS_PER_WEIGHT,
        quantize=quantize,
        family="gguf",
        summary="GGUF super-blocks of 256: 4-bit codes, 6-bit scales and minimums per 32, fp16 d and dmin",
        gguf_type="Q4_K",
        from_gguf=from_gguf,
    )
)
