"""What a recipe label means in one file, and the lab's own Q4_K_M-style mixture."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

import gguf
import numpy as np

from lab.formats import by_gguf_type, q4k
from lab.interop.gguf.layout import TensorInfo
from lab.interop.gguf.read import GGUFFile
from lab.text import quoted


def type_summary(gf: GGUFFile) -> list[dict]:
    """One row per tensor type, most bytes first: tensors, weights, bytes, shares and examples."""
    total_bytes = sum(info.n_bytes for info in gf.tensors) or 1
    total_weights = sum(info.n_elements for info in gf.tensors) or 1
    by_type: dict[str, list[TensorInfo]] = {}
    for info in gf.tensors:
        by_type.setdefault(info.type_name, []).append(info)
    rows = []
    for type_name, infos in by_type.items():
        n_bytes = sum(info.n_bytes for info in infos)
        n_weights = sum(info.n_elements for info in infos)
        rows.append(
            {
                "type": type_name,
                "tensors": len(infos),
                "one_dimensional": sum(len(info.shape) == 1 for info in infos),
                "weights": n_weights,
                "bytes": n_bytes,
                "share_of_bytes": n_bytes / total_bytes,
                "share_of_weights": n_weights / total_weights,
                "bits_per_weight": 8 * n_bytes / n_weights,
                "names": [info.name for info in infos],
            }
        )
    return sorted(rows, key=lambda row: row["bytes"], reverse=True)


def recipe_label(gf: GGUFFile) -> str | None:
    """The label general.file_type carries, e.g. "Q4_K_M", or None when the file has none."""
    file_type = gf.metadata("general.file_type")
    if not isinstance(file_type, int):
        return None
    try:
        return gguf.LlamaFileType(file_type).name.removeprefix("MOSTLY_")
    except ValueError:
        return f"unknown file type {file_type}"


def explain_recipe(gf: GGUFFile) -> dict:
    """Read a recipe label against what is in the file: the main type, what is kept at higher precision.

    The main type is the one holding the most weights among tensors of two or more dimensions;
    "higher precision" is any type with more bits per weight than it.
    """
    label = recipe_label(gf)
    rows = type_summary(gf)
    matrix_weights: dict[str, int] = {}
    for info in gf.tensors:
        if len(info.shape) > 1:
            matrix_weights[info.type_name] = matrix_weights.get(info.type_name, 0) + info.n_elements
    main_type = max(matrix_weights, key=matrix_weights.get) if matrix_weights else None
    main_bits = next((row["bits_per_weight"] for row in rows if row["type"] == main_type), None)
    higher = [row for row in rows if main_bits is not None and row["bits_per_weight"] > main_bits]
    total_weights = sum(row["weights"] for row in rows)
    overall_bits = 8 * sum(row["bytes"] for row in rows) / total_weights if total_weights else 0.0
    lines = [
        f"The file says {label} (general.file_type). That names a recipe, not a block format."
        if label
        else "The file carries no general.file_type label."
    ]
    for row in rows:
        examples = ", ".join(quoted(name) for name in row["names"][:3])
        more = f" and {row['tensors'] - 3} more" if row["tensors"] > 3 else ""
        tensors = f"{row['tensors']} tensor" + ("s" if row["tensors"] != 1 else "")
        lines.append(
            f"{row['type']}: {tensors} ({row['one_dimensional']} of them 1-D), "
            f"{row['share_of_bytes']:.1%} of tensor bytes, {row['bits_per_weight']:.3g} bits per weight; "
            f"e.g. {examples}{more}"
        )
    lines.append(f"Overall: {overall_bits:.3f} bits per weight over {total_weights:,} weights.")
    return {
        "label": label,
        "main_type": main_type,
        "higher_precision": {row["type"]: row["names"] for row in higher},
        "types": rows,
        "bits_per_weight": overall_bits,
        "text": "\n".join(lines),
    }


#: llama.cpp's quantizer (llama_tensor_get_type in src/llama-quant.cpp) stores a matrix whose rows
#: are not a multiple of 256 in another type: the K-quants need whole 256-weight super-blocks. When
#: the fallback's 32-weight blocks do not fit either, the matrix is stored as F16. The llama.cpp that
#: llama-cpp-python 0.3.36 vendors (tensor_type_fallback, llama-quant.cpp:401-418) stores Q2_K and
#: Q3_K rows as Q4_0, as its llama-quantize does on Gemma's rows of 640 (older ones took IQ4_NL).
LLAMA_CPP_FALLBACK = {
    "Q2_K": "Q4_0",
    "Q3_K": "Q4_0",
    "IQ4_XS": "IQ4_NL",
    "Q4_K": "Q5_0",
    "Q5_K": "Q5_1",
    "Q6_K": "Q8_0",
}
#: the K-quants' super-block: a row must hold whole ones
SUPER_BLOCK_WEIGHTS = q4k.BLOCK_WEIGHTS
#: what each float type stores, for the types the registry does not hold
FLOAT_HOLDS = {
    "F32": "32-bit floats: 4 bytes a weight, as trained",
    "F16": "16-bit floats: 2 bytes a weight",
    "BF16": "bfloat16: 2 bytes a weight, float32's range with 8 bits of precision",
}


def _kind(name: str) -> str:
    """blk.7.attn_q.weight -> attn_q; token_embd.weight -> token_embd: what a tensor is, not which layer."""
    return LAYER_NUMBER.sub(".", "." + name + ".").strip(".").removeprefix("blk.").removesuffix(".weight")


def type_reasons(gf: GGUFFile) -> list[dict]:
    """Per tensor type, most bytes first: what the type stores, which tensors have it, their row
    lengths, why those tensors are in it (read from their shapes the way llama.cpp decides), and
    whether it is the type the recipe label names ("named": Q4_K in a Q4_K_M file)."""
    label = recipe_label(gf) or ""
    rows = []
    for row in type_summary(gf):
        infos = [info for info in gf.tensors if info.type_name == row["type"]]
        row_lengths = sorted({info.shape[-1] for info in infos})
        kinds = sorted({_kind(info.name) for info in infos})
        fmt = by_gguf_type(row["type"])
        holds = fmt.summary if fmt is not None else FLOAT_HOLDS.get(row["type"], "a type the lab does not decode")
        meant = [wanted for wanted, fallback in LLAMA_CPP_FALLBACK.items() if fallback == row["type"]]
        misfits = [length for length in row_lengths if length % SUPER_BLOCK_WEIGHTS]
        if all(len(info.shape) == 1 for info in infos):
            why = "vectors (norms and biases): llama.cpp quantizes matrices only, so these stay as they were"
        elif meant and misfits:
            why = (
                f"rows of {', '.join(map(str, misfits))} weights are not a multiple of {SUPER_BLOCK_WEIGHTS}, so no "
                f"K-quant can hold them: llama.cpp stores a matrix it meant for {' or '.join(meant)} as "
                f"{row['type']} instead"
            )
        elif label and label.startswith(row["type"]):
            why = f"the type the label {label} names; rows of {', '.join(map(str, row_lengths))} hold whole blocks"
        elif label:
            why = f"the recipe {label} keeps these matrices in {row['type']}, not in the type its label names"
        else:
            why = "the converter's choice for these matrices; the file names no recipe"
        named = bool(label) and label.startswith(row["type"])
        rows.append({**row, "holds": holds, "row_lengths": row_lengths, "kinds": kinds, "why": why, "named": named})
    return rows


#: llama.cpp's Q4_K_M keeps attention value projections and some FFN-down matrices in Q6_K
VALUE_PROJECTION = re.compile(r"(attn_v|attention\.self\.value|self_attn\.v_proj)\.weight$")
FFN_DOWN = re.compile(r"(ffn_down|mlp\.down_proj|(?<!attention)\.output\.dense)\.weight$")
LAYER_NUMBER = re.compile(r"\.(\d+)\.")
#: the type the promoted matrices get, as in llama.cpp's Q4_K_M (the lab's own Q6_K quantizer)
PROMOTED_TYPE = "Q6_K"


def _layer(name: str) -> int | None:
    found = LAYER_NUMBER.search(name)
    return int(found.group(1)) if found else None


def default_promotions(names) -> set[str]:
    """Tensors a Q4_K_M-style mixture keeps at higher precision: attention value projections and
    the FFN-down matrix of the last numbered layer."""
    names = list(names)
    down_layers = {name: _layer(name) for name in names if FFN_DOWN.search(name)}
    numbered = [layer for layer in down_layers.values() if layer is not None]
    last_down = {name for name, layer in down_layers.items() if numbered and layer == max(numbered)}
    return {name for name in names if VALUE_PROJECTION.search(name)} | last_down


def q4_k_m_style_plan(
    tensors: Mapping[str, np.ndarray], promote: Callable[[list[str]], set[str]] = default_promotions
) -> dict[str, str]:
    """The GGUF type for each tensor in a small Q4_K_M-style mixture.

    1-D tensors (norms, biases) stay F32. Matrices are Q4_K, except those `promote` picks, which
    get Q6_K, as in llama.cpp. A matrix whose row length is not a multiple of 256 can be neither,
    and gets llama.cpp's fallback (LLAMA_CPP_FALLBACK: Q5_0 in place of Q4_K, Q8_0 in place of
    Q6_K), or F16 when the row is not a multiple of the fallback's 32 either.
    """
    promoted = promote(list(tensors))
    plan = {}
    for name, array in tensors.items():
        shape = np.shape(array)
        if len(shape) <= 1:
            plan[name] = "F32"
        else:
            wanted = PROMOTED_TYPE if name in promoted else "Q4_K"
            if shape[-1] % SUPER_BLOCK_WEIGHTS == 0:
                plan[name] = wanted
            else:
                fallback = LLAMA_CPP_FALLBACK[wanted]
                plan[name] = fallback if shape[-1] % by_gguf_type(fallback).block_size == 0 else "F16"
    return plan
