"""GGUF files: a bounded validating reader, the tensor inventory, what a recipe label really
means, decoding with the lab's codecs, and writing files with the lab's quantizers.

Reading is two steps. First a small pure-Python walker checks the header, the key/value section
and the tensor-info section against the file's real size: every count and length is compared
with the bytes that remain *before* anything is read for it, so a file that claims 2^60 tensors
or a string longer than itself is rejected at once, with a GGUFFormatError that names the
problem. Only a file that passes is handed to gguf-py's memory-mapped `GGUFReader`, whose tensor
list is then cross-checked against the walker's. gguf-py's reader is not written for hostile
input: it loops over whatever counts the header claims and turns out-of-range reads into empty
arrays, so without the walker a malformed file surfaces as an IndexError, a KeyError or a very
long loop rather than a clear message.

Nothing in a file's metadata is executed or used as a path; keys and values are only data.

    gf = open_gguf("model.gguf")
    gf.inventory()               # one row per tensor: name, type, shape, bytes, bits per weight
    type_summary(gf)             # one row per tensor type
    explain_recipe(gf)           # what a label like Q4_K_M means in this particular file
    gf.decode("blk.0.attn_q.weight")

Shapes are given outermost first, as numpy and PyTorch write them; GGUF's own `ne` list runs
innermost first, so ne[0] is the row length.
"""

from __future__ import annotations

import mmap
import os
import re
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

import gguf
import numpy as np

from lab._arrays import bfloat16_bits_to_float32, to_float32_input
from lab.errors import DTypeError, GGUFFormatError, LabError, NonFiniteError, ShapeError, UnsupportedTypeError
from lab.formats import by_gguf_type, q4k, with_gguf
from lab.formats.q8_0 import BLOCK_WEIGHTS as Q8_0_BLOCK_WEIGHTS

MAGIC = b"GGUF"
SUPPORTED_VERSIONS = (2, 3)
DEFAULT_ALIGNMENT = 32
#: ggml's GGML_MAX_DIMS
MAX_DIMS = 4
#: an array may hold arrays of scalars or strings, no deeper
MAX_ARRAY_NESTING = 2
HEADER_BYTES = 24  # magic, version, tensor count, key/value count
#: the fewest bytes one entry can occupy, used to bound counts by the bytes that remain
MIN_KV_BYTES = 8 + 4 + 1  # key length, value type, a one-byte value
MIN_TENSOR_INFO_BYTES = 8 + 4 + 8 + 4 + 8  # name length, n_dims, one dimension, type, offset
INT64_MAX = 2**63 - 1
#: names gguf-py's reader gives the header fields; a key with one of them makes it raise KeyError
READER_RESERVED_KEYS = ("GGUF.version", "GGUF.tensor_count", "GGUF.kv_count")
#: the namespace of those names; write_gguf refuses every key in it, so no later header field can clash
READER_RESERVED_PREFIX = "GGUF."
ALIGNMENT_KEY = "general.alignment"
UINT32_MAX = 2**32 - 1
#: the largest finite float16
F16_MAX = float(np.finfo(np.float16).max)

#: GGUF value types: id -> (name, struct code or None, fixed size or None)
VALUE_TYPES: dict[int, tuple[str, str | None, int | None]] = {
    0: ("UINT8", "<B", 1),
    1: ("INT8", "<b", 1),
    2: ("UINT16", "<H", 2),
    3: ("INT16", "<h", 2),
    4: ("UINT32", "<I", 4),
    5: ("INT32", "<i", 4),
    6: ("FLOAT32", "<f", 4),
    7: ("BOOL", "<?", 1),
    8: ("STRING", None, None),
    9: ("ARRAY", None, None),
    10: ("UINT64", "<Q", 8),
    11: ("INT64", "<q", 8),
    12: ("FLOAT64", "<d", 8),
}
STRING_TYPE = 8
UINT32_TYPE = 4

#: ggml tensor types: id -> (name, weights per block, bytes per block), from gguf-py's own tables
TENSOR_TYPES: dict[int, tuple[str, int, int]] = {
    int(qtype): (qtype.name, *gguf.GGML_QUANT_SIZES[qtype]) for qtype in gguf.GGML_QUANT_SIZES
}
TYPE_IDS = {name: type_id for type_id, (name, _, _) in TENSOR_TYPES.items()}
#: float types GGUF stores element by element (the block formats come from the registry)
FLOAT_TYPES = ("F32", "F16", "BF16")
#: tensor types the lab decodes: the float types and every registry format GGUF has
DECODABLE_TYPES = (*FLOAT_TYPES, *(fmt.gguf_type for fmt in with_gguf()))
#: tensor types write_gguf can produce (BF16 has no numpy dtype to hand to gguf-py's writer)
WRITABLE_TYPES = ("F32", "F16", *(fmt.gguf_type for fmt in with_gguf()))


@dataclass(frozen=True)
class TensorInfo:
    """One tensor as the file describes it; `offset` is absolute, from the start of the file."""

    name: str
    type_name: str
    shape: tuple[int, ...]
    n_elements: int
    n_bytes: int
    offset: int

    @property
    def bits_per_weight(self) -> float:
        return 8 * self.n_bytes / self.n_elements

    @property
    def row_length(self) -> int:
        return self.shape[-1]


@dataclass(frozen=True)
class Layout:
    """What the validating walk found: everything needed to locate every tensor's bytes."""

    version: int
    alignment: int
    data_offset: int
    file_size: int
    keys: tuple[str, ...]
    value_types: dict[str, str]
    tensors: tuple[TensorInfo, ...]


# --------------------------------------------------------------------------------------------
# The validating walk
# --------------------------------------------------------------------------------------------


class _Walker:
    """Reads little-endian fields from a byte buffer, refusing every read that would pass its end."""

    def __init__(self, view: memoryview):
        self.view = view
        self.size = len(view)
        self.position = 0

    @property
    def remaining(self) -> int:
        return self.size - self.position

    def need(self, n_bytes: int, what: str) -> None:
        if n_bytes > self.remaining:
            raise GGUFFormatError(
                f"truncated file: {what} needs {n_bytes} bytes at offset {self.position}, "
                f"but the file ends {self.remaining} bytes later (file size {self.size})"
            )

    def scalar(self, code: str, n_bytes: int, what: str):
        self.need(n_bytes, what)
        (value,) = struct.unpack_from(code, self.view, self.position)
        self.position += n_bytes
        return value

    def u32(self, what: str) -> int:
        return self.scalar("<I", 4, what)

    def u64(self, what: str) -> int:
        return self.scalar("<Q", 8, what)

    def string(self, what: str) -> str:
        length = self.u64(f"the length of {what}")
        if length > self.remaining:
            raise GGUFFormatError(
                f"{what} claims {length} bytes, but only {self.remaining} bytes remain in the file "
                f"(offset {self.position}, file size {self.size})"
            )
        start = self.position
        self.position += length
        try:
            return str(self.view[start : self.position], "utf-8")
        except UnicodeDecodeError as error:
            raise GGUFFormatError(f"{what} at offset {start} is not valid UTF-8 ({error.reason})") from None

    def bounded_count(self, count: int, smallest_entry: int, what: str) -> None:
        """A count read from the file must fit the bytes that remain, at `smallest_entry` bytes each."""
        fits = self.remaining // smallest_entry
        if count > fits:
            raise GGUFFormatError(
                f"{what} is {count}, but the {self.remaining} bytes left in the file hold at most "
                f"{fits} (each needs at least {smallest_entry} bytes)"
            )

    def skip_value(self, type_id: int, what: str, nesting: int = 0) -> None:
        """Walk past one value of `type_id`, checking every length and element it contains."""
        if type_id not in VALUE_TYPES:
            raise GGUFFormatError(f"{what} has unknown value type id {type_id}; GGUF defines ids 0..12")
        type_name, _, fixed_size = VALUE_TYPES[type_id]
        if fixed_size is not None:
            self.need(fixed_size, f"{what} ({type_name})")
            self.position += fixed_size
            return
        if type_id == STRING_TYPE:
            self.string(what)
            return
        if nesting >= MAX_ARRAY_NESTING:
            raise GGUFFormatError(
                f"{what} nests arrays more than {MAX_ARRAY_NESTING} deep, which the lab does not read"
            )
        element_type = self.u32(f"the element type of {what}")
        if element_type not in VALUE_TYPES:
            raise GGUFFormatError(f"{what} is an array of unknown value type id {element_type}; GGUF defines ids 0..12")
        element_name, _, element_size = VALUE_TYPES[element_type]
        count = self.u64(f"the element count of {what}")
        smallest = element_size or (8 if element_type == STRING_TYPE else 12)  # a length, or a type and a count
        self.bounded_count(count, smallest, f"the element count of {what} (an array of {element_name})")
        if element_size is not None:
            self.position += count * element_size
            return
        for _ in range(count):
            self.skip_value(element_type, f"an element of {what}", nesting + 1)


def _align(offset: int, alignment: int) -> int:
    return offset + (-offset % alignment)


def _header(walker: _Walker) -> tuple[int, int, int]:
    if walker.size < HEADER_BYTES:
        raise GGUFFormatError(
            f"truncated header: the file is {walker.size} bytes, but a GGUF header (magic, version, "
            f"tensor count, key/value count) needs {HEADER_BYTES}"
        )
    magic = bytes(walker.view[:4])
    if magic != MAGIC:
        raise GGUFFormatError(f"not a GGUF file: the magic is {magic!r}, expected {MAGIC!r}")
    walker.position = 4
    version = walker.u32("the version")
    swapped = int.from_bytes(version.to_bytes(4, "little"), "big")
    if version & 0xFFFF == 0 and swapped in SUPPORTED_VERSIONS:
        raise GGUFFormatError(
            f"big-endian GGUF file (the version reads 0x{version:08X} little-endian); "
            "the lab reads little-endian files only"
        )
    if version not in SUPPORTED_VERSIONS:
        raise GGUFFormatError(f"unsupported GGUF version {version}; the lab reads versions {SUPPORTED_VERSIONS}")
    tensor_count = walker.u64("the tensor count")
    kv_count = walker.u64("the key/value count")
    walker.bounded_count(kv_count, MIN_KV_BYTES, "the key/value count")
    # Tensor infos follow the key/value pairs, so they share the same remaining bytes.
    walker.bounded_count(tensor_count, MIN_TENSOR_INFO_BYTES, "the tensor count")
    return version, tensor_count, kv_count


def _key_values(walker: _Walker, kv_count: int) -> tuple[tuple[str, ...], dict[str, str], int]:
    keys: list[str] = []
    value_types: dict[str, str] = {}
    alignment = DEFAULT_ALIGNMENT
    for index in range(kv_count):
        key = walker.string(f"key {index}")
        if key in value_types:
            raise GGUFFormatError(f"duplicate metadata key {key!r}")
        if key in READER_RESERVED_KEYS:
            raise GGUFFormatError(f"metadata key {key!r} clashes with the name gguf-py's reader gives a header field")
        type_id = walker.u32(f"the value type of key {key!r}")
        value_start = walker.position
        walker.skip_value(type_id, f"the value of key {key!r}")
        keys.append(key)
        value_types[key] = VALUE_TYPES[type_id][0]
        if key == ALIGNMENT_KEY:
            if type_id != UINT32_TYPE:
                raise GGUFFormatError(f"general.alignment must be a UINT32, got a {VALUE_TYPES[type_id][0]}")
            (alignment,) = struct.unpack_from("<I", walker.view, value_start)
            if alignment == 0 or alignment & (alignment - 1):
                raise GGUFFormatError(f"general.alignment must be a non-zero power of two, got {alignment}")
    return tuple(keys), value_types, alignment


def _tensor_info(walker: _Walker) -> tuple[str, tuple[int, ...], int, int]:
    name = walker.string("a tensor name")
    n_dims = walker.u32(f"n_dims of tensor {name!r}")
    if not 1 <= n_dims <= MAX_DIMS:
        raise GGUFFormatError(f"tensor {name!r} has n_dims {n_dims}; a GGUF tensor has 1 to {MAX_DIMS} dimensions")
    innermost_first = tuple(walker.u64(f"dimension {axis} of tensor {name!r}") for axis in range(n_dims))
    type_id = walker.u32(f"the type of tensor {name!r}")
    relative_offset = walker.u64(f"the data offset of tensor {name!r}")
    return name, innermost_first, type_id, relative_offset


def _check_tensor(name: str, innermost_first: tuple[int, ...], type_id: int, relative_offset: int, alignment: int):
    if type_id not in TENSOR_TYPES:
        raise GGUFFormatError(f"tensor {name!r} has unknown type id {type_id}; known ids: {sorted(TENSOR_TYPES)}")
    type_name, block_weights, block_bytes = TENSOR_TYPES[type_id]
    if any(n == 0 for n in innermost_first):
        raise GGUFFormatError(f"tensor {name!r} has a zero-length dimension: ne = {list(innermost_first)}")
    n_elements = 1
    for n in innermost_first:
        n_elements *= n
        if n_elements > INT64_MAX:
            raise GGUFFormatError(
                f"tensor {name!r} has dimensions {list(innermost_first)} whose product overflows a 64-bit element count"
            )
    if innermost_first[0] % block_weights:
        raise GGUFFormatError(
            f"tensor {name!r} has row length {innermost_first[0]}, "
            f"not a multiple of {type_name}'s block of {block_weights}"
        )
    if relative_offset % alignment:
        raise GGUFFormatError(
            f"misaligned data: tensor {name!r} starts at data offset {relative_offset}, "
            f"not a multiple of the alignment {alignment}"
        )
    return type_name, n_elements, n_elements // block_weights * block_bytes


def validate(buffer) -> Layout:
    """Walk a whole GGUF file's structure (bytes, mmap or memoryview); GGUFFormatError on the first problem."""
    with memoryview(buffer) as view:
        walker = _Walker(view)
        version, tensor_count, kv_count = _header(walker)
        keys, value_types, alignment = _key_values(walker, kv_count)
        # Checked again: the key/value section has now used its share of the bytes.
        walker.bounded_count(tensor_count, MIN_TENSOR_INFO_BYTES, "the tensor count")
        raw_infos = []
        seen: set[str] = set()
        for _ in range(tensor_count):
            name, innermost_first, type_id, relative_offset = _tensor_info(walker)
            if name in seen:
                raise GGUFFormatError(f"duplicate tensor name {name!r}")
            seen.add(name)
            raw_infos.append((name, innermost_first, type_id, relative_offset))
        data_offset = _align(walker.position, alignment)
        size = walker.size
    if tensor_count and data_offset > size:
        raise GGUFFormatError(
            f"truncated file: tensor data should start at byte {data_offset}, but the file is {size} bytes"
        )
    tensors = []
    for name, innermost_first, type_id, relative_offset in raw_infos:
        type_name, n_elements, n_bytes = _check_tensor(name, innermost_first, type_id, relative_offset, alignment)
        start = data_offset + relative_offset
        if start >= size:
            raise GGUFFormatError(f"tensor {name!r} starts at byte {start}, outside the file ({size} bytes)")
        if start + n_bytes > size:
            raise GGUFFormatError(
                f"truncated tensor data: tensor {name!r} needs bytes {start}..{start + n_bytes - 1}, "
                f"but the file is {size} bytes"
            )
        shape = tuple(reversed(innermost_first))
        tensors.append(TensorInfo(name, type_name, shape, n_elements, n_bytes, start))
    by_start = sorted(tensors, key=lambda info: info.offset)
    for before, after in pairwise(by_start):
        if after.offset < before.offset + before.n_bytes:
            raise GGUFFormatError(f"tensors {before.name!r} and {after.name!r} overlap in the file")
    return Layout(version, alignment, data_offset, size, keys, value_types, tuple(tensors))


def validate_file(path) -> Layout:
    """Validate the file at `path` through a read-only memory map: nothing is read that is not needed."""
    path = Path(path)
    if not path.is_file():
        raise GGUFFormatError(f"{path} is not a regular file")
    with open(path, "rb") as handle:
        if os.fstat(handle.fileno()).st_size < HEADER_BYTES:
            # Too short to be GGUF, and an empty file cannot be memory-mapped: read the few bytes.
            return validate(handle.read(HEADER_BYTES))
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            return validate(mapped)


# --------------------------------------------------------------------------------------------
# An opened file
# --------------------------------------------------------------------------------------------


class GGUFFile:
    """A validated GGUF file, read through gguf-py's memory-mapped GGUFReader.

    Use `open_gguf(path)`; `close()` (or a with-block) drops the memory map.
    """

    def __init__(self, path: Path, layout: Layout, reader):
        self.path = path
        self.layout = layout
        self._reader = reader
        self._index = {info.name: position for position, info in enumerate(layout.tensors)}

    def __enter__(self) -> GGUFFile:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._reader = None

    @property
    def tensors(self) -> tuple[TensorInfo, ...]:
        return self.layout.tensors

    @property
    def keys(self) -> tuple[str, ...]:
        return self.layout.keys

    def tensor(self, name: str) -> TensorInfo:
        if name not in self._index:
            raise LabError(f"no tensor named {name!r} in {self.path.name}")
        return self.layout.tensors[self._index[name]]

    def metadata(self, key: str, default=None):
        """A metadata value as plain data (str, int, float, bool, or a list); `default` when absent."""
        if key not in self.layout.value_types:
            return default
        return self._open_reader().fields[key].contents()

    def inventory(self) -> list[dict]:
        """One row per tensor, in file order: name, type, shape, weights, bytes, bits per weight."""
        return [
            {
                "name": info.name,
                "type": info.type_name,
                "shape": info.shape,
                "n_elements": info.n_elements,
                "bytes": info.n_bytes,
                "bits_per_weight": info.bits_per_weight,
            }
            for info in self.layout.tensors
        ]

    def raw(self, name: str) -> np.ndarray:
        """The tensor's bytes as a read-only uint8 view [rows..., bytes per row] into the mapped file."""
        info = self.tensor(name)
        data = self._open_reader().tensors[self._index[name]].data
        row_bytes = info.n_bytes // (info.n_elements // info.row_length)
        return np.asarray(data).reshape(-1).view(np.uint8).reshape(*info.shape[:-1], row_bytes)

    def decode(self, name: str, decoder: str = "ocp") -> np.ndarray:
        """The tensor's weights as float32 in its own shape, decoded by the lab's codec for its type.

        `decoder` picks the reading of MXFP4 and NVFP4 blocks ("ocp" or "ggml", see lab.mxfp4).
        """
        info = self.tensor(name)
        if info.type_name not in DECODABLE_TYPES:
            raise UnsupportedTypeError(
                f"tensor {name!r} has type {info.type_name}, which the lab does not decode; "
                f"supported: {', '.join(DECODABLE_TYPES)}"
            )
        return decode_raw(self.raw(name), info.type_name, decoder).reshape(info.shape)

    def _open_reader(self):
        if self._reader is None:
            raise LabError(f"{self.path.name} is closed")
        return self._reader


def open_gguf(path) -> GGUFFile:
    """Validate the file, then open it with gguf-py's GGUFReader and check the two agree."""
    path = Path(path)
    layout = validate_file(path)
    try:
        reader = gguf.GGUFReader(path, "r")
    except Exception as error:  # gguf-py raises bare ValueError/KeyError/IndexError; name it as a format problem
        raise GGUFFormatError(
            f"gguf-py's reader rejected {path.name} after the lab's checks passed: {type(error).__name__}: {error}"
        ) from error
    theirs = [
        (t.name, t.tensor_type.name, tuple(int(n) for n in reversed(t.shape)), int(t.data_offset))
        for t in reader.tensors
    ]
    ours = [(t.name, t.type_name, t.shape, t.offset) for t in layout.tensors]
    if theirs != ours:
        raise GGUFFormatError(f"gguf-py's reader and the lab's walk disagree about the tensors in {path.name}")
    return GGUFFile(path, layout, reader)


# --------------------------------------------------------------------------------------------
# Decoding raw bytes
# --------------------------------------------------------------------------------------------


def decode_raw(raw: np.ndarray, type_name: str, decoder: str = "ocp") -> np.ndarray:
    """Rows of raw bytes [..., bytes per row] of one tensor type -> float32 weights [..., row length].

    The bytes must be uint8 (DTypeError otherwise: casting floats to bytes would invent data), and
    each row must hold whole elements (F32, F16, BF16) or whole blocks (the quantized types);
    ShapeError otherwise.
    """
    if type_name not in DECODABLE_TYPES:
        raise UnsupportedTypeError(
            f"type {type_name} is not one the lab decodes; supported: {', '.join(DECODABLE_TYPES)}"
        )
    data = np.asarray(raw)
    if data.dtype != np.uint8:
        raise DTypeError(f"{type_name} data must be uint8 bytes, got dtype {data.dtype}")
    _, block_weights, block_bytes = TENSOR_TYPES[TYPE_IDS[type_name]]
    if data.ndim == 0 or data.shape[-1] == 0 or data.shape[-1] % block_bytes:
        units = "elements" if block_weights == 1 else f"blocks of {block_weights} weights"
        raise ShapeError(
            f"{type_name} rows must be whole {block_bytes}-byte {units}, "
            f"got shape {data.shape} ({data.shape[-1] if data.ndim else 0} bytes per row)"
        )
    if type_name == "F32":
        return np.ascontiguousarray(data).view("<f4").astype(np.float32)
    if type_name == "F16":
        return np.ascontiguousarray(data).view("<f2").astype(np.float32)
    if type_name == "BF16":
        return bfloat16_bits_to_float32(np.ascontiguousarray(data).view("<u2"))
    return by_gguf_type(type_name).decode_gguf(data, decoder)


# --------------------------------------------------------------------------------------------
# What a recipe label means in one file
# --------------------------------------------------------------------------------------------


def type_summary(gf: GGUFFile) -> list[dict]:
    """One row per tensor type, most bytes first: tensors, weights, bytes, shares and examples."""
    total_bytes = sum(info.n_bytes for info in gf.tensors) or 1
    total_weights = sum(info.n_elements for info in gf.tensors) or 1
    by_type: dict[str, list[TensorInfo]] = {}
    for info in gf.tensors:
        by_type.setdefault(info.type_name, []).append(info)
    rows = []
    for type_name, infos in by_type.items():
        n_bytes = sum(info.n_bytes for info in infos)
        n_weights = sum(info.n_elements for info in infos)
        rows.append(
            {
                "type": type_name,
                "tensors": len(infos),
                "one_dimensional": sum(len(info.shape) == 1 for info in infos),
                "weights": n_weights,
                "bytes": n_bytes,
                "share_of_bytes": n_bytes / total_bytes,
                "share_of_weights": n_weights / total_weights,
                "bits_per_weight": 8 * n_bytes / n_weights,
                "names": [info.name for info in infos],
            }
        )
    return sorted(rows, key=lambda row: row["bytes"], reverse=True)


def recipe_label(gf: GGUFFile) -> str | None:
    """The label general.file_type carries, e.g. "Q4_K_M", or None when the file has none."""
    file_type = gf.metadata("general.file_type")
    if not isinstance(file_type, int):
        return None
    try:
        return gguf.LlamaFileType(file_type).name.removeprefix("MOSTLY_")
    except ValueError:
        return f"unknown file type {file_type}"


def explain_recipe(gf: GGUFFile) -> dict:
    """Read a recipe label against what is in the file: the main type, what is kept at higher precision.

    The main type is the one holding the most weights among tensors of two or more dimensions;
    "higher precision" is any type with more bits per weight than it.
    """
    label = recipe_label(gf)
    rows = type_summary(gf)
    matrix_weights: dict[str, int] = {}
    for info in gf.tensors:
        if len(info.shape) > 1:
            matrix_weights[info.type_name] = matrix_weights.get(info.type_name, 0) + info.n_elements
    main_type = max(matrix_weights, key=matrix_weights.get) if matrix_weights else None
    main_bits = next((row["bits_per_weight"] for row in rows if row["type"] == main_type), None)
    higher = [row for row in rows if main_bits is not None and row["bits_per_weight"] > main_bits]
    total_weights = sum(row["weights"] for row in rows)
    overall_bits = 8 * sum(row["bytes"] for row in rows) / total_weights if total_weights else 0.0
    lines = [
        f"The file says {label} (general.file_type). That names a recipe, not a block format."
        if label
        else "The file carries no general.file_type label."
    ]
    for row in rows:
        examples = ", ".join(repr(name) for name in row["names"][:3])
        more = f" and {row['tensors'] - 3} more" if row["tensors"] > 3 else ""
        tensors = f"{row['tensors']} tensor" + ("s" if row["tensors"] != 1 else "")
        lines.append(
            f"{row['type']}: {tensors} ({row['one_dimensional']} of them 1-D), "
            f"{row['share_of_bytes']:.1%} of tensor bytes, {row['bits_per_weight']:.3g} bits per weight; "
            f"e.g. {examples}{more}"
        )
    lines.append(f"Overall: {overall_bits:.3f} bits per weight over {total_weights:,} weights.")
    return {
        "label": label,
        "main_type": main_type,
        "higher_precision": {row["type"]: row["names"] for row in higher},
        "types": rows,
        "bits_per_weight": overall_bits,
        "text": "\n".join(lines),
    }


# --------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------

Q4_K_ROW = q4k.BLOCK_WEIGHTS
#: llama.cpp's Q4_K_M keeps attention value projections and some FFN-down matrices in Q6_K
VALUE_PROJECTION = re.compile(r"(attn_v|attention\.self\.value|self_attn\.v_proj)\.weight$")
FFN_DOWN = re.compile(r"(ffn_down|mlp\.down_proj|(?<!attention)\.output\.dense)\.weight$")
LAYER_NUMBER = re.compile(r"\.(\d+)\.")
#: gguf-py 0.19 quantizes Q8_0 but not Q6_K, so the lab's mixture uses Q8_0 where llama.cpp uses Q6_K
PROMOTED_TYPE = "Q8_0"


def _layer(name: str) -> int | None:
    found = LAYER_NUMBER.search(name)
    return int(found.group(1)) if found else None


def default_promotions(names) -> set[str]:
    """Tensors a Q4_K_M-style mixture keeps at higher precision: attention value projections and
    the FFN-down matrix of the last numbered layer."""
    names = list(names)
    down_layers = {name: _layer(name) for name in names if FFN_DOWN.search(name)}
    numbered = [layer for layer in down_layers.values() if layer is not None]
    last_down = {name for name, layer in down_layers.items() if numbered and layer == max(numbered)}
    return {name for name in names if VALUE_PROJECTION.search(name)} | last_down


def q4_k_m_style_plan(
    tensors: Mapping[str, np.ndarray], promote: Callable[[list[str]], set[str]] = default_promotions
) -> dict[str, str]:
    """The GGUF type for each tensor in a small Q4_K_M-style mixture.

    1-D tensors (norms, biases) stay F32. Matrices are Q4_K, except those `promote` picks, which
    get Q8_0 (llama.cpp uses Q6_K; gguf-py 0.19 has no Q6_K quantizer). A matrix whose row length
    is not a multiple of 256 cannot be Q4_K: llama.cpp's quantizer then falls back to a type with
    smaller blocks (Q5_0 in place of Q4_K); the lab uses Q8_0, which it can decode, or F16 when
    the row is not a multiple of 32 either.
    """
    promoted = promote(list(tensors))
    plan = {}
    for name, array in tensors.items():
        shape = np.shape(array)
        if len(shape) <= 1:
            plan[name] = "F32"
        elif shape[-1] % Q4_K_ROW:
            plan[name] = "Q8_0" if shape[-1] % Q8_0_BLOCK_WEIGHTS == 0 else "F16"
        else:
            plan[name] = PROMOTED_TYPE if name in promoted else "Q4_K"
    return plan


def encode_tensor(w, type_name: str, tensor_name: str = "weights") -> np.ndarray:
    """Float weights -> the bytes (or float array) GGUFWriter stores for `type_name`.

    Every registry format GGUF has is written by the lab's own quantizer, as that format's GGUF
    writer quantizes it (MXFP4 under the "ggml" preset, NVFP4 without a tensor scale, which GGUF
    has no place for; Q8_0 as ggml's reference does, byte for byte). F16 refuses, with
    a NonFiniteError naming `tensor_name`, any weight that float16 rounding would turn into an
    infinity (|w| >= 65520, halfway from the largest float16, 65504, to the next step, 65536);
    smaller weights round to nearest as usual, so 65519 is stored as 65504.
    """
    weights, _ = to_float32_input(w, what=f"weights for {type_name}")
    if type_name == "F32":
        return weights
    if type_name == "F16":
        with np.errstate(over="ignore"):  # the overflow is reported below, by name, not as a warning
            halves = weights.astype(np.float16)
        if np.isinf(halves).any():
            largest = float(np.abs(weights).max())
            raise NonFiniteError(
                f"tensor {tensor_name!r} holds weights up to {largest:.9g} in magnitude, beyond float16's "
                f"largest finite value {F16_MAX:g}; as F16 they would be stored as infinity"
            )
        return halves
    fmt = by_gguf_type(type_name)
    if fmt is not None:
        fmt.check_rows(weights.shape)
        return fmt.to_gguf(weights)
    raise UnsupportedTypeError(f"the lab does not write type {type_name}; supported: {', '.join(WRITABLE_TYPES)}")


def file_type_labels() -> tuple[str, ...]:
    """The labels write_gguf's `file_type` takes: llama.cpp's file types as recipe_label spells them."""
    return tuple(
        member.name.removeprefix("MOSTLY_") for member in gguf.LlamaFileType if member is not gguf.LlamaFileType.GUESSED
    )


def _file_type_value(label: str) -> int:
    """general.file_type's number for a label such as "Q4_K_M"; LabError naming the valid labels."""
    if label in file_type_labels():
        member = "ALL_F32" if label == "ALL_F32" else f"MOSTLY_{label}"
        return gguf.LlamaFileType[member].value
    raise LabError(f"unknown file_type label {label!r}; valid labels: {', '.join(file_type_labels())}")


def _check_utf8(text: str, what: str) -> None:
    """A Python str with lone surrogates has no UTF-8 form; the lab's reader refuses such names."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise LabError(f"{what} {text!r} cannot be written as UTF-8 ({error.reason})") from None


def _check_metadata(metadata: Mapping, own_keys: set[str]) -> int | None:
    """Refuse metadata the lab's reader (open_gguf) would refuse; return a general.alignment, if any.

    Checked before anything is written, so a refused call leaves no file behind.
    """
    alignment = None
    for key, value in metadata.items():
        if not isinstance(key, str):
            raise DTypeError(f"metadata keys must be str, got {type(key).__name__} {key!r}")
        _check_utf8(key, "metadata key")
        # gguf-py's reader files the header fields under "GGUF." names and the lab's reader refuses a
        # key that clashes with one; the whole namespace is kept free so a later header field cannot clash
        if key.startswith(READER_RESERVED_PREFIX):
            raise LabError(
                f"metadata key {key!r} is in the {READER_RESERVED_PREFIX!r} namespace, where gguf-py's reader puts "
                f"the header fields ({', '.join(READER_RESERVED_KEYS)}); open_gguf refuses a key that clashes with "
                "one, and write_gguf keeps the whole namespace free"
            )
        if key in own_keys:
            raise LabError(
                f"metadata key {key!r} is one write_gguf sets itself from its arguments (arch=, name=, file_type=); "
                "pass it there instead"
            )
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise DTypeError(f"metadata {key!r} must be a str, int or float, got {type(value).__name__}")
        if key == ALIGNMENT_KEY:
            if not isinstance(value, int):
                raise DTypeError(f"{ALIGNMENT_KEY} must be an int (written as a UINT32), got {type(value).__name__}")
            if not 0 < value <= UINT32_MAX or value & (value - 1):
                raise LabError(
                    f"{ALIGNMENT_KEY} must be a power of two that fits a UINT32 (1 to 2^31), got {value}; "
                    "the lab's reader refuses any other"
                )
            alignment = value
        elif isinstance(value, str):
            _check_utf8(value, f"metadata {key!r} value")
        elif isinstance(value, int) and not -(2**63) <= value <= INT64_MAX:
            raise LabError(f"metadata {key!r} = {value} does not fit the INT64 that write_gguf stores ints as")
    return alignment


def _check_tensor_shape(tensor_name: str, array) -> None:
    """GGUF tensors have 1 to 4 dimensions, none of length zero; the lab's reader refuses others."""
    shape = np.shape(array)
    if not 1 <= len(shape) <= MAX_DIMS or 0 in shape:
        raise ShapeError(
            f"tensor {tensor_name!r} has shape {shape}; a GGUF tensor has 1 to {MAX_DIMS} dimensions, none of length 0"
        )


def write_gguf(
    path,
    tensors: Mapping[str, np.ndarray],
    types: Mapping[str, str],
    *,
    arch: str = "lab",
    name: str | None = None,
    file_type: str | None = None,
    metadata: Mapping[str, str | int | float] | None = None,
) -> Path:
    """Write `tensors` to a GGUF file with gguf-py's GGUFWriter, each in the type `types` names.

    `file_type` sets general.file_type from a llama.cpp label such as "Q4_K_M" (the lab's mixture
    is Q4_K_M-style, not llama.cpp's exact recipe; `file_type_labels()` lists the labels).
    `metadata` adds string, int (as INT64) or float (as FLOAT64) keys; "general.alignment", a
    power of two, is written as the UINT32 GGUF requires and used to place the tensor data.

    Whatever the lab's own reader (open_gguf) would refuse is refused here first, with a typed
    error, and every tensor is encoded before the file is opened: a refused call writes nothing.
    """
    path = Path(path)
    missing = [tensor_name for tensor_name in tensors if tensor_name not in types]
    if missing:
        raise LabError(f"no type given for tensors {missing}")
    file_type_value = None if file_type is None else _file_type_value(file_type)
    _check_utf8(arch, "arch")
    own_keys = {"general.architecture"}
    if name:
        _check_utf8(name, "name")
        own_keys.add("general.name")
    if file_type is not None:
        own_keys |= {"general.file_type", "general.quantization_version"}
    alignment = _check_metadata(metadata or {}, own_keys)
    encoded = {}
    for tensor_name, array in tensors.items():
        _check_utf8(tensor_name, "tensor name")
        _check_tensor_shape(tensor_name, array)
        encoded[tensor_name] = encode_tensor(array, types[tensor_name], tensor_name)

    writer = gguf.GGUFWriter(path, arch)
    try:
        if name:
            writer.add_name(name)
        if file_type_value is not None:
            writer.add_file_type(file_type_value)
            writer.add_quantization_version(gguf.GGML_QUANT_VERSION)
        if alignment is not None:
            writer.add_custom_alignment(alignment)  # also pads the tensor data to it
        for key, value in (metadata or {}).items():
            if key == ALIGNMENT_KEY:
                continue
            if isinstance(value, str):
                writer.add_string(key, value)
            elif isinstance(value, int):
                writer.add_int64(key, value)
            else:
                writer.add_float64(key, value)
        for tensor_name, data in encoded.items():
            type_name = types[tensor_name]
            raw_type = None if type_name in ("F32", "F16") else gguf.GGMLQuantizationType[type_name]
            writer.add_tensor(tensor_name, data, raw_dtype=raw_type)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
    finally:
        writer.close()
    return path
