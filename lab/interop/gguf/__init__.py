"""GGUF files: a bounded validating reader, the tensor inventory, what a recipe label really
means, decoding with the lab's codecs, and writing files with the lab's quantizers.

Reading is one walk over a read-only memory map of the file. A small pure-Python walker checks
the header, the key/value section and the tensor-info section against the file's real size:
every count and length is compared with the bytes that remain *before* anything is read for it,
so a file that claims 2^60 tensors or a string longer than itself is rejected at once, with a
GGUFFormatError that names the problem. For a file that passes, the walk has recorded where each
metadata value and each tensor lies; values are read from the map only when asked for (a numeric
array in one bulk read), tensor bytes only when decoded, and a decode whose float32 output would
pass the decode budget is refused before it allocates. So opening a file costs what the file
justifies: a 150k-token vocabulary is a few MB, not the view per element that gguf-py's
`GGUFReader` builds. gguf-py stays the oracle: the tests check the lab reads what GGUFReader
reads from files gguf-py's writer made, and that the lab writes files GGUFReader reads.

Nothing in a file's metadata is executed or used as a path; keys and values are only data.

    gf = open_gguf("model.gguf")
    gf.inventory()               # one row per tensor: name, type, shape, bytes, bits per weight
    gf.metadata_summary()        # one row per key: type, length, first items
    type_summary(gf)             # one row per tensor type
    explain_recipe(gf)           # what a label like Q4_K_M means in this particular file
    gf.decode("blk.0.attn_q.weight")

Shapes are given outermost first, as numpy and PyTorch write them; GGUF's own `ne` list runs
innermost first, so ne[0] is the row length.

    layout     the fixed tables (value and tensor types) and the walk's records (TensorInfo, Layout)
    validate   the walk: validate(buffer), validate_file(path)
    metadata   reading values out of the map, as written
    read       GGUFFile, open_gguf, decode_raw, the decode budget
    recipes    type_summary, recipe_label, explain_recipe, the Q4_K_M-style plan
    write      encode_tensor, write_gguf
"""

from lab.interop.gguf.layout import (
    ALIGNMENT_KEY,
    DECODABLE_TYPES,
    DEFAULT_ALIGNMENT,
    F16_MAX,
    FLOAT_TYPES,
    HEADER_BYTES,
    INT64_MAX,
    MAGIC,
    MAX_ARRAY_NESTING,
    MAX_DIMS,
    MIN_KV_BYTES,
    MIN_TENSOR_INFO_BYTES,
    READER_RESERVED_KEYS,
    READER_RESERVED_PREFIX,
    STRING_TYPE,
    SUPPORTED_VERSIONS,
    TENSOR_TYPES,
    TYPE_IDS,
    UINT32_MAX,
    UINT32_TYPE,
    VALUE_TYPES,
    WRITABLE_TYPES,
    Layout,
    TensorInfo,
)
from lab.interop.gguf.read import GGUFFile, decode_raw, default_decode_budget, open_gguf
from lab.interop.gguf.recipes import (
    FFN_DOWN,
    LAYER_NUMBER,
    LLAMA_CPP_FALLBACK,
    PROMOTED_TYPE,
    SUPER_BLOCK_WEIGHTS,
    VALUE_PROJECTION,
    default_promotions,
    explain_recipe,
    q4_k_m_style_plan,
    recipe_label,
    type_reasons,
    type_summary,
)
from lab.interop.gguf.validate import validate, validate_file
from lab.interop.gguf.write import encode_tensor, file_type_labels, write_gguf

__all__ = [
    "ALIGNMENT_KEY",
    "DECODABLE_TYPES",
    "DEFAULT_ALIGNMENT",
    "F16_MAX",
    "FFN_DOWN",
    "FLOAT_TYPES",
    "HEADER_BYTES",
    "INT64_MAX",
    "LAYER_NUMBER",
    "MAGIC",
    "MAX_ARRAY_NESTING",
    "MAX_DIMS",
    "MIN_KV_BYTES",
    "MIN_TENSOR_INFO_BYTES",
    "PROMOTED_TYPE",
    "LLAMA_CPP_FALLBACK",
    "SUPER_BLOCK_WEIGHTS",
    "READER_RESERVED_KEYS",
    "READER_RESERVED_PREFIX",
    "STRING_TYPE",
    "SUPPORTED_VERSIONS",
    "TENSOR_TYPES",
    "TYPE_IDS",
    "UINT32_MAX",
    "UINT32_TYPE",
    "VALUE_PROJECTION",
    "VALUE_TYPES",
    "WRITABLE_TYPES",
    "GGUFFile",
    "Layout",
    "TensorInfo",
    "decode_raw",
    "default_decode_budget",
    "default_promotions",
    "encode_tensor",
    "explain_recipe",
    "file_type_labels",
    "open_gguf",
    "q4_k_m_style_plan",
    "type_reasons",
    "recipe_label",
    "type_summary",
    "validate",
    "validate_file",
    "write_gguf",
]
