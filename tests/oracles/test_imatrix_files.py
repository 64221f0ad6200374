"""lab.study.imatrix's files against llama.cpp's layout (tools/imatrix/imatrix.cpp, save_imatrix and
save_imatrix_legacy; common/imatrix-loader.cpp; ggml/src/gguf.cpp's writer, of the llama.cpp that
llama-cpp-python 0.3.36 vendors): the bytes each form must hold are written out here with struct,
independently of the lab; the GGUF form is read by gguf-py's GGUFReader, and imatrix files gguf-py's
writer makes are read by the lab. Bad files are refused with ImatrixError, quickly."""

from __future__ import annotations

import math
import struct
import time

import gguf
import numpy as np
import pytest

from lab.errors import GGUFFormatError
from lab.files import UnsafeWriteError
from lab.study import imatrix
from lab.study.imatrix import ImatrixEntry, ImatrixError

#: given out of name order, with widths, counts and values that differ entry by entry
ENTRIES = {
    "blk.10.ffn_up.weight": ImatrixEntry(np.float32([0.5, 7.25, 0.0]), 512),
    "blk.1.ffn_down.weight": ImatrixEntry(np.float32([1000.0, 3.0, 12.5, 0.1, 9.0, 42.0]), 1000),
    "blk.0.attn_q.weight": ImatrixEntry(np.float32([2.0, 3.0, 5.0, 7.0]), 37),
    "blk.0.attn_k.weight": ImatrixEntry(np.float32([11.0, 13.0, 17.0, 19.0]), 37),
}
#: how llama-imatrix orders them: std::sort over the names' bytes ("blk.1." before "blk.10")
SORTED = ["blk.0.attn_k.weight", "blk.0.attn_q.weight", "blk.1.ffn_down.weight", "blk.10.ffn_up.weight"]


def _string(text: str) -> bytes:
    return struct.pack("<Q", len(text.encode())) + text.encode()


def _pad(size: int) -> bytes:
    return bytes((32 - size % 32) % 32)


def expected_gguf(entries: dict[str, ImatrixEntry], datasets: list[str], chunk_count: int, chunk_size: int) -> bytes:
    """gguf.cpp's gguf_write_out for llama-imatrix's context: header, the four keys in the order
    save_imatrix sets them, one 1-D F32 tensor info per in_sum2 and counts, data aligned to 32."""
    names = sorted(entries)
    kv = _string("general.type") + struct.pack("<i", 8) + _string("imatrix")
    kv += _string("imatrix.datasets") + struct.pack("<iiQ", 9, 8, len(datasets)) + b"".join(map(_string, datasets))
    kv += _string("imatrix.chunk_count") + struct.pack("<iI", 4, chunk_count)
    kv += _string("imatrix.chunk_size") + struct.pack("<iI", 4, chunk_size)
    infos, data = b"", b""
    for name in names:
        for suffix, array in ((".in_sum2", entries[name].values), (".counts", np.float32([entries[name].count]))):
            infos += _string(name + suffix) + struct.pack("<I", 1) + struct.pack("<q", array.size)
            infos += struct.pack("<i", 0) + struct.pack("<Q", len(data))
            body = array.astype("<f4").tobytes()
            data += body + _pad(len(body))
    head = b"GGUF" + struct.pack("<IQQ", 3, 2 * len(names), 4) + kv + infos
    return head + _pad(len(head)) + data


def expected_dat(entries: dict[str, ImatrixEntry], dataset: str, chunk_count: int, chunk_size: int) -> bytes:
    """save_imatrix_legacy's bytes: each mean times ncall = ceil(count / chunk_size), in float32."""
    body = struct.pack("<i", len(entries))
    for name in sorted(entries):
        entry = entries[name]
        ncall = (entry.count + chunk_size - 1) // chunk_size
        stored = [np.float32(np.float32(value) / np.float32(entry.count)) * np.float32(ncall) for value in entry.values]
        body += struct.pack("<i", len(name)) + name.encode() + struct.pack("<ii", ncall, len(stored))
        body += struct.pack(f"<{len(stored)}f", *stored)
    return body + struct.pack("<ii", chunk_count, len(dataset)) + dataset.encode()


def test_the_gguf_form_holds_llama_imatrix_s_bytes(tmp_path):
    path = imatrix.write_imatrix_gguf(tmp_path / "x.imatrix.gguf", ENTRIES, datasets=["calibration.txt", "more.txt"])
    # chunk_count by default: the most rows, 1000, over chunks of 512
    assert path.read_bytes() == expected_gguf(ENTRIES, ["calibration.txt", "more.txt"], 1, 512)
    path = imatrix.write_imatrix_gguf(tmp_path / "y.gguf", ENTRIES, chunk_size=100, chunk_count=3)
    assert path.read_bytes() == expected_gguf(ENTRIES, [], 3, 100)


def test_gguf_py_reads_the_gguf_form(tmp_path):
    path = imatrix.write_imatrix_gguf(tmp_path / "x.imatrix.gguf", ENTRIES, datasets="calibration.txt", chunk_count=7)
    reader = gguf.GGUFReader(path)
    VT = gguf.GGUFValueType
    assert reader.fields["general.type"].contents() == "imatrix"
    assert reader.fields["imatrix.datasets"].types == [VT.ARRAY, VT.STRING]
    assert reader.fields["imatrix.datasets"].contents() == ["calibration.txt"]
    for key, value in (("imatrix.chunk_count", 7), ("imatrix.chunk_size", 512)):
        assert reader.fields[key].types == [VT.UINT32] and reader.fields[key].contents() == value
    assert [tensor.name for tensor in reader.tensors] == [f"{n}{s}" for n in SORTED for s in (".in_sum2", ".counts")]
    for tensor in reader.tensors:
        assert tensor.tensor_type == gguf.GGMLQuantizationType.F32 and tensor.data_offset % 32 == 0
        name, _, part = tensor.name.rpartition(".")
        entry = ENTRIES[name]
        if part == "in_sum2":
            assert list(tensor.shape) == [entry.values.size]
            np.testing.assert_array_equal(tensor.data, entry.values)
        else:
            assert list(tensor.shape) == [1] and tensor.data.tolist() == [float(entry.count)]


def test_the_gguf_form_round_trips_exactly(tmp_path):
    path = imatrix.write_imatrix_gguf(tmp_path / "x.imatrix.gguf", ENTRIES, datasets=["a", "b"], chunk_size=256)
    read = imatrix.read_imatrix_file(path)
    assert read.form == imatrix.GGUF and read.datasets == ("a", "b")
    assert (read.chunk_count, read.chunk_size) == (1000 // 256, 256)
    assert list(read.entries) == SORTED
    for name, entry in ENTRIES.items():
        assert read.entries[name].count == entry.count
        np.testing.assert_array_equal(read.entries[name].values, entry.values)
        np.testing.assert_array_equal(imatrix.importance(read.entries[name]), imatrix.importance(entry))


def test_the_dat_form_holds_llama_imatrix_s_bytes(tmp_path):
    path = imatrix.write_imatrix_dat(tmp_path / "x.dat", ENTRIES, dataset="calibration.txt")
    assert path.read_bytes() == expected_dat(ENTRIES, "calibration.txt", 1, 512)
    path = imatrix.write_imatrix_dat(tmp_path / "y.dat", ENTRIES, chunk_size=30, chunk_count=4)
    assert path.read_bytes() == expected_dat(ENTRIES, "", 4, 30)


def test_the_dat_form_leaves_out_an_entry_that_collected_nothing(tmp_path):
    entries = ENTRIES | {"blk.2.attn_v.weight": ImatrixEntry(np.zeros(4), 0)}
    path = imatrix.write_imatrix_dat(tmp_path / "x.dat", entries)
    assert path.read_bytes() == expected_dat(ENTRIES, "", 1, 512)
    with pytest.raises(ImatrixError, match="no entry collected any rows"):
        imatrix.write_imatrix_dat(tmp_path / "none.dat", {"blk.0.attn_q.weight": ImatrixEntry(np.zeros(3), 0)})


def test_the_dat_form_reads_back_as_llama_imatrix_loads_it(tmp_path):
    path = imatrix.write_imatrix_dat(tmp_path / "x.dat", ENTRIES, dataset="calibration.txt", chunk_count=2)
    read = imatrix.read_imatrix_file(path)
    assert read.form == imatrix.DAT and read.datasets == ("calibration.txt",)
    assert (read.chunk_count, read.chunk_size) == (2, 512)
    assert list(read.entries) == SORTED
    for name, entry in ENTRIES.items():
        ncall = math.ceil(entry.count / 512)
        stored = (entry.values / np.float32(entry.count)) * np.float32(ncall)
        # load_imatrix: the stored means times the chunk size, ncall chunks of it
        assert read.entries[name].count == ncall * 512
        np.testing.assert_array_equal(read.entries[name].values, stored * np.float32(512))
        # so the importance is llama-quantize's stored / ncall exactly, and the original's up to rounding
        np.testing.assert_array_equal(imatrix.importance(read.entries[name]), stored / np.float32(ncall))
        np.testing.assert_allclose(imatrix.importance(read.entries[name]), imatrix.importance(entry), rtol=1e-6)


def test_every_cut_of_a_dat_file_is_refused_or_is_whole(tmp_path):
    whole = expected_dat(ENTRIES, "calibration.txt", 1, 512)
    # the trailer is optional: llama.cpp's older files end after the entries, or after the chunk count
    entries_end = len(whole) - 8 - len("calibration.txt")
    started = time.perf_counter()
    for size in range(len(whole)):
        (tmp_path / "cut.dat").write_bytes(whole[:size])
        if size in (entries_end, entries_end + 4):
            assert list(imatrix.read_imatrix(tmp_path / "cut.dat")) == SORTED
            continue
        with pytest.raises(ImatrixError, match="is not a whole .dat imatrix"):
            imatrix.read_imatrix(tmp_path / "cut.dat")
    assert time.perf_counter() - started < 5


def _dat(*parts: bytes) -> bytes:
    return b"".join(parts)


def _one_entry(name: bytes = b"blk.0.attn_q.weight", ncall: int = 1, values=(1.0, 2.0), count=None) -> bytes:
    count = len(values) if count is None else count
    return struct.pack("<i", len(name)) + name + struct.pack("<ii", ncall, count) + np.float32(values).tobytes()


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b"", "the entry count needs 4 bytes"),
        (struct.pack("<i", 0), "holds 0 entries"),
        (struct.pack("<i", -5), "holds -5 entries"),
        (struct.pack("<i", 2**31 - 1) + bytes(64), "holds 2147483647 entries"),
        (struct.pack("<i", 1) + struct.pack("<i", -1) + bytes(12), "negative length"),
        (struct.pack("<i", 1) + struct.pack("<i", 2**30) + bytes(12), "cut short"),
        (struct.pack("<i", 1) + _one_entry(count=2**30), "cut short"),
        (struct.pack("<i", 1) + _one_entry(count=0, values=()), "has 0 values"),
        (struct.pack("<i", 1) + _one_entry(ncall=0), "over 0 chunks"),
        (struct.pack("<i", 1) + _one_entry(values=(1.0, float("nan"))), "NaN"),
        (struct.pack("<i", 1) + _one_entry(values=(1.0, float("inf"))), "NaN, infinity"),
        (struct.pack("<i", 1) + _one_entry(values=(1.0, -2.0)), "finite and >= 0"),
        (struct.pack("<i", 1) + _one_entry(values=(3e38, 1.0)), "overflow float32"),
        (struct.pack("<i", 1) + _one_entry(name=b"\xff\xfe"), "not UTF-8"),
        (struct.pack("<i", 1) + _one_entry(name=b""), "empty or holds a NUL"),
        (struct.pack("<i", 1) + _one_entry(name=b"a\x00b"), "empty or holds a NUL"),
        (struct.pack("<i", 2) + _one_entry() + _one_entry(), "has two entries"),
        (struct.pack("<i", 1) + _one_entry() + struct.pack("<i", -1), "the chunk count is -1"),
        (struct.pack("<i", 1) + _one_entry() + struct.pack("<ii", 1, 3) + b"abcd", "3 bytes long but 4"),
        (struct.pack("<i", 1) + _one_entry() + struct.pack("<ii", 1, 9) + b"abc", "9 bytes long but 3"),
        (struct.pack("<i", 1) + _one_entry() + struct.pack("<ii", 1, -2), "-2 bytes long"),
    ],
)
def test_a_bad_dat_file_is_refused_in_the_lab_s_words(tmp_path, data, words):
    (tmp_path / "bad.dat").write_bytes(data)
    with pytest.raises(ImatrixError, match=words):
        imatrix.read_imatrix(tmp_path / "bad.dat")


def test_a_dat_file_read_with_another_chunk_size_keeps_its_importance(tmp_path):
    path = imatrix.write_imatrix_dat(tmp_path / "x.dat", ENTRIES)
    read = imatrix.read_imatrix(path, chunk_size=64)
    assert read["blk.1.ffn_down.weight"].count == 2 * 64
    np.testing.assert_array_equal(
        imatrix.importance(read["blk.1.ffn_down.weight"]),
        imatrix.importance(imatrix.read_imatrix(path)["blk.1.ffn_down.weight"]),
    )
    for chunk_size in (0, -1, 2.0, 2**31):
        with pytest.raises(ImatrixError, match="chunk size"):
            imatrix.read_imatrix(path, chunk_size=chunk_size)


def write_with_gguf_py(path, tensors: dict[str, np.ndarray], *, metadata: bool = True, chunk_size: int = 512):
    """An imatrix file made by gguf-py's writer, independently of the lab (with general.architecture,
    which llama.cpp's own writer leaves out and its loader passes over)."""
    writer = gguf.GGUFWriter(path, "imatrix-test")
    if metadata:
        writer.add_string("general.type", "imatrix")
        writer.add_array("imatrix.datasets", ["gguf-py.txt"])
        writer.add_uint32("imatrix.chunk_count", 2)
        writer.add_uint32("imatrix.chunk_size", chunk_size)
    for name, array in tensors.items():
        writer.add_tensor(name, array)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_an_imatrix_gguf_py_wrote_is_read_in_either_tensor_shape(tmp_path):
    sums = np.float32([4.0, 9.0, 0.25])
    path = write_with_gguf_py(
        tmp_path / "g.gguf",
        {
            "blk.0.attn_q.weight.in_sum2": sums,
            "blk.0.attn_q.weight.counts": np.float32([8.0]),
            # two dimensions, [1, columns] and [1, 1], as a matrix whose trailing 1 was kept
            "blk.0.ffn_up.weight.in_sum2": sums[None, ::-1].copy(),
            "blk.0.ffn_up.weight.counts": np.float32([[3.0]]),
            "token_embd.weight": np.ones((2, 3), np.float32),  # passed over, as llama.cpp passes it
        },
    )
    read = imatrix.read_imatrix_file(path)
    assert (read.datasets, read.chunk_count, read.chunk_size, read.form) == (("gguf-py.txt",), 2, 512, imatrix.GGUF)
    assert list(read.entries) == ["blk.0.attn_q.weight", "blk.0.ffn_up.weight"]
    np.testing.assert_array_equal(imatrix.importance(read.entries["blk.0.attn_q.weight"]), sums / np.float32(8))
    np.testing.assert_array_equal(read.entries["blk.0.ffn_up.weight"].values, sums[::-1])
    assert read.entries["blk.0.ffn_up.weight"].count == 3


GOOD_PAIR = {"blk.0.attn_q.weight.in_sum2": np.float32([1.0, 2.0]), "blk.0.attn_q.weight.counts": np.float32([4.0])}


@pytest.mark.parametrize(
    ("tensors", "metadata", "words"),
    [
        (GOOD_PAIR, False, "lacks imatrix.datasets"),
        ({"token_embd.weight": np.ones(4, np.float32)}, True, "no .in_sum2 and .counts tensors"),
        ({"blk.0.attn_q.weight.in_sum2": np.float32([1.0, 2.0])}, True, "but not both"),
        (GOOD_PAIR | {"blk.0.attn_q.weight.counts": np.float32([2.5])}, True, "2.5.*whole number"),
        (GOOD_PAIR | {"blk.0.attn_q.weight.counts": np.float32([-4.0])}, True, "whole number >= 0"),
        (GOOD_PAIR | {"blk.0.attn_q.weight.counts": np.float32([np.nan])}, True, "whole number"),
        (GOOD_PAIR | {"blk.0.attn_q.weight.in_sum2": np.float32([1.0, np.nan])}, True, "finite"),
        (GOOD_PAIR | {"blk.0.attn_q.weight.in_sum2": np.float32([1.0, -2.0])}, True, "negative"),
        (GOOD_PAIR | {"blk.0.attn_q.weight.counts": np.float32([0.0])}, True, "count of 0"),
        (GOOD_PAIR | {"blk.0.attn_q.weight.in_sum2": np.float16([1.0, 2.0])}, True, "must be F32"),
        (
            {
                "blk.0.ffn_up.weight.in_sum2": np.ones((2, 3), np.float32),
                "blk.0.ffn_up.weight.counts": np.ones((2, 1), np.float32),
            },
            True,
            "holds 2 matrices",
        ),
    ],
)
def test_a_bad_gguf_imatrix_is_refused_in_the_lab_s_words(tmp_path, tensors, metadata, words):
    path = write_with_gguf_py(tmp_path / "bad.gguf", tensors, metadata=metadata)
    with pytest.raises(ImatrixError, match=words):
        imatrix.read_imatrix(path)


def test_a_cut_gguf_imatrix_is_refused_by_the_lab_s_gguf_walk(tmp_path):
    whole = imatrix.write_imatrix_gguf(tmp_path / "x.gguf", ENTRIES).read_bytes()
    (tmp_path / "cut.gguf").write_bytes(whole[: len(whole) - 40])
    with pytest.raises(GGUFFormatError):
        imatrix.read_imatrix(tmp_path / "cut.gguf")


@pytest.mark.parametrize(
    ("entries", "options", "words"),
    [
        ({}, {}, "at least one entry"),
        ([("blk.0.attn_q.weight", ENTRIES["blk.0.attn_q.weight"])], {}, "at least one entry"),
        ({"": ENTRIES["blk.0.attn_q.weight"]}, {}, "non-empty str"),
        ({"a\x00b": ENTRIES["blk.0.attn_q.weight"]}, {}, "without NUL"),
        ({"blk.0.attn_q.weight": np.ones(3)}, {}, "not an ImatrixEntry"),
        ({"blk.0." + "x" * 60: ENTRIES["blk.0.attn_q.weight"]}, {}, "too long for a GGUF imatrix"),
        (ENTRIES, {"chunk_size": 0}, "chunk size"),
        (ENTRIES, {"chunk_size": 2**32}, "chunk size"),
        (ENTRIES, {"chunk_count": -1}, "chunk count"),
        (ENTRIES, {"datasets": [b"bytes"]}, "list of str"),
        (ENTRIES, {"datasets": ["\ud800"]}, "list of str"),
        (ENTRIES, {"datasets": 5}, "list of str"),
    ],
)
def test_what_cannot_be_written_as_a_gguf_imatrix_is_refused_before_writing(tmp_path, entries, options, words):
    with pytest.raises(ImatrixError, match=words):
        imatrix.write_imatrix_gguf(tmp_path / "x.gguf", entries, **options)
    assert not (tmp_path / "x.gguf").exists()


def test_a_dat_imatrix_s_fields_are_checked_before_writing(tmp_path):
    with pytest.raises(ImatrixError, match="chunk size"):
        imatrix.write_imatrix_dat(tmp_path / "x.dat", ENTRIES, chunk_size=2**31)
    with pytest.raises(ImatrixError, match="too large for a .dat imatrix"):
        imatrix.write_imatrix_dat(
            tmp_path / "x.dat", {"blk.0.attn_q.weight": ImatrixEntry(np.ones(2), 2**40)}, chunk_size=1, chunk_count=1
        )
    for dataset in (["a"], "\ud800"):
        with pytest.raises(ImatrixError, match="a str"):
            imatrix.write_imatrix_dat(tmp_path / "x.dat", ENTRIES, dataset=dataset)
    assert not (tmp_path / "x.dat").exists()


def test_both_forms_are_written_only_through_the_lab_s_safe_write(tmp_path):
    target = tmp_path / "elsewhere.txt"
    target.write_text("keep me")
    for writer, name in ((imatrix.write_imatrix_gguf, "link.gguf"), (imatrix.write_imatrix_dat, "link.dat")):
        (tmp_path / name).symlink_to(target)
        with pytest.raises(UnsafeWriteError):
            writer(tmp_path / name, ENTRIES)
    assert target.read_text() == "keep me"
