"""Bits per weight, said once: what a format stores per weight, under a named scale dtype.

Most formats fix the type of their scales: MXFP4's E8M0 byte, NVFP4's E4M3 bytes, GGUF's float16
d (and dmin), NF4's float32 absmax. Their bits per weight is one number whatever the model was.
MLX's affine mode is the exception: it keeps each group's scale and bias in the weights' own
dtype, 16 bits each for a bfloat16 (or float16) checkpoint and 32 for a float32 one, so
"MLX affine 4-bit g128" is 4 + 32/128 = 4.25 bits per weight in a bfloat16 model and
4 + 64/128 = 4.5 in a float32 one. Every page that states a bits-per-weight figure takes it from
`bits_per_weight` and, where the scale dtype matters, names it with `scales_named`, so two pages
never give two numbers for one format under one accounting (tests/apps/test_pages_bits_per_weight.py
reads every page and holds them to it).

Nothing here adds NVFP4's optional FP32 tensor scale (32/N for N weights: lab.teach.sizes) or NF4's
double quantization: both are per tensor, not per format.
"""

from __future__ import annotations

from lab.errors import InputError
from lab.formats import affine
from lab.formats.registry import get

#: the scale dtypes a page may count MLX affine's scale and bias in, with their width in bits
SCALE_DTYPE_BITS = {"bfloat16": 16, "float16": 16, "float32": 32}
#: all-MiniLM-L6-v2's safetensors weights (notebooks 9 to 11) are float32, and so are MLX affine's
#: scales and biases made from them
FLOAT32 = "float32"
#: the usual checkpoint, and what the registry's own records count (lab.formats.affine.format_record)
BFLOAT16 = "bfloat16"


def scale_dtype_matters(name: str) -> bool:
    """True for a format whose scales take the weights' dtype (MLX affine); False where the
    format fixes them."""
    fmt = get(name)
    return fmt.mlx is not None and fmt.mlx.mode == "affine"


def bits_per_weight(name: str, scale_dtype: str) -> float:
    """Bits per weight of registry format `name` (codes plus scales, minimums or biases) when its
    scales are kept in `scale_dtype`; a format that fixes its scales gives its one number."""
    if scale_dtype not in SCALE_DTYPE_BITS:
        raise InputError(f"a scale dtype is one of {', '.join(SCALE_DTYPE_BITS)}, not {scale_dtype!r}")
    fmt = get(name)
    if not scale_dtype_matters(name):
        return float(fmt.bits_per_weight)
    return float(affine.bits_per_weight(fmt.mlx.bits, fmt.mlx.group_size, SCALE_DTYPE_BITS[scale_dtype]))


def scales_named(name: str, scale_dtype: str) -> str:
    """What a table's "scales" cell says for `name`: the dtype where it decides the bits per weight,
    else that the format fixes them."""
    return f"{scale_dtype} scale and bias" if scale_dtype_matters(name) else "fixed by the format"
