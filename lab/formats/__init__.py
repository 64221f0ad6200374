"""Block formats behind one registry.

    from lab.formats import FORMATS
    tensor = FORMATS["mxfp4"].quantize(w, rule="ocp")     # any float [..., k * block_size]
    tensor.dequantize(), tensor.explain(0), tensor.bits_per_weight, tensor.to_mlx(), tensor.to_gguf()

Importing this package registers every format, in the order the course meets them: MXFP4,
MXFP8, NVFP4, MLX affine, Q4_K, Q8_0, then the other 4-bit families: Q4_0, Q4_1, Q6_K (the
higher-precision partner of Q4_K in llama.cpp's mixtures), IQ4_NL, IQ4_XS and NF4, then the
other types real GGUF files hold: Q5_0 and Q5_1 (llama.cpp's fallbacks for rows a K-quant cannot
hold), Q5_K, Q3_K and Q2_K. See `lab.formats.registry` for the Format record and the tensor
Protocols, `lab.formats._tensor` for the block table and the tensor base every format's tensor
stands on, `lab.formats.rounding` for the named rounding presets, `lab.formats.scale_search` for
the per-block scale searches and `lab.formats.fixtures` for the asymmetric inputs the checks use.

May import: lab.codes and lab's root modules only.
"""

# Import order is registration order, which is the order FORMATS lists and the course meets them.
# isort: off
from lab.formats import (
    mxfp4,
    mxfp8,
    nvfp4,
    affine,
    q4k,
    q8_0,
    q4_0,
    q4_1,
    q6_k,
    iq4_nl,
    iq4_xs,
    nf4,
    q5_0,
    q5_1,
    q5_k,
    q3_k,
    q2_k,
)

# isort: on
from lab.formats.registry import (
    FORMATS,
    GGUF_DECODERS,
    Format,
    GGUFTensor,
    MLXMode,
    MLXTensor,
    QuantizedTensor,
    UnknownFormatError,
    by_gguf_type,
    get,
    register,
    unregister,
    with_gguf,
    with_mlx,
)

__all__ = [
    "FORMATS",
    "Format",
    "GGUFTensor",
    "MLXMode",
    "MLXTensor",
    "QuantizedTensor",
    "GGUF_DECODERS",
    "UnknownFormatError",
    "by_gguf_type",
    "affine",
    "get",
    "iq4_nl",
    "iq4_xs",
    "mxfp4",
    "mxfp8",
    "nf4",
    "nvfp4",
    "q2_k",
    "q3_k",
    "q4_0",
    "q4_1",
    "q4k",
    "q5_0",
    "q5_1",
    "q5_k",
    "q6_k",
    "q8_0",
    "register",
    "unregister",
    "with_gguf",
    "with_mlx",
]
