"""What Q3_K and Q2_K share: 2-bit codes packed four to a byte, in chunks of 128 weights.

A 256-weight super-block is two chunks of 128 (c = 0, 1). Chunk c keeps its 2-bit codes in the
32 bytes 32c .. 32c + 31 of the block's qs; byte 32c + l holds the four weights 128c + l + 32s,
s = 0..3, one 2-bit field each, weights a column of 32 apart rather than neighbours:

    qs byte 32c + l:   bits 7..6         bits 5..4         bits 3..2         bits 1..0
                       weight 128c+l+96  weight 128c+l+64  weight 128c+l+32  weight 128c+l

So the first 32 bytes hold weights 0..127 and the next 32 weights 128..255; shifting a byte by
0, 2, 4 or 6 and masking with 3 walks down its column. The weights of subblock j (16 weights,
16j .. 16j + 15) all sit at the same shift, in 16 consecutive bytes.
"""

from __future__ import annotations

import numpy as np

#: weights per super-block, per chunk of qs bytes, and the qs bytes of a super-block
SUPER_BLOCK_WEIGHTS = 256
CHUNK_WEIGHTS = 128
QS_BYTES = 64
_SHIFTS = np.arange(0, 8, 2, dtype=np.uint8)[:, None]  # 0, 2, 4, 6 for s = 0..3


def pack_crumbs(codes: np.ndarray) -> np.ndarray:
    """2-bit codes [..., 256k] -> qs bytes [..., k, 64] as the layout above places them."""
    # q[..., c, s, l] is the code of weight 128c + 32s + l
    q = codes.astype(np.uint8).reshape(*codes.shape[:-1], -1, 2, 4, 32)
    return np.bitwise_or.reduce(q << _SHIFTS, axis=-2).reshape(*q.shape[:-3], QS_BYTES)


def unpack_crumbs(qs: np.ndarray) -> np.ndarray:
    """qs bytes [..., k, 64] -> the 2-bit codes [..., k, 256] they hold, in weight order."""
    by_chunk = qs.reshape(*qs.shape[:-1], 2, 1, 32)
    return ((by_chunk >> _SHIFTS) & np.uint8(3)).reshape(*qs.shape[:-1], SUPER_BLOCK_WEIGHTS)


def crumb_place(lane: int) -> tuple[int, int]:
    """Where the 2-bit code of weight `lane` (0..255) sits in qs: (byte 0..63, shift 0, 2, 4 or 6)."""
    chunk, rest = divmod(lane, CHUNK_WEIGHTS)
    quarter, position = divmod(rest, 32)
    return 32 * chunk + position, 2 * quarter
