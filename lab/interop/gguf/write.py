"""Writing GGUF files with gguf-py's GGUFWriter, every tensor encoded by the lab's own quantizers."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import gguf
import numpy as np

from lab._arrays import to_float32_input
from lab.errors import DTypeError, LabError, NonFiniteError, ShapeError, UnsupportedTypeError
from lab.formats import by_gguf_type
from lab.interop.gguf.layout import (
    ALIGNMENT_KEY,
    F16_MAX,
    INT64_MAX,
    MAX_ARRAY_NESTING,
    MAX_DIMS,
    READER_RESERVED_KEYS,
    READER_RESERVED_PREFIX,
    UINT32_MAX,
    WRITABLE_TYPES,
)

VT = gguf.GGUFValueType
#: the GGUF element type write_gguf stores a numpy array as, by its dtype's (kind, itemsize)
ARRAY_ELEMENT_TYPES = {
    ("u", 1): VT.UINT8,
    ("i", 1): VT.INT8,
    ("u", 2): VT.UINT16,
    ("i", 2): VT.INT16,
    ("u", 4): VT.UINT32,
    ("i", 4): VT.INT32,
    ("u", 8): VT.UINT64,
    ("i", 8): VT.INT64,
    ("f", 4): VT.FLOAT32,
    ("f", 8): VT.FLOAT64,
    ("b", 1): VT.BOOL,
}
#: an array inside an array: gguf-py's writer infers its element type from Python values
#: (GGUFValueType.get_type), which gives INT32, FLOAT32 or BOOL for numbers, never another
NESTED_ELEMENT_TYPES = {("i", 4): VT.INT32, ("f", 4): VT.FLOAT32, ("b", 1): VT.BOOL}
ARRAY_FORMS = "a 1-D numpy array, a list of str, or a list of such arrays"


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


def _check_metadata(metadata: Mapping, own_keys: set[str]) -> tuple[int | None, list[tuple]]:
    """Refuse metadata the lab's reader (open_gguf) would refuse or gguf-py's writer would not write
    as given; return a general.alignment, if any, and every other entry as (key, value, type,
    element type) for GGUFWriter.add_key_value.

    Checked before anything is written, so a refused call leaves no file behind.
    """
    alignment = None
    entries = []
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
        entry = _metadata_entry(key, value)
        if key == ALIGNMENT_KEY:
            if not isinstance(value, int):
                raise DTypeError(f"{ALIGNMENT_KEY} must be an int (written as a UINT32), got {type(value).__name__}")
            if not 0 < value <= UINT32_MAX or value & (value - 1):
                raise LabError(
                    f"{ALIGNMENT_KEY} must be a power of two that fits a UINT32 (1 to 2^31), got {value}; "
                    "the lab's reader refuses any other"
                )
            alignment = value
        else:
            entries.append(entry)
    return alignment, entries


def _metadata_entry(key: str, value) -> tuple:
    """(key, value, GGUF type, element type) as GGUFWriter.add_key_value takes them."""
    if isinstance(value, (np.ndarray, list)):
        elements, element_type = _array(key, value, inner=False)
        return key, elements, VT.ARRAY, element_type
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise DTypeError(
            f"metadata {key!r} must be a str, int or float, or an array ({ARRAY_FORMS}), got {type(value).__name__}"
        )
    if isinstance(value, str):
        _check_utf8(value, f"metadata {key!r} value")
        return key, value, VT.STRING, None
    if isinstance(value, int):
        if not -(2**63) <= value <= INT64_MAX:
            raise LabError(f"metadata {key!r} = {value} does not fit the INT64 that write_gguf stores ints as")
        return key, value, VT.INT64, None
    return key, value, VT.FLOAT64, None


def _array(key: str, value, inner: bool) -> tuple[list, gguf.GGUFValueType]:
    """An array as gguf-py's writer takes it: its elements as a list of Python values, and their type.

    Numbers come as numpy arrays because a Python list of them does not say which GGUF type to
    store (UINT8? INT64?), and what open_gguf reads back is a numpy array of that type again.
    """
    if len(value) == 0:
        raise LabError(f"metadata {key!r} is an empty array; gguf-py's writer cannot write one")
    if isinstance(value, np.ndarray):
        if value.ndim != 1:
            raise DTypeError(f"metadata {key!r}: an array must be 1-D, got shape {value.shape}")
        element_type = (NESTED_ELEMENT_TYPES if inner else ARRAY_ELEMENT_TYPES).get(
            (value.dtype.kind, value.dtype.itemsize)
        )
        if element_type is None and inner:
            raise DTypeError(
                f"metadata {key!r}: an array inside an array must hold int32, float32, bool or str, the only "
                f"element types gguf-py's writer gives one (it infers them from Python values); got {value.dtype}"
            )
        if element_type is None:
            raise DTypeError(
                f"metadata {key!r} has dtype {value.dtype}; a GGUF array holds (u)int8 to (u)int64, float32, "
                "float64, bool or str"
            )
        return value.tolist(), element_type
    if all(isinstance(item, str) for item in value):
        for item in value:
            _check_utf8(item, f"metadata {key!r} element")
        return list(value), VT.STRING
    if all(isinstance(item, (np.ndarray, list)) for item in value):
        if inner:
            raise DTypeError(
                f"metadata {key!r} nests arrays more than {MAX_ARRAY_NESTING} deep, which the lab's reader refuses"
            )
        return [_array(key, item, inner=True)[0] for item in value], VT.ARRAY
    kinds = sorted({type(item).__name__ for item in value})
    hint = ""
    if all(isinstance(item, (int, float)) for item in value):
        hint = (
            f"; a list of {' and '.join(kinds)} does not say which GGUF type to store: pass np.array(values, dtype=...)"
        )
    raise DTypeError(
        f"metadata {key!r} must be a str, int or float, or an array ({ARRAY_FORMS}); "
        f"got a list of {' and '.join(kinds)}{hint}"
    )


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
    metadata: Mapping[str, str | int | float | np.ndarray | list] | None = None,
) -> Path:
    """Write `tensors` to a GGUF file with gguf-py's GGUFWriter, each in the type `types` names.

    `file_type` sets general.file_type from a llama.cpp label such as "Q4_K_M" (the lab's mixture
    is Q4_K_M-style, not llama.cpp's exact recipe; `file_type_labels()` lists the labels).
    `metadata` adds string, int (as INT64) or float (as FLOAT64) keys; "general.alignment", a
    power of two, is written as the UINT32 GGUF requires and used to place the tensor data.
    Arrays are written as open_gguf reads them back: a 1-D numpy array as an array of its dtype
    (uint8 as UINT8, bool as BOOL, ...), a list of str as an array of STRING, and a list of such
    arrays as an array of arrays. gguf-py's writer infers the element type of an array inside an
    array, so there only int32, float32, bool and str arrays are written faithfully; others, and
    empty arrays, which gguf-py cannot write, are refused.

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
    alignment, entries = _check_metadata(metadata or {}, own_keys)
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
        for key, value, value_type, element_type in entries:
            # add_key_value, not add_string or add_array: those silently drop an empty value
            writer.add_key_value(key, value, value_type, sub_type=element_type)
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
