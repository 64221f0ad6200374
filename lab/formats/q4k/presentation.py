"""The article's presentation fixture: one block whose numbers the course works by hand."""

from __future__ import annotations

import numpy as np

from lab.formats.q4k.layout import BLOCK_BYTES, METADATA_OFFSET, PAYLOAD_BYTES, PAYLOAD_OFFSET, pack_scale_min

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
