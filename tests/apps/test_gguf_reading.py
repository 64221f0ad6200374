"""Reading GGUF files without gguf-py's reader, with gguf-py as the oracle.

Files written by gguf-py's GGUFWriter (every value type, arrays of strings, nested arrays, every
tensor type in many shapes) read back through the lab with the same metadata and the same tensor
inventory as gguf-py's GGUFReader finds, except where GGUFReader flattens an array of arrays:
there the lab gives the arrays back as written. Also here: the metadata summary, nested metadata
through the lab's writer, and the decoder names every type refuses.
"""

from __future__ import annotations

import struct

import gguf
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_gguf_hostile import ARRAY, STRING, UINT8, UINT32, build, gguf_string, kv

from lab.errors import DTypeError, LabError, RuleError
from lab.interop import gguf as gguf_tools

VT = gguf.GGUFValueType
ORACLE = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def write_with_gguf_py(path, values=(), tensors=()) -> None:
    """A file from gguf-py's writer alone: `values` are (key, value, type, sub_type), `tensors`
    are (name, bytes [..., row bytes], type)."""
    writer = gguf.GGUFWriter(path, "lab")
    for key, value, value_type, sub_type in values:
        writer.add_key_value(key, value, value_type, sub_type=sub_type)
    for name, data, tensor_type in tensors:
        writer.add_tensor(name, data, raw_dtype=tensor_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def as_gguf_py_reads(value):
    """The lab's value as ReaderField.contents() gives it: lists of Python scalars, and an array
    of arrays flattened into one list (gguf-py 0.19's reader does that; see its FIXME)."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, list) and value and isinstance(value[0], (np.ndarray, list)):
        return [item for inner in value for item in as_gguf_py_reads(inner)]
    return value


def _mixed_arrays(value) -> bool:
    """An array of arrays whose element types differ: gguf-py's reader takes the first one's for all."""
    if not isinstance(value, list) or not value or not isinstance(value[0], (np.ndarray, list)):
        return False
    return len({inner.dtype.str if isinstance(inner, np.ndarray) else "str" for inner in value}) > 1


def assert_same_as_gguf_py(path) -> None:
    reader = gguf.GGUFReader(path)
    with gguf_tools.open_gguf(path) as gf:
        fields = {key: field for key, field in reader.fields.items() if not key.startswith("GGUF.")}
        assert list(gf.keys) == list(fields)
        summary = {row["key"]: row for row in gf.metadata_summary()}
        for key, field in fields.items():
            value = gf.metadata(key)
            if not _mixed_arrays(value):  # gguf-py misreads those: see test_arrays_of_arrays_...
                assert as_gguf_py_reads(value) == field.contents(), key
            expected_type = field.types[0].name
            if field.types[0] == VT.ARRAY:
                expected_type += f" of {field.types[1].name}"
            if field.types[0] == VT.ARRAY and field.types[1] != VT.ARRAY:
                assert summary[key]["length"] == len(field.data)  # one index per element in gguf-py
            assert summary[key]["type"] == expected_type
        theirs = [
            (t.name, t.tensor_type.name, tuple(int(n) for n in reversed(t.shape)), t.n_elements, t.n_bytes)
            for t in reader.tensors
        ]
        ours = [(row["name"], row["type"], row["shape"], row["n_elements"], row["bytes"]) for row in gf.inventory()]
        assert ours == theirs
        for tensor, info in zip(reader.tensors, gf.tensors, strict=True):
            assert info.offset == tensor.data_offset
            assert np.array_equal(gf.raw(info.name).reshape(-1), np.asarray(tensor.data).view(np.uint8).reshape(-1))


# --------------------------------------------------------------------------------------------
# Every value type, and a fixed file of the shapes llama.cpp writes
# --------------------------------------------------------------------------------------------

SCALARS = [
    ("lab.u8", 255, VT.UINT8),
    ("lab.i8", -128, VT.INT8),
    ("lab.u16", 65535, VT.UINT16),
    ("lab.i16", -32768, VT.INT16),
    ("lab.u32", 2**32 - 1, VT.UINT32),
    ("lab.i32", -(2**31), VT.INT32),
    ("lab.f32", 0.1, VT.FLOAT32),
    ("lab.bool", True, VT.BOOL),
    ("lab.str", "héllo ✓", VT.STRING),
    ("lab.u64", 2**64 - 1, VT.UINT64),
    ("lab.i64", -(2**63), VT.INT64),
    ("lab.f64", 0.1, VT.FLOAT64),
]
NUMPY_OF = {
    VT.UINT8: np.uint8,
    VT.INT8: np.int8,
    VT.UINT16: np.uint16,
    VT.INT16: np.int16,
    VT.UINT32: np.uint32,
    VT.INT32: np.int32,
    VT.FLOAT32: np.float32,
    VT.BOOL: np.bool_,
    VT.UINT64: np.uint64,
    VT.INT64: np.int64,
    VT.FLOAT64: np.float64,
}


def test_every_value_type_reads_back_as_written_and_as_gguf_py_reads_it(tmp_path):
    arrays = [(f"{key}s", [value, value], VT.ARRAY, value_type) for key, value, value_type in SCALARS]
    path = tmp_path / "values.gguf"
    write_with_gguf_py(path, [(key, value, value_type, None) for key, value, value_type in SCALARS] + arrays)
    assert_same_as_gguf_py(path)
    with gguf_tools.open_gguf(path) as gf:
        assert gf.metadata("lab.f32") == float(np.float32(0.1)) and gf.metadata("lab.f64") == 0.1
        assert gf.metadata("lab.bool") is True and gf.metadata("lab.str") == "héllo ✓"
        for key, value, value_type in SCALARS:
            array = gf.metadata(f"{key}s")
            if value_type == VT.STRING:
                assert array == [value, value]
            else:
                # an array of numbers is a numpy array of the file's element type, its elements as written
                assert array.dtype == NUMPY_OF[value_type] and array.shape == (2,)
                assert array.tolist() == np.array([value, value], NUMPY_OF[value_type]).tolist()


def test_a_llama_cpp_shaped_file_matches_gguf_py(tmp_path):
    tokens = [f"tok{i}" for i in range(1000)] + ["", "▁the", "<0x0A>"]
    values = [
        ("tokenizer.ggml.model", "gpt2", VT.STRING, None),
        ("tokenizer.ggml.tokens", tokens, VT.ARRAY, VT.STRING),
        ("tokenizer.ggml.scores", [float(i) / 7 for i in range(len(tokens))], VT.ARRAY, VT.FLOAT32),
        ("tokenizer.ggml.token_type", [1] * len(tokens), VT.ARRAY, VT.INT32),
        ("tokenizer.ggml.merges", [f"t{i} k{i}" for i in range(500)], VT.ARRAY, VT.STRING),
        ("llama.context_length", 4096, VT.UINT32, None),
        ("llama.rope.freq_base", 10000.0, VT.FLOAT32, None),
    ]
    rng = np.random.default_rng(5)
    tensors = [
        (name, rng.integers(0, 256, (rows, cols // block * size), dtype=np.uint8), qtype)
        for name, rows, cols, qtype in [
            ("token_embd.weight", 8, 256, gguf.GGMLQuantizationType.Q4_K),
            ("blk.0.attn_norm.weight", 1, 256, gguf.GGMLQuantizationType.F32),
            ("blk.0.attn_v.weight", 4, 256, gguf.GGMLQuantizationType.Q6_K),
            ("blk.0.ffn_down.weight", 4, 512, gguf.GGMLQuantizationType.Q8_0),
        ]
        for block, size in [gguf.GGML_QUANT_SIZES[qtype]]
    ]
    path = tmp_path / "llama.gguf"
    write_with_gguf_py(path, values, tensors)
    assert_same_as_gguf_py(path)


# --------------------------------------------------------------------------------------------
# Random files from gguf-py's writer
# --------------------------------------------------------------------------------------------

_INT_RANGES = {
    VT.UINT8: (0, 2**8 - 1),
    VT.INT8: (-(2**7), 2**7 - 1),
    VT.UINT16: (0, 2**16 - 1),
    VT.INT16: (-(2**15), 2**15 - 1),
    VT.UINT32: (0, 2**32 - 1),
    VT.INT32: (-(2**31), 2**31 - 1),
    VT.UINT64: (0, 2**64 - 1),
    VT.INT64: (-(2**63), 2**63 - 1),
}


def _elements(value_type):
    if value_type in _INT_RANGES:
        return st.integers(*_INT_RANGES[value_type])
    if value_type == VT.FLOAT32:
        return st.floats(width=32, allow_nan=False)
    if value_type == VT.FLOAT64:
        return st.floats(allow_nan=False)
    if value_type == VT.BOOL:
        return st.booleans()
    return st.text(max_size=12)


_SCALAR_TYPES = [*_INT_RANGES, VT.FLOAT32, VT.FLOAT64, VT.BOOL, VT.STRING]
# gguf-py's writer infers the element types of an array inside an array from its Python values
_NESTED_LEAVES = {VT.INT32: st.integers(-(2**31), 2**31 - 1), VT.FLOAT32: st.floats(width=32, allow_nan=False)}
_NESTED_LEAVES |= {VT.BOOL: st.booleans(), VT.STRING: st.text(max_size=6)}


@st.composite
def _value(draw):
    kind = draw(st.sampled_from(["scalar", "array", "nested"]))
    if kind == "nested":
        inner = st.sampled_from(list(_NESTED_LEAVES)).flatmap(
            lambda t: st.lists(_NESTED_LEAVES[t], min_size=1, max_size=4)
        )
        return draw(st.lists(inner, min_size=1, max_size=4)), VT.ARRAY, None
    value_type = draw(st.sampled_from(_SCALAR_TYPES))
    if kind == "scalar":
        return draw(_elements(value_type)), value_type, None
    return draw(st.lists(_elements(value_type), min_size=1, max_size=20)), VT.ARRAY, value_type


@st.composite
def _tensor(draw, index: int):
    qtype = draw(st.sampled_from(sorted(gguf.GGML_QUANT_SIZES, key=int)))
    block, size = gguf.GGML_QUANT_SIZES[qtype]
    outer = draw(st.lists(st.integers(1, 3), max_size=3))
    blocks = draw(st.integers(1, 3 if block > 1 else 16))
    data = np.frombuffer(draw(st.binary(min_size=blocks * size, max_size=blocks * size)), np.uint8)
    return f"t{index}", np.broadcast_to(data, (*outer, blocks * size)).copy(), qtype


@ORACLE
@given(data=st.data())
def test_random_gguf_py_files_read_the_same_through_the_lab(tmp_path_factory, data):
    values = [(f"lab.k{i}", *data.draw(_value())) for i in range(data.draw(st.integers(0, 6)))]
    tensors = [data.draw(_tensor(i)) for i in range(data.draw(st.integers(0, 4)))]
    path = tmp_path_factory.mktemp("oracle") / "random.gguf"
    write_with_gguf_py(path, values, tensors)
    assert_same_as_gguf_py(path)
    with gguf_tools.open_gguf(path) as gf:
        for key, value, value_type, _ in values:
            if value_type == VT.ARRAY and isinstance(value[0], list):  # nested: as written, not flattened
                read = gf.metadata(key)
                assert [as_gguf_py_reads(inner) for inner in read] == value


# --------------------------------------------------------------------------------------------
# Arrays of arrays come back nested, with their own element types
# --------------------------------------------------------------------------------------------


def test_arrays_of_arrays_written_by_gguf_py_come_back_nested(tmp_path):
    path = tmp_path / "nested.gguf"
    write_with_gguf_py(
        path,
        [
            ("lab.ints", [[1, 2], [3]], VT.ARRAY, None),
            ("lab.mixed", [[7, 8], ["ab"]], VT.ARRAY, None),
            ("lab.words", [["a", "bc"], [""]], VT.ARRAY, None),
        ],
    )
    with gguf_tools.open_gguf(path) as gf:
        ints, mixed, words = (gf.metadata(key) for key in ("lab.ints", "lab.mixed", "lab.words"))
    assert isinstance(ints, list) and [inner.dtype for inner in ints] == [np.int32, np.int32]
    assert [inner.tolist() for inner in ints] == [[1, 2], [3]]
    assert mixed[0].dtype == np.int32 and mixed[0].tolist() == [7, 8] and mixed[1] == ["ab"]
    assert words == [["a", "bc"], [""]]
    # gguf-py's own reader flattens them, and reads the string's bytes as INT32 elements' parts
    fields = gguf.GGUFReader(path).fields
    assert fields["lab.ints"].contents() == [1, 2, 3]
    assert fields["lab.mixed"].contents() == [7, 8, 97, 98]


def test_nested_and_empty_arrays_built_byte_by_byte(tmp_path):
    empty_inner = struct.pack("<IQ", UINT32, 0)
    raw = build(
        kvs=[
            kv("lab.empty", ARRAY, struct.pack("<IQ", UINT8, 0)),
            kv("lab.empties", ARRAY, struct.pack("<IQ", ARRAY, 3) + empty_inner * 3),
            kv("lab.no_words", ARRAY, struct.pack("<IQ", STRING, 0)),
            kv("lab.after", STRING, gguf_string("still here")),
        ]
    )
    path = tmp_path / "empty.gguf"
    path.write_bytes(raw)
    with gguf_tools.open_gguf(path) as gf:
        empty = gf.metadata("lab.empty")
        assert empty.dtype == np.uint8 and empty.shape == (0,)
        empties = gf.metadata("lab.empties")
        assert len(empties) == 3 and all(inner.dtype == np.uint32 and inner.size == 0 for inner in empties)
        assert gf.metadata("lab.no_words") == [] and gf.metadata("lab.after") == "still here"


def test_nested_metadata_round_trips_through_the_lab_writer(tmp_path):
    metadata = {
        "lab.nested": [np.array([1, 2], np.int32), np.array([3], np.int32)],
        "lab.mixed": [np.array([7, 8], np.int32), ["ab"]],
        "lab.flags": [np.array([True, False]), np.array([0.5], np.float32)],
        "lab.tokens": ["a", "", "ü"],
        "lab.bytes": np.arange(300, dtype=np.uint16),
        "lab.scores": np.array([0.25, -1.5], np.float64),
        "lab.nothing": "",  # gguf-py's add_string would drop it silently
    }
    w, types = {"w": np.ones((2, 32), np.float32)}, {"w": "F32"}
    path = gguf_tools.write_gguf(tmp_path / "nested.gguf", w, types, metadata=metadata)
    with gguf_tools.open_gguf(path) as gf:
        read = {key: gf.metadata(key) for key in metadata}
    assert_same_values(read, metadata)
    # what the lab reads, the lab writes back unchanged
    again = gguf_tools.write_gguf(tmp_path / "again.gguf", w, types, metadata=read)
    with gguf_tools.open_gguf(again) as gf:
        assert_same_values({key: gf.metadata(key) for key in metadata}, metadata)


def assert_same_values(ours, theirs) -> None:
    """Equal values with equal types, numpy arrays compared by dtype and elements."""
    if isinstance(theirs, np.ndarray):
        assert isinstance(ours, np.ndarray) and ours.dtype == theirs.dtype and np.array_equal(ours, theirs)
    elif isinstance(theirs, dict):
        assert list(ours) == list(theirs)
        for key in theirs:
            assert_same_values(ours[key], theirs[key])
    elif isinstance(theirs, list):
        assert isinstance(ours, list) and len(ours) == len(theirs)
        for mine, other in zip(ours, theirs, strict=True):
            assert_same_values(mine, other)
    else:
        assert type(ours) is type(theirs) and ours == theirs


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        ([1, 2], DTypeError, r"metadata 'k' must be a str, int or float, .* a list of int does not say which GGUF"),
        ([[1, 2], [3]], DTypeError, r"a list of list|a list of int"),
        ([], LabError, r"metadata 'k' is an empty array; gguf-py's writer cannot write one"),
        ([np.array([1], np.int32), np.array([], np.int32)], LabError, r"empty array"),
        (
            [np.array([1], np.uint8)],
            DTypeError,
            r"an array inside an array must hold int32, float32, bool or str, .*; got uint8",
        ),
        ([[np.array([1], np.int32)]], DTypeError, r"nests arrays more than 2 deep"),
        (np.zeros((2, 2), np.int32), DTypeError, r"must be 1-D, got shape \(2, 2\)"),
        (np.zeros(2, np.float16), DTypeError, r"float16"),
        (["a", 1], DTypeError, r"must be a str, int or float"),
        (["bad\ud800"], LabError, r"cannot be written as UTF-8"),
    ],
)
def test_write_gguf_refuses_arrays_gguf_py_cannot_write_faithfully(tmp_path, value, error, message):
    path = tmp_path / "refused.gguf"
    with pytest.raises(error, match=message):
        gguf_tools.write_gguf(path, {"w": np.ones((2, 32), np.float32)}, {"w": "F32"}, metadata={"k": value})
    assert not path.exists()


# --------------------------------------------------------------------------------------------
# The metadata summary
# --------------------------------------------------------------------------------------------


def test_the_summary_shows_types_lengths_and_first_items(tmp_path):
    path = tmp_path / "summary.gguf"
    tokens = [f"token-{i}" for i in range(10_000)]
    write_with_gguf_py(
        path,
        [
            ("tokenizer.ggml.tokens", tokens, VT.ARRAY, VT.STRING),
            ("tokenizer.ggml.scores", [0.5] * 10_000, VT.ARRAY, VT.FLOAT32),
            ("lab.nested", [[1, 2, 3, 4], [5]], VT.ARRAY, None),
            ("lab.long", "x" * 500, VT.STRING, None),
            ("lab.n", 7, VT.UINT32, None),
        ],
    )
    with gguf_tools.open_gguf(path) as gf:
        rows = {row["key"]: row for row in gf.metadata_summary(items=3, max_chars=10)}
    assert rows["tokenizer.ggml.tokens"] == {
        "key": "tokenizer.ggml.tokens",
        "type": "ARRAY of STRING",
        "length": 10_000,
        "bytes": 12 + sum(8 + len(token) for token in tokens),
        "value": ["token-0", "token-1", "token-2"],
    }
    assert rows["tokenizer.ggml.scores"]["value"].tolist() == [0.5] * 3
    assert rows["tokenizer.ggml.scores"]["type"] == "ARRAY of FLOAT32"
    assert [inner.tolist() for inner in rows["lab.nested"]["value"]] == [[1, 2, 3], [5]]
    assert rows["lab.nested"]["type"] == "ARRAY of ARRAY" and rows["lab.nested"]["length"] == 2
    assert rows["lab.long"]["value"] == "x" * 9 + "…" and rows["lab.long"]["length"] is None
    assert rows["lab.n"] == {"key": "lab.n", "type": "UINT32", "length": None, "bytes": 4, "value": 7}
    assert rows["general.architecture"]["value"] == "lab"


def test_metadata_after_close_says_the_file_is_closed(tmp_path):
    path = gguf_tools.write_gguf(tmp_path / "c.gguf", {"w": np.ones((2, 32), np.float32)}, {"w": "F32"})
    gf = gguf_tools.open_gguf(path)
    view = gf.raw("w")
    gf.close()
    assert view.tolist() == np.ones((2, 32), np.float32).view(np.uint8).tolist()  # still valid: views keep the map
    with pytest.raises(LabError, match="is closed"):
        gf.metadata("general.architecture")
    assert gf.metadata("absent", default=3) == 3  # an absent key needs no read


# --------------------------------------------------------------------------------------------
# Decoder names
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("type_name", gguf_tools.DECODABLE_TYPES)
def test_every_type_refuses_an_unknown_decoder_name(type_name):
    _, block_weights, block_bytes = gguf_tools.TENSOR_TYPES[gguf_tools.TYPE_IDS[type_name]]
    raw = np.zeros((1, block_bytes), np.uint8)
    assert gguf_tools.decode_raw(raw, type_name, "ggml").shape == (1, block_weights)
    with pytest.raises(RuleError, match=rf"unknown decoder 'OCP' for {type_name}; expected one of \('ocp', 'ggml'\)"):
        gguf_tools.decode_raw(raw, type_name, "OCP")


def test_decode_refuses_an_unknown_decoder_name_for_a_float_tensor(tmp_path):
    path = gguf_tools.write_gguf(tmp_path / "f.gguf", {"w": np.ones((2, 32), np.float32)}, {"w": "F32"})
    with gguf_tools.open_gguf(path) as gf, pytest.raises(RuleError, match="unknown decoder 'fast' for F32"):
        gf.decode("w", "fast")


# --------------------------------------------------------------------------------------------
# A file opened again
# --------------------------------------------------------------------------------------------


def test_a_file_opened_again_is_walked_once_and_again_whenever_its_bytes_change(tmp_path, monkeypatch):
    from lab.interop.gguf import read

    walks = []
    walk = read.validate
    monkeypatch.setattr(read, "validate", lambda mapped: walks.append(1) or walk(mapped))
    path = tmp_path / "again.gguf"
    names = {"general.name": "aaaa"}
    tensors = [("w", np.arange(64, dtype=np.float32).reshape(2, 32).view(np.uint8), gguf.GGMLQuantizationType.F32)]
    write_with_gguf_py(path, [(k, v, VT.STRING, None) for k, v in names.items()], tensors)
    for _ in range(3):
        with gguf_tools.open_gguf(path) as gf:
            assert gf.metadata("general.name") == "aaaa"
    assert len(walks) == 1
    # Rewritten in place, at once: the same inode and size, and often the same timestamps.
    first = path.stat()
    write_with_gguf_py(path, [("general.name", "bbbb", VT.STRING, None)], tensors)
    assert path.stat().st_size == first.st_size and path.stat().st_ino == first.st_ino
    with gguf_tools.open_gguf(path) as gf:
        assert gf.metadata("general.name") == "bbbb"
        assert gf.metadata("general.name") == gguf.GGUFReader(path).get_field("general.name").contents()
    assert len(walks) == 2
