"""An opened GGUF file: the inventory, metadata, raw tensor bytes and decoding."""

from __future__ import annotations

import hashlib
import mmap
import os
import threading
from pathlib import Path

import numpy as np

from lab._arrays import bfloat16_bits_to_float32
from lab.errors import DecodeBudgetError, DTypeError, LabError, RuleError, ShapeError, UnsupportedTypeError
from lab.files import shown_path
from lab.formats import GGUF_DECODERS, by_gguf_type
from lab.interop.gguf.layout import DECODABLE_TYPES, TENSOR_TYPES, TYPE_IDS, Layout, TensorInfo
from lab.interop.gguf.metadata import array_length, read_value, type_label
from lab.interop.gguf.validate import map_file, validate
from lab.text import quoted

FLOAT32_BYTES = 4
#: the default decode budget never exceeds this, however much memory the machine has
MAX_DEFAULT_BUDGET = 4 * 1024**3


class GGUFFile:
    """A validated GGUF file, read through a read-only memory map of it.

    Use `open_gguf(path)`; `close()` (or a with-block) drops the memory map. Opening costs the
    walk and the records it keeps (a name and a few numbers per key and per tensor); metadata
    values are read from the map only when asked for, and tensor bytes only when decoded.
    """

    def __init__(self, path: Path, layout: Layout, mapped: mmap.mmap, decode_budget: int | None = None):
        self.path = path
        self.layout = layout
        #: the most bytes of float32 output decode() produces for one tensor (see default_decode_budget)
        self.decode_budget = default_decode_budget() if decode_budget is None else _checked_budget(decode_budget)
        self._mapped = mapped
        # built on first use: a file of 40k tensors or 20k keys need not pay for lookups it never makes
        self._tensor_index: dict[str, int] | None = None
        self._key_index: dict[str, int] | None = None

    def __enter__(self) -> GGUFFile:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        mapped, self._mapped = self._mapped, None
        if mapped is None:
            return
        try:
            mapped.close()
        except BufferError:
            pass  # arrays from raw() still view the map; it is unmapped when the last of them goes

    @property
    def tensors(self) -> tuple[TensorInfo, ...]:
        return self.layout.tensors

    @property
    def keys(self) -> tuple[str, ...]:
        return self.layout.keys

    def tensor(self, name: str) -> TensorInfo:
        if self._tensor_index is None:
            self._tensor_index = {info.name: position for position, info in enumerate(self.layout.tensors)}
        if name not in self._tensor_index:
            raise LabError(f"no tensor named {quoted(name)} in {shown_path(self.path.name)}")
        return self.layout.tensors[self._tensor_index[name]]

    def metadata(self, key: str, default=None):
        """A metadata value as written, `default` when the key is absent.

        Scalars come back as int, float, bool or str; an array of numbers as a 1-D numpy array of
        its element type; an array of strings as a list of str; an array of arrays as a list of
        those, each with its own element type (see lab.interop.gguf.metadata).
        """
        position = self._key_position(key)
        if position is None:
            return default
        return read_value(self._open_map(), *self._value_at(position))

    def metadata_summary(self, items: int = 5, max_chars: int = 80) -> list[dict]:
        """One row per key, in file order, cheap however large the values: key, type ("UINT32",
        "ARRAY of STRING"), length (an array's element count; None otherwise), bytes (the value's
        size in the file) and value: a scalar, or an array's first `items` elements (an array of
        arrays shows the first `items` of each of its first `items`), every string cut to
        `max_chars` characters. A 150k-token vocabulary costs five strings, not 150k.
        """
        mapped = self._open_map()
        rows = []
        for position, key in enumerate(self.layout.keys):
            type_id, start = self._value_at(position)
            length = array_length(mapped, type_id, start)
            rows.append(
                {
                    "key": key,
                    "type": type_label(mapped, type_id, start),
                    "length": length,
                    "bytes": int(self.layout.value_ends[position]) - start,
                    "value": _shorten(read_value(mapped, type_id, start, limit=items), max_chars),
                }
            )
        return rows

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
        data = np.frombuffer(self._open_map(), np.uint8, info.n_bytes, info.offset)
        row_bytes = info.n_bytes // (info.n_elements // info.row_length)
        return data.reshape(*info.shape[:-1], row_bytes)

    def decode(self, name: str, decoder: str = "ocp", *, budget: int | None = None) -> np.ndarray:
        """The tensor's weights as float32 in its own shape, decoded by the lab's codec for its type.

        `decoder` picks the reading of MXFP4 and NVFP4 blocks ("ocp" or "ggml", see lab.formats.mxfp4).
        A tensor whose float32 weights would take more than `budget` bytes (by default the file's
        `decode_budget`) is refused with a DecodeBudgetError before anything is allocated or read;
        decode_raw on a slice of raw()'s rows decodes such a tensor piece by piece.
        """
        info = self.tensor(name)
        if info.type_name not in DECODABLE_TYPES:
            raise UnsupportedTypeError(
                f"tensor {quoted(name)} has type {info.type_name}, which the lab does not decode; "
                f"supported: {', '.join(DECODABLE_TYPES)}"
            )
        _check_decoder(decoder, info.type_name)
        limit = self.decode_budget if budget is None else _checked_budget(budget)
        needed = info.n_elements * FLOAT32_BYTES
        if needed > limit:
            raise DecodeBudgetError(
                f"decoding tensor {quoted(name)} ({info.type_name}, shape {info.shape}) needs {needed:,} bytes of "
                f"float32 output, more than the decode budget of {limit:,} bytes; pass budget= to decode() or "
                "decode_budget= to open_gguf() to allow more, or decode_raw() a slice of raw()'s rows"
            )
        return decode_raw(self.raw(name), info.type_name, decoder).reshape(info.shape)

    def _key_position(self, key: str) -> int | None:
        if self._key_index is None:
            self._key_index = {name: position for position, name in enumerate(self.layout.keys)}
        return self._key_index.get(key)

    def _value_at(self, position: int) -> tuple[int, int]:
        """The type id of the key at `position` and where its value's bytes begin."""
        return int(self.layout.value_type_ids[position]), int(self.layout.value_starts[position])

    def _open_map(self) -> mmap.mmap:
        if self._mapped is None:
            raise LabError(f"{shown_path(self.path.name)} is closed")
        return self._mapped


def _shorten(value, max_chars: int):
    """A summary's value with every string cut to `max_chars` characters, marked with an ellipsis."""
    if isinstance(value, str):
        return value if len(value) <= max_chars else value[: max_chars - 1] + "…"
    if isinstance(value, list):
        return [_shorten(item, max_chars) for item in value]
    return value


def default_decode_budget() -> int:
    """The default decode budget: a quarter of this machine's physical memory, at most 4 GiB
    (4 GiB where the operating system does not say how much memory there is)."""
    try:
        physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # no os.sysconf (Windows), or no such name here
        return MAX_DEFAULT_BUDGET
    return min(MAX_DEFAULT_BUDGET, physical // 4) if physical > 0 else MAX_DEFAULT_BUDGET


def _checked_budget(budget) -> int:
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
        raise LabError(f"a decode budget is a number of bytes, an int >= 0; got {budget!r}")
    return budget


def _check_decoder(decoder: str, type_name: str) -> None:
    """Every type refuses an unknown decoder name, the float types too, which have one reading."""
    if decoder not in GGUF_DECODERS:
        raise RuleError(f"unknown decoder {decoder!r} for {type_name}; expected one of {GGUF_DECODERS}")


def open_gguf(path, *, decode_budget: int | None = None) -> GGUFFile:
    """Validate the file through a read-only memory map and keep the map open for reading.

    The walk checks every count, length and offset against the file's size, and records where
    each metadata value and each tensor lies; nothing else is read until it is asked for.
    `decode_budget` caps the float32 bytes one decode() may produce (default_decode_budget()).
    """
    path = Path(path)
    if decode_budget is not None:
        _checked_budget(decode_budget)  # before the file is mapped, so a refused call leaves nothing open
    mapped = map_file(path)
    try:
        layout = _validated(path, mapped)
    except BaseException:
        if isinstance(mapped, mmap.mmap):
            mapped.close()
        raise
    return GGUFFile(path, layout, mapped, decode_budget)


# The layouts of the files opened last: the walk over a tokenizer's 262k strings takes a tenth of
# a second, and one page opens the same model file several times. A layout depends only on the
# file's size and the bytes before its tensor data, so a kept one is used again only for a map of
# that size whose bytes there have the same digest, whatever the file's name or times say.
_LAYOUTS_KEPT = 8
_layouts: dict[tuple[int, int, int], tuple[bytes, Layout]] = {}
_layouts_lock = threading.Lock()


def _identity(path: Path) -> tuple[int, int, int] | None:
    try:
        status = os.stat(path)
    except OSError:
        return None
    return (status.st_dev, status.st_ino, status.st_size)


def _digest(mapped, end: int) -> bytes:
    with memoryview(mapped) as view:
        return hashlib.blake2b(view[:end], digest_size=32).digest()


def _validated(path: Path, mapped) -> Layout:
    """validate(mapped), or the layout walked before for the same file when the bytes it depends
    on are unchanged."""
    identity = _identity(path)
    with _layouts_lock:
        kept = _layouts.get(identity) if identity is not None else None
    if kept is not None:
        digest, layout = kept
        if len(mapped) == layout.file_size and _digest(mapped, layout.data_offset) == digest:
            return layout
    layout = validate(mapped)
    if identity is not None and len(mapped) == layout.file_size == identity[2]:
        digest = _digest(mapped, layout.data_offset)
        with _layouts_lock:
            _layouts.pop(identity, None)
            _layouts[identity] = (digest, layout)
            while len(_layouts) > _LAYOUTS_KEPT:
                del _layouts[next(iter(_layouts))]
    return layout


def decode_raw(raw: np.ndarray, type_name: str, decoder: str = "ocp") -> np.ndarray:
    """Rows of raw bytes [..., bytes per row] of one tensor type -> float32 weights [..., row length].

    The bytes must be uint8 (DTypeError otherwise: casting floats to bytes would invent data), and
    each row must hold whole elements (F32, F16, BF16) or whole blocks (the quantized types);
    ShapeError otherwise. `decoder` is "ocp" or "ggml" for every type (RuleError otherwise), though
    only MXFP4 and NVFP4 read the two differently.
    """
    if type_name not in DECODABLE_TYPES:
        raise UnsupportedTypeError(
            f"type {type_name} is not one the lab decodes; supported: {', '.join(DECODABLE_TYPES)}"
        )
    _check_decoder(decoder, type_name)
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
