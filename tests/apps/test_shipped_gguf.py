"""The real GGUF file in the lab: Gemma 3 270M in Q4_K_M, written by llama.cpp, not by this project.

gguf-py is the oracle for every byte: its reader for the inventory and the metadata, its
dequantize for every tensor, decoded from the same bytes. The file is also llama.cpp's own
answer to "what does a Q4_K_M recipe do with rows of 640", which the lab's fallback table must
read the same way.
"""

from __future__ import annotations

import gguf
import numpy as np
import pytest
from support import require_shipped_gguf

from lab.interop import gguf as gguf_tools
from lab.study import shipped_gguf

# every test here reads the 253 MB file (through fixtures, which the conftest's marking cannot see)
pytestmark = pytest.mark.slow

#: what the file is, as llama.cpp wrote it (counted with gguf-py's reader)
TENSOR_COUNTS = {"F32": 109, "Q5_0": 81, "Q4_K": 27, "Q8_0": 10, "Q6_K": 9}
FILE_BYTES = 253_113_024


@pytest.fixture(scope="module")
def gemma():
    path = require_shipped_gguf()
    with gguf_tools.open_gguf(path) as gf:
        yield gf


@pytest.fixture(scope="module")
def reader():
    return gguf.GGUFReader(require_shipped_gguf())


def test_the_file_is_the_one_its_package_names():
    path = require_shipped_gguf()
    assert path.stat().st_size == FILE_BYTES
    facts = shipped_gguf.provenance()
    assert facts.model == "google/gemma-3-270m"
    assert facts.licence == "gemma" and facts.licence_title == "Gemma Terms of Use"
    assert "llama.cpp" in facts.converter and "://" not in facts.source  # named, not linked


def test_the_inventory_and_every_metadata_value_agree_with_gguf_py(gemma, reader):
    ours = {info.name: info for info in gemma.tensors}
    assert [t.name for t in reader.tensors] == [info.name for info in gemma.tensors]
    for tensor in reader.tensors:
        info = ours[tensor.name]
        assert info.type_name == tensor.tensor_type.name
        assert info.shape == tuple(int(n) for n in reversed(tensor.shape))  # gguf-py lists ne innermost first
        assert info.n_bytes == int(tensor.n_bytes)
    assert {t: sum(i.type_name == t for i in gemma.tensors) for t in TENSOR_COUNTS} == TENSOR_COUNTS
    keys = [key for key in reader.fields if not key.startswith("GGUF.")]
    assert len(keys) == 33
    for key in keys:
        expected = reader.fields[key].contents()
        got = gemma.metadata(key)
        if isinstance(expected, list):
            assert list(np.asarray(got).tolist()) == list(expected), key
        else:
            assert got == expected, key


def test_every_tensor_decodes_bit_identical_to_gguf_py(gemma):
    for info in gemma.tensors:
        raw = np.asarray(gemma.raw(info.name))
        ours = gemma.decode(info.name)
        expected = gguf.quants.dequantize(raw, gguf.GGMLQuantizationType[info.type_name]).reshape(info.shape)
        assert ours.dtype == np.float32 and ours.shape == info.shape
        assert np.array_equal(ours.view(np.uint32), np.asarray(expected, np.float32).view(np.uint32)), info.name


def test_the_fallback_table_reads_rows_of_640_the_way_llama_cpp_wrote_them(gemma):
    # Every matrix whose rows cannot hold 256-weight super-blocks is in a type llama.cpp falls back to
    fallbacks = set(gguf_tools.LLAMA_CPP_FALLBACK.values())
    misfits = [info for info in gemma.tensors if len(info.shape) > 1 and info.shape[-1] % 256]
    assert misfits and all(info.type_name in fallbacks for info in misfits)
    reasons = {row["type"]: row for row in gguf_tools.type_reasons(gemma)}
    assert reasons["Q5_0"]["row_lengths"] == [640] and "meant for Q4_K as Q5_0" in reasons["Q5_0"]["why"]
    assert "meant for Q6_K as Q8_0" in reasons["Q8_0"]["why"]
    assert reasons["Q4_K"]["row_lengths"] == [1024, 2048] and "label Q4_K_M names" in reasons["Q4_K"]["why"]
    assert reasons["F32"]["why"].startswith("vectors")
    recipe = gguf_tools.explain_recipe(gemma)
    assert recipe["label"] == "Q4_K_M" and round(recipe["bits_per_weight"], 2) == 7.36
