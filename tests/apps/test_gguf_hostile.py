"""Hostile GGUF files: every malformed file is rejected with a GGUFFormatError naming its problem,
without allocating more than the file holds and without hanging; the reader and every decoder
are fuzzed with hypothesis.

The files are built here byte by byte (not with gguf-py's writer), so each one breaks exactly
one rule of the format.
"""

from __future__ import annotations

import re
import struct
import time
import tracemalloc

import gguf
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lab.errors import GGUFFormatError, LabError, ShapeError, UnsupportedTypeError
from lab.formats import mxfp4, nvfp4, q4k, q8_0
from lab.interop import gguf as gguf_tools

FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
U64_MAX = 2**64 - 1
F32, Q4_K = 0, 12
STRING, ARRAY, UINT32, UINT8 = 8, 9, 4, 0


# --------------------------------------------------------------------------------------------
# A byte-level GGUF builder
# --------------------------------------------------------------------------------------------


def gguf_string(text: str | bytes, claimed_length: int | None = None) -> bytes:
    raw = text.encode() if isinstance(text, str) else text
    return struct.pack("<Q", len(raw) if claimed_length is None else claimed_length) + raw


def kv(key, type_id: int, payload: bytes) -> bytes:
    return gguf_string(key) + struct.pack("<I", type_id) + payload


def tensor_info(name, dims, type_id: int, offset: int, n_dims: int | None = None) -> bytes:
    head = gguf_string(name) + struct.pack("<I", len(dims) if n_dims is None else n_dims)
    return head + b"".join(struct.pack("<Q", n) for n in dims) + struct.pack("<IQ", type_id, offset)


def build(
    *,
    kvs=None,
    infos=None,
    data: bytes | None = None,
    magic: bytes = b"GGUF",
    version: int = 3,
    tensor_count: int | None = None,
    kv_count: int | None = None,
    alignment: int = 32,
) -> bytes:
    kvs = [kv("general.architecture", STRING, gguf_string("lab"))] if kvs is None else kvs
    if infos is None:
        infos = [tensor_info("a", (8, 2), F32, 0), tensor_info("q", (256,), Q4_K, 64)]
    if data is None:
        data = np.arange(16, dtype="<f4").tobytes() + q4k.presentation_fixture().tobytes()
    head = magic + struct.pack(
        "<IQQ",
        version,
        len(infos) if tensor_count is None else tensor_count,
        len(kvs) if kv_count is None else kv_count,
    )
    body = head + b"".join(kvs) + b"".join(infos)
    return body + bytes(-len(body) % alignment) + data


VALID = build()


def open_bytes(tmp_path, raw: bytes, name: str = "file.gguf"):
    path = tmp_path / name
    path.write_bytes(raw)
    return gguf_tools.open_gguf(path)


def test_the_baseline_file_is_valid_for_the_lab_and_for_gguf_py(tmp_path):
    with open_bytes(tmp_path, VALID) as gf:
        assert [t.name for t in gf.tensors] == ["a", "q"]
        assert np.array_equal(gf.decode("a"), np.arange(16, dtype=np.float32).reshape(2, 8))
        assert np.array_equal(gf.decode("q"), q4k.decode(q4k.presentation_fixture()))
    reader = gguf.GGUFReader(tmp_path / "file.gguf")
    assert [t.name for t in reader.tensors] == ["a", "q"]


# --------------------------------------------------------------------------------------------
# The corpus: one broken rule each, and the message that names it
# --------------------------------------------------------------------------------------------

HEADER_END = 24
_tensor_section = b"".join([tensor_info("a", (8, 2), F32, 0), tensor_info("q", (256,), Q4_K, 64)])
_kv_section = kv("general.architecture", STRING, gguf_string("lab"))


def _nested(outer_count: int, inner_type: int, inner_count: int) -> bytes:
    inner = struct.pack("<IQ", inner_type, inner_count)
    return struct.pack("<IQ", ARRAY, outer_count) + inner


HOSTILE = {
    "empty file": (b"", r"truncated header: the file is 0 bytes"),
    "truncated header": (VALID[:10], r"truncated header: the file is 10 bytes"),
    "wrong magic": (b"GGML" + VALID[4:], r"not a GGUF file: the magic is b'GGML'"),
    "unsupported version 1": (build(version=1), r"unsupported GGUF version 1"),
    "unsupported version 4": (build(version=4), r"unsupported GGUF version 4"),
    "big-endian file": (build(version=3 << 24), r"big-endian GGUF file"),
    "tensor count far larger than the file": (
        build(tensor_count=2**62),
        r"the tensor count is 4611686018427387904, but",
    ),
    "kv count far larger than the file": (build(kv_count=U64_MAX), r"the key/value count is 18446744073709551615"),
    "key longer than the file": (
        build(kvs=[gguf_string("k", claimed_length=2**40) + struct.pack("<I", UINT8) + b"\x00"]),
        r"key 0 claims 1099511627776 bytes, but only",
    ),
    "string value longer than the file": (
        build(kvs=[kv("general.name", STRING, gguf_string("x", claimed_length=U64_MAX))]),
        r"the value of key 'general.name' claims 18446744073709551615 bytes",
    ),
    "unknown value type": (build(kvs=[kv("k", 13, b"\x00" * 8)]), r"the value of key 'k' has unknown value type id 13"),
    "array of unknown type": (
        build(kvs=[kv("k", ARRAY, struct.pack("<IQ", 77, 1))]),
        r"array of unknown value type id 77",
    ),
    "array with a huge count": (
        build(kvs=[kv("tokenizer.ggml.scores", ARRAY, struct.pack("<IQ", 6, U64_MAX))]),
        r"the element count of the value of key 'tokenizer.ggml.scores' \(an array of FLOAT32\) is 18446744073709551615",
    ),
    "string array with a huge count": (
        build(kvs=[kv("tokenizer.ggml.tokens", ARRAY, struct.pack("<IQ", STRING, 2**50))]),
        r"\(an array of STRING\) is 1125899906842624, but",
    ),
    "nested arrays with huge counts": (
        build(kvs=[kv("k", ARRAY, _nested(1, UINT32, 2**61))]),
        r"the element count of an element of the value of key 'k' \(an array of UINT32\) is 2305843009213693952",
    ),
    "nested arrays with a huge outer count": (
        build(kvs=[kv("k", ARRAY, _nested(2**60, UINT32, 0))]),
        r"\(an array of ARRAY\) is 1152921504606846976, but",
    ),
    "arrays nested too deep": (
        build(kvs=[kv("k", ARRAY, struct.pack("<IQ", ARRAY, 1) + _nested(1, UINT32, 0))]),
        r"nests arrays more than 2 deep",
    ),
    "duplicate key": (
        build(kvs=[kv("general.name", STRING, gguf_string("a")), kv("general.name", STRING, gguf_string("b"))]),
        r"duplicate metadata key 'general.name'",
    ),
    "key gguf-py reserves": (
        build(kvs=[kv("GGUF.version", UINT32, struct.pack("<I", 3))]),
        r"metadata key 'GGUF.version' clashes",
    ),
    "key not UTF-8": (build(kvs=[kv(b"\xff\xfe", UINT8, b"\x00")]), r"key 0 at offset 32 is not valid UTF-8"),
    "alignment zero": (
        build(kvs=[kv("general.alignment", UINT32, struct.pack("<I", 0))]),
        r"general.alignment must be a non-zero power of two, got 0",
    ),
    "alignment not a power of two": (
        build(kvs=[kv("general.alignment", UINT32, struct.pack("<I", 48))]),
        r"general.alignment must be a non-zero power of two, got 48",
    ),
    "alignment of the wrong type": (
        build(kvs=[kv("general.alignment", UINT8, b"\x20")]),
        r"general.alignment must be a UINT32, got a UINT8",
    ),
    "truncated key/value section": (
        build(infos=[], data=b"")[: HEADER_END + 8 + len("general.architecture") + 2],
        r"truncated file: the value type of key 'general.architecture' needs 4 bytes",
    ),
    "truncated tensor-info section": (
        VALID[: HEADER_END + len(_kv_section) + 70],
        r"truncated file: the data offset of tensor 'q' needs 8 bytes",
    ),
    "truncated tensor data": (VALID[:-100], r"truncated tensor data: tensor 'q' needs bytes"),
    "data section past the end": (
        VALID[: HEADER_END + len(_kv_section) + len(_tensor_section)],
        r"tensor data should start at byte",
    ),
    "n_dims too large": (build(infos=[tensor_info("a", (8, 2, 1, 1, 1), F32, 0)]), r"tensor 'a' has n_dims 5"),
    "n_dims huge": (
        build(infos=[tensor_info("a", (8,), F32, 0, n_dims=2**32 - 1)]),
        r"tensor 'a' has n_dims 4294967295",
    ),
    "n_dims zero": (build(infos=[tensor_info("a", (), F32, 0)]), r"tensor 'a' has n_dims 0"),
    "dimensions whose product overflows": (
        build(infos=[tensor_info("a", (2**32, 2**32), F32, 0)]),
        r"tensor 'a' has dimensions \[4294967296, 4294967296\] whose product overflows",
    ),
    "a zero-length dimension": (
        build(infos=[tensor_info("a", (8, 0), F32, 0)]),
        r"tensor 'a' has a zero-length dimension",
    ),
    "unknown tensor type id": (build(infos=[tensor_info("a", (8, 2), 99, 0)]), r"tensor 'a' has unknown type id 99"),
    "row not a multiple of the block": (
        build(infos=[tensor_info("q", (100,), Q4_K, 0)]),
        r"tensor 'q' has row length 100, not a multiple of Q4_K's block of 256",
    ),
    "offset outside the file": (
        build(infos=[tensor_info("a", (8, 2), F32, 2**40)]),
        r"tensor 'a' starts at byte 1099511627\d+, outside the file",
    ),
    "misaligned data": (
        build(infos=[tensor_info("a", (8, 2), F32, 4)]),
        r"misaligned data: tensor 'a' starts at data offset 4",
    ),
    "overlapping tensors": (
        build(infos=[tensor_info("a", (8, 2), F32, 0), tensor_info("b", (8, 2), F32, 32)]),
        r"tensors 'a' and 'b' overlap",
    ),
    "duplicate tensor names": (
        build(infos=[tensor_info("a", (8, 2), F32, 0), tensor_info("a", (8,), F32, 64)]),
        r"duplicate tensor name 'a'",
    ),
    "tensor name longer than the file": (
        build(infos=[gguf_string("a", claimed_length=2**63) + struct.pack("<I", 1)]),
        r"a tensor name claims 9223372036854775808 bytes",
    ),
    "tensor name not UTF-8": (
        build(infos=[tensor_info(b"\xc3\x28", (8, 2), F32, 0)]),
        r"a tensor name at offset \d+ is not valid UTF-8",
    ),
}

#: bytes a rejected open may allocate beyond the file's own size: messages, frames, small objects
ALLOCATION_SLACK = 64 * 1024


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_every_hostile_file_is_rejected_with_its_own_message_within_the_file_size(tmp_path, case):
    raw, message = HOSTILE[case]
    path = tmp_path / "hostile.gguf"
    path.write_bytes(raw)
    tracemalloc.start()
    started = time.perf_counter()
    try:
        with pytest.raises(GGUFFormatError, match=message):
            gguf_tools.open_gguf(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < len(raw) + ALLOCATION_SLACK
    assert time.perf_counter() - started < 2.0


def test_each_hostile_file_gets_its_own_message_and_no_other():
    for case, (raw, _) in HOSTILE.items():
        with pytest.raises(GGUFFormatError) as caught:
            gguf_tools.validate(raw)
        matching = [other for other, (_, pattern) in HOSTILE.items() if re.search(pattern, str(caught.value))]
        assert matching == [case], (case, str(caught.value))


def test_a_large_file_that_fails_late_allocates_less_than_itself(tmp_path):
    """A 2 MB string array followed by an impossible tensor: the walk holds no copy of the strings."""
    tokens = b"".join(gguf_string(f"t{i:07d}") for i in range(130_000))
    raw = build(
        kvs=[kv("tokenizer.ggml.tokens", ARRAY, struct.pack("<IQ", STRING, 130_000) + tokens)],
        infos=[tensor_info("a", (8, 2), 99, 0)],
    )
    path = tmp_path / "large.gguf"
    path.write_bytes(raw)
    tracemalloc.start()
    try:
        with pytest.raises(GGUFFormatError, match="unknown type id 99"):
            gguf_tools.open_gguf(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(raw) > 2_000_000
    assert peak < ALLOCATION_SLACK


@pytest.mark.parametrize(
    "case", ["misaligned data", "overlapping tensors", "n_dims too large", "a zero-length dimension"]
)
def test_gguf_py_alone_accepts_files_the_lab_rejects(tmp_path, case):
    """Why the walker exists: gguf-py's reader opens these without a word."""
    path = tmp_path / "accepted.gguf"
    path.write_bytes(HOSTILE[case][0])
    assert gguf.GGUFReader(path).tensors


def test_an_unsupported_tensor_type_is_rejected_by_name_when_decoded(tmp_path):
    iq2 = gguf_tools.TYPE_IDS["IQ2_XXS"]
    raw = build(infos=[tensor_info("blk.0.attn_q.weight", (256,), iq2, 0)], data=bytes(66))
    with open_bytes(tmp_path, raw) as gf:
        assert gf.inventory()[0]["type"] == "IQ2_XXS"
        message = r"tensor 'blk.0.attn_q.weight' has type IQ2_XXS, which the lab does not decode; supported: F32, F16"
        with pytest.raises(UnsupportedTypeError, match=message):
            gf.decode("blk.0.attn_q.weight")


def test_metadata_is_data_never_a_path_or_code(tmp_path):
    hostile_values = [
        kv("general.name", STRING, gguf_string("../../etc/passwd")),
        kv("general.source.url", STRING, gguf_string("__import__('os').system('false')")),
    ]
    with open_bytes(tmp_path, build(kvs=hostile_values)) as gf:
        assert gf.metadata("general.name") == "../../etc/passwd"
        assert gf.metadata("general.source.url").startswith("__import__")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file.gguf"]


# --------------------------------------------------------------------------------------------
# Fuzzing: the reader never fails with anything but a typed error
# --------------------------------------------------------------------------------------------


def _check_opens_or_rejects(tmp_path, raw: bytes) -> None:
    path = tmp_path / "fuzz.gguf"
    path.write_bytes(raw)
    try:
        gf = gguf_tools.open_gguf(path)
    except GGUFFormatError:
        return
    with gf:
        for info in gf.tensors:
            try:
                weights = gf.decode(info.name)
            except LabError:
                continue
            assert weights.shape == info.shape and weights.dtype == np.float32


@FUZZ
@given(st.data())
def test_fuzz_flipped_bytes_open_cleanly_or_raise_a_format_error(tmp_path_factory, data):
    raw = bytearray(VALID)
    for _ in range(data.draw(st.integers(1, 6))):
        position = data.draw(st.integers(0, len(raw) - 1))
        raw[position] = data.draw(st.integers(0, 255))
    _check_opens_or_rejects(tmp_path_factory.mktemp("flip"), bytes(raw))


@FUZZ
@given(cut=st.integers(0, len(VALID)), junk=st.binary(max_size=64))
def test_fuzz_truncated_or_extended_files_open_cleanly_or_raise_a_format_error(tmp_path_factory, cut, junk):
    _check_opens_or_rejects(tmp_path_factory.mktemp("cut"), VALID[:cut] + junk)


@FUZZ
@given(
    header_fields=st.tuples(st.sampled_from([2, 3]), st.integers(0, U64_MAX), st.integers(0, U64_MAX)),
    tail=st.binary(max_size=200),
)
def test_fuzz_random_headers_never_allocate_by_the_claimed_counts(header_fields, tail):
    version, tensor_count, kv_count = header_fields
    raw = b"GGUF" + struct.pack("<IQQ", version, tensor_count, kv_count) + tail
    # the walk's peak allocation is measured, as for the corpus: a count of up to 2^64 - 1 must cost
    # no more than the file's own bytes, never memory in proportion to the count it claims
    tracemalloc.start()
    try:
        try:
            gguf_tools.validate(raw)
        except GGUFFormatError:
            pass
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < len(raw) + ALLOCATION_SLACK


@FUZZ
@given(value_type=st.integers(0, 14), payload=st.binary(max_size=48))
def test_fuzz_random_key_values_are_walked_or_rejected(value_type, payload):
    raw = build(kvs=[kv("k", value_type, payload)], infos=[], data=b"")
    try:
        layout = gguf_tools.validate(raw)
    except GGUFFormatError:
        return
    assert layout.keys == ("k",)


# --------------------------------------------------------------------------------------------
# Fuzzing the decoders: a result that matches gguf-py, or a ShapeError
# --------------------------------------------------------------------------------------------


def _same_floats(ours: np.ndarray, theirs: np.ndarray) -> bool:
    ours, theirs = np.asarray(ours, np.float32), np.asarray(theirs, np.float32)
    both_nan = np.isnan(ours) & np.isnan(theirs)
    return ours.shape == theirs.shape and bool(np.all(both_nan | (ours.view(np.uint32) == theirs.view(np.uint32))))


DECODERS = {
    "Q4_K": (lambda raw: q4k.decode(raw), 144),
    "Q8_0": (lambda raw: q8_0.from_gguf(raw).dequantize(), 34),
    "MXFP4": (lambda raw: mxfp4.dequantize_gguf(raw, decoder="ggml"), 17),
    "NVFP4": (lambda raw: nvfp4.dequantize_gguf(raw, decoder="ggml"), 36),
}


@pytest.mark.parametrize("type_name", sorted(DECODERS))
@FUZZ
@given(raw=st.binary(max_size=600))
def test_fuzz_decoders_match_gguf_py_or_reject_the_length(type_name, raw):
    decode, block_bytes = DECODERS[type_name]
    array = np.frombuffer(raw, dtype=np.uint8)
    if not raw or len(raw) % block_bytes:
        with pytest.raises(ShapeError):
            decode(array)
        return
    with np.errstate(all="ignore"):
        ours = decode(array)
        theirs = gguf.quants.dequantize(array, gguf.GGMLQuantizationType[type_name])
    assert _same_floats(ours, theirs)


@FUZZ
@given(raw=st.binary(min_size=1, max_size=600))
def test_fuzz_ocp_readings_of_gguf_blocks_decode_or_reject_the_length(raw):
    array = np.frombuffer(raw, dtype=np.uint8)
    for decode, block_bytes in ((mxfp4.dequantize_gguf, 17), (nvfp4.dequantize_gguf, 36)):
        if len(raw) % block_bytes:
            with pytest.raises(ShapeError):
                decode(array)
        else:
            with np.errstate(all="ignore"):
                assert decode(array, decoder="ocp").size == len(raw) // block_bytes * (32 if block_bytes == 17 else 64)


def test_a_block_with_an_infinite_scale_is_picked_without_a_warning(tmp_path, recwarn):
    """Found by tests/apps/test_gguf_fuzz.py: a Q4_K block whose d is float16 inf made gguf-py's
    reference decode in pick_block warn "invalid value encountered in multiply" (inf times a zero
    scale) onto notebook 6's page. The lab's decode and gguf-py's agree, NaN for NaN."""
    from lab.teach import gguf_browser

    block = bytearray(q4k.presentation_fixture().tobytes())
    block[0:2] = struct.pack("<e", np.inf)
    path = tmp_path / "inf-scale.gguf"
    path.write_bytes(build(data=np.arange(16, dtype="<f4").tobytes() + bytes(block)))
    with gguf_browser.open_path(path) as browser:
        pick = gguf_browser.pick_block(browser.file, "q", 0)
    assert not recwarn.list, [str(warning.message) for warning in recwarn.list]
    assert pick.check.matches and np.isnan(pick.weights).any()
