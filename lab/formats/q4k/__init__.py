"""Q4_K: GGUF's 4-bit "k-quant" block, where every code gets a gain and an offset.

One super-block is 144 bytes and holds 256 weights, 4.5 bits per weight:

    bytes   0..1    d      float16, little-endian: the super-block scale for the gains
    bytes   2..3    dmin   float16, little-endian: the super-block scale for the offsets
    bytes   4..15   B[0..11]  eight 6-bit subblock scales s_j and eight 6-bit minimums m_j
    bytes  16..143  payload   128 bytes, two 4-bit codes per byte

Each 32-lane subblock j reconstructs its codes q (0..15) as

    w = d * s_j * q  -  dmin * m_j
        \\_ gain _/      \\_ offset _/

The offset is subtracted: m_j counts how far below zero the subblock reaches.

Payload placement. Payload byte p = 32c + l (chunk c = 0..3, position l = 0..31) feeds two
lanes that are 32 apart, not neighbours:
    low nibble  (bits 0..3) -> lane 64c + l        subblock 2c
    high nibble (bits 4..7) -> lane 64c + 32 + l   subblock 2c + 1

Metadata packing. 16 six-bit fields make 96 bits, so they share twelve bytes. Written bit 7 first:

    B[0..3]   = hh ssssss    s_0..s_3 in bits 0..5; bits 6..7 are bits 4..5 of s_4..s_7
    B[4..7]   = hh mmmmmm    m_0..m_3 in bits 0..5; bits 6..7 are bits 4..5 of m_4..m_7
    B[8..11]  = mmmm ssss    bits 0..3 of s_4..s_7 (low nibble) and of m_4..m_7 (high nibble)

so for j = 0..3:  s_j = B[j] & 63,  m_j = B[j+4] & 63
   for j = 4..7:  s_j = (B[j+4] & 15) | ((B[j-4] >> 6) << 4)
                  m_j = (B[j+4] >> 4) | ((B[j]   >> 6) << 4)

The decoder here reproduces gguf-py's float32 arithmetic bit for bit: the gain d*s_j and the
offset dmin*m_j are each rounded to float32, then gain*q is rounded, then the offset subtracted.

The quantizer reimplements the search of llama.cpp's reference Q4_K quantizer
(`quantize_row_q4_K_ref`): an importance-weighted least-squares fit of a scale and a minimum
per subblock, tried over 21 candidate grids, then both quantized to 6 bits against fp16 d and dmin.
With an importance vector, quantize(w, importance=...) follows quantize_row_q4_K_impl instead
(lab.formats._imatrix), as llama-quantize --imatrix does.

The package: layout (the byte map above), decode, tensor (Q4KTensor and its parts), quantize,
explain, presentation (the article's fixture); this module registers the format.
"""

from __future__ import annotations

from lab.formats._tensor import block_format
from lab.formats.q4k.decode import (
    decode,
    to_mlx_affine,
)
from lab.formats.q4k.explain import (
    explain,
    explain_byte,
)
from lab.formats.q4k.layout import (
    BITS_PER_WEIGHT,
    BLOCK,
    BLOCK_BYTES,
    BLOCK_WEIGHTS,
    CODE_MAX,
    FIELD_MAX,
    METADATA_BYTES,
    METADATA_OFFSET,
    PAYLOAD_BYTES,
    PAYLOAD_OFFSET,
    SUBBLOCK_WEIGHTS,
    SUBBLOCKS,
    explain_metadata,
    lanes,
    metadata_sources,
    pack_scale_min,
    payload_of_lane,
    subblocks,
    unpack_scale_min,
)
from lab.formats.q4k.presentation import (
    PRESENTATION_BYTE_A5_INDEX,
    PRESENTATION_BYTE_FF_INDEX,
    PRESENTATION_BYTE_ZERO_INDEX,
    PRESENTATION_BYTES,
    PRESENTATION_D,
    PRESENTATION_DMIN,
    PRESENTATION_MINS,
    PRESENTATION_SCALES,
    presentation_fixture,
)
from lab.formats.q4k.quantize import (
    SEARCH_START,
    SEARCH_STEP,
    SEARCH_STEPS,
    quantize,
)
from lab.formats.q4k.tensor import (
    Q4KTensor,
    _to_fp16,
    from_gguf,
    from_parts,
)
from lab.formats.registry import MLXMode, register

__all__ = [
    "BITS_PER_WEIGHT",
    "BLOCK",
    "BLOCK_BYTES",
    "BLOCK_WEIGHTS",
    "CODE_MAX",
    "FIELD_MAX",
    "FORMAT",
    "METADATA_BYTES",
    "METADATA_OFFSET",
    "PAYLOAD_BYTES",
    "PAYLOAD_OFFSET",
    "PRESENTATION_BYTES",
    "PRESENTATION_BYTE_A5_INDEX",
    "PRESENTATION_BYTE_FF_INDEX",
    "PRESENTATION_BYTE_ZERO_INDEX",
    "PRESENTATION_D",
    "PRESENTATION_DMIN",
    "PRESENTATION_MINS",
    "PRESENTATION_SCALES",
    "Q4KTensor",
    "SEARCH_START",
    "SEARCH_STEP",
    "SEARCH_STEPS",
    "SUBBLOCKS",
    "SUBBLOCK_WEIGHTS",
    "_to_fp16",
    "decode",
    "explain",
    "explain_byte",
    "explain_metadata",
    "from_gguf",
    "from_parts",
    "lanes",
    "metadata_sources",
    "pack_scale_min",
    "payload_of_lane",
    "presentation_fixture",
    "quantize",
    "subblocks",
    "to_mlx_affine",
    "unpack_scale_min",
]

FORMAT = register(
    block_format(
        BLOCK,
        name="q4k",
        quantize=quantize,
        family="gguf",
        summary="GGUF super-blocks of 256: 4-bit codes, 6-bit scales and minimums per 32, fp16 d and dmin",
        tensor=Q4KTensor,
        # MLX has no Q4_K mode, but each 32-weight subblock is an MLX affine group of 32 (to_mlx_affine)
        mlx_rewrite=MLXMode(mode="affine", bits=4, group_size=SUBBLOCK_WEIGHTS),
    )
)
