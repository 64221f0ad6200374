"""Block formats behind one registry.

    from lab.formats import FORMATS
    tensor = FORMATS["mxfp4"].quantize(w, rule="ocp")     # any float [..., k * block_size]
    tensor.dequantize(), tensor.explain(0), tensor.bits_per_weight, tensor.to_mlx(), tensor.to_gguf()

Importing this package imports every module in it, which registers every format, in the order
the course meets them (COURSE_ORDER): MXFP4, MXFP8, NVFP4, MLX affine, Q4_K, Q8_0, then the other
4-bit families: Q4_0, Q4_1, Q6_K (the higher-precision partner of Q4_K in llama.cpp's mixtures),
IQ4_NL, IQ4_XS and NF4, then the other types real GGUF files hold: Q5_0 and Q5_1 (llama.cpp's
fallbacks for rows a K-quant cannot hold), Q5_K, Q3_K and Q2_K; a format module added to the
package registers after these with no edit here. See `lab.formats.registry` for the Format record and the tensor
Protocols, `lab.formats._tensor` for the block table and the tensor base every format's tensor
stands on, `lab.formats.rounding` for the named rounding presets, `lab.formats.scale_search` for
the per-block scale searches and `lab.formats.fixtures` for the asymmetric inputs the checks use.

May import: lab.codes and lab's root modules only.
"""

import importlib
import pkgutil

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

#: the format modules in the order the course meets their formats. Import order is registration
#: order, which is the order FORMATS lists them in (and notebooks, golden vectors and tests after
#: it); a module of this package not named here is imported after these, by its name, so a new
#: format joins the end of the registry without an edit here
COURSE_ORDER = (
    "mxfp4",
    "mxfp8",
    "nvfp4",
    "affine",
    "q4k",
    "q8_0",
    "q4_0",
    "q4_1",
    "q6_k",
    "iq4_nl",
    "iq4_xs",
    "nf4",
    "q5_0",
    "q5_1",
    "q5_k",
    "q3_k",
    "q2_k",
)


def _import_order() -> list[str]:
    """Every public module of this package: COURSE_ORDER's, then the others by name."""
    found = {module.name for module in pkgutil.iter_modules(__path__) if not module.name.startswith("_")}
    return [*(name for name in COURSE_ORDER if name in found), *sorted(found - set(COURSE_ORDER))]


def _import_modules() -> dict[str, str]:
    """Imports the package's modules in _import_order; each registered format's module by its name.

    A module's formats are those its import registered, so a format module imports only the format
    modules it comes after (IQ4_XS imports IQ4_NL's codebook, Q5_K Q4_K's scale packing)."""
    modules = {}
    for module_name in _import_order():
        registered = len(FORMATS)
        importlib.import_module(f"{__name__}.{module_name}")
        modules.update(dict.fromkeys(list(FORMATS)[registered:], module_name))
    return modules


#: each registered format's module in this package, by registry name ("affine" for "affine4_g64",
#: "q4k" for Q4_K's package): the JS codec names a format's module after it
FORMAT_MODULES: dict[str, str] = _import_modules()

__all__ = [
    "COURSE_ORDER",
    "FORMATS",
    "FORMAT_MODULES",
    "Format",
    "GGUFTensor",
    "MLXMode",
    "MLXTensor",
    "QuantizedTensor",
    "GGUF_DECODERS",
    "UnknownFormatError",
    "by_gguf_type",
    "get",
    "register",
    "unregister",
    "with_gguf",
    "with_mlx",
    *dict.fromkeys(FORMAT_MODULES.values()),
]
