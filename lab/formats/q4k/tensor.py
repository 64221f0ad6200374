"""The Q4_K tensor, and building blocks from their parts."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from lab._arrays import (
    as_code_array,
    as_float_array,
    is_integer,
    require_last_multiple,
)
from lab.errors import CodeRangeError, DTypeError, NonFiniteError, ShapeError
from lab.formats._tensor import GGUFBlockTensor, Lane, Part
from lab.formats.q4k.decode import _as_raw, _split_blocks, decode, to_mlx_affine
from lab.formats.q4k.explain import explain
from lab.formats.q4k.layout import (
    BLOCK,
    BLOCK_BYTES,
    BLOCK_WEIGHTS,
    CODE_MAX,
    FIELD_MAX,
    METADATA_BYTES,
    METADATA_OFFSET,
    PAYLOAD_BYTES,
    PAYLOAD_OFFSET,
    SUBBLOCKS,
    _codes_in_lane_order,
    _payload_from_codes,
    pack_scale_min,
    unpack_scale_min,
)

# --------------------------------------------------------------------------------------------
# Building blocks from their parts
# --------------------------------------------------------------------------------------------


class Q4KTensor(GGUFBlockTensor, block=BLOCK):
    """Q4_K bytes [..., 144k] standing for weights [..., 256k]; every view is read off `raw`.

    The bytes are the tensor, so its one field is checked as bytes, and its GGUF bytes are `raw`
    itself; `gguf_layout` (layout.py's byte map) names the parts, and d, dmin, the scales, the
    minimums and the codes are views of them.
    """

    raw: np.ndarray

    def __post_init__(self):
        array = np.ascontiguousarray(_as_raw(self.raw)).view()
        array.flags.writeable = False
        object.__setattr__(self, "raw", array)

    block_bytes = BLOCK_BYTES
    block_weights = BLOCK_WEIGHTS
    gguf_layout = (
        Part("d", 2, "d", at=0, half=True),
        Part("dmin", 2, "dmin", at=2, half=True),
        Part("metadata", METADATA_BYTES, "6-bit scales and minimums", at=METADATA_OFFSET),
        Part("payload", PAYLOAD_BYTES, "nibbles", at=PAYLOAD_OFFSET, trace=True),
    )

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

    @classmethod
    def from_gguf(cls, raw: ArrayLike) -> Q4KTensor:
        """GGUF Q4_K bytes [..., 144k] -> the tensor they hold (the bytes are the tensor)."""
        return cls(raw)

    def to_mlx_affine(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return to_mlx_affine(self.raw)

    def locate(self, index) -> Lane:
        """One flat integer index into the decoded tensor (row-major), as the Q4_K explorer counts weights."""
        # One integer only: a tuple, a float (which int() would truncate) or a bool is refused.
        if not is_integer(index):
            raise DTypeError(f"weight index must be an integer, got {index!r}")
        total = int(np.prod(self.shape))
        if not 0 <= int(index) < total:
            raise CodeRangeError(f"weight index must be in 0..{total - 1}, got {int(index)}")
        position = tuple(int(p) for p in np.unravel_index(int(index), self.shape))
        return Lane(position, *divmod(position[-1], BLOCK_WEIGHTS))

    def explain_head(self, at: Lane) -> dict:
        flat_index = int(np.ravel_multi_index(at.position, self.shape))
        return {"index": flat_index, "position": at.position, "block": flat_index // BLOCK_WEIGHTS}

    def explain_lane(self, at: Lane) -> dict:
        return explain(self.blocks[at.block_position], at.lane)

    def owner_words(self, explained: dict) -> str:
        return (
            f"subblock {explained['subblock']}: scale {explained['scale']}, min {explained['min']} (12-byte metadata)"
        )


def from_parts(d: ArrayLike, dmin: ArrayLike, scales: ArrayLike, mins: ArrayLike, codes: ArrayLike) -> Q4KTensor:
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


from_gguf = Q4KTensor.from_gguf
