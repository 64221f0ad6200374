"""Two plausible misreadings of Q4_K's bytes, as decoders: raw bytes [..., 144k] -> float32 [..., 256k].

Each gets the shape, the magnitude and most weights right, and each is a mistake a real decoder
has made. The decoder zoo (lab.teach.zoo) shows which of the article's checks catches each; the
on-device pane (lab.device) asks `misreading_matching` which one, if any, reproduces a library's
disagreeing decode exactly, because a named mistake says more than a count of differing weights.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from lab._arrays import round_to
from lab.formats import q4k

_F32 = np.float32


def _reconstruct(d, dmin, scales, mins, codes) -> np.ndarray:
    """(d*s_j)*q - dmin*m_j in float32 for codes [..., k, 8, 32] in lane order, fields [..., k, 8]."""
    gain = d[..., None] * scales.astype(_F32)
    offset = dmin[..., None] * mins.astype(_F32)
    with np.errstate(invalid="ignore", over="ignore"):
        weights = gain[..., None] * codes.astype(_F32) - offset[..., None]
    return weights.reshape(*codes.shape[:-3], -1)


def decode_lanes_interleaved(raw) -> np.ndarray:
    """WRONG: payload byte p feeds lanes 2p and 2p+1 instead of 64c+l and 64c+32+l.

    The nibbles are split correctly and every weight gets its lane's metadata, but the low and
    high codes of a byte land next to each other, the way a packed int4 array would read.
    """
    tensor = q4k.Q4KTensor(raw)
    payload = tensor.blocks[..., q4k.PAYLOAD_OFFSET :]
    neighbours = np.stack([payload & 15, payload >> 4], axis=-1)  # byte p -> lanes 2p, 2p + 1
    codes = neighbours.reshape(*payload.shape[:-1], q4k.SUBBLOCKS, q4k.SUBBLOCK_WEIGHTS)
    scales, mins = q4k.unpack_scale_min(tensor.blocks[..., q4k.METADATA_OFFSET : q4k.PAYLOAD_OFFSET])
    return _reconstruct(tensor.d, tensor.dmin, scales, mins, codes)


def decode_shared_metadata(raw) -> np.ndarray:
    """WRONG: the high nibbles of chunk c use subblock 2c's scale and minimum.

    Placement is right (lanes 64c+l and 64c+32+l) but both halves of the chunk share the low
    subblock's metadata, as if one byte meant one subblock. Subblocks 1, 3, 5 and 7 come out
    wrong whenever their metadata differs from their neighbour's.
    """
    tensor = q4k.Q4KTensor(raw)
    scales, mins = q4k.unpack_scale_min(tensor.blocks[..., q4k.METADATA_OFFSET : q4k.PAYLOAD_OFFSET])
    scales, mins = np.repeat(scales[..., 0::2], 2, axis=-1), np.repeat(mins[..., 0::2], 2, axis=-1)
    codes = tensor.codes.reshape(*tensor.codes.shape[:-1], -1, q4k.SUBBLOCKS, q4k.SUBBLOCK_WEIGHTS)
    return _reconstruct(tensor.d, tensor.dmin, scales, mins, codes)


@dataclass(frozen=True)
class Misreading:
    name: str
    decode: Callable[..., np.ndarray]
    what_is_wrong: str


MISREADINGS = (
    Misreading(
        "lanes 0/1 (interleaved)",
        decode_lanes_interleaved,
        "the two nibbles of a payload byte go to neighbouring lanes instead of lanes 32 apart",
    ),
    Misreading(
        "one subblock's metadata for both nibbles",
        decode_shared_metadata,
        "the high nibbles of each 64-lane chunk use the low subblock's scale and minimum",
    ),
)


def misreading_matching(raw, values: np.ndarray, rounding_dtype: str) -> Misreading | None:
    """The misreading whose output, rounded to `rounding_dtype`, equals `values` at every element
    (NaN matching NaN), or None when none does."""
    for misreading in MISREADINGS:
        with np.errstate(invalid="ignore", over="ignore"):
            candidate = round_to(misreading.decode(raw), rounding_dtype)
        if np.array_equal(candidate.reshape(np.shape(values)), values, equal_nan=True):
            return misreading
    return None
