"""A per-block scale search: each block keeps, of a few scale codes around its rule's choice, the one
whose decoded weights have the least squared error.

    mxfp4_scale_search(w, rule="mlx")        E8M0 bytes rule_byte + offset, offset in SEARCH_OFFSETS
    nvfp4_scale_search(w, global_scale=None) E4M3 codes rule_code + offset, never negative or NaN

Offset 0 is the rule itself, so the search never does worse than the rule on any block; a tie
keeps the earlier offset. The result is an ordinary tensor of the format: its bytes decode
anywhere the format's do (MLX, a GGUF reader), which is what makes the search a fair rule to
compare. lab.study.real_weights runs it on a real model's weights.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from lab.codes import e4m3
from lab.formats import _mx, mxfp4, nvfp4
from lab.formats._blocks import float_input, grouped
from lab.formats._mx import MXTensor
from lab.formats.nvfp4 import NVFP4Tensor
from lab.formats.rounding import preset as rounding_preset

#: scale steps tried around the rule's choice
SEARCH_OFFSETS = (0, -1, 1, -2, 2)


def _squared_block_error(reconstructed: np.ndarray, blocks: np.ndarray) -> np.ndarray:
    """Sum of squared errors per block, in float64 (a float32 difference of two float32 numbers can round)."""
    error = np.subtract(reconstructed, blocks, dtype=np.float64)
    return np.square(error, out=error).sum(axis=-1)


#: blocks searched per pass: 2048 blocks of 32 weights keep a chunk's candidate codes, decoded
#: weights and float64 errors (~1.5 MiB) in the CPU's cache across every offset, where a whole
#: 11.7 M-weight embedding's would go out to memory once per offset
_SEARCH_CHUNK_BLOCKS = 2048


def _search_blocks(blocks, base_bytes, base_codes, offsets, encode, decode):
    """Per block of `blocks` (float32 [n, group]), the scale byte base_bytes + offset whose codes
    decode with the least squared error, and those codes; the first offset wins a tie.

    encode(magnitude, negative, candidate bytes) -> codes and decode(codes, candidate bytes) ->
    float32 weights work on a chunk of blocks. Every block's error is its own, so going chunk by
    chunk picks exactly what one pass over the whole tensor would.
    """
    best_bytes = base_bytes.copy()
    best_codes = base_codes.copy()
    for start in range(0, blocks.shape[0], _SEARCH_CHUNK_BLOCKS):
        chunk = slice(start, start + _SEARCH_CHUNK_BLOCKS)
        chunk_blocks = blocks[chunk]
        magnitude, negative = np.abs(chunk_blocks), np.signbit(chunk_blocks)
        chunk_bytes, chunk_codes = best_bytes[chunk], best_codes[chunk]  # views: written in place
        best_error = np.full(chunk_bytes.shape, np.inf)
        for offset in offsets:
            candidate = offset(base_bytes[chunk])
            codes = encode(magnitude, negative, candidate)
            error = _squared_block_error(decode(codes, candidate), chunk_blocks)
            better = error < best_error
            best_error = np.where(better, error, best_error)
            np.copyto(chunk_bytes, candidate, where=better, casting="unsafe")
            np.copyto(chunk_codes, codes, where=better[..., None])
    return best_bytes, best_codes


def mxfp4_scale_search(w, rule: str = "mlx", offsets: Iterable[int] = SEARCH_OFFSETS) -> MXTensor:
    """MXFP4 where each block keeps, of the E8M0 bytes rule_byte + offset, the one with least squared error.

    Elements are re-encoded under each candidate with the rule's own element rounding, so the
    offset 0 candidate is exactly `mxfp4.quantize(w, rule)`; a tie keeps the earlier offset.
    The result is an ordinary MXTensor: its `to_mlx()` arrays decode in MLX like any other.
    """
    rules = rounding_preset(rule)
    base = mxfp4.quantize(w, rule=rule)
    weights, dtype = float_input(w, mxfp4.GROUP_SIZE)
    group = mxfp4.GROUP_SIZE

    def candidate_bytes(offset):
        # Byte 255 is the NaN scale; 0..254 are all real powers of two.
        return lambda scale_bytes: np.clip(scale_bytes.astype(np.int64) + offset, 0, 254)

    def encode(magnitude, negative, candidate):
        # The same arithmetic as mxfp4.quantize, with the candidate scale in place of the rule's.
        return _mx.element_codes(magnitude, negative, candidate, base.element, rules, dtype)

    def decode(codes, candidate):
        with np.errstate(over="ignore"):  # a scale that overflows float32 loses the comparison
            return mxfp4.from_parts(codes.reshape(-1), candidate).dequantize().reshape(codes.shape)

    best_bytes, best_codes = _search_blocks(
        grouped(weights, group).reshape(-1, group),
        base.scale_bytes.reshape(-1),
        base.codes.reshape(-1, group),
        [candidate_bytes(offset) for offset in offsets],
        encode,
        decode,
    )
    return MXTensor(
        element=base.element,
        codes=best_codes.reshape(base.shape),
        scale_bytes=best_bytes.reshape(base.scale_bytes.shape),
        rule=f"{rule} + scale search",
        source_dtype=dtype,
    )


def nvfp4_scale_search(w, global_scale=None, offsets: Iterable[int] = SEARCH_OFFSETS) -> NVFP4Tensor:
    """NVFP4 where each block keeps, of the E4M3 scale codes rule_code + offset, the one with least squared error.

    Candidate codes stay in 0x00..0x7E (non-negative, never NaN), where E4M3 codes and values
    rise together. Elements are re-encoded with MLX's rule for each candidate, so offset 0 is
    exactly `nvfp4.quantize(w, global_scale)`; a tie keeps the earlier offset.
    """
    base = nvfp4.quantize(w, global_scale=global_scale)
    weights, dtype = float_input(w, nvfp4.GROUP_SIZE)
    group = nvfp4.GROUP_SIZE
    scale_encode = None
    if base.global_scale is not None:
        scale_encode = float(np.float32(nvfp4.TENSOR_SCALE_RANGE) / np.float32(base.global_scale))

    def candidate_bytes(offset):
        return lambda scale_bytes: np.clip(scale_bytes.astype(np.int64) + offset, 0, e4m3.MAX_BYTE).astype(np.uint8)

    def encode(magnitude, negative, candidate):
        # The same arithmetic as nvfp4.quantize, with the candidate scale in place of the rule's.
        return nvfp4.element_codes(magnitude, negative, e4m3.decode(candidate), dtype, scale_encode)

    def decode(codes, candidate):
        return nvfp4.from_parts(codes.reshape(-1), candidate, base.global_scale).dequantize().reshape(codes.shape)

    best_bytes, best_codes = _search_blocks(
        grouped(weights, group).reshape(-1, group),
        base.scale_bytes.reshape(-1),
        base.codes.reshape(-1, group),
        [candidate_bytes(offset) for offset in offsets],
        encode,
        decode,
    )
    return NVFP4Tensor(
        codes=best_codes.reshape(base.shape),
        scale_bytes=best_bytes.reshape(base.scale_bytes.shape),
        global_scale=base.global_scale,
        source_dtype=dtype,
    )
