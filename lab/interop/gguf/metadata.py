"""Reading metadata values out of a validated file, in bulk and only when asked.

The walk (lab.interop.gguf.validate) has checked every length and count and recorded where each
key's value lies, so reading a value is slicing the memory map: a numeric array is one
`np.frombuffer` and one copy; a string array is one pass that decodes each string from its
slice; nothing is built for a value that is never asked for.

Values come back as written:

    UINT8 ... FLOAT64, BOOL     int, float or bool
    STRING                      str
    ARRAY of a numeric type     a 1-D numpy array of that type (UINT8 -> uint8, BOOL -> bool, ...)
    ARRAY of STRING             a list of str
    ARRAY of ARRAY              a list whose elements follow the two rows above, each with its own
                                element type: [[1, 2], [3]] of INT32 reads as two int32 arrays,
                                never as one flat [1, 2, 3]

Arrays of numbers are numpy arrays because a Python int or float per element costs 28 to 36
bytes where the file spends 1 to 8: a 150k-entry score table stays 600 KB, not 5 MB.
"""

from __future__ import annotations

import struct

import numpy as np

from lab.interop.gguf.layout import STRING_TYPE, VALUE_TYPES

ARRAY_TYPE = 9
BOOL_TYPE = 7
#: numpy dtypes of the numeric value types, little-endian as GGUF stores them (BOOL is read as bytes)
NUMPY_DTYPES = {
    0: np.dtype("<u1"),
    1: np.dtype("<i1"),
    2: np.dtype("<u2"),
    3: np.dtype("<i2"),
    4: np.dtype("<u4"),
    5: np.dtype("<i4"),
    6: np.dtype("<f4"),
    7: np.dtype("<u1"),
    10: np.dtype("<u8"),
    11: np.dtype("<i8"),
    12: np.dtype("<f8"),
}
#: one shared, read-only empty array per element type: a file may nest 100k empty arrays, each 12
#: bytes on disk, and a fresh numpy array per empty one would cost twenty times that
_EMPTY = {type_id: np.zeros(0, dtype.newbyteorder("=")) for type_id, dtype in NUMPY_DTYPES.items()}
_EMPTY[BOOL_TYPE] = np.zeros(0, bool)
for _empty in _EMPTY.values():
    _empty.flags.writeable = False
_U64 = struct.Struct("<Q")
_ARRAY_HEAD = struct.Struct("<IQ")  # an array's element type and count


def read_value(buffer, type_id: int, start: int, limit: int | None = None):
    """The value of `type_id` whose bytes begin at `start` (just after its type id).

    With `limit`, an array gives only its first `limit` elements (and each array inside it, its
    first `limit`), so a summary of a 150k-entry vocabulary decodes five strings, not 150k.
    """
    if type_id == STRING_TYPE:
        (length,) = _U64.unpack_from(buffer, start)
        return str(memoryview(buffer)[start + 8 : start + 8 + length], "utf-8")
    if type_id != ARRAY_TYPE:
        _, code, _ = VALUE_TYPES[type_id]
        return struct.unpack_from(code, buffer, start)[0]
    element_type, count = _ARRAY_HEAD.unpack_from(buffer, start)
    if element_type != ARRAY_TYPE:
        return _array(buffer, start, limit)[0]
    arrays = []
    position = start + _ARRAY_HEAD.size
    for _ in range(count if limit is None else min(count, limit)):
        inner, position = _array(buffer, position, limit)
        arrays.append(inner)
    return arrays


def type_label(buffer, type_id: int, start: int) -> str:
    """A value's type as a summary shows it: "UINT32", "STRING", "ARRAY of STRING"."""
    if type_id != ARRAY_TYPE:
        return VALUE_TYPES[type_id][0]
    element_type, _ = _ARRAY_HEAD.unpack_from(buffer, start)
    return f"ARRAY of {VALUE_TYPES[element_type][0]}"


def array_length(buffer, type_id: int, start: int) -> int | None:
    """An array's element count, read from its head; None for a scalar or a string."""
    return _ARRAY_HEAD.unpack_from(buffer, start)[1] if type_id == ARRAY_TYPE else None


def _array(buffer, start: int, limit: int | None) -> tuple[np.ndarray | list[str], int]:
    """An array of numbers or strings, and where its bytes end (an array inside an array is
    followed by its siblings). The walk allows no deeper nesting, so its elements are never arrays."""
    element_type, count = _ARRAY_HEAD.unpack_from(buffer, start)
    first = start + _ARRAY_HEAD.size
    shown = count if limit is None else min(count, limit)
    if element_type == STRING_TYPE:
        return _strings(buffer, first, count, shown)
    return _numbers(buffer, element_type, first, shown), first + count * NUMPY_DTYPES[element_type].itemsize


def _numbers(buffer, element_type: int, first: int, count: int) -> np.ndarray:
    """One bulk read, copied: the array owns its memory and outlives the file's memory map."""
    if count == 0:
        return _EMPTY[element_type]
    stored = np.frombuffer(buffer, NUMPY_DTYPES[element_type], count, first)
    if element_type == BOOL_TYPE:
        return stored != 0  # any non-zero byte is true, as struct's "?" reads a scalar
    return stored.astype(stored.dtype.newbyteorder("="))


def _strings(buffer, first: int, count: int, shown: int) -> tuple[list[str], int]:
    """The first `shown` of `count` strings, and where the last of all `count` ends.

    One pass over the lengths; only the strings shown are decoded, and the rest are stepped over
    to find the end.
    """
    view = memoryview(buffer)
    unpack = _U64.unpack_from
    strings = []
    position = first
    for _ in range(shown):
        end = position + 8 + unpack(view, position)[0]
        strings.append(str(view[position + 8 : end], "utf-8"))
        position = end
    for _ in range(count - shown):
        position += 8 + unpack(view, position)[0]
    return strings, position
