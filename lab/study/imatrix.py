"""The importance matrix, with llama.cpp's meaning: for each Linear, how large each of its input
columns runs on calibration text, the mean of x² over the tokens read. ggml's importance-aware
quantizers take that vector as `quant_weights`, and weigh each weight's rounding error by it.

    entries = capture(model, calibration.calibration_windows())   # {"blk.0.attn_q.weight": ImatrixEntry, ...}
    importance(entries["blk.0.attn_q.weight"])                    # float32 [640]: Σx² / count
    write_imatrix_gguf("gemma.imatrix.gguf", entries)             # as llama-imatrix writes it
    write_imatrix_dat("gemma.imatrix.dat", entries)               # its older form
    read_imatrix(path, model=model)                               # either form, checked against the model

What is collected follows llama-imatrix (tools/imatrix/imatrix.cpp of the llama.cpp that
llama-cpp-python 0.3.36 vendors, collect_imatrix): the input of every matrix product with a block
weight, summed per weight name. attn_q, attn_k and attn_v read the same normed input, so their
entries are equal; so are ffn_gate's and ffn_up's; attn_output and ffn_down have their own. The
tied output layer (token_embd) is not a block weight and is not collected. A product over fewer
than MIN_ROWS rows is skipped, as llama.cpp skips it. An entry holds the sum of x² of each input
column (`values`, llama.cpp's Stats::values) and the number of rows, one per token (`count`).

The two file forms, as llama-imatrix writes and common/imatrix-loader.cpp reads them:

- GGUF (save_imatrix): keys general.type = "imatrix", imatrix.datasets (array of str),
  imatrix.chunk_count and imatrix.chunk_size (uint32); per weight, in name order, the F32 tensors
  `<name>.in_sum2` (the sums) and `<name>.counts` (the count, as a float), alignment 32. One
  matrix per weight stores one dimension, as ggml_n_dims drops the trailing 1.
- .dat (save_imatrix_legacy), little-endian: int32 entry count; per entry, in name order, int32
  name length, the name's bytes, int32 ncall = ceil(count / chunk_size), int32 value count and
  float32 values (sum / count) * ncall; then int32 chunk count, int32 length and the dataset's name.
  Reading one back, llama-imatrix multiplies values and ncall by its chunk size (load_imatrix):
  read_imatrix does the same, so importance() gives llama-quantize's sum / ncall exactly when the
  chunk size is a power of two, as its default 512 is.

Every file is written whole or not at all through lab.files.write_inside. A file llama.cpp would
refuse or misread is refused with ImatrixError: a truncated or overlong .dat, a count that is
negative or not whole, a NaN or a negative sum, a GGUF imatrix without its keys; a file with
several matrices per weight (a mixture of experts) too, as the lab's models are dense. Every length
is checked against the bytes left before anything is read for it, so work and memory stay within
the file's size. ImatrixModelError refuses an imatrix that names a weight the model has no Linear
for, or whose columns are not that Linear's inputs: an imatrix made for another model.
"""

from __future__ import annotations

import math
import os
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lab._arrays import is_integer
from lab.errors import InputError, LabError, NonFiniteError
from lab.files import read_only_map, shown_path, write_inside
from lab.interop.gguf import open_gguf
from lab.study.calibration import WINDOW_TOKENS
from lab.study.chat import ChatModel, forward
from lab.study.chat.gguf_model import LINEARS
from lab.text import quoted

#: llama-imatrix skips a matrix product over fewer rows (collect_imatrix: `src1->ne[1] < 16`)
MIN_ROWS = 16
#: tokens per chunk, llama-imatrix's default context; a .dat file does not say its own
CHUNK_SIZE = WINDOW_TOKENS
SUM_SUFFIX = ".in_sum2"
COUNT_SUFFIX = ".counts"
KEY_TYPE = "general.type"
KEY_DATASETS = "imatrix.datasets"
KEY_CHUNK_COUNT = "imatrix.chunk_count"
KEY_CHUNK_SIZE = "imatrix.chunk_size"
GGUF = "gguf"
DAT = "dat"
#: ggml names hold 63 bytes (GGML_MAX_NAME, 64 with the NUL); ggml_format_name cuts a longer one
_GGML_NAME_BYTES = 63
_ALIGNMENT = 32
_GGUF_MAGIC = b"GGUF"
_GGUF_VERSION = 3
_GGUF_UINT32, _GGUF_STRING, _GGUF_ARRAY = 4, 8, 9
_GGML_F32 = 0
_INT32 = struct.Struct("<i")
_INT32_MAX = 2**31 - 1
_UINT32_MAX = 2**32 - 1
#: the least a .dat entry takes: name length, ncall, value count and one value
_MIN_DAT_ENTRY_BYTES = 16


class ImatrixError(LabError):
    """Importance-matrix data llama.cpp would refuse or misread: a truncated or overlong file, a count
    that is negative or not whole, a sum that is NaN, infinite or negative, missing metadata."""


class ImatrixModelError(LabError):
    """An importance matrix that does not fit the model: a weight it has no Linear of, or another width."""


@dataclass(frozen=True, eq=False)
class ImatrixEntry:
    """One weight's activations: `values`, float32 [input columns], the sum of x² of each column
    over the rows collected, and `count`, the rows (tokens) collected. Checked when made."""

    values: np.ndarray
    count: int

    def __post_init__(self):
        try:
            with np.errstate(over="ignore"):  # a sum past float32's range becomes infinity, refused below
                values = np.array(self.values, dtype=np.float32)
        except (TypeError, ValueError):
            raise ImatrixError("an entry's values are numbers, one sum of squares per input column") from None
        if values.ndim != 1 or values.size == 0:
            raise ImatrixError(f"an entry's values are one sum per input column, got shape {values.shape}")
        if not np.isfinite(values).all():
            raise ImatrixError("an entry's sums of squares must be finite; this one holds NaN or infinity")
        if (values < 0).any():
            raise ImatrixError("an entry's sums of squares cannot be negative")
        if not is_integer(self.count) or self.count < 0:
            raise ImatrixError(f"an entry's count is a number of rows, a whole number >= 0, got {self.count!r}")
        if self.count == 0 and values.any():
            raise ImatrixError("an entry with a count of 0 rows cannot hold sums above 0")
        values.flags.writeable = False
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "count", int(self.count))


@dataclass(frozen=True)
class Imatrix:
    """An imatrix file as read: its entries by weight name, and what it says of how it was made."""

    entries: dict[str, ImatrixEntry]
    datasets: tuple[str, ...]
    chunk_count: int
    chunk_size: int  # a .dat file's is the one it was read with
    form: str  # GGUF or DAT


def importance(entry: ImatrixEntry) -> np.ndarray:
    """float32 [columns]: the mean of x² per input column, values / count in float32 as llama-quantize
    divides; all ones for an entry that collected nothing, as llama-quantize fills one."""
    if entry.count == 0:
        return np.ones_like(entry.values)
    return entry.values / np.float32(entry.count)


def linear_inputs(model: ChatModel) -> dict[str, int]:
    """The weights capture() collects, by GGUF name, and how many inputs each takes."""
    return {
        f"blk.{layer}.{name}.weight": block[name].shape[1]
        for layer, block in enumerate(model.weights.blocks)
        for name in LINEARS
    }


def check_for_model(entries: Mapping[str, ImatrixEntry], model: ChatModel) -> None:
    """ImatrixModelError unless every entry names a Linear of `model` and has one value per input of it.
    Entries may be missing, as llama.cpp allows: those Linears are quantized without one."""
    inputs = linear_inputs(model)
    unknown = [name for name in entries if name not in inputs]
    if unknown:
        more = f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else ""
        raise ImatrixModelError(
            f"the imatrix has an entry for {quoted(unknown[0])}{more}, but the model has no Linear of that name; "
            "was it made for another model?"
        )
    for name, entry in entries.items():
        if entry.values.size != inputs[name]:
            raise ImatrixModelError(
                f"the imatrix entry for {quoted(name)} has {entry.values.size} columns, but that Linear of the model "
                f"takes {inputs[name]} inputs; this imatrix was made for another model"
            )


def _checked_windows(windows, model: ChatModel) -> np.ndarray:
    try:
        array = np.asarray(windows)
    except ValueError:  # rows of different lengths
        raise InputError("windows are token ids [windows, tokens], every window the same length") from None
    if array.ndim != 2 or array.size == 0:
        raise InputError(f"windows are token ids [windows, tokens], one row per window; got shape {array.shape}")
    if array.dtype == bool or not np.issubdtype(array.dtype, np.integer):
        raise InputError(f"windows hold token ids, whole numbers; got {array.dtype}")
    if array.shape[1] < MIN_ROWS:
        raise InputError(
            f"a window of {array.shape[1]} tokens collects nothing: llama-imatrix skips products of fewer than "
            f"{MIN_ROWS} rows"
        )
    if array.shape[1] > model.arch.context_length:
        raise InputError(
            f"windows of {array.shape[1]} tokens do not fit the model's context of {model.arch.context_length}"
        )
    outside = array[(array < 0) | (array >= model.arch.n_vocab)]
    if outside.size:
        raise InputError(f"token ids must lie in 0..{model.arch.n_vocab - 1}, got {int(outside[0])}")
    return array.astype(np.int64)


def capture(model: ChatModel, windows) -> dict[str, ImatrixEntry]:
    """Run `model` over each window (token ids [windows, tokens], each from position 0 with a fresh
    cache, as llama-imatrix clears its cache per chunk) and sum x² of every block Linear's input, per
    input column, in float64; the entries hold the sums rounded once to float32."""
    rows = _checked_windows(windows, model)
    blocks = model.weights.blocks
    sums: dict[str, np.ndarray] = {}
    counts: dict[str, int] = {}

    def collected(h: np.ndarray, layer: int, name: str) -> np.ndarray:
        if h.shape[0] >= MIN_ROWS:
            key = f"blk.{layer}.{name}.weight"
            squares = np.square(h, dtype=np.float64).sum(axis=0)
            sums[key] = sums[key] + squares if key in sums else squares
            counts[key] = counts.get(key, 0) + h.shape[0]
        return h @ blocks[layer][name].T

    for window in rows:
        forward.hidden_states(
            window, model.weights.token_embd, blocks, model.arch, forward.KVCache(model.arch), collected
        )
    if not all(np.isfinite(total).all() for total in sums.values()):
        raise NonFiniteError("the activations overflowed: a Linear's input holds NaN or infinity")
    return {key: ImatrixEntry(sums[key], counts[key]) for key in sums}


def _checked_entries(entries: Mapping[str, ImatrixEntry]) -> list[tuple[str, bytes, ImatrixEntry]]:
    """(name, its UTF-8 bytes, entry) in name order, as both of llama-imatrix's writers sort them."""
    if not isinstance(entries, Mapping) or not entries:
        raise ImatrixError("an imatrix needs at least one entry, a mapping of weight names to ImatrixEntry")
    checked = []
    for name, entry in entries.items():
        if not isinstance(name, str) or not name or "\x00" in name:
            raise ImatrixError(f"a weight name is a non-empty str without NUL, got {name!r}")
        if not isinstance(entry, ImatrixEntry):
            raise ImatrixError(f"the entry for {quoted(name)} is a {type(entry).__name__}, not an ImatrixEntry")
        try:
            encoded = name.encode("utf-8")
        except UnicodeEncodeError:
            raise ImatrixError(f"the weight name {quoted(name)} is not valid Unicode") from None
        checked.append((name, encoded, entry))
    # std::sort on std::string compares bytes; UTF-8's byte order is Unicode's code point order
    return sorted(checked, key=lambda item: item[1])


def _checked_chunks(chunk_size, chunk_count, counts: list[int], limit: int) -> tuple[int, int]:
    if not is_integer(chunk_size) or not 1 <= chunk_size <= limit:
        raise ImatrixError(f"the chunk size is a number of tokens from 1 to {limit}, got {chunk_size!r}")
    if chunk_count is None:  # llama-imatrix's m_last_chunk after a whole run: the most rows over the chunk size
        chunk_count = max(counts) // chunk_size
    if not is_integer(chunk_count) or not 0 <= chunk_count <= limit:
        raise ImatrixError(f"the chunk count is a whole number from 0 to {limit}, got {chunk_count!r}")
    return int(chunk_size), int(chunk_count)


def _is_utf8(text) -> bool:
    """Whether `text` is a str UTF-8 can hold (a lone surrogate it cannot)."""
    if not isinstance(text, str):
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _target(path) -> tuple[Path, str]:
    path = Path(path)
    return path.parent, path.name


def _gguf_string(text: str) -> bytes:
    encoded = text.encode("utf-8")
    return struct.pack("<Q", len(encoded)) + encoded


def _padding(size: int) -> bytes:
    return bytes(-size % _ALIGNMENT)


def write_imatrix_gguf(
    path, entries: Mapping[str, ImatrixEntry], *, datasets=(), chunk_size: int = CHUNK_SIZE, chunk_count=None
) -> Path:
    """Write `entries` as llama-imatrix's save_imatrix writes a GGUF imatrix, byte for byte (gguf.cpp's
    writer: version 3, its keys in its order, the tensors in name order, alignment 32). `datasets` are
    the texts' names; `chunk_count` defaults to the most rows over `chunk_size`. Returns the path."""
    checked = _checked_entries(entries)
    chunk_size, chunk_count = _checked_chunks(chunk_size, chunk_count, [e.count for _, _, e in checked], _UINT32_MAX)
    datasets = [datasets] if isinstance(datasets, str) else datasets
    if not isinstance(datasets, list | tuple) or not all(_is_utf8(dataset) for dataset in datasets):
        raise ImatrixError("datasets are the names of the calibration texts, a list of str")
    for name, encoded, _ in checked:
        if len(encoded) + len(SUM_SUFFIX) > _GGML_NAME_BYTES:
            raise ImatrixError(
                f"the weight name {quoted(name)} is too long for a GGUF imatrix: with {SUM_SUFFIX!r} it passes "
                f"ggml's {_GGML_NAME_BYTES} bytes"
            )
    key_values = [
        _gguf_string(KEY_TYPE) + struct.pack("<i", _GGUF_STRING) + _gguf_string("imatrix"),
        _gguf_string(KEY_DATASETS)
        + struct.pack("<iiQ", _GGUF_ARRAY, _GGUF_STRING, len(datasets))
        + b"".join(_gguf_string(dataset) for dataset in datasets),
        _gguf_string(KEY_CHUNK_COUNT) + struct.pack("<iI", _GGUF_UINT32, chunk_count),
        _gguf_string(KEY_CHUNK_SIZE) + struct.pack("<iI", _GGUF_UINT32, chunk_size),
    ]
    infos, data, offset = [], [], 0
    for name, _, entry in checked:
        # one matrix: ggml_n_dims drops the trailing dimension of 1, so each tensor has one
        for suffix, array in ((SUM_SUFFIX, entry.values), (COUNT_SUFFIX, np.array([entry.count], np.float32))):
            infos.append(_gguf_string(name + suffix) + struct.pack("<IqiQ", 1, array.size, _GGML_F32, offset))
            body = array.astype("<f4").tobytes()
            data += [body, _padding(len(body))]
            offset += len(body) + len(data[-1])
    head = _GGUF_MAGIC + struct.pack("<IQQ", _GGUF_VERSION, 2 * len(checked), len(key_values))
    head += b"".join(key_values) + b"".join(infos)
    folder, name = _target(path)
    return write_inside(folder, name, head + _padding(len(head)) + b"".join(data))


def write_imatrix_dat(
    path, entries: Mapping[str, ImatrixEntry], *, dataset: str = "", chunk_size: int = CHUNK_SIZE, chunk_count=None
) -> Path:
    """Write `entries` as llama-imatrix's save_imatrix_legacy writes a .dat imatrix, byte for byte:
    each entry's mean x² times its ncall, computed in float32; an entry that collected nothing is left
    out, as there. `dataset` is the text's name. Returns the path."""
    checked = _checked_entries(entries)
    kept = [(name, encoded, entry) for name, encoded, entry in checked if entry.count > 0]
    if not kept:
        raise ImatrixError("no entry collected any rows; a .dat imatrix with no entries is one llama.cpp refuses")
    chunk_size, chunk_count = _checked_chunks(chunk_size, chunk_count, [e.count for _, _, e in kept], _INT32_MAX)
    if not _is_utf8(dataset):
        raise ImatrixError(f"the dataset is the calibration text's name, a str; got {dataset!r}")
    parts = [_INT32.pack(len(kept))]
    for name, encoded, entry in kept:
        ncall = -(-entry.count // chunk_size)  # the ceiling: no entry's ncall is 0
        if ncall > _INT32_MAX or len(encoded) > _INT32_MAX:
            raise ImatrixError(f"the entry for {quoted(name)} is too large for a .dat imatrix's int32 fields")
        stored = (entry.values / np.float32(entry.count)) * np.float32(ncall)
        parts += [_INT32.pack(len(encoded)), encoded, struct.pack("<ii", ncall, entry.values.size)]
        parts.append(stored.astype("<f4").tobytes())
    named = dataset.encode("utf-8")
    parts += [struct.pack("<ii", chunk_count, len(named)), named]
    folder, name = _target(path)
    return write_inside(folder, name, b"".join(parts))


class _Cursor:
    """Reads a .dat file's fields in order, each length checked against the bytes left first."""

    def __init__(self, data, path):
        self.data, self.path, self.position = data, path, 0

    @property
    def left(self) -> int:
        return len(self.data) - self.position

    def refuse(self, problem: str) -> ImatrixError:
        return ImatrixError(f"{shown_path(self.path)} is not a whole .dat imatrix: {problem}")

    def take(self, size: int, what: str) -> int:
        """Where `size` bytes of `what` start, refusing if fewer are left."""
        if size > self.left:
            raise self.refuse(f"{what} needs {size} bytes but only {self.left} are left (the file is cut short)")
        start, self.position = self.position, self.position + size
        return start

    def int32(self, what: str) -> int:
        return _INT32.unpack_from(self.data, self.take(4, what))[0]


def _read_dat_entry(cursor: _Cursor, index: int, chunk_size: int) -> tuple[str, ImatrixEntry]:
    """The next entry of a .dat file, read back as llama-imatrix's load_imatrix reads it: the mean times
    ncall, times the chunk size, gives the sums again, and ncall times the chunk size the rows."""
    length = cursor.int32(f"entry {index + 1}'s name length")
    if length < 0:
        raise cursor.refuse(f"entry {index + 1}'s name has a negative length, {length}")
    start = cursor.take(length, f"entry {index + 1}'s name")
    try:
        name = bytes(cursor.data[start : start + length]).decode("utf-8")
    except UnicodeDecodeError:
        raise cursor.refuse(f"entry {index + 1}'s name is not UTF-8") from None
    if not name or "\x00" in name:
        raise cursor.refuse(f"entry {index + 1}'s name {quoted(name)} is empty or holds a NUL")
    ncall, size = cursor.int32(f"{quoted(name)}'s ncall"), cursor.int32(f"{quoted(name)}'s value count")
    if ncall < 1:
        raise cursor.refuse(f"{quoted(name)} was collected over {ncall} chunks; llama-imatrix writes at least 1")
    if size < 1:
        raise cursor.refuse(f"{quoted(name)} has {size} values; an entry has one per input column")
    start = cursor.take(4 * size, f"{quoted(name)}'s {size} values")
    # copied at once: a view would keep the file's memory map from closing
    stored = np.frombuffer(cursor.data, "<f4", size, start).astype(np.float32)
    if not np.isfinite(stored).all() or (stored < 0).any():
        raise cursor.refuse(f"{quoted(name)}'s values must be finite and >= 0; they hold NaN, infinity or less")
    with np.errstate(over="ignore"):  # overflow is refused just below
        values = stored * np.float32(chunk_size)
    if not np.isfinite(values).all():
        raise cursor.refuse(f"{quoted(name)}'s values overflow float32 once times the chunk size {chunk_size}")
    return name, ImatrixEntry(values, ncall * chunk_size)


def _read_dat(data, path, chunk_size: int) -> Imatrix:
    if not is_integer(chunk_size) or not 1 <= chunk_size <= _INT32_MAX:
        raise ImatrixError(f"the chunk size is a number of tokens from 1 to {_INT32_MAX}, got {chunk_size!r}")
    cursor = _Cursor(data, path)
    count = cursor.int32("the entry count")
    if count < 1 or count * _MIN_DAT_ENTRY_BYTES > cursor.left:
        raise cursor.refuse(f"it says it holds {count} entries, which {cursor.left} bytes cannot")
    entries = {}
    for index in range(count):
        name, entry = _read_dat_entry(cursor, index, chunk_size)
        if name in entries:
            raise cursor.refuse(f"{quoted(name)} has two entries")
        entries[name] = entry
    chunk_count, datasets = 0, ()
    if cursor.left:  # the trailer came later in llama.cpp's history: a chunk count, then the dataset's name
        chunk_count = cursor.int32("the chunk count")
        if chunk_count < 0:
            raise cursor.refuse(f"the chunk count is {chunk_count}")
    if cursor.left:
        length = cursor.int32("the dataset name's length")
        if length != cursor.left:
            raise cursor.refuse(f"the dataset name is {length} bytes long but {cursor.left} bytes are left")
        start = cursor.take(length, "the dataset name")
        datasets = (bytes(data[start : start + length]).decode("utf-8", "replace"),)
    return Imatrix(entries, datasets, chunk_count, chunk_size, DAT)


def _metadata(gf, path) -> tuple[tuple[str, ...], int, int]:
    datasets, chunk_count, chunk_size = (gf.metadata(key) for key in (KEY_DATASETS, KEY_CHUNK_COUNT, KEY_CHUNK_SIZE))
    where = shown_path(path)
    if datasets is None or chunk_count is None or chunk_size is None:
        raise ImatrixError(
            f"{where} is not a GGUF imatrix llama-quantize takes: it lacks {KEY_DATASETS}, {KEY_CHUNK_COUNT} or "
            f"{KEY_CHUNK_SIZE}"
        )
    if not isinstance(datasets, list) or not all(isinstance(item, str) for item in datasets):
        raise ImatrixError(f"{where}: {KEY_DATASETS} must be an array of strings")
    for key, value in ((KEY_CHUNK_COUNT, chunk_count), (KEY_CHUNK_SIZE, chunk_size)):
        if not is_integer(value) or not 0 <= value <= _UINT32_MAX:
            raise ImatrixError(f"{where}: {key} must be a uint32, got {value!r}")
    return tuple(datasets), int(chunk_count), int(chunk_size)


def _read_gguf(path) -> Imatrix:
    where = shown_path(path)
    with open_gguf(path) as gf:
        datasets, chunk_count, chunk_size = _metadata(gf, path)
        # other tensors are passed over, as common_imatrix_load passes them
        infos = {info.name: info for info in gf.tensors if info.name.endswith((SUM_SUFFIX, COUNT_SUFFIX))}
        names = sorted({name.removesuffix(SUM_SUFFIX).removesuffix(COUNT_SUFFIX) for name in infos})
        if not names:
            raise ImatrixError(f"{where} holds no {SUM_SUFFIX} and {COUNT_SUFFIX} tensors: it is no imatrix")
        entries = {}
        for name in names:
            sums, counts = infos.get(name + SUM_SUFFIX), infos.get(name + COUNT_SUFFIX)
            if sums is None or counts is None:
                raise ImatrixError(f"{where}: {quoted(name)} has {SUM_SUFFIX} or {COUNT_SUFFIX} but not both")
            if sums.type_name != "F32" or counts.type_name != "F32":
                raise ImatrixError(f"{where}: {quoted(name)}'s sums and counts must be F32")
            if counts.n_elements != 1 or math.prod(sums.shape[:-1]) != 1:
                raise ImatrixError(
                    f"{where}: {quoted(name)} holds {counts.n_elements} matrices (a mixture of experts); "
                    "the lab's models are dense, with one matrix per weight"
                )
            count = float(gf.decode(counts.name).ravel()[0])
            if not math.isfinite(count) or count < 0 or count != round(count):
                raise ImatrixError(
                    f"{where}: {quoted(name)}'s count is {count!r}; a count of rows is a whole number >= 0"
                )
            try:
                entries[name] = ImatrixEntry(gf.decode(sums.name).ravel(), int(count))
            except ImatrixError as error:
                raise ImatrixError(f"{where}: {quoted(name)}: {error}") from None
    return Imatrix(entries, datasets, chunk_count, chunk_size, GGUF)


def read_imatrix_file(path: str | os.PathLike, *, chunk_size: int = CHUNK_SIZE) -> Imatrix:
    """An imatrix file of either form, told apart by the GGUF magic as llama.cpp tells them apart.
    `chunk_size` is the tokens per chunk a .dat file is read with (a GGUF file names its own)."""
    with read_only_map(path) as data:
        if bytes(data[:4]) != _GGUF_MAGIC:
            return _read_dat(data, path, chunk_size)
    return _read_gguf(path)


def read_imatrix(
    path: str | os.PathLike, *, model: ChatModel | None = None, chunk_size: int = CHUNK_SIZE
) -> dict[str, ImatrixEntry]:
    """The entries of an imatrix file of either form; with `model`, checked to fit it (check_for_model)."""
    entries = read_imatrix_file(path, chunk_size=chunk_size).entries
    if model is not None:
        check_for_model(entries, model)
    return entries
