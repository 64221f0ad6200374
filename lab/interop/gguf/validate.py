"""The validating walk: every count and length in a GGUF file is checked against the bytes that
remain before anything is read for it."""

from __future__ import annotations

import mmap
import struct
from array import array
from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from lab.errors import GGUFFormatError
from lab.files import is_regular_file, map_or_read, shown_path
from lab.interop.gguf.layout import (
    ALIGNMENT_KEY,
    DEFAULT_ALIGNMENT,
    HEADER_BYTES,
    INT64_MAX,
    MAGIC,
    MAX_ARRAY_NESTING,
    MAX_DIMS,
    MIN_KV_BYTES,
    MIN_TENSOR_INFO_BYTES,
    READER_RESERVED_KEYS,
    STRING_TYPE,
    SUPPORTED_VERSIONS,
    TENSOR_TYPES,
    UINT32_TYPE,
    VALUE_TYPES,
    Layout,
    TensorInfo,
)
from lab.text import quoted


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
        self.skip_array(what, nesting)

    def skip_array(self, what: str, nesting: int = 0) -> None:
        """Walk past one array (its element type, count and elements), checking each element."""
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
        element = f"an element of {what}"
        if element_type == STRING_TYPE:
            self.skip_strings(count, element)
            return
        for _ in range(count):
            self.skip_array(element, nesting + 1)

    def skip_strings(self, count: int, what: str) -> None:
        """Walk past `count` strings, checking each one's length and UTF-8 as `string` does.

        A tokenizer vocabulary holds 150k strings or more, so this is one tight loop that builds
        no message and keeps no string: where an element fails a check, `string` reads it again
        and raises the message that names the problem.
        """
        view, size, position = self.view, self.size, self.position
        for _ in range(count):
            start = position + 8
            end = start + _U64.unpack_from(view, position)[0] if start <= size else start
            if start > size or end > size or not _is_utf8(view[start:end]):
                self.position = position
                self.string(what)  # raises: this element failed one of its checks
            position = end
        self.position = position


_U64 = struct.Struct("<Q")


def _is_utf8(data: memoryview) -> bool:
    try:
        str(data, "utf-8")
    except UnicodeDecodeError:
        return False
    return True


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


@dataclass(frozen=True)
class _KeyValues:
    """The key/value section as the walk found it: per key, its value's type id and byte span."""

    keys: tuple[str, ...]
    type_ids: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    alignment: int


def _key_values(walker: _Walker, kv_count: int) -> _KeyValues:
    keys: list[str] = []
    seen: set[str] = set()
    # compact per-key records (see Layout): one byte and two 8-byte integers, no object per key
    type_ids, starts, ends = bytearray(), array("q"), array("q")
    alignment = DEFAULT_ALIGNMENT
    for index in range(kv_count):
        key = walker.string(f"key {index}")
        if key in seen:
            raise GGUFFormatError(f"duplicate metadata key {quoted(key)}")
        if key in READER_RESERVED_KEYS:
            raise GGUFFormatError(
                f"metadata key {quoted(key)} clashes with the name gguf-py's reader gives a header field"
            )
        type_id = walker.u32(f"the value type of key {quoted(key)}")
        value_start = walker.position
        walker.skip_value(type_id, f"the value of key {quoted(key)}")
        keys.append(key)
        seen.add(key)
        type_ids.append(type_id)
        starts.append(value_start)
        ends.append(walker.position)
        if key == ALIGNMENT_KEY:
            if type_id != UINT32_TYPE:
                raise GGUFFormatError(f"general.alignment must be a UINT32, got a {VALUE_TYPES[type_id][0]}")
            (alignment,) = struct.unpack_from("<I", walker.view, value_start)
            if alignment == 0 or alignment & (alignment - 1):
                raise GGUFFormatError(f"general.alignment must be a non-zero power of two, got {alignment}")
    return _KeyValues(
        tuple(keys),
        _read_only(np.frombuffer(type_ids, np.uint8)),
        _read_only(np.frombuffer(starts, np.int64)),
        _read_only(np.frombuffer(ends, np.int64)),
        alignment,
    )


def _read_only(values: np.ndarray) -> np.ndarray:
    values.flags.writeable = False
    return values


def _tensor_info(walker: _Walker) -> tuple[str, tuple[int, ...], int, int]:
    name = walker.string("a tensor name")
    n_dims = walker.u32(f"n_dims of tensor {quoted(name)}")
    if not 1 <= n_dims <= MAX_DIMS:
        raise GGUFFormatError(
            f"tensor {quoted(name)} has n_dims {n_dims}; a GGUF tensor has 1 to {MAX_DIMS} dimensions"
        )
    innermost_first = tuple(walker.u64(f"dimension {axis} of tensor {quoted(name)}") for axis in range(n_dims))
    type_id = walker.u32(f"the type of tensor {quoted(name)}")
    relative_offset = walker.u64(f"the data offset of tensor {quoted(name)}")
    return name, innermost_first, type_id, relative_offset


def _check_tensor(name: str, innermost_first: tuple[int, ...], type_id: int, relative_offset: int, alignment: int):
    if type_id not in TENSOR_TYPES:
        raise GGUFFormatError(f"tensor {quoted(name)} has unknown type id {type_id}; known ids: {sorted(TENSOR_TYPES)}")
    type_name, block_weights, block_bytes = TENSOR_TYPES[type_id]
    if any(n == 0 for n in innermost_first):
        raise GGUFFormatError(f"tensor {quoted(name)} has a zero-length dimension: ne = {list(innermost_first)}")
    n_elements = 1
    for n in innermost_first:
        n_elements *= n
        if n_elements > INT64_MAX:
            raise GGUFFormatError(
                f"tensor {quoted(name)} has dimensions {list(innermost_first)} whose product overflows a 64-bit element count"
            )
    if innermost_first[0] % block_weights:
        raise GGUFFormatError(
            f"tensor {quoted(name)} has row length {innermost_first[0]}, "
            f"not a multiple of {type_name}'s block of {block_weights}"
        )
    if relative_offset % alignment:
        raise GGUFFormatError(
            f"misaligned data: tensor {quoted(name)} starts at data offset {relative_offset}, "
            f"not a multiple of the alignment {alignment}"
        )
    return type_name, n_elements, n_elements // block_weights * block_bytes


def validate(buffer) -> Layout:
    """Walk a whole GGUF file's structure (bytes, mmap or memoryview); GGUFFormatError on the first problem."""
    with memoryview(buffer) as view:
        walker = _Walker(view)
        version, tensor_count, kv_count = _header(walker)
        key_values = _key_values(walker, kv_count)
        alignment = key_values.alignment
        # Checked again: the key/value section has now used its share of the bytes.
        walker.bounded_count(tensor_count, MIN_TENSOR_INFO_BYTES, "the tensor count")
        raw_infos = []
        seen: set[str] = set()
        for _ in range(tensor_count):
            name, innermost_first, type_id, relative_offset = _tensor_info(walker)
            if name in seen:
                raise GGUFFormatError(f"duplicate tensor name {quoted(name)}")
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
            raise GGUFFormatError(f"tensor {quoted(name)} starts at byte {start}, outside the file ({size} bytes)")
        if start + n_bytes > size:
            raise GGUFFormatError(
                f"truncated tensor data: tensor {quoted(name)} needs bytes {start}..{start + n_bytes - 1}, "
                f"but the file is {size} bytes"
            )
        shape = tuple(reversed(innermost_first))
        tensors.append(TensorInfo(name, type_name, shape, n_elements, n_bytes, start))
    by_start = sorted(tensors, key=lambda info: info.offset)
    for before, after in pairwise(by_start):
        if after.offset < before.offset + before.n_bytes:
            raise GGUFFormatError(f"tensors {quoted(before.name)} and {quoted(after.name)} overlap in the file")
    return Layout(
        version,
        alignment,
        data_offset,
        size,
        key_values.keys,
        key_values.type_ids,
        key_values.starts,
        key_values.ends,
        tuple(tensors),
    )


def map_file(path) -> mmap.mmap | bytes:
    """The file at `path` as a read-only memory map, whose pages are read only when touched; or
    its first bytes when it is too short to be GGUF (an empty file cannot be memory-mapped)."""
    if not is_regular_file(path):
        raise GGUFFormatError(f"{shown_path(path)} is not a regular file")
    # a pseudo-file such as /proc/self/mem reports size 0: its first bytes are read, or refused by name
    return map_or_read(path, map_from=HEADER_BYTES)


def validate_file(path) -> Layout:
    """Validate the file at `path` through a read-only memory map: nothing is read that is not needed."""
    mapped = map_file(path)
    try:
        return validate(mapped)
    finally:
        if isinstance(mapped, mmap.mmap):
            mapped.close()
