"""GGUF files: a bounded validating reader, the tensor inventory, what a recipe label really
means, decoding with the lab's codecs, and writing files with the lab's quantizers.

Reading is two steps. First a small pure-Python walker checks the header, the key/value section
and the tensor-info section against the file's real size: every count and length is compared
with the bytes that remain *before* anything is read for it, so a file that claims 2^60 tensors
or a string longer than itself is rejected at once, with a GGUFFormatError that names the
problem. Only a file that passes is handed to gguf-py's memory-mapped `GGUFReader`, whose tensor
list is then cross-checked against the walker's. gguf-py's reader is not written for hostile
input: it loops over whatever counts the header claims and turns out-of-range reads into empty
arrays, so without the walker a malformed file surfaces as an IndexError, a KeyError or a very
long loop rather than a clear message.

Nothing in a file's metadata is executed or used as a path; keys and values are only data.

    gf = open_gguf("model.gguf")
    gf.inventory()               # one row per tensor: name, type, shape, bytes, bits per weight
    type_summary(gf)             # one row per tensor type
    explain_recipe(gf)           # what a label like Q4_K_M means in this particular file
    gf.decode("blk.0.attn_q.weight")

Shapes are given outermost first, as numpy and PyTorch write them; GGUF's own `ne` list runs
innermost first, so ne[0] is the row length.
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
    PROMOTED_TYPE,
    Q4_K_ROW,
    VALUE_PROJECTION,
    default_promotions,
    explain_recipe,
    q4_k_m_style_plan,
    recipe_label,
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
    "Q4_K_ROW",
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
    "recipe_label",
    "type_summary",
    "validate",
    "validate_file",
    "write_gguf",
]
