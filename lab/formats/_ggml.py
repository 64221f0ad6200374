"""Pieces the ggml block formats share: nibble halves, C's rounding, and the one-scale tensor.

ggml's 32-weight blocks (Q4_0, Q4_1, IQ4_NL, and IQ4_XS's subblocks) pack 32 four-bit codes
into 16 bytes by halves, not neighbours:

    byte j (0..15):   bits 7..4 = code of weight j + 16     bits 3..0 = code of weight j
"""

from __future__ import annotations

import numpy as np

from lab.errors import NonFiniteError
from lab.formats._blocks import grouped
from lab.formats._tensor import GGUFBlockTensor, Lane, Part, Stored, block_field, half, rows, stored
from lab.numbers import format_number

#: ggml's GROUP_MAX_EPS: a group whose largest magnitude is below it is stored as zeros
GROUP_MAX_EPS = np.float32(1e-15)
#: the largest finite float16, the ceiling of every ggml block scale
F16_MAX = float(np.finfo(np.float16).max)


def refuse_beyond_reach(weights: np.ndarray, reach: float, title: str) -> None:
    """NonFiniteError when a weight is larger than the format can store.

    A ggml block keeps its scale in float16, so the largest weight it can hold is 65504 times its
    largest code (times its largest sub-scale, where it has one): `reach`. Beyond it the stored
    scale would be infinite and the block would decode to infinities and NaN; Q4_K refuses the
    same way. Checking first also keeps the fit's squares, which overflow float32 long before
    that, from ever running on such weights.
    """
    largest = float(np.abs(weights).max(initial=0))
    if largest > reach:
        raise NonFiniteError(
            f"w holds a weight of magnitude {largest:.6g}, beyond what {title} can store: its float16 "
            f"scale reaches at most 65504, so its largest weight is {reach:.6g}"
        )


def reciprocal_or_zero(values: np.ndarray) -> np.ndarray:
    """1 / values in float32, and 0 where values is 0 or so small that its reciprocal overflows.

    ggml computes `d ? 1/d : 0`. A d below 2^-128 makes 1/d infinite, and the codes would be
    inf or NaN; such a d is zero once stored as float16, so every code decodes to 0 anyway and
    code 0 (times the format's offset) is what the lab stores.
    """
    with np.errstate(divide="ignore", over="ignore"):
        inverse = np.float32(1) / values.astype(np.float32)
    return np.where(np.isfinite(inverse), inverse, np.float32(0)).astype(np.float32)


def pack_halves(codes: np.ndarray) -> np.ndarray:
    """Four-bit codes [..., 32] -> 16 bytes: weight j in the low nibble of byte j, weight j+16 in the high one."""
    codes = codes.astype(np.uint8)
    return codes[..., :16] | (codes[..., 16:] << np.uint8(4))


def unpack_halves(packed: np.ndarray) -> np.ndarray:
    """16 bytes [..., 16] -> the 32 four-bit codes they hold, low nibbles first."""
    return np.concatenate([packed & np.uint8(15), packed >> np.uint8(4)], axis=-1)


def first_absmax(blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per block [..., n, g]: the largest magnitude and the signed value that has it (the first, as C's `>` scan keeps).

    C's scan starts from max = 0 and a zero never beats it, so a block of zeros gives +0 even
    when they are -0: Q4_0 stores d = +0 / -8 = -0 there (bytes 00 80).
    """
    index = np.abs(blocks).argmax(axis=-1)[..., None]
    signed = np.take_along_axis(blocks, index, axis=-1)[..., 0]
    signed = np.where(signed == 0, np.zeros_like(signed), signed)
    return np.abs(signed), signed


def half_step_table(table: np.ndarray) -> np.ndarray:
    """For a sorted table of integers: the index of the nearest entry to every x in [k/2, (k+1)/2),
    for k = 2 * table[0] .. 2 * table[-1], as uint8; a tie takes the upper entry.

    The midpoint of two integers is a multiple of 1/2, so no midpoint lies inside such a half-step
    cell: one entry is nearest to all of it, and a value exactly on a midpoint is a cell's left
    end, which counts the midpoint as passed (the upper entry).
    """
    first, last = int(table[0]), int(table[-1])
    midpoints = (table[:-1].astype(np.float64) + table[1:]) / 2
    return np.searchsorted(midpoints, np.arange(2 * first, 2 * last + 1) / 2, side="right").astype(np.uint8)


def nearest_index(values: np.ndarray, table: np.ndarray) -> np.ndarray:
    """The index of the nearest entry of a sorted table of integers (as float32) to each value; a tie takes the upper one.

    This is ggml's best_index_int8: below the first entry is 0, above the last is the last, else
    the two entries around x are compared as (x - lower) < (upper - x) in float32. Those
    differences are exact wherever x is near their midpoint (x and the entries are within a
    binade of each other there), so the comparison is x against the exact midpoint, and the
    answer depends only on which half-step cell holds x: floor(2x) indexes half_step_table.
    Doubling a float32 is exact; clamping first keeps floor(2x) an integer in the table's range.
    """
    first, last = np.float32(table[0]), np.float32(table[-1])
    # fmin passes a NaN over for `last`: a NaN (a zero weight times an infinite 1/d) takes the
    # last entry, as ggml's search ends there
    doubled = np.fmax(np.fmin(values, last), first)
    doubled *= np.float32(2)
    np.floor(doubled, out=doubled)
    cells = np.subtract(doubled, 2 * first, out=np.empty(doubled.shape, np.int32), casting="unsafe")
    return np.take(half_step_table(table), cells)


def nibble_halves(at: int) -> Stored:
    """32 four-bit codes a block in 16 bytes by halves (pack_halves) from byte `at`: Q4_0's, Q4_1's, MXFP4's."""
    return stored(
        Part("qs", 16, "nibbles", at=at, trace=True),
        write=lambda codes: pack_halves(grouped(codes, 32)),
        read=lambda qs: rows(unpack_halves(qs)),
    )


def scales_words(tensor: GGUFBlockTensor, explained: dict, *names: str) -> str:
    """The block's float16 scales `names` ("d", "m") in words, with the bytes they take: byte trace's owner."""
    values = " and ".join(f"{name} = {format_number(explained[name], 6)}" for name in names)
    first, last = tensor.gguf_part(names[0]), tensor.gguf_part(names[-1])
    return f"the block's {values} (bytes {first.at}..{last.at + last.size - 1})"


class OneScaleTensor(GGUFBlockTensor):
    """ggml's blocks of 32 codes under one float16 scale d: weight = d * level(code).

    Q8_0, Q4_0 and IQ4_NL differ only in what a code means (its level) and how a block's codes
    sit after d in its bytes; a subclass says those, and decoding and `explain` are shared:

        byte  0    1    2 ... block bytes - 1
             [ d (fp16, LE) ][ the block's codes, as the subclass packs them ]
    """

    # the first field, so the one per weight; each subclass declares what its codes are and where they sit
    codes: np.ndarray
    d: np.ndarray = block_field(per_block=(), dtype=np.float16, gguf=half(at=0))

    # -- what a subclass says ----------------------------------------------------------------

    @staticmethod
    def levels(codes: np.ndarray) -> np.ndarray:
        """The float32 level each code stands for (exact small integers in every ggml format)."""
        raise NotImplementedError

    def code_fields(self, lane: int, code: int) -> dict:
        """explain's entries for the code in lane 0..31 of its block: where it sits, what it is."""
        raise NotImplementedError

    def product_text(self, d_text: str, code: int) -> str:
        """The left side of explain's formula, d times the code's level, in the format's words."""
        raise NotImplementedError

    # -- shared --------------------------------------------------------------------------------

    @property
    def block_bytes(self) -> int:
        return self.block.gguf.bytes

    def dequantize(self) -> np.ndarray:
        with np.errstate(over="ignore", invalid="ignore"):  # an inf or NaN d decodes as such, as in ggml
            weights = self.d.astype(np.float32)[..., None] * grouped(self.levels(self.codes), self.block_size)
        return weights.reshape(self.shape)

    def explain_lane(self, at: Lane) -> dict:
        d = float(self.d[at.block_position])
        code = int(self.codes[at.position])
        weight = float(np.float32(d) * self.levels(np.array(code, self.codes.dtype)))
        return {
            **self.code_fields(at.lane, code),
            "d": d,
            "weight": weight,
            "formula": f"{self.product_text(format_number(d), code)} = {format_number(weight)}",
        }

    def owner_words(self, explained: dict) -> str:
        return scales_words(self, explained, "d")


class HalvesTensor(OneScaleTensor):
    """A OneScaleTensor whose 32 four-bit codes sit in 16 bytes by halves (pack_halves): Q4_0, IQ4_NL.

    byte 2 + j: low nibble = code of weight j, high nibble = code of weight j + 16
    """

    codes: np.ndarray = block_field(dtype=np.uint8, low=0, high=15, gguf=nibble_halves(at=2))

    def code_fields(self, lane: int, code: int) -> dict:
        return {
            "byte": self.gguf_part("qs").at + lane % 16,
            "nibble": "low" if lane < 16 else "high",
            "code": code,
            "value": int(self.levels(np.array(code, np.uint8))),
        }


# Q5_0 and Q5_1 store a five-bit code in two places: its low four bits by halves in 16 bytes qs
# (pack_halves), and its fifth bit in one little-endian uint32 qh, bit j for weight j.


def five_bits(at: int) -> Stored:
    """32 five-bit codes a block from byte `at`: their fifth bits in qh (4 bytes), their low nibbles in qs (16)."""
    return stored(
        Part("qh", 4, "fifth bits", at=at),
        Part("qs", 16, "low nibbles", at=at + 4, trace=True),
        write=lambda codes: five_bit_parts(grouped(codes, 32)),
        read=lambda qh, qs: rows(five_bit_codes(qh, qs)),
    )


def five_bit_parts(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Five-bit codes [..., 32] -> their GGUF parts: qh [..., 4] (the fifth bits) and qs [..., 16] (the low nibbles)."""
    codes = codes.astype(np.uint8)
    # little-endian bit order: bit j of qh read as a little-endian uint32 is bit j % 8 of byte j // 8
    fifth_bits = np.packbits(codes >> np.uint8(4), axis=-1, bitorder="little")
    return fifth_bits, pack_halves(codes & np.uint8(15))


def five_bit_codes(qh: np.ndarray, qs: np.ndarray) -> np.ndarray:
    """The GGUF parts qh [..., 4] and qs [..., 16] -> the 32 five-bit codes they hold [..., 32]."""
    fifth_bits = np.unpackbits(qh, axis=-1, bitorder="little")
    return unpack_halves(qs) | (fifth_bits << np.uint8(4))


def five_bit_fields(lane: int, code: int, qh_start: int) -> dict:
    """explain's entries for the five-bit code in lane 0..31 of a block whose qh starts at byte `qh_start`:
    where its fifth bit and its low nibble sit, and the code the two make."""
    return {
        "qh_bit": lane,
        "qh_byte": qh_start + lane // 8,
        "qh_bit_in_byte": lane % 8,
        "fifth_bit": code >> 4,
        "byte": qh_start + 4 + lane % 16,
        "nibble": "low" if lane < 16 else "high",
        "low_bits": code & 15,
        "code": code,
        "code_bits": f"{code >> 4} {code & 15:04b}",
    }


def fifth_bit_words(explained: dict) -> str:
    """Where a five-bit code's fifth bit came from, for the byte trace's owner."""
    return f"fifth bit {explained['fifth_bit']} from qh byte {explained['qh_byte']}, bit {explained['qh_bit_in_byte']}"
