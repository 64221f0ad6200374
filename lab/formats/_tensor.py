"""The one block table and the one tensor base every format stands on.

In the style of gguf-py (GGML_QUANT_SIZES in gguf/constants.py, `__init_subclass__` in
gguf/quants.py): a format's numbers come from one row of `BLOCKS`, and its tensor class names the
row when it subclasses the base,

    class Q4_0Tensor(HalvesTensor, block="Q4_0"): ...

The base then gives the tensor its checks, `shape`, `block_size`, `bits_per_weight`, the scaffolding
of `explain`, and, for a format GGUF holds, `to_gguf` and `from_gguf` from a description of the
block's bytes; `block_format` makes the registry's record from the same row. A format module keeps
its layout diagram, its fields, its quantizer and its decoder. Adding a GGUF block format (Q5_0,
Q3_K) is a row here and one such module.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple, Self

import numpy as np
from numpy.typing import ArrayLike

from lab._arrays import as_byte_array
from lab.errors import DTypeError, LabError, ShapeError, UnsupportedTypeError
from lab.formats._blocks import element_index
from lab.formats.registry import Format

# --------------------------------------------------------------------------------------------
# The table
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GGUFBlock:
    """A block as GGUF stores it: gguf-py's GGML_QUANT_SIZES entry."""

    weights: int
    bytes: int


@dataclass(frozen=True)
class Block:
    """One format's block: the weights that share its scales, and every bit stored for them.

    title    how pages name the format ("Q4_0"); where GGUF has it, GGUF's type name
    weights  weights per block: a row is a whole number of blocks
    bits     the bits one block stores: its codes and its scales (and minimums or biases)
    gguf     the block GGUF stores, or None where GGUF has no such type; NVFP4's holds four
             of the format's blocks of 16
    """

    title: str
    weights: int
    bits: int
    gguf: GGUFBlock | None = None

    def __post_init__(self):
        # A GGUF block of another size must still cost the same per weight
        if self.gguf is not None and 8 * self.gguf.bytes * self.weights != self.bits * self.gguf.weights:
            raise LabError(
                f"{self.title}: GGUF's {self.gguf.bytes} bytes per {self.gguf.weights} weights are not "
                f"{self.bits} bits per {self.weights}"
            )

    @property
    def bits_per_weight(self) -> float:
        return self.bits / self.weights


def gguf_block(title: str, weights: int, n_bytes: int) -> Block:
    """A format whose block is GGUF's: `weights` weights in `n_bytes` bytes, 8 * n_bytes / weights bits a weight."""
    return Block(title, weights, 8 * n_bytes, GGUFBlock(weights, n_bytes))


def element_block(
    title: str, weights: int, element_bits: int, scale_bits: int, gguf: tuple[int, int] | None = None
) -> Block:
    """A block of `weights` codes of `element_bits` each and `scale_bits` of scales; `gguf` is GGUF's (weights, bytes)."""
    return Block(title, weights, weights * element_bits + scale_bits, None if gguf is None else GGUFBlock(*gguf))


#: every format's block, by title: GGUF's block formats as GGML_QUANT_SIZES has them (weights,
#: bytes), the others by what a block stores. MLX affine's blocks, one per bits, group size and
#: scale width, are made by lab.formats.affine
BLOCKS: dict[str, Block] = {
    block.title: block
    for block in (
        element_block("MXFP4", 32, element_bits=4, scale_bits=8, gguf=(32, 17)),  # an E8M0 scale
        element_block("MXFP8", 32, element_bits=8, scale_bits=8),  # an E8M0 scale
        element_block("NVFP4", 16, element_bits=4, scale_bits=8, gguf=(64, 36)),  # an E4M3 scale
        gguf_block("Q4_K", 256, 144),
        gguf_block("Q8_0", 32, 34),
        gguf_block("Q4_0", 32, 18),
        gguf_block("Q4_1", 32, 20),
        gguf_block("Q6_K", 256, 210),
        gguf_block("IQ4_NL", 32, 18),
        gguf_block("IQ4_XS", 256, 136),
        gguf_block("Q5_0", 32, 22),  # d, 32 fifth bits (qh), 16 bytes of low nibbles
        gguf_block("Q5_1", 32, 24),  # d, m, qh, 16 bytes of low nibbles
        gguf_block("Q5_K", 256, 176),  # d, dmin, 12 bytes of 6-bit scales and mins, qh, low nibbles
        gguf_block("Q3_K", 256, 110),  # hmask, low 2-bit codes, 12 bytes of 6-bit scales, d
        gguf_block("Q2_K", 256, 84),  # 4-bit scales and mins, 2-bit codes, d, dmin
        element_block("NF4", 64, element_bits=4, scale_bits=32),  # a float32 absmax
    )
}


def block_format(block: Block, *, name: str, quantize: Callable, family: str, summary: str, **options) -> Format:
    """The registry's record of a format with this block: its title, block size, bits per weight and
    GGUF type are the block's; `options` are the Format's other fields (from_gguf where GGUF has it)."""
    return Format(
        name=name,
        title=block.title,
        block_size=block.weights,
        bits_per_weight=block.bits_per_weight,
        quantize=quantize,
        family=family,
        summary=summary,
        gguf_type=None if block.gguf is None else block.title,
        **options,
    )


# --------------------------------------------------------------------------------------------
# The base
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Field:
    """One array a tensor holds, as its checks see it.

    name       the attribute
    words      what messages call it ("codes", "indices", "d")
    per_block  None for one value per weight [..., K]; else what a block adds to [..., K / block]:
               () for one value a block, (8,) for eight
    dtype      the dtype it must have (a DTypeError names it), with `low`..`high` the values it
               may hold, where they are narrower than the dtype's
    convert    instead of dtype and range: what makes the array from what was given, refusing what
               it cannot take (lab._arrays.as_code_array); the tensor then holds the array it made
    """

    name: str
    words: str
    per_block: tuple[int, ...] | None = None
    dtype: type | None = None
    low: int | None = None
    high: int | None = None
    convert: Callable[[Any], np.ndarray] | None = None

    def pattern(self, block_size: int) -> str:
        if self.per_block is None:
            return f"[..., {block_size}k]"
        return "[..., " + ", ".join(["k", *map(str, self.per_block)]) + "]"


class Lane(NamedTuple):
    """Where one weight sits: its full index, its block along the row and its place in that block."""

    position: tuple[int, ...]
    block: int
    lane: int

    @property
    def block_position(self) -> tuple[int, ...]:
        """The index of the weight's block in the tensor's per-block arrays [..., K / block]."""
        return (*self.position[:-1], self.block)


def _listing(items: Iterable[str]) -> str:
    """Items joined as a sentence lists them: a; a and b; a, b and c."""
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


class BlockTensor:
    """What every format's tensor has: its block, its checked fields, its shape, and explain's frame.

    A subclass names its row of BLOCKS (`block="Q4_0"`), or has a `block` property where one
    class serves several blocks (MXTensor, by its element; AffineTensor, by its bits and group
    size). Its `fields` list the arrays it holds, the one per weight first; a frozen dataclass
    subclass gets them checked after __init__. It writes `explain_lane`, explain's own keys.
    """

    block: ClassVar[Block]
    fields: ClassVar[tuple[Field, ...]] = ()
    #: weights per subblock in a super-block format (Q6_K, IQ4_XS), whose explanations name the subblock
    subblock_weights: ClassVar[int | None] = None

    def __init_subclass__(cls, block: str | None = None, **kwargs):
        super().__init_subclass__(**kwargs)
        if block is not None:
            cls.block = BLOCKS[block]

    def __post_init__(self):
        fields = self.fields
        arrays = {}
        for field in fields:
            if field.convert is None:
                arrays[field.name] = np.asarray(getattr(self, field.name))
            else:
                arrays[field.name] = field.convert(getattr(self, field.name))
                object.__setattr__(self, field.name, arrays[field.name])
        exact = [field for field in fields if field.convert is None]
        if any(arrays[field.name].dtype != field.dtype for field in exact):
            raise DTypeError(
                f"{self.title} holds {_listing(f'{np.dtype(field.dtype).name} {field.words}' for field in exact)}, "
                f"got {_listing(str(arrays[field.name].dtype) for field in exact)}"
            )
        weights, size = arrays[fields[0].name], self.block_size
        if (
            weights.ndim == 0
            or weights.shape[-1] % size
            or any(
                arrays[field.name].shape != (*weights.shape[:-1], weights.shape[-1] // size, *field.per_block)
                for field in fields[1:]
            )
        ):
            raise ShapeError(
                f"{self.title} needs {_listing(f'{field.words} {field.pattern(size)}' for field in fields)}, "
                f"got {_listing(str(arrays[field.name].shape) for field in fields)}"
            )
        for field in exact:
            values = arrays[field.name]
            if field.low is None or not values.size:
                continue
            # a bound at the dtype's own end (uint8 codes from 0) holds already: no pass over the values for it
            limits = np.iinfo(field.dtype)
            least = values.min() if field.low > limits.min else field.low
            most = values.max() if field.high < limits.max else field.high
            if least < field.low or most > field.high:
                raise DTypeError(
                    f"{self.title} {field.words} are {field.low}..{field.high}; "
                    f"got {int(least if least < field.low else most)}"
                )

    @property
    def title(self) -> str:
        return self.block.title

    @property
    def block_size(self) -> int:
        return self.block.weights

    @property
    def bits_per_weight(self) -> float:
        return self.block.bits_per_weight

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.codes.shape)

    def locate(self, index) -> Lane:
        """A flat index or a full index tuple (see _blocks.element_index) as the weight's place."""
        position = element_index(self.shape, index)
        return Lane(position, *divmod(position[-1], self.block_size))

    def explain(self, index) -> dict:
        """One weight traced from what its block stores to its value."""
        at = self.locate(index)
        return {**self.explain_head(at), **self.explain_lane(at)}

    def explain_head(self, at: Lane) -> dict:
        """The keys an explanation starts with: where the weight sits."""
        subblock = {} if self.subblock_weights is None else {"subblock": at.lane // self.subblock_weights}
        return {"position": at.position, "block": at.block, **subblock, "position_in_block": at.lane}

    def explain_lane(self, at: Lane) -> dict:
        """The format's own keys: the stored fields the weight is made of, and the arithmetic."""
        raise NotImplementedError


# --------------------------------------------------------------------------------------------
# GGUF's bytes
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Part:
    """A run of bytes at the same place in every GGUF block.

    name   the part's name; for a float16 part, the attribute it stores (d, dmin, m)
    size   its bytes
    words  what it holds, for a message about a short file
    half   one little-endian float16, which the base reads and writes itself
    """

    name: str
    size: int
    words: str
    half: bool = False


def half(name: str) -> Part:
    """A part holding the float16 attribute `name` (little-endian)."""
    return Part(name, 2, name, half=True)


def split_blocks(raw: ArrayLike, block_bytes: int, title: str, layout: str) -> np.ndarray:
    """GGUF bytes [..., n * block_bytes] as uint8 blocks [..., n, block_bytes]; `layout` names the parts."""
    data = as_byte_array(raw, what=f"GGUF {title} bytes")
    if data.ndim == 0 or data.shape[-1] == 0 or data.shape[-1] % block_bytes:
        raise ShapeError(f"{title} data must be whole {block_bytes}-byte blocks ({layout}), got shape {data.shape}")
    return np.ascontiguousarray(data).reshape(*data.shape[:-1], -1, block_bytes)


def fp16_field(blocks: np.ndarray, offset: int) -> np.ndarray:
    """The little-endian float16 at byte `offset` of every block [..., n, B] -> float16 [..., n]."""
    return blocks[..., offset : offset + 2].copy().view("<f2")[..., 0].astype(np.float16)


def fp16_bytes(values: np.ndarray) -> np.ndarray:
    """float16 values [..., n] -> their little-endian bytes [..., n, 2]."""
    return values.astype("<f2")[..., None].view(np.uint8)


def rows(per_block: np.ndarray) -> np.ndarray:
    """Values per block [..., n, m] as rows [..., n * m]: a block's codes back in the tensor's order."""
    return per_block.reshape(*per_block.shape[:-2], -1)


class GGUFBlockTensor(BlockTensor):
    """A BlockTensor that GGUF holds: its bytes block by block, as `gguf_layout` lists the parts.

    A subclass writes `gguf_parts` (the bytes of each part but the float16 ones) and
    `fields_from_gguf` (the inverse); the base splits and joins the blocks and reads and writes
    the float16 parts. `gguf_type` is the GGUF type whose bytes `from_gguf` reads: the block's
    own, or MXFP4 for MXTensor, which holds MXFP8 too (GGUF has no MXFP8).
    """

    gguf_type: ClassVar[str]
    gguf_layout: ClassVar[tuple[Part, ...]]

    def __init_subclass__(cls, gguf_type: str | None = None, **kwargs):
        super().__init_subclass__(**kwargs)
        if gguf_type is None and "block" in kwargs:
            gguf_type = cls.block.title
        if gguf_type is None:
            return
        cls.gguf_type = gguf_type
        # the parts must fill GGUF's block exactly, or every block after the first is misread
        described, stored = sum(part.size for part in cls.gguf_layout), BLOCKS[gguf_type].gguf.bytes
        if described != stored:
            raise LabError(f"{cls.__name__}'s GGUF parts are {described} bytes, but a {gguf_type} block is {stored}")

    def gguf_parts(self) -> dict[str, np.ndarray]:
        """Each part's bytes, uint8 [..., K / GGUF's block weights, size], but the float16 parts'."""
        raise NotImplementedError

    @classmethod
    def fields_from_gguf(cls, parts: dict[str, np.ndarray]) -> dict[str, Any]:
        """The tensor's fields but the float16 ones, from each part's bytes uint8 [..., n, size]."""
        raise NotImplementedError

    def to_gguf(self) -> np.ndarray:
        """The blocks in GGUF's layout, uint8 [..., K / block weights * block bytes]."""
        gguf = self.block.gguf
        if gguf is None:
            raise UnsupportedTypeError(f"GGUF has no {self.title} tensor type")
        if self.shape[-1] % gguf.weights:
            raise ShapeError(
                f"GGUF {self.title} blocks hold {gguf.weights} weights; the last dimension {self.shape[-1]} "
                f"is not a multiple of {gguf.weights}"
            )
        parts = self.gguf_parts()
        raw = [fp16_bytes(getattr(self, part.name)) if part.half else parts[part.name] for part in self.gguf_layout]
        return np.concatenate(raw, axis=-1).reshape(*self.shape[:-1], -1)

    @classmethod
    def from_gguf(cls, raw: ArrayLike) -> Self:
        """GGUF bytes [..., k * block bytes] -> the tensor they hold."""
        layout = " + ".join(f"{part.size} byte{'s' * (part.size > 1)} of {part.words}" for part in cls.gguf_layout)
        blocks = split_blocks(raw, BLOCKS[cls.gguf_type].gguf.bytes, cls.gguf_type, layout)
        halves, parts, start = {}, {}, 0
        for part in cls.gguf_layout:
            if part.half:
                halves[part.name] = fp16_field(blocks, start)
            else:
                parts[part.name] = blocks[..., start : start + part.size]
            start += part.size
        return cls(**halves, **cls.fields_from_gguf(parts))
