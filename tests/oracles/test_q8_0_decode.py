"""Q8_0 decoding against gguf-py's `quants.dequantize`, bit for bit, and what it allocates.

Every path the lab decodes Q8_0 by is checked: the tensor's dequantize(), the format's
decode_gguf (both decoder names), decode_raw and GGUFFile.decode of a file gguf-py wrote. The
blocks hold every kind of float16 scale (zero, negative zero, subnormal, negative, the largest,
infinite, NaN) and every int8 code, -128 included, which ggml reads though its quantizer never
writes it. The memory test is a property, not a timing: numpy reports its allocations to
tracemalloc, and the decode may allocate its float32 output and little more.
"""

from __future__ import annotations

import tracemalloc

import gguf
import numpy as np
import pytest

from lab.formats import FORMATS, GGUF_DECODERS, q8_0
from lab.interop import gguf as gguf_tools

Q8_0 = gguf.GGMLQuantizationType.Q8_0
#: float16 bit patterns planted in the first blocks: +-0, +-the smallest and largest subnormal,
#: the smallest normal, +-1, +-65504, +-infinity and a NaN
SPECIAL_D_BITS = (0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x83FF, 0x0400, 0x3C00, 0xBC00)
SPECIAL_D_BITS += (0x7BFF, 0xFBFF, 0x7C00, 0xFC00, 0x7E00)
#: what the memory goal allows beyond 1.25 times the output: numpy's per-chunk scales and buffers
ALLOWANCE_BYTES = 256 * 1024


def varied_blocks(rows: int, blocks_per_row: int, seed: int = 8) -> np.ndarray:
    """GGUF Q8_0 bytes [rows, blocks_per_row * 34]: random codes, and scales drawn from every
    float16 bit pattern (a 32nd of them subnormal, a 32nd infinite or NaN) after SPECIAL_D_BITS."""
    rng = np.random.default_rng(seed)
    blocks = rng.integers(0, 256, size=(rows, blocks_per_row, q8_0.BLOCK_BYTES), dtype=np.uint8)
    d_bits = rng.integers(0, 1 << 16, size=(rows, blocks_per_row), dtype=np.uint16)
    d_bits.flat[: len(SPECIAL_D_BITS)] = SPECIAL_D_BITS
    blocks[..., :2] = d_bits.astype("<u2")[..., None].view(np.uint8)
    return blocks.reshape(rows, -1)


def gguf_py_decode(raw: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):  # gguf-py warns at an infinite d times code 0
        return gguf.quants.dequantize(raw, Q8_0)


def bits(values: np.ndarray) -> np.ndarray:
    """The float32 bit patterns: NaN payloads and the sign of zero count too."""
    return np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)


@pytest.fixture(scope="module")
def raw() -> np.ndarray:
    # 3000 blocks: more than one decode chunk, and not a whole number of them
    data = varied_blocks(3, 1000)
    assert 3000 > q8_0.DECODE_CHUNK_BLOCKS and 3000 % q8_0.DECODE_CHUNK_BLOCKS
    codes = data.reshape(-1, q8_0.BLOCK_BYTES)[:, 2:].view(np.int8)
    assert np.array_equal(np.unique(codes), np.arange(-128, 128))
    return data


def test_the_tensor_decodes_bit_identically_to_gguf_py(raw):
    reference = gguf_py_decode(raw)
    decoded = q8_0.from_gguf(raw).dequantize()
    assert decoded.dtype == np.float32 and decoded.shape == reference.shape == (3, 1000 * 32)
    assert np.array_equal(bits(decoded), bits(reference))


@pytest.mark.parametrize("decoder", GGUF_DECODERS)
def test_gguf_bytes_decode_bit_identically_to_gguf_py(raw, decoder):
    reference = bits(gguf_py_decode(raw))
    assert np.array_equal(bits(FORMATS["q8_0"].decode_gguf(raw, decoder)), reference)
    assert np.array_equal(bits(gguf_tools.decode_raw(raw, "Q8_0", decoder)), reference)


def written_by_gguf_py(path, raw: np.ndarray):
    """A GGUF file holding one Q8_0 tensor "w" of these bytes, from gguf-py's writer."""
    writer = gguf.GGUFWriter(path, "lab")
    writer.add_tensor("w", raw, raw_dtype=Q8_0)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_a_file_gguf_py_wrote_decodes_bit_identically_to_gguf_py(raw, tmp_path):
    with gguf_tools.open_gguf(written_by_gguf_py(tmp_path / "q8_0.gguf", raw)) as gf:
        assert np.array_equal(bits(gf.decode("w")), bits(gguf_py_decode(raw)))


def test_leading_dimensions_and_unaligned_bytes_decode_as_gguf_py_does(raw):
    stacked = raw.reshape(3, 10, -1)  # each row of 1000 blocks as 10 rows of 100
    assert np.array_equal(bits(q8_0.dequantize_gguf(stacked)), bits(gguf_py_decode(stacked)))
    # bytes at an odd address: the float16 scales are read unaligned
    odd = np.frombuffer(b"\0" + raw.tobytes(), np.uint8)[1:]
    assert np.array_equal(bits(q8_0.dequantize_gguf(odd)), bits(gguf_py_decode(odd)))


def peak_traced_bytes(decode) -> int:
    tracemalloc.start()
    try:
        decode()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_decoding_allocates_the_output_and_little_more():
    raw = varied_blocks(1024, 128)  # 4 M weights: a 16 MiB float32 output from 4.25 MiB of blocks
    output_bytes = raw.size // q8_0.BLOCK_BYTES * q8_0.BLOCK_WEIGHTS * 4
    tensor = q8_0.from_gguf(raw)
    budget = 1.25 * output_bytes + ALLOWANCE_BYTES
    for decode in (tensor.dequantize, lambda: q8_0.dequantize_gguf(raw), lambda: gguf_tools.decode_raw(raw, "Q8_0")):
        assert peak_traced_bytes(decode) <= budget


def test_decoding_a_mapped_file_does_not_copy_its_bytes(tmp_path):
    raw = varied_blocks(1024, 128)
    path = written_by_gguf_py(tmp_path / "q8_0.gguf", raw)
    output_bytes = raw.size // q8_0.BLOCK_BYTES * q8_0.BLOCK_WEIGHTS * 4
    with gguf_tools.open_gguf(path) as gf:
        # raw() views the map; a copy of it (4.25 MiB) would pass the allowance
        assert peak_traced_bytes(lambda: gf.decode("w")) <= output_bytes + ALLOWANCE_BYTES
