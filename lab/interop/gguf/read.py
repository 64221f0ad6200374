"""An opened GGUF file: the inventory, metadata, raw tensor bytes and decoding."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import gguf
from lab._arrays import bfloat16_bits_to_float32
from lab.errors import DTypeError, GGUFFormatError, LabError, ShapeError, UnsupportedTypeError
from lab.formats import by_gguf_type
from lab.interop.gguf.layout import DECODABLE_TYPES, TENSOR_TYPES, TYPE_IDS, Layout, TensorInfo
from lab.interop.gguf.validate import validate_file


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
