"""The article's six checks ("The checks I want before trusting an optimized decoder").

The checks never compare the lab with itself. Their references are gguf-py (Q4_K weights and
metadata), the article's formulas written out afresh here (E2M1 and E8M0 values, lane
placement) and the installed MLX (MXFP4 bytes). Their default data comes from
lab.formats.fixtures, asymmetric on purpose.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import gguf
import numpy as np

from lab.codes import e8m0
from lab.formats import mlx_layout, mxfp4, q4k
from lab.formats.fixtures import asymmetric_blocks, metadata_fixture, mlx_check_weights, varied_input

Q4_K_TYPE = gguf.GGMLQuantizationType.Q4_K
_F32 = np.float32

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
            return f"scale byte of row {row}, group {group} (amax {np.abs(weights.reshape(weights.shape[0], -1, mxfp4.GROUP_SIZE)[row, group]).max():.6g})"

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
