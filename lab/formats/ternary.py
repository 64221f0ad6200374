"""GGUF's ternary types TQ1_0 and TQ2_0 (BitNet b1.58): every weight is -1, 0 or +1 times one
float16 scale d per 256 weights.

    weight = d * (code - 1),    code in 0..2 (a trit)

The two store the same codes and d, packed two ways. TQ1_0 is 54 bytes, 1.6875 bits per weight:

    byte  0 ............ 47   48 ........ 51   52   53
         [ qs: 5 trits a byte ][ qh: 4 trits a byte ][ d (fp16, LE) ]
    qs byte j       (j < 32): the trits of weights j, 32 + j, 64 + j, 96 + j, 128 + j
    qs byte 32 + j  (j < 16): the trits of weights 160 + j, 176 + j, 192 + j, 208 + j, 224 + j
    qh byte j       (j < 4):  the trits of weights 240 + j, 244 + j, 248 + j, 252 + j

A byte's trits t_0..t_4 (t_0 the first weight's; qh has no t_4) are the base-3 number
n = 81 t_0 + 27 t_1 + 9 t_2 + 3 t_3 + t_4 (0..242), stored as the byte ceil(n * 256 / 243): the
fraction n / 243 of the byte's range. Multiplying the byte by 3^k (mod 256) drops the trits above
t_k, and (byte * 3^k mod 256) * 3 >> 8 reads t_k off the top. Every byte reads as some trits, but
only 243 of the 256 bytes of qs (81 of qh) are ever written.

TQ2_0 is 66 bytes, 2.0625 bits per weight: four 2-bit codes a byte, then d.

    byte  0 ........................ 63   64   65
         [ qs: four 2-bit codes a byte ][ d (fp16, LE) ]
    byte 32 g + j, bits 2k..2k+1: the code of weight 128 g + 32 k + j    (g < 2, k < 4, j < 32)

The code 3, which no quantizer writes, reads as +2.

The quantizer is ggml's reference (`quantize_row_tq1_0_ref`, `quantize_row_tq2_0_ref`), as gguf-py
mirrors it: d = max |w| of the block in float32, the codes are roundf(w * (1/d)) + 1 (roundf rounds
half away from zero; 1/d is 0 for a block of zeros), and d is then stored as float16. The decoder
multiplies d, widened to float32, by code - 1 in float32. gguf-py's quants are the oracle.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from lab.formats._blocks import float_input, grouped
from lab.formats._ggml import F16_MAX, reciprocal_or_zero, refuse_beyond_reach
from lab.formats._tensor import GGUFBlockTensor, Lane, Part, block_field, block_format, gguf_block, half, rows, stored
from lab.formats.registry import register
from lab.numbers import format_number

TQ1_0_BLOCK = gguf_block("TQ1_0", 256, 54)  # qs, qh, d
TQ2_0_BLOCK = gguf_block("TQ2_0", 256, 66)  # qs, d
BLOCK_WEIGHTS = TQ1_0_BLOCK.weights  # 256, as TQ2_0's
CODE_MAX = 2  # the largest code a quantizer writes: +1

# TQ1_0's three runs of base-3 bytes: (first weight, bytes, trits a byte), in byte order
TRIT_RUNS = ((0, 32, 5), (160, 16, 5), (240, 4, 4))
QS_BYTES, QH_BYTES = 48, 4
#: what the trit t_k of a byte is worth in its base-3 number: 81, 27, 9, 3, 1
PLACE_VALUES = 3 ** np.arange(4, -1, -1, dtype=np.uint16)
#: what a byte is multiplied by (mod 256) to bring its trit t_k to the top: 1, 3, 9, 27, 81
LIFTS = 3 ** np.arange(5, dtype=np.uint8)
# TQ2_0: four codes a byte, at these shifts, in two runs of 32 bytes
TWO_BIT_SHIFTS = np.arange(0, 8, 2, dtype=np.uint8)
CODE_GROUPS = 2


def pack_trits(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Trits [..., 256] -> TQ1_0's base-3 bytes qs [..., 48] and qh [..., 4]."""
    runs = []
    for first, n_bytes, per_byte in TRIT_RUNS:
        trits = codes[..., first : first + n_bytes * per_byte].reshape(*codes.shape[:-1], per_byte, n_bytes)
        number = (trits.astype(np.uint16) * PLACE_VALUES[:per_byte, None]).sum(axis=-2, dtype=np.uint16)
        runs.append(((number * 256 + 242) // 243).astype(np.uint8))  # ceil(n * 256 / 243)
    return np.concatenate(runs[:2], axis=-1), runs[2]


def read_trits(qs: np.ndarray, qh: np.ndarray) -> np.ndarray:
    """TQ1_0's base-3 bytes qs [..., 48] and qh [..., 4] -> the trits they hold [..., 256], uint8."""
    runs = (qs[..., :32], qs[..., 32:], qh)
    trits = []
    for run, (_, _, per_byte) in zip(runs, TRIT_RUNS, strict=True):
        lifted = run[..., None, :] * LIFTS[:per_byte, None]  # uint8: the product mod 256
        trits.append(((lifted.astype(np.uint16) * 3) >> 8).reshape(*run.shape[:-1], -1))
    return np.concatenate(trits, axis=-1).astype(np.uint8)


def trit_place(lane: int) -> tuple[int, int]:
    """Where TQ1_0 keeps the trit of weight `lane` (0..255): its byte in the block, and k, its trit
    t_k in that byte (0 the top)."""
    start = 0
    for first, n_bytes, per_byte in TRIT_RUNS:
        if lane < first + n_bytes * per_byte:
            k, j = divmod(lane - first, n_bytes)
            return start + j, k
        start += n_bytes
    raise IndexError(lane)


def pack_two_bit_codes(codes: np.ndarray) -> np.ndarray:
    """2-bit codes [..., n * 256] -> TQ2_0's qs bytes [..., n, 64]."""
    by_shift = codes.reshape(*codes.shape[:-1], -1, CODE_GROUPS, len(TWO_BIT_SHIFTS), 32)
    packed = np.bitwise_or.reduce(by_shift << TWO_BIT_SHIFTS[:, None], axis=-2)
    return packed.reshape(*packed.shape[:-2], -1)


def read_two_bit_codes(qs: np.ndarray) -> np.ndarray:
    """TQ2_0's qs bytes [..., n, 64] -> the 2-bit codes they hold [..., n * 256]."""
    by_group = qs.reshape(*qs.shape[:-1], CODE_GROUPS, 1, 32)
    return ((by_group >> TWO_BIT_SHIFTS[:, None]) & np.uint8(3)).reshape(*qs.shape[:-2], -1)


class TernaryTensor(GGUFBlockTensor):
    """What TQ1_0 and TQ2_0 share: codes 0..2 (TQ2_0's 3 reads as +2) [..., 256k] and a float16 d
    per 256 weights [..., k]; weight = d * (code - 1). A subclass says where a weight's code sits."""

    def dequantize(self) -> np.ndarray:
        values = grouped(self.codes.astype(np.float32) - np.float32(1), BLOCK_WEIGHTS)
        with np.errstate(over="ignore", invalid="ignore"):  # an inf or NaN d decodes as such, as in ggml
            weights = self.d.astype(np.float32)[..., None] * values
        return weights.reshape(self.shape)

    def code_fields(self, at: Lane) -> tuple[dict, int]:
        """explain's entries for where the weight's code sits, and the number its value is one less
        than: its trit (TQ1_0), or its code (TQ2_0)."""
        raise NotImplementedError

    def explain_lane(self, at: Lane) -> dict:
        fields, number = self.code_fields(at)
        d = float(self.d[at.block_position])
        weight = float(np.float32(d) * np.float32(number - 1))
        return {
            **fields,
            "value": number - 1,
            "d": d,
            "weight": weight,
            "formula": f"{format_number(d)} \u00d7 ({number} \u2212 1) = {format_number(weight)}",
        }


class TQ1_0Tensor(TernaryTensor, block=TQ1_0_BLOCK):
    """TQ1_0's base-3 bytes qs [..., k, 48] and qh [..., k, 4], and d [..., k]; `codes` are the trits
    they hold [..., 256k]. The tensor keeps the bytes, as no field per weight can: any byte reads
    as trits, but only some bytes are written, so the bytes are what round-trips."""

    qs: np.ndarray = block_field(
        "qs bytes",
        per_block=(QS_BYTES,),
        dtype=np.uint8,
        gguf=stored(Part("qs", QS_BYTES, "trits, five a byte", at=0), write=lambda qs: qs, read=np.copy),
    )
    qh: np.ndarray = block_field(
        "qh bytes",
        per_block=(QH_BYTES,),
        dtype=np.uint8,
        gguf=stored(Part("qh", QH_BYTES, "trits, four a byte", at=QS_BYTES), write=lambda qh: qh, read=np.copy),
    )
    d: np.ndarray = block_field(per_block=(), dtype=np.float16, gguf=half(at=QS_BYTES + QH_BYTES))

    @property
    def shape(self) -> tuple[int, ...]:
        return (*self.d.shape[:-1], self.d.shape[-1] * BLOCK_WEIGHTS)

    @property
    def codes(self) -> np.ndarray:
        """The trit of every weight, 0..2 [..., 256k], read from qs and qh."""
        return rows(read_trits(self.qs, self.qh))

    def code_fields(self, at: Lane) -> tuple[dict, int]:
        byte, k = trit_place(at.lane)
        part = "qs" if byte < QS_BYTES else "qh"
        block = self.qs[at.block_position] if part == "qs" else self.qh[at.block_position]
        code = int(block[byte if part == "qs" else byte - QS_BYTES])  # the byte: five weights' code
        trit = code * int(LIFTS[k]) % 256 * 3 >> 8
        fields = {
            "byte": byte,
            "part": part,
            "code": code,
            "trit_place": k,
            "trit": trit,
            "trit_formula": f"({code} \u00d7 {3**k} mod 256) \u00d7 3 >> 8 = {trit}",
        }
        return fields, trit


class TQ2_0Tensor(TernaryTensor, block=TQ2_0_BLOCK):
    """2-bit codes 0..3 [..., 256k] and a float16 d per 256 codes [..., k]."""

    codes: np.ndarray = block_field(
        dtype=np.uint8,
        low=0,
        high=3,
        gguf=stored(
            Part("qs", 64, "2-bit codes, four a byte", at=0), write=pack_two_bit_codes, read=read_two_bit_codes
        ),
    )
    d: np.ndarray = block_field(per_block=(), dtype=np.float16, gguf=half(at=64))

    def code_fields(self, at: Lane) -> tuple[dict, int]:
        group, rest = divmod(at.lane, 128)
        k, j = divmod(rest, 32)
        code = int(self.codes[at.position])
        return {"byte": 32 * group + j, "shift": int(TWO_BIT_SHIFTS[k]), "code": code}, code


def ternary_codes(w: ArrayLike, title: str) -> tuple[np.ndarray, np.ndarray]:
    """Float weights [..., 256k] -> ggml's codes 0..2 [..., 256k] and float16 d [..., k]."""
    weights, _ = float_input(w, BLOCK_WEIGHTS)
    refuse_beyond_reach(weights, F16_MAX, title)  # d is the largest magnitude, kept in float16
    blocks = grouped(weights, BLOCK_WEIGHTS)
    d = np.abs(blocks).max(axis=-1)
    # a block of zeros has d = 0, 1/d = 0 and codes 1 (zero), as in ggml; so does a d below 2^-128,
    # whose 1/d overflows (ggml's codes there are NaN cast to an integer), and which float16 stores as 0
    scaled = blocks * reciprocal_or_zero(d)[..., None]
    # C's roundf: half away from zero, where numpy's rint would round half to even
    magnitude = np.abs(scaled)
    floored = np.floor(magnitude)
    rounded = np.sign(scaled) * (floored + np.floor(2 * (magnitude - floored)))
    codes = (rounded + 1).astype(np.uint8)
    return codes.reshape(weights.shape), d.astype(np.float16)


def quantize_tq1_0(w: ArrayLike) -> TQ1_0Tensor:
    """Quantize float weights [..., 256k] as ggml's reference TQ1_0 quantizer does, byte for byte."""
    codes, d = ternary_codes(w, "TQ1_0")
    qs, qh = pack_trits(grouped(codes, BLOCK_WEIGHTS))
    return TQ1_0Tensor(qs=qs, qh=qh, d=d)


def quantize_tq2_0(w: ArrayLike) -> TQ2_0Tensor:
    """Quantize float weights [..., 256k] as ggml's reference TQ2_0 quantizer does, byte for byte."""
    codes, d = ternary_codes(w, "TQ2_0")
    return TQ2_0Tensor(codes=codes, d=d)


TQ1_0_FORMAT = register(
    block_format(
        TQ1_0_BLOCK,
        name="tq1_0",
        quantize=quantize_tq1_0,
        family="gguf",
        summary="BitNet b1.58's ternary weights: -1, 0 or +1 times a float16 scale, five trits a byte",
        tensor=TQ1_0Tensor,
    )
)
TQ2_0_FORMAT = register(
    block_format(
        TQ2_0_BLOCK,
        name="tq2_0",
        quantize=quantize_tq2_0,
        family="gguf",
        summary="BitNet b1.58's ternary weights: -1, 0 or +1 times a float16 scale, four 2-bit codes a byte",
        tensor=TQ2_0Tensor,
    )
)
