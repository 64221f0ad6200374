"""GGUF's fixed tables and the records a validating walk produces: value and tensor types,
the limits the walker enforces, TensorInfo and Layout."""

from __future__ import annotations

from dataclasses import dataclass

import gguf
import numpy as np

from lab.formats import with_gguf

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
#: names gguf-py's reader gives the header fields; a key with one of them makes it raise KeyError,
#: so the lab refuses such a file too: a file it accepts is one gguf-py can read
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


# slots: a file may describe 40k tensors or more, and a record without a __dict__ is half the size
@dataclass(frozen=True, slots=True)
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


# eq=False: the per-key arrays have no single truth value, so Layouts compare by identity
@dataclass(frozen=True, eq=False)
class Layout:
    """What the validating walk found: where every metadata value and every tensor's bytes are.

    Per key, the walk records the value's type id and the span of its bytes (from just after the
    type id to one past its last byte) in arrays parallel to `keys`: a file may carry tens of
    thousands of keys, and three array entries cost 17 bytes a key where a record object would
    cost over 100.
    """

    version: int
    alignment: int
    data_offset: int
    file_size: int
    keys: tuple[str, ...]
    value_type_ids: np.ndarray  # uint8 per key
    value_starts: np.ndarray  # int64 per key
    value_ends: np.ndarray  # int64 per key
    tensors: tuple[TensorInfo, ...]

    @property
    def value_types(self) -> dict[str, str]:
        """Each key's GGUF value type name ("UINT32", "STRING", "ARRAY"), in file order."""
        return {
            key: VALUE_TYPES[type_id][0] for key, type_id in zip(self.keys, self.value_type_ids.tolist(), strict=True)
        }
