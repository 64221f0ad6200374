"""The decoder zoo: the same bytes through a correct decoder and through deliberately wrong ones.

Every wrong specimen here is a mistake that produces plausible numbers: the right shape, the
right magnitude, often the right value in most places. Each is paired with the check from the
article's list ("The checks I want before trusting an optimized decoder", items 1 to 6) that
is meant to catch it, and `zoo_table()` runs every pairing and records whether it did.

The checks never compare the lab with itself. Their references are gguf-py (Q4_K weights and
metadata), the article's formulas written out afresh here (E2M1 and E8M0 values, lane
placement) and the installed MLX (MXFP4 bytes).

The data matters as much as the check. A fixture where every subblock shares one scale and
one minimum cannot tell subblock 0's metadata from subblock 1's, so a decoder that reads the
wrong subblock still gets every weight right. The default fixtures are therefore asymmetric:
the article's presentation block plus random blocks whose sixteen 6-bit fields all differ;
`symmetric_blocks()` exists to show what the symmetric kind hides.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import gguf
import numpy as np

from lab._arrays import to_float32_input
from lab.codes import e2m1, e8m0, nibble
from lab.formats import mlx_layout, mxfp4, q4k
from lab.formats._blocks import grouped
from lab.formats._mx import MXTensor

Q4_K_TYPE = gguf.GGMLQuantizationType.Q4_K
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


# --------------------------------------------------------------------------------------------
# Fixtures
# --------------------------------------------------------------------------------------------


def _blocks_from_fields(rng, d, dmin, scales, mins) -> np.ndarray:
    """Q4_K blocks with the given fields and random codes whose two nibbles per byte always differ."""
    count = len(d)
    low = rng.integers(0, 16, size=(count, 4, q4k.SUBBLOCK_WEIGHTS))
    high = (low + rng.integers(1, 16, size=low.shape)) % 16  # never equal to the low nibble
    codes = np.stack([low, high], axis=2).reshape(count, q4k.BLOCK_WEIGHTS).astype(np.uint8)
    # one block per row: from_parts wants per-block fields as [rows, blocks per row, ...]
    return q4k.from_parts(d[:, None], dmin[:, None], scales[:, None], mins[:, None], codes).raw


def _random_super_factors(rng, count: int) -> tuple[np.ndarray, np.ndarray]:
    return (
        rng.uniform(1e-3, 0.1, count).astype(np.float16),
        rng.uniform(1e-3, 0.1, count).astype(np.float16),
    )


def asymmetric_blocks(count: int = 8, seed: int = 2024) -> np.ndarray:
    """[1 + count, 144]: the article's presentation block, then random blocks whose sixteen 6-bit
    fields are all different and all 16 or above, so the top bits stored in B[0..7] always
    matter and no gain is zero (a zero gain would hide a code)."""
    rng = np.random.default_rng(seed)
    d, dmin = _random_super_factors(rng, count)
    # sixteen distinct values from 16..63 per block: a random permutation's first sixteen
    fields = (np.argsort(rng.random((count, 48)), axis=-1)[:, :16] + 16).astype(np.uint8)
    random_blocks = _blocks_from_fields(rng, d, dmin, fields[:, :8], fields[:, 8:])
    return np.concatenate([q4k.presentation_fixture()[None, :], random_blocks])


def symmetric_blocks(count: int = 8, seed: int = 2024, scale: int = 21, minimum: int = 37) -> np.ndarray:
    """[count, 144] blocks in which every subblock has the same scale and the same minimum: the
    kind of fixture that cannot see which subblock's metadata a decoder read."""
    rng = np.random.default_rng(seed)
    d, dmin = _random_super_factors(rng, count)
    scales = np.full((count, q4k.SUBBLOCKS), scale, dtype=np.uint8)
    mins = np.full((count, q4k.SUBBLOCKS), minimum, dtype=np.uint8)
    return _blocks_from_fields(rng, d, dmin, scales, mins)


def metadata_fixture(count: int = 512, seed: int = 7) -> np.ndarray:
    """[2 + count, 12] metadata rows: the presentation block's, one with every top bit set, and random ones."""
    rng = np.random.default_rng(seed)
    presentation = q4k.presentation_fixture()[q4k.METADATA_OFFSET : q4k.PAYLOAD_OFFSET]
    top_bits = np.array([0xC0 | j for j in range(8)] + [0x5A, 0xA5, 0x3C, 0xC3], dtype=np.uint8)
    random_rows = rng.integers(0, 256, size=(count, q4k.METADATA_BYTES), dtype=np.uint8)
    return np.concatenate([presentation[None, :], top_bits[None, :], random_rows])


def mlx_check_weights(seed: int = 6) -> np.ndarray:
    """[16, 64] float32 rows for comparing an MXFP4 quantizer with MLX: scales that vary by row,
    and two groups whose largest magnitude is exactly 6 (scale byte 127 under either rule)
    holding every E2M1 midpoint of both signs, so the element tie rule alone decides them."""
    rng = np.random.default_rng(seed)
    w = (rng.normal(0, 1, (16, 64)) * rng.uniform(0.01, 50, (16, 1))).astype(_F32)
    midpoints = (e2m1.MAGNITUDES[:-1] + e2m1.MAGNITUDES[1:]) / 2
    ties = np.concatenate([[6.0], midpoints, -midpoints, rng.uniform(-5.9, 5.9, 17)]).astype(_F32)
    w[0, :32] = ties
    w[1, 32:] = -ties
    return w


def varied_input(length: int, seed: int = 11) -> np.ndarray:
    """An input row with both signs and magnitudes from 0.1 to 10, so errors can cancel or add."""
    rng = np.random.default_rng(seed)
    return rng.choice([-1.0, 1.0], length) * 10.0 ** rng.uniform(-1, 1, length)


# --------------------------------------------------------------------------------------------
# The checks
# --------------------------------------------------------------------------------------------

CHECK_TITLES = {
    1: "Decode individual codes",
    2: "Check metadata independently",
    3: "Check lane placement",
    4: "Compare reconstructed weights",
    5: "Compare a dot product",
    6: "Test the actual optimized path",
}


@dataclass(frozen=True)
class CheckResult:
    check: int  # the item number in the article's list
    passed: bool
    compared: str  # what was compared against what
    cases: int  # how many values were compared
    mismatches: int
    first_mismatch: str = ""  # where, in words
    expected: float | None = None
    got: float | None = None
    by: float | None = None  # |got - expected|
    detail: str = ""
    ran: bool = True  # False when the reference (MLX) is not installed

    @property
    def title(self) -> str:
        return CHECK_TITLES[self.check]


def _differs(expected: np.ndarray, got: np.ndarray, atol: float = 0.0) -> np.ndarray:
    """Not the same float: different bits (so -0 is not +0) beyond atol, NaN equal to NaN."""
    expected = np.asarray(expected, dtype=np.float64)
    got = np.asarray(got, dtype=np.float64)
    both_nan = np.isnan(expected) & np.isnan(got)
    same_bits = (expected == got) & (np.signbit(expected) == np.signbit(got))
    with np.errstate(invalid="ignore"):
        close = np.abs(got - expected) <= atol if atol > 0 else np.zeros(expected.shape, dtype=bool)
    return ~(both_nan | same_bits | close)


def _result(check, compared, expected, got, mismatch, where: Callable[[tuple], str], detail="") -> CheckResult:
    """A CheckResult from element-wise expected/got arrays and a mismatch mask."""
    count = int(mismatch.sum())
    if not count:
        return CheckResult(
            check=check, passed=True, compared=compared, cases=int(mismatch.size), mismatches=0, detail=detail
        )
    first = tuple(int(i) for i in np.argwhere(mismatch)[0])
    expected_value, got_value = float(expected[first]), float(got[first])
    with np.errstate(invalid="ignore"):
        by = abs(got_value - expected_value)
    return CheckResult(
        check=check,
        passed=False,
        compared=compared,
        cases=int(mismatch.size),
        mismatches=count,
        first_mismatch=where(first),
        expected=expected_value,
        got=got_value,
        by=by,
        detail=detail,
    )


def _e2m1_by_formula(codes: np.ndarray) -> np.ndarray:
    """The article's E2M1 rule from the bit fields: (-1)^s * 2^(e-1) * (1 + m/2), or 0.5*m for e = 0."""
    sign, exponent, fraction = codes >> 3, (codes >> 1) & 3, codes & 1
    magnitude = np.where(exponent == 0, 0.5 * fraction, np.ldexp(1.0 + fraction / 2, exponent.astype(np.int64) - 1))
    return np.where(sign == 1, -magnitude, magnitude)


def check_individual_codes(decoder, scale_bytes=(127, 126, 130, 118, 135)) -> CheckResult:
    """Check 1 for an MXFP4 decoder (codes, scale_bytes) -> weights: all sixteen E2M1 codes,
    both signed zeros included, under several E8M0 scale bytes, against the article's formulas."""
    scale_bytes = np.asarray(scale_bytes, dtype=np.uint8)
    codes = np.tile(np.arange(mxfp4.GROUP_SIZE, dtype=np.uint8) % 16, (scale_bytes.size, 1))
    expected = _e2m1_by_formula(codes) * np.ldexp(1.0, scale_bytes.astype(np.int64) - e8m0.BIAS)[:, None]
    got = np.asarray(decoder(codes, scale_bytes[:, None]), dtype=np.float64)

    def where(index):
        row, position = index
        return f"code {int(codes[row, position]):04b} under scale byte {int(scale_bytes[row])} (element {position})"

    return _result(
        1,
        "each E2M1 code times its E8M0 scale, against (-1)^s 2^(e-1) (1 + m/2) times 2^(byte-127), sign of zero included",
        expected,
        got,
        _differs(expected, got),
        where,
    )


def check_nibble_extraction(decoder) -> CheckResult:
    """Check 1 for a Q4_K decoder: integer nibble extraction on its own.

    Two blocks with d = 1, dmin = 0 and every s_j = 1, m_j = 0 make each weight equal its code;
    their payloads hold all 256 byte values, so every nibble value appears in both halves. The
    metadata is uniform on purpose: this check isolates extraction and says nothing about
    which subblock's metadata a decoder reads (that is checks 2 to 4).
    """
    blocks = np.zeros((2, q4k.BLOCK_BYTES), dtype=np.uint8)
    blocks[:, 0:2] = np.frombuffer(np.float16(1).tobytes(), dtype=np.uint8)
    blocks[:, q4k.METADATA_OFFSET : q4k.METADATA_OFFSET + 4] = 1  # s_0..s_3 = 1, top bits 0
    blocks[:, q4k.METADATA_OFFSET + 8 : q4k.PAYLOAD_OFFSET] = 1  # s_4..s_7 = 1, m_4..m_7 = 0
    blocks[:, q4k.PAYLOAD_OFFSET :] = np.arange(256, dtype=np.uint8).reshape(2, q4k.PAYLOAD_BYTES)
    expected = _placed(blocks[:, q4k.PAYLOAD_OFFSET :] & 15, blocks[:, q4k.PAYLOAD_OFFSET :] >> 4)
    got = np.asarray(decoder(blocks), dtype=np.float64).reshape(2, q4k.BLOCK_WEIGHTS)

    def where(index):
        block, lane = index
        return f"lane {lane} of block {block} (payload byte 0x{_source_byte(blocks[block], lane):02X})"

    compared = "each nibble as an integer 0..15 (unit gain, zero offset)"
    return _result(1, compared, expected, got, _differs(expected, got), where)


def check_metadata(unpack, metadata=None) -> CheckResult:
    """Check 2: all eight (s_j, m_j) pairs of each 12-byte row against gguf-py's own unpacking."""
    if metadata is None:
        metadata = metadata_fixture()
    metadata = np.asarray(metadata, dtype=np.uint8).reshape(-1, q4k.METADATA_BYTES)
    reference_scales, reference_mins = gguf.quants.Q4_K.get_scale_min(metadata)
    scales, mins = unpack(metadata)
    expected = np.concatenate([reference_scales, reference_mins], axis=-1).astype(np.float64)
    got = np.concatenate([np.asarray(scales), np.asarray(mins)], axis=-1).astype(np.float64)

    def where(index):
        row, field = index
        name = f"s{field}" if field < 8 else f"m{field - 8}"
        return f"{name} of metadata row {row} (bytes {' '.join(str(int(b)) for b in metadata[row])})"

    compared = "s_0..s_7 and m_0..m_7 against gguf-py's Q4_K.get_scale_min"
    return _result(2, compared, expected, got, _differs(expected, got), where)


def _placed(low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """The article's placement, written out: payload byte 32c + l sends its low nibble to lane
    64c + l and its high nibble to lane 64c + 32 + l. low, high: [n, 128] -> lanes [n, 256]."""
    lanes = np.empty((low.shape[0], q4k.BLOCK_WEIGHTS), dtype=np.float64)
    payload_index = np.arange(q4k.PAYLOAD_BYTES)
    chunk, position = payload_index // 32, payload_index % 32
    lanes[:, 64 * chunk + position] = low
    lanes[:, 64 * chunk + 32 + position] = high
    return lanes


def _source_byte(block: np.ndarray, lane: int) -> int:
    chunk, within = divmod(lane, 64)
    return int(block[q4k.PAYLOAD_OFFSET + 32 * chunk + within % 32])


def _expected_by_lane(blocks: np.ndarray) -> np.ndarray:
    """Every lane's weight from the article's placement and gguf-py's metadata, in float32 steps."""
    d = blocks[:, 0:2].copy().view(np.float16).astype(_F32)[:, 0]
    dmin = blocks[:, 2:4].copy().view(np.float16).astype(_F32)[:, 0]
    scales, mins = gguf.quants.Q4_K.get_scale_min(blocks[:, q4k.METADATA_OFFSET : q4k.PAYLOAD_OFFSET])
    gain = d[:, None] * scales.astype(_F32)
    offset = dmin[:, None] * mins.astype(_F32)
    payload = blocks[:, q4k.PAYLOAD_OFFSET :]
    codes = _placed(payload & 15, payload >> 4).astype(_F32)
    subblock_of_lane = np.arange(q4k.BLOCK_WEIGHTS) // q4k.SUBBLOCK_WEIGHTS
    with np.errstate(invalid="ignore", over="ignore"):
        return (gain[:, subblock_of_lane] * codes - offset[:, subblock_of_lane]).astype(np.float64)


def _where_the_nibble_went(decoder, block: np.ndarray, lane: int) -> str:
    """Probe: change only the nibble that belongs in `lane` and see which lanes of the decoder's output move."""
    chunk, within = divmod(lane, 64)
    byte_offset = q4k.PAYLOAD_OFFSET + 32 * chunk + within % 32
    shift = 4 if within >= 32 else 0
    probes = np.stack([block, block])
    probes[:, byte_offset] &= np.uint8(0xFF ^ (15 << shift))
    probes[1, byte_offset] |= np.uint8(15 << shift)
    outputs = np.asarray(decoder(probes), dtype=np.float64).reshape(2, q4k.BLOCK_WEIGHTS)
    moved = [int(i) for i in np.flatnonzero(_differs(outputs[0], outputs[1]))]
    if moved == [lane]:
        return "the nibble lands in the right lane, so the value is wrong: check the metadata it used"
    return f"the decoder puts that nibble in lane(s) {moved}, not lane {lane}"


def check_lane_placement(decoder, blocks=None, atol: float = 0.0) -> CheckResult:
    """Check 3: all 256 destinations of every block, against the article's placement rule.

    The blocks must have different values in the two nibbles of each byte and different
    metadata in neighbouring subblocks; the default asymmetric fixture has both. The first
    misplaced lane is then probed to tell a placement error from a metadata error.
    """
    blocks = asymmetric_blocks() if blocks is None else np.asarray(blocks, dtype=np.uint8).reshape(-1, q4k.BLOCK_BYTES)
    expected = _expected_by_lane(blocks)
    got = np.asarray(decoder(blocks), dtype=np.float64).reshape(expected.shape)
    mismatch = _differs(expected, got, atol)
    detail = ""
    if mismatch.any():
        block, lane = (int(i) for i in np.argwhere(mismatch)[0])
        detail = _where_the_nibble_went(decoder, blocks[block], lane)

    def where(index):
        block, lane = index
        return f"lane {lane} of block {block} (subblock {lane // 32}, payload byte {32 * (lane // 64) + lane % 32})"

    return _result(
        3,
        "every lane against 64c+l / 64c+32+l with its own subblock's gain and offset",
        expected,
        got,
        mismatch,
        where,
        detail,
    )


def check_weights(decoder, blocks=None, atol: float = 0.0) -> CheckResult:
    """Check 4: every reconstructed weight against gguf-py's Q4_K dequantize of the same bytes."""
    blocks = asymmetric_blocks() if blocks is None else np.asarray(blocks, dtype=np.uint8).reshape(-1, q4k.BLOCK_BYTES)
    expected = gguf.quants.dequantize(blocks, Q4_K_TYPE).astype(np.float64)
    got = np.asarray(decoder(blocks), dtype=np.float64).reshape(expected.shape)
    mismatch = _differs(expected, got, atol)
    wrong_subblocks = sorted({int(lane) // q4k.SUBBLOCK_WEIGHTS for _, lane in np.argwhere(mismatch)})
    detail = f"wrong weights in subblocks {wrong_subblocks}" if wrong_subblocks else ""

    def where(index):
        block, lane = index
        return f"weight {lane} of block {block} (subblock {lane // 32})"

    return _result(4, "every weight against gguf-py's dequantize", expected, got, mismatch, where, detail)


def check_dot_product(decoder, x=None, blocks=None) -> CheckResult:
    """Check 5: each block's dot product with x against gguf-py's weights with the same x.

    Both sums are float64; the check allows what float32 accumulation could add (256 * 2^-24
    * sum |w x|) so an optimized path that accumulates in float32 still passes. It reports the
    signed output error and the largest weight error side by side: they need not agree.
    """
    blocks = asymmetric_blocks() if blocks is None else np.asarray(blocks, dtype=np.uint8).reshape(-1, q4k.BLOCK_BYTES)
    x = varied_input(q4k.BLOCK_WEIGHTS) if x is None else np.asarray(x, dtype=np.float64)
    reference_weights = gguf.quants.dequantize(blocks, Q4_K_TYPE).astype(np.float64)
    weights = np.asarray(decoder(blocks), dtype=np.float64).reshape(reference_weights.shape)
    expected = reference_weights @ x
    got = weights @ x
    allowance = q4k.BLOCK_WEIGHTS * 2.0**-24 * (np.abs(reference_weights) @ np.abs(x))
    with np.errstate(invalid="ignore"):
        mismatch = ~(np.abs(got - expected) <= allowance) & _differs(expected, got)
        weight_error = np.abs(weights - reference_weights).max()
    detail = ""
    if mismatch.any():
        row = int(np.argmax(mismatch))
        signed = got[row] - expected[row]
        detail = (
            f"signed output error {signed:+.6g} on block {row} ({signed / abs(expected[row]):+.2%} of the output); "
            f"largest weight error {weight_error:.6g}"
        )

    def where(index):
        return f"output of block {index[0]}"

    return _result(
        5, "y = w . x per block against gguf-py's weights . x (float64)", expected, got, mismatch, where, detail
    )


def check_against_mlx(quantizer, w=None) -> CheckResult:
    """Check 6: an MXFP4 quantizer's bytes against the installed MLX's mx.quantize, byte for byte.

    The default data plants exact E2M1 ties (see mlx_check_weights): a quantizer that differs
    from MLX only in its tie rule would pass on random data.
    """
    weights = mlx_check_weights() if w is None else np.asarray(w, dtype=_F32)
    try:
        mx = mlx_layout.mlx_core()
    except mlx_layout.MLXUnavailableError as error:
        compared = "MXFP4 bytes against mx.quantize"
        return CheckResult(
            check=6, passed=False, compared=compared, cases=0, mismatches=0, detail=str(error), ran=False
        )
    packed, scales = mx.quantize(mx.array(weights), group_size=mxfp4.GROUP_SIZE, bits=4, mode="mxfp4")
    reference = mxfp4.from_mlx(packed, scales)
    tensor = quantizer(weights)
    scale_mismatch = reference.scale_bytes != tensor.scale_bytes
    if scale_mismatch.any():

        def where(index):
            row, group = index
            return f"scale byte of row {row}, group {group} (amax {np.abs(grouped(weights, 32)[row, group]).max():.6g})"

        return _result(
            6, "E8M0 scale bytes against mx.quantize", reference.scale_bytes, tensor.scale_bytes, scale_mismatch, where
        )

    def where_code(index):
        row, position = index
        return f"element ({row}, {position}) = {weights[row, position]:.9g}"

    code_mismatch = reference.codes != tensor.codes
    return _result(
        6,
        "E8M0 scale bytes and E2M1 codes against mx.quantize",
        reference.codes,
        tensor.codes,
        code_mismatch,
        where_code,
        "scale bytes agree" + ("; the codes do not" if code_mismatch.any() else ""),
    )


# --------------------------------------------------------------------------------------------
# The table
# --------------------------------------------------------------------------------------------


def run_check(check: int, specimen: Specimen, x=None) -> CheckResult:
    """Run one of the article's checks on a specimen of the kind that check takes."""
    if check == 1:
        if specimen.kind == "q4k decoder":
            return check_nibble_extraction(specimen.function)
        return check_individual_codes(specimen.function)
    if check == 2:
        return check_metadata(specimen.function)
    if check == 3:
        return check_lane_placement(specimen.function)
    if check == 4:
        return check_weights(specimen.function)
    if check == 5:
        return check_dot_product(specimen.function, x)
    return check_against_mlx(specimen.function)


@dataclass(frozen=True)
class ZooRow:
    specimen: str
    what_is_wrong: str
    check: int
    check_title: str
    caught: bool  # the check failed on the wrong specimen
    correct_passes: bool  # the same check passed on the correct specimen of that kind
    evidence: str  # what the check saw


@dataclass(frozen=True)
class ZooTable:
    rows: tuple[ZooRow, ...]

    def to_markdown(self) -> str:
        lines = [
            "| deliberate bug | check (article §10) | caught? | correct decoder passes? | evidence |",
            "|---|---|---|---|---|",
        ]
        for row in self.rows:
            lines.append(
                f"| {row.specimen}: {row.what_is_wrong} | {row.check}. {row.check_title} | "
                f"{'yes' if row.caught else 'NO'} | {'yes' if row.correct_passes else 'NO'} | {row.evidence} |"
            )
        return "\n".join(lines) + "\n"

    def as_dicts(self) -> list[dict]:
        return [dict(row.__dict__) for row in self.rows]


def _evidence(result: CheckResult) -> str:
    if not result.ran:
        return f"not run: {result.detail}"
    if result.passed:
        return f"no mismatch in {result.cases} values"
    text = (
        f"{result.mismatches} of {result.cases} differ; first at {result.first_mismatch}: "
        f"expected {result.expected:.6g}, got {result.got:.6g}"
    )
    return f"{text}; {result.detail}" if result.detail else text


def zoo_table(x=None) -> ZooTable:
    """Every deliberate bug against each check claimed to catch it, with the correct specimen as control."""
    correct = {specimen.kind: specimen for specimen in SPECIMENS if not specimen.deliberately_wrong}
    rows = []
    for specimen in SPECIMENS:
        for check in specimen.caught_by:
            on_wrong = run_check(check, specimen, x)
            on_correct = run_check(check, correct[specimen.kind], x)
            rows.append(
                ZooRow(
                    specimen=specimen.name,
                    what_is_wrong=specimen.what_is_wrong,
                    check=check,
                    check_title=CHECK_TITLES[check],
                    caught=on_wrong.ran and not on_wrong.passed,
                    correct_passes=on_correct.passed,
                    evidence=_evidence(on_wrong),
                )
            )
    return ZooTable(rows=tuple(rows))
