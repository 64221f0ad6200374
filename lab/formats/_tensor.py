"""The one block table and the one tensor base every format stands on.

In the style of gguf-py (GGML_QUANT_SIZES in gguf/constants.py, `__init_subclass__` in
gguf/quants.py): a format module declares its block once, which enters it in `BLOCKS`, and its
tensor class names that block when it subclasses the base. Each array the tensor holds is declared
once, as a field whose metadata says what it holds and where GGUF keeps it:

    BLOCK = gguf_block("Q4_1", 32, 20)

    class Q4_1Tensor(GGUFBlockTensor, block=BLOCK):
        codes: np.ndarray = block_field(dtype=np.uint8, low=0, high=15, gguf=nibble_halves(at=4))
        d: np.ndarray = block_field(per_block=(), dtype=np.float16, gguf=half(at=0))
        m: np.ndarray = block_field(per_block=(), dtype=np.float16, gguf=half(at=2))

The base makes every subclass a frozen dataclass and derives from those fields the tensor's checks
(`fields`), its GGUF byte map (`gguf_layout`, which must tile GGUF's block exactly), `to_gguf` and
`from_gguf`, besides `shape`, `block_size`, `bits_per_weight` and the scaffolding of `explain`;
`block_format` makes the registry's record from the same block and class. A format module keeps its
block, its layout diagram, its fields, its quantizer and its decoder; a byte packing of its own
(Q4_K's 6-bit scales, Q5's fifth bits) is a write/read pair declared at the field it packs. Adding a
GGUF block format (Q5_0, Q3_K) is one such module.
"""

from __future__ import annotations

import dataclasses
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


#: every format's block, by title, in the order the format modules declare them (see gguf_block and
#: element_block). MLX affine's blocks, one per bits, group size and scale width, are made by
#: lab.formats.affine and are not entered here
BLOCKS: dict[str, Block] = {}


def _entered(block: Block) -> Block:
    """The block, entered in BLOCKS by its title; another block under a title already entered is refused."""
    entered = BLOCKS.setdefault(block.title, block)
    if entered != block:
        raise LabError(f"a block titled {block.title} is declared already, as {entered}")
    return entered


def gguf_block(title: str, weights: int, n_bytes: int) -> Block:
    """Declares a format whose block is GGUF's, as gguf-py's GGML_QUANT_SIZES has it: `weights` weights
    in `n_bytes` bytes, 8 * n_bytes / weights bits a weight. The block is entered in BLOCKS."""
    return _entered(Block(title, weights, 8 * n_bytes, GGUFBlock(weights, n_bytes)))


def element_block(
    title: str, weights: int, element_bits: int, scale_bits: int, gguf: tuple[int, int] | None = None
) -> Block:
    """Declares a block of `weights` codes of `element_bits` each and `scale_bits` of scales; `gguf` is
    GGUF's (weights, bytes) where GGUF has the format. The block is entered in BLOCKS."""
    return _entered(
        Block(title, weights, weights * element_bits + scale_bits, None if gguf is None else GGUFBlock(*gguf))
    )


def block_format(
    block: Block, *, name: str, quantize: Callable, family: str, summary: str, tensor: type | None = None, **options
) -> Format:
    """The registry's record of a format with this block: its title, block size, bits per weight and
    GGUF type are the block's; `tensor` is the class `quantize` returns, whose from_gguf the record
    reads GGUF with where GGUF has the block; `options` are the Format's other fields."""
    if tensor is not None and block.gguf is not None:
        options.setdefault("from_gguf", tensor.from_gguf)
    return Format(
        name=name,
        title=block.title,
        block_size=block.weights,
        bits_per_weight=block.bits_per_weight,
        quantize=quantize,
        family=family,
        summary=summary,
        gguf_type=None if block.gguf is None else block.title,
        tensor=tensor,
        **options,
    )


# --------------------------------------------------------------------------------------------
# GGUF's bytes, as a field declares them
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Part:
    """A run of bytes at the same place in every GGUF block.

    name   the part's name; for a float16 part, the attribute it stores (d, dmin, m)
    size   its bytes
    words  what it holds, for a message about a short file
    at     the byte of the block it starts at
    half   one little-endian float16
    trace  the part notebook 11's byte trace follows: each byte holds the low four bits of two codes
    """

    name: str
    size: int
    words: str
    at: int = 0
    half: bool = False
    trace: bool = False


@dataclass(frozen=True)
class Stored:
    """Where a field sits in GGUF's block: the parts it takes, and the pair that writes and reads them.

    parts        its runs of bytes; a float16's part is named when the field is (see `named`)
    write        the field's values (then `with_fields`' values) -> each part's bytes, uint8
                 [..., n, size]; a tuple of them where there are several parts
    read         each part's bytes uint8 [..., n, size] -> the field's values; a tuple of them
                 (the field's first) where `with_fields` share the parts
    with_fields  fields whose bits share these parts (Q4_K's minimums beside its scales)
    """

    parts: tuple[Part, ...]
    write: Callable[..., np.ndarray | tuple[np.ndarray, ...]]
    read: Callable[..., Any]
    with_fields: tuple[str, ...] = ()

    def named(self, name: str) -> Stored:
        """The parts with the field's name where they have none (a float16 part's name is its field's)."""
        parts = tuple(part if part.name else dataclasses.replace(part, name=name, words=name) for part in self.parts)
        return dataclasses.replace(self, parts=parts)


def stored(*parts: Part, write: Callable, read: Callable, with_fields: tuple[str, ...] = ()) -> Stored:
    """A field kept in GGUF's `parts` by a packing of its own: `write` makes their bytes, `read` undoes it."""
    return Stored(parts, write, read, with_fields)


def fp16_bytes(values: np.ndarray) -> np.ndarray:
    """float16 values [..., n] -> their little-endian bytes [..., n, 2]."""
    return values.astype("<f2")[..., None].view(np.uint8)


def fp16_values(part: np.ndarray) -> np.ndarray:
    """Little-endian float16 bytes [..., n, 2] -> float16 [..., n]."""
    return part.copy().view("<f2")[..., 0].astype(np.float16)


def half(at: int) -> Stored:
    """One little-endian float16 a block, at byte `at`: the part takes the field's name."""
    return Stored((Part("", 2, "", at=at, half=True),), fp16_bytes, fp16_values)


def rows(per_block: np.ndarray) -> np.ndarray:
    """Values per block [..., n, m] as rows [..., n * m]: a block's codes back in the tensor's order."""
    return per_block.reshape(*per_block.shape[:-2], -1)


def split_blocks(raw: ArrayLike, block_bytes: int, title: str, layout: str) -> np.ndarray:
    """GGUF bytes [..., n * block_bytes] as uint8 blocks [..., n, block_bytes]; `layout` names the parts."""
    data = as_byte_array(raw, what=f"GGUF {title} bytes")
    if data.ndim == 0 or data.shape[-1] == 0 or data.shape[-1] % block_bytes:
        raise ShapeError(f"{title} data must be whole {block_bytes}-byte blocks ({layout}), got shape {data.shape}")
    return np.ascontiguousarray(data).reshape(*data.shape[:-1], -1, block_bytes)


# --------------------------------------------------------------------------------------------
# A field, declared once
# --------------------------------------------------------------------------------------------

#: the metadata keys a tensor's dataclass fields carry
FIELD_KEY = "lab.block_field"
GGUF_VALUE_KEY = "lab.gguf_value"


@dataclass(frozen=True)
class Field:
    """One array a tensor holds, as its checks and GGUF's bytes see it.

    name       the attribute
    words      what messages call it ("codes", "indices", "d")
    per_block  None for one value per weight [..., K]; else what a block adds to [..., K / block]:
               () for one value a block, (8,) for eight
    dtype      the dtype it must have (a DTypeError names it), with `low`..`high` the values it
               may hold, where they are narrower than the dtype's
    convert    instead of dtype and range: convert(values, tensor) makes the array from what was
               given, refusing what it cannot take (lab._arrays.as_code_array); the tensor then
               holds the array it made
    gguf       where GGUF's block keeps it, or None where GGUF does not
    """

    name: str
    words: str
    per_block: tuple[int, ...] | None = None
    dtype: type | None = None
    low: int | None = None
    high: int | None = None
    convert: Callable[[Any, Any], np.ndarray] | None = None
    gguf: Stored | None = None

    def pattern(self, block_size: int) -> str:
        if self.per_block is None:
            return f"[..., {block_size}k]"
        return "[..., " + ", ".join(["k", *map(str, self.per_block)]) + "]"


def block_field(
    words: str = "",
    per_block: tuple[int, ...] | None = None,
    dtype: type | None = None,
    *,
    low: int | None = None,
    high: int | None = None,
    convert: Callable[[Any, Any], np.ndarray] | None = None,
    gguf: Stored | None = None,
):
    """A tensor's array, declared once: a dataclass field whose metadata is its Field (see Field;
    `words` defaults to the attribute's name). The first such field of a tensor is the one per weight."""
    field = Field("", words, per_block, dtype, low, high, convert, gguf)
    return dataclasses.field(metadata={FIELD_KEY: field})


def gguf_value(value: Any, **options):
    """A field GGUF's bytes do not hold, and the value from_gguf gives it (MX's element: GGUF has
    MXFP4 only); `options` are dataclasses.field's (a default)."""
    return dataclasses.field(metadata={GGUF_VALUE_KEY: value}, **options)


# --------------------------------------------------------------------------------------------
# The base
# --------------------------------------------------------------------------------------------


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


def _declared(field: dataclasses.Field) -> Field:
    """A dataclass field's Field, named: its words and its float16 part take the attribute's name where unset."""
    declared = field.metadata[FIELD_KEY]
    gguf = None if declared.gguf is None else declared.gguf.named(field.name)
    return dataclasses.replace(declared, name=field.name, words=declared.words or field.name, gguf=gguf)


class BlockTensor:
    """What every format's tensor has: its block, its checked fields, its shape, and explain's frame.

    A subclass names its block (`block=BLOCK`), or has a `block` property where one class serves
    several blocks (MXTensor, by its element; AffineTensor, by its bits and group size). Every
    subclass is made a frozen dataclass (compared by identity: it holds arrays); its `block_field`s
    are its `fields`, checked after __init__. The first field sets the tensor's leading dimensions
    and its count of blocks: it is the one per weight, or, where no stored field is one per weight
    (TQ1_0's base-3 bytes hold five weights each), a field per block. It writes `explain_lane`,
    explain's own keys.
    """

    block: ClassVar[Block]
    fields: ClassVar[tuple[Field, ...]] = ()
    #: weights per subblock in a super-block format (Q6_K, IQ4_XS), whose explanations name the subblock
    subblock_weights: ClassVar[int | None] = None

    def __init_subclass__(cls, block: Block | None = None, **kwargs):
        super().__init_subclass__(**kwargs)
        if block is not None:
            cls.block = block
        dataclass(frozen=True, eq=False)(cls)
        cls.fields = tuple(_declared(field) for field in dataclasses.fields(cls) if FIELD_KEY in field.metadata)

    def __post_init__(self):
        fields = self.fields
        arrays = {}
        for field in fields:
            if field.convert is None:
                arrays[field.name] = np.asarray(getattr(self, field.name))
            else:
                arrays[field.name] = field.convert(getattr(self, field.name), self)
                object.__setattr__(self, field.name, arrays[field.name])
        exact = [field for field in fields if field.convert is None]
        if any(arrays[field.name].dtype != field.dtype for field in exact):
            raise DTypeError(
                f"{self.title} holds {_listing(f'{np.dtype(field.dtype).name} {field.words}' for field in exact)}, "
                f"got {_listing(str(arrays[field.name].dtype) for field in exact)}"
            )
        blocks = self._blocks_shape(arrays)
        if blocks is None or any(arrays[field.name].shape != self._field_shape(field, blocks) for field in fields):
            raise ShapeError(
                f"{self.title} needs {_listing(f'{field.words} {field.pattern(self.block_size)}' for field in fields)}, "
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

    def _blocks_shape(self, arrays: dict[str, np.ndarray]) -> tuple[int, ...] | None:
        """The tensor's leading dimensions and its count of blocks [..., K / block], from its first
        field; None where that field cannot be whole blocks."""
        first = self.fields[0]
        shape = arrays[first.name].shape
        if first.per_block is not None:
            lead = len(shape) - len(first.per_block)
            return shape[:lead] if lead > 0 else None
        if not shape or shape[-1] % self.block_size:
            return None
        return (*shape[:-1], shape[-1] // self.block_size)

    def _field_shape(self, field: Field, blocks: tuple[int, ...]) -> tuple[int, ...]:
        """The shape `field` must have in a tensor of these blocks [..., K / block]."""
        if field.per_block is None:
            return (*blocks[:-1], blocks[-1] * self.block_size)
        return (*blocks, *field.per_block)

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


class GGUFBlockTensor(BlockTensor):
    """A BlockTensor that GGUF holds: its bytes block by block, as its fields' `gguf` places say.

    `gguf_layout` is every field's parts in byte order, which must tile GGUF's block exactly (a
    class whose bytes are the tensor, Q4_K's, states its layout itself). `to_gguf` has each field
    write its parts and `from_gguf` splits the blocks once and has each field read its own.
    `gguf_block` is the block whose GGUF bytes `from_gguf` reads: the class's own, or MXFP4's for
    MXTensor, which holds MXFP8 too (GGUF has no MXFP8); `gguf_type` is its title.
    """

    gguf_block: ClassVar[Block]
    gguf_type: ClassVar[str]
    gguf_layout: ClassVar[tuple[Part, ...]]

    def __init_subclass__(cls, gguf_block: Block | None = None, **kwargs):
        super().__init_subclass__(**kwargs)
        gguf_block = kwargs.get("block") if gguf_block is None else gguf_block
        if gguf_block is None:
            return
        cls.gguf_block, cls.gguf_type = gguf_block, gguf_block.title
        if "gguf_layout" not in cls.__dict__:
            parts = (part for field in cls.fields if field.gguf is not None for part in field.gguf.parts)
            cls.gguf_layout = tuple(sorted(parts, key=lambda part: part.at))
        # the parts must fill GGUF's block exactly, or every block after the first is misread
        described, stored_bytes = sum(part.size for part in cls.gguf_layout), gguf_block.gguf.bytes
        if described != stored_bytes:
            raise LabError(
                f"{cls.__name__}'s GGUF parts are {described} bytes, but a {cls.gguf_type} block is {stored_bytes}"
            )
        ends = [0] + [part.at + part.size for part in cls.gguf_layout[:-1]]
        for part, end in zip(cls.gguf_layout, ends, strict=True):
            if part.at != end:
                raise LabError(f"{cls.__name__}'s GGUF part {part.name} starts at byte {part.at}, not {end}")

    @classmethod
    def gguf_part(cls, name: str) -> Part:
        """The part of GGUF's block called `name` ("qs"): where explanations find its bytes."""
        return next(part for part in cls.gguf_layout if part.name == name)

    @classmethod
    def traced_part(cls) -> Part | None:
        """The part notebook 11's byte trace follows (two 4-bit nibbles of codes a byte), or None."""
        return next((part for part in cls.gguf_layout if part.trace), None)

    def owner_words(self, explained: dict) -> str:
        """Which scale owns a weight, in words, from explain's keys: the byte trace's owner column,
        which a format with a traced part writes."""
        raise NotImplementedError

    @classmethod
    def layout_words(cls) -> str:
        """The block's parts in words, for a message about bytes that are not whole blocks."""
        return " + ".join(f"{part.size} byte{'s' * (part.size > 1)} of {part.words}" for part in cls.gguf_layout)

    @classmethod
    def split_gguf(cls, raw: ArrayLike) -> np.ndarray:
        """GGUF bytes [..., k * block bytes] -> uint8 blocks [..., k, block bytes], refusing partial blocks."""
        return split_blocks(raw, cls.gguf_block.gguf.bytes, cls.gguf_type, cls.layout_words())

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
        blocks = np.empty((*self.shape[:-1], self.shape[-1] // gguf.weights, gguf.bytes), np.uint8)
        for field in self.fields:
            if field.gguf is None:
                continue
            written = field.gguf.write(*(getattr(self, name) for name in (field.name, *field.gguf.with_fields)))
            for part, part_bytes in zip(field.gguf.parts, _as_tuple(written, field.gguf.parts), strict=True):
                blocks[..., part.at : part.at + part.size] = part_bytes
        return blocks.reshape(*self.shape[:-1], -1)

    @classmethod
    def from_gguf(cls, raw: ArrayLike) -> Self:
        """GGUF bytes [..., k * block bytes] -> the tensor they hold."""
        blocks = cls.split_gguf(raw)
        values = {
            field.name: field.metadata[GGUF_VALUE_KEY]
            for field in dataclasses.fields(cls)
            if GGUF_VALUE_KEY in field.metadata
        }
        for field in cls.fields:
            if field.gguf is None:
                continue
            read = field.gguf.read(*(blocks[..., part.at : part.at + part.size] for part in field.gguf.parts))
            names = (field.name, *field.gguf.with_fields)
            values.update(zip(names, read if field.gguf.with_fields else (read,), strict=True))
        return cls(**values)


def _as_tuple(written, parts: tuple[Part, ...]) -> tuple:
    """A write's bytes as one entry per part: a write for one part returns the array itself."""
    return (written,) if len(parts) == 1 else written
