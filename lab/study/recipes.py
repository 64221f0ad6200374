"""Recipes: which storage type each tensor of a Gemma 3 GGUF file gets, by llama.cpp's rules or mlx-lm's.

A recipe name (Q4_K_M, mixed_4_6) is not a block format: it is a rule that picks a type per tensor.

    plan("Q4_K_M")               # {GGUF tensor name: GGUF type}, for the shipped Gemma 3 270M file
    plan("mixed_4_6", path)      # {GGUF tensor name: registry name}, for the GGUF file at path
    explain("Q4_K_M")            # the same, with the steps of the rule that chose each type

**llama.cpp's recipes** (LLAMA_CPP_RECIPES) follow `llama_tensor_get_type` in `src/llama-quant.cpp`
of llama.cpp 0c1e57098, the commit llama-cpp-python 0.3.36 vendors (its CHANGELOG: "update
llama.cpp to ggml-org/llama.cpp@0c1e57098"; read from the 0.3.36 sdist's vendor/llama.cpp, sha256
832db069...1a2e). Each rule below cites the lines of that file it mirrors. What a type is:

- the recipe's default type (llama_ftype_get_default_type);
- changed by the first rule of the tensor's role that holds for the recipe (the if/else chain of
  llama_tensor_get_type_impl), with llama.cpp's counters: the i-th attention-value matrix and the
  i-th ffn_down matrix, counted in llama.cpp's tensor order (layer, then name), out of the number of
  attention-value matrices and of layers;
- then moved to a fallback type when the tensor's rows (GGUF's ne[0]) do not hold whole blocks of
  it: a row of 640 holds no 256-weight super-block, so Q4_K falls back to Q5_0 and Q6_K to Q8_0.

Tensors llama.cpp does not quantize (1-D ones, norms) keep the type they have in the input file:
F32 in the shipped file. The plans assume llama-quantize's defaults: no --pure, no per-tensor
overrides, no --token-embedding-type or --output-tensor-type; `imatrix=True` plans the run with an
importance matrix, which changes two rules (IQ4_NL/IQ4_XS and Q4_0 on the first ffn_down layers).

**mlx-lm's recipes** (MLX_LM_RECIPES) follow `mlx_lm.convert.mixed_quant_predicate_builder` of
mlx-lm 0.32.2 with its default group size of 64, as `mlx_lm.utils.quantize_model` applies it: every
Linear and Embedding whose rows hold whole groups is quantized, the embedding included; v_proj and
down_proj of the layers `use_more_bits` picks, and an untied lm_head, get the high bits, the rest
the low bits. The plan names each such tensor by its lab.formats registry name ("affine4_g64",
"affine6_g64": lab.formats.affine.format_record's name, which is the registry's name where the
registry holds that pair; affine6_g64 is not registered at present). What mlx-lm leaves in float
(norms, and any matrix whose rows hold no whole group) is given as "F32", although mlx-lm keeps it
in the checkpoint's own float dtype.

Both families refuse, with a LabError in the lab's words: a recipe name they do not know
(UnknownRecipeError), a path that is not a GGUF file the lab reads (lab.interop.gguf's errors), and
a GGUF file that is not a Gemma 3 model (RecipeFileError).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from lab.errors import LabError
from lab.formats import FORMATS, MLXMode, affine
from lab.interop.gguf import LLAMA_CPP_FALLBACK, TENSOR_TYPES, GGUFFile, TensorInfo, open_gguf
from lab.study import shipped_gguf
from lab.text import quoted

#: where the llama.cpp rules come from, as cited in each rule's `lines`
LLAMA_CPP_SOURCE = "llama.cpp 0c1e57098 (llama-cpp-python 0.3.36's vendor/llama.cpp), src/llama-quant.cpp"
#: the architecture whose tensors these plans name
ARCHITECTURE = "gemma3"


class UnknownRecipeError(LabError):
    """A recipe name that is neither one of llama.cpp's nor one of mlx-lm's that the lab plans."""


class RecipeFileError(LabError):
    """A GGUF file the lab reads but cannot plan a recipe for: not a Gemma 3 model, or one whose
    metadata or tensors the plan cannot place."""


# --------------------------------------------------------------------------------------------
# llama.cpp
# --------------------------------------------------------------------------------------------

#: recipe -> its default type: llama_ftype_get_default_type, llama-quant.cpp:881-907
LLAMA_CPP_DEFAULT_TYPE = {
    "Q2_K": "Q2_K",
    "Q3_K_S": "Q3_K",
    "Q3_K_M": "Q3_K",
    "Q3_K_L": "Q3_K",
    "Q4_K_S": "Q4_K",
    "Q4_K_M": "Q4_K",
    "Q5_K_S": "Q5_K",
    "Q5_K_M": "Q5_K",
    "Q6_K": "Q6_K",
    "Q8_0": "Q8_0",
    "Q4_0": "Q4_0",
    "IQ4_NL": "IQ4_NL",
    "IQ4_XS": "IQ4_XS",
}
LLAMA_CPP_RECIPES = tuple(LLAMA_CPP_DEFAULT_TYPE)

# The type a row that holds no whole block of the wanted type falls back to is lab.interop.gguf's
# LLAMA_CPP_FALLBACK (tensor_type_fallback, llama-quant.cpp:401-418). A 32-weight type has no smaller
# block to fall to and keeps itself (419-425); if the fallback's block does not fit either, the
# tensor is stored as F16 (429-439).

#: weights per block of each GGUF type (ggml_blck_size), from the lab's GGUF type table
BLOCK_WEIGHTS = {name: weights for name, weights, _ in TENSOR_TYPES.values()}

#: a tensor's role, by its name, in llama.cpp's order of tests: tensor_get_category,
#: llama-quant.cpp:104-155 (exact names first, then the first fragment the name contains). The
#: names Gemma 3 text files never hold (per_layer_token_embd, attn_qkv, attn_kv_b) are left out:
#: a file with another matrix is refused before any rule runs.
EXACT_ROLES = {"output.weight": "output", "token_embd.weight": "token_embd"}
ROLE_FRAGMENTS = (
    ("attn_v.weight", "attn_v"),
    ("attn_k.weight", "attn_k"),
    ("attn_q.weight", "attn_q"),
    ("attn_output.weight", "attn_output"),
    ("ffn_up", "ffn_up"),
    ("ffn_gate", "ffn_gate"),
    ("ffn_down", "ffn_down"),
)
#: the roles whose rules read a counter: attention values count against the number of them
#: (init_quantize_state_counters, 927-940), ffn_down against the number of layers (n_layer_all)
COUNTED_ROLES = ("attn_v", "ffn_down")


def llama_cpp_role(name: str, tied: bool) -> str:
    """The role llama.cpp's rules see for a tensor. With tied embeddings (the file has no
    output.weight) the token embedding is quantized as the output (llama-quant.cpp:488-490)."""
    role = EXACT_ROLES.get(name) or next((role for part, role in ROLE_FRAGMENTS if part in name), "other")
    return "output" if role == "token_embd" and tied else role


def quantizable(info: TensorInfo) -> bool:
    """Whether llama.cpp quantizes this tensor at all: tensor_allows_quantization, llama-quant.cpp:287-385.
    It needs two or more dimensions (ggml_n_dims ignores trailing sizes of 1, 292), a name ending
    in "weight" (297) and no "_norm.weight" (300); the other names it excludes (MoE routers, vision
    and audio parts, RWKV, T5) are tensors a Gemma 3 text model does not hold."""
    dims = list(info.shape)
    while len(dims) > 1 and dims[0] == 1:
        dims.pop(0)
    return len(dims) >= 2 and info.name.endswith("weight") and "_norm.weight" not in info.name


def use_more_bits(i: int, n: int) -> bool:
    """llama.cpp's use_more_bits (llama-quant.cpp:452-454; mlx-lm's convert.py:61-65 is the same):
    the first eighth of the layers, the last eighth, and every third layer between."""
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


@dataclass(frozen=True)
class Place:
    """What llama.cpp's rules read about one tensor: its role's counter `i` out of `n`, the model's
    query heads per key/value head, whether an importance matrix is given, its row length (ne[0])
    and the weights per block of the recipe's default type."""

    i: int
    n: int
    n_gqa: int
    imatrix: bool
    row: int
    default_block: int


#: the conditions the rules test, by the text the rules show
CONDITIONS: dict[str, Callable[[Place], bool]] = {
    "always": lambda at: True,
    "n_gqa >= 4": lambda at: at.n_gqa >= 4,
    "i < 2": lambda at: at.i < 2,
    "i < 4": lambda at: at.i < 4,
    "i < n/16": lambda at: at.i < at.n // 16,
    "i < n/8, no imatrix": lambda at: at.i < at.n // 8 and not at.imatrix,
    "i < n/8": lambda at: at.i < at.n // 8,
    "i < n/8, with an imatrix": lambda at: at.i < at.n // 8 and at.imatrix,
    "use_more_bits(i, n)": lambda at: use_more_bits(at.i, at.n),
    "rows hold no whole block of the default type": lambda at: at.row % at.default_block != 0,
}


@dataclass(frozen=True)
class Rule:
    """One branch of llama_tensor_get_type_impl: for a tensor of `role` under one of `recipes`,
    when `when` holds, the type becomes `to`. `lines` are the lines of LLAMA_CPP_SOURCE it mirrors."""

    role: str
    recipes: tuple[str, ...]
    when: str
    to: str
    lines: str

    def holds(self, at: Place) -> bool:
        return CONDITIONS[self.when](at)


_ALL = LLAMA_CPP_RECIPES
#: llama_tensor_get_type_impl's branches for these recipes on a model without experts, not Falcon and
#: not a 70B llama (the branches that test those never hold for Gemma 3). In each role the first rule
#: that names the recipe and holds decides, as the if/else chain does; no rule that holds keeps the
#: default type. attn_k, attn_q, ffn_gate, ffn_up and an untied token_embd change only under
#: recipes not planned here (IQ1/IQ2/IQ3, TQ, MXFP4), so they keep the default type.
LLAMA_CPP_RULES = (
    Rule("output", _ALL, "rows hold no whole block of the default type", "Q8_0", "490-502"),
    Rule("output", tuple(r for r in _ALL if LLAMA_CPP_DEFAULT_TYPE[r] != "Q8_0"), "always", "Q6_K", "508-510"),
    Rule("attn_v", ("Q2_K",), "n_gqa >= 4", "Q4_K", "568-569"),
    Rule("attn_v", ("Q2_K",), "always", "Q3_K", "568-569"),
    Rule("attn_v", ("Q3_K_M",), "i < 2", "Q5_K", "583-584"),
    Rule("attn_v", ("Q3_K_M",), "always", "Q4_K", "583-584"),
    Rule("attn_v", ("Q3_K_L",), "always", "Q5_K", "586"),
    Rule("attn_v", ("IQ4_NL", "IQ4_XS"), "n_gqa >= 4", "Q5_K", "587-588"),
    Rule("attn_v", ("Q4_K_M", "Q5_K_M"), "use_more_bits(i, n)", "Q6_K", "590-591"),
    Rule("attn_v", ("Q4_K_S",), "i < 4", "Q5_K", "592"),
    Rule("ffn_down", ("Q2_K",), "always", "Q3_K", "627"),
    Rule("ffn_down", ("Q3_K_M",), "i < n/16", "Q5_K", "634-637"),
    Rule("ffn_down", ("Q3_K_M",), "always", "Q4_K", "634-637"),
    Rule("ffn_down", ("Q3_K_L",), "always", "Q5_K", "643-644"),
    Rule("ffn_down", ("Q4_K_M",), "use_more_bits(i, n)", "Q6_K", "646-651"),
    Rule("ffn_down", ("IQ4_NL", "IQ4_XS"), "i < n/8, no imatrix", "Q5_K", "654-655"),
    Rule("ffn_down", ("Q5_K_M",), "use_more_bits(i, n)", "Q6_K", "657"),
    Rule("ffn_down", ("Q4_K_S",), "i < n/8", "Q5_K", "658-659"),
    Rule("ffn_down", ("Q4_0",), "i < n/8, with an imatrix", "Q4_1", "661-666"),
    Rule("attn_output", ("Q2_K",), "always", "Q3_K", "679"),
    Rule("attn_output", ("Q3_K_M",), "always", "Q4_K", "681"),
    Rule("attn_output", ("Q3_K_L",), "always", "Q5_K", "682"),
)


@dataclass(frozen=True)
class Choice:
    """The type a recipe gives one tensor, and the steps that chose it, in the lab's words."""

    type: str
    steps: tuple[str, ...]


def fallback(wanted: str, row: int) -> tuple[str, str | None]:
    """The type a row of `row` weights stores when `wanted` is asked for, and the step that says
    why, or None when the row holds whole blocks of `wanted` (tensor_type_fallback, 390-443)."""
    block = BLOCK_WEIGHTS[wanted]
    if row % block == 0:
        return wanted, None
    stored = LLAMA_CPP_FALLBACK.get(wanted, wanted)
    if row % BLOCK_WEIGHTS[stored] != 0:
        stored = "F16"
    return stored, (
        f"rows of {row} hold no whole {block}-weight block of {wanted}, so it falls back to {stored} "
        "(llama-quant.cpp:390-443)"
    )


def more_bits_reason(i: int, n: int) -> str:
    """Which clause of use_more_bits(i, n) holds, with the numbers: "(4 - 2) % 3 == 2"."""
    if i < n // 8:
        return f"{i} < {n}/8"
    if i >= 7 * n // 8:
        return f"{i} >= 7*{n}/8"
    verdict = "==" if (i - n // 8) % 3 == 2 else "!="
    return f"({i} - {n // 8}) % 3 {verdict} 2"


def _chosen(recipe: str, role: str, at: Place) -> tuple[str, str]:
    """The type the role's rules give (before the fallback), and the step that says which rule."""
    default = LLAMA_CPP_DEFAULT_TYPE[recipe]
    where = f"{role} {at.i} of {at.n}" if role in COUNTED_ROLES else role
    for rule in LLAMA_CPP_RULES:
        if rule.role == role and recipe in rule.recipes and rule.holds(at):
            because = more_bits_reason(at.i, at.n) if rule.when == "use_more_bits(i, n)" else rule.when
            if rule.when == "n_gqa >= 4":
                because = f"{at.n_gqa} query heads per key/value head >= 4"
            return rule.to, f"{where} under {recipe}: {because}, so {rule.to} (llama-quant.cpp:{rule.lines})"
    return default, f"{where} under {recipe}: no rule changes the default type {default} (llama-quant.cpp:881-907)"


def _llama_order(name: str) -> tuple[int, str]:
    """llama.cpp's tensor order (llama-model-loader.h:54-65, weight_name_comparer): by the layer
    number of "blk.N." (-1 for the rest), then by name. The counters count in this order."""
    found = re.match(r"blk\.(\d+)\.", name)
    return (int(found.group(1)) if found else -1, name)


def _llama_cpp_choices(recipe: str, gf: GGUFFile, layers: int, n_gqa: int, imatrix: bool) -> dict[str, Choice]:
    tied = all(info.name != "output.weight" for info in gf.tensors)
    roles = {info.name: llama_cpp_role(info.name, tied) for info in gf.tensors}
    totals = {"attn_v": sum(role == "attn_v" for role in roles.values()), "ffn_down": layers}
    counters = dict.fromkeys(COUNTED_ROLES, 0)
    default_block = BLOCK_WEIGHTS[LLAMA_CPP_DEFAULT_TYPE[recipe]]
    choices = {}
    for info in sorted(gf.tensors, key=lambda info: _llama_order(info.name)):
        if not quantizable(info):
            choices[info.name] = Choice(
                info.type_name,
                (
                    f"llama.cpp quantizes no 1-D tensor or norm: kept as {info.type_name} (llama-quant.cpp:287-300, 718-719)",
                ),
            )
            continue
        role = roles[info.name]
        at = Place(counters.get(role, 0), totals.get(role, 0), n_gqa, imatrix, info.shape[-1], default_block)
        wanted, why = _chosen(recipe, role, at)
        stored, fell = fallback(wanted, info.shape[-1])
        choices[info.name] = Choice(stored, (why,) if fell is None else (why, fell))
        if role in counters:
            counters[role] += 1
    return {info.name: choices[info.name] for info in gf.tensors}


# --------------------------------------------------------------------------------------------
# mlx-lm
# --------------------------------------------------------------------------------------------

#: recipe -> (low bits, high bits): mixed_quant_predicate_builder, mlx_lm/convert.py:23-36 (0.32.2)
MLX_LM_RECIPES = {"mixed_2_6": (2, 6), "mixed_3_4": (3, 4), "mixed_3_6": (3, 6), "mixed_4_6": (4, 6)}
#: the builder's default group size (convert.py:21), also quantize_model's affine default (utils.py:1036)
MLX_LM_GROUP_SIZE = 64
#: GGUF name -> mlx-lm's module path for gemma3_text (the map llama.cpp's converter reverses)
MLX_LM_PATHS = {"token_embd.weight": "model.embed_tokens", "output.weight": "lm_head"}
MLX_LM_BLOCK_PATHS = {
    "attn_q": "self_attn.q_proj",
    "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj",
    "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
}
#: the module names the predicate gives the high bits when use_more_bits holds (convert.py:66-71;
#: its v_a_proj and v_b_proj are not Gemma 3's), and those it always gives them (72-73)
MLX_LM_MORE_BITS = ("v_proj", "down_proj")
MLX_LM_ALWAYS_HIGH = ("lm_head",)
#: what the plan says of a tensor mlx-lm leaves in float
MLX_LM_FLOAT = "F32"


def mlx_lm_path(name: str) -> str | None:
    """mlx-lm's module path for a GGUF matrix of Gemma 3, or None for a name that is not one of them."""
    found = re.fullmatch(r"blk\.(\d+)\.(\w+)\.weight", name)
    if found and found.group(2) in MLX_LM_BLOCK_PATHS:
        return f"model.layers.{found.group(1)}.{MLX_LM_BLOCK_PATHS[found.group(2)]}"
    return MLX_LM_PATHS.get(name)


def affine_name(bits: int, group_size: int) -> str:
    """The registry's name for MLX affine at these settings: the registered format's where the
    registry holds it, else the name lab.formats.affine.format_record gives that pair."""
    mode = MLXMode(mode="affine", bits=bits, group_size=group_size)
    registered = next((name for name, fmt in FORMATS.items() if fmt.mlx == mode), None)
    return registered or affine.format_record(bits, group_size).name


def _mlx_lm_choices(recipe: str, gf: GGUFFile, layers: int) -> dict[str, Choice]:
    low, high = MLX_LM_RECIPES[recipe]
    choices = {}
    for info in gf.tensors:
        if len(info.shape) < 2:
            choices[info.name] = Choice(MLX_LM_FLOAT, ("a vector (norm): mlx-lm quantizes only Linear and Embedding",))
            continue
        path = mlx_lm_path(info.name)
        if info.shape[-1] % MLX_LM_GROUP_SIZE:
            choices[info.name] = Choice(
                MLX_LM_FLOAT,
                (
                    f"rows of {info.shape[-1]} hold no whole group of {MLX_LM_GROUP_SIZE}: left in float (utils.py:1060)",
                ),
            )
            continue
        # a path with no layer number reads as layer 0 (convert.py:56-60); only layer paths can be promoted
        found = re.search(r"\.layers\.(\d+)\.", path)
        layer = int(found.group(1)) if found else 0
        module = path.rsplit(".", 1)[-1]
        if module in MLX_LM_ALWAYS_HIGH:
            bits, why = high, f"{module} always gets the high bits (convert.py:72-73)"
        elif module in MLX_LM_MORE_BITS and use_more_bits(layer, layers):
            bits, why = high, f"{module} of layer {layer}: use_more_bits({layer}, {layers}) (convert.py:61-71)"
        else:
            bits, why = low, f"{path}: the low bits (convert.py:75)"
        choices[info.name] = Choice(affine_name(bits, MLX_LM_GROUP_SIZE), (why,))
    return choices


# --------------------------------------------------------------------------------------------
# the file and the public calls
# --------------------------------------------------------------------------------------------

RECIPES = (*LLAMA_CPP_RECIPES, *MLX_LM_RECIPES)


def _checked_recipe(recipe) -> str:
    if not isinstance(recipe, str) or recipe not in RECIPES:
        raise UnknownRecipeError(
            f"{quoted(str(recipe))} is not a recipe the lab knows; llama.cpp's: {', '.join(LLAMA_CPP_RECIPES)}; "
            f"mlx-lm's: {', '.join(MLX_LM_RECIPES)}"
        )
    return recipe


def _count(gf: GGUFFile, key: str) -> int:
    """A positive count from the file's gemma3.* metadata; a per-layer array gives its first layer's,
    as llama.cpp's n_gqa() reads layer 0."""
    value = gf.metadata(f"{ARCHITECTURE}.{key}")
    if isinstance(value, np.ndarray) and value.ndim == 1 and value.size and value.dtype.kind in "iu":
        value = int(value[0])
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value <= 0:
        raise RecipeFileError(f"the file's {ARCHITECTURE}.{key} is not a positive count")
    return int(value)


def _gemma(gf: GGUFFile) -> tuple[int, int]:
    """The file's number of layers and query heads per key/value head, or RecipeFileError."""
    architecture = gf.metadata("general.architecture")
    if architecture != ARCHITECTURE:
        shown = quoted(architecture) if isinstance(architecture, str) else "no architecture"
        raise RecipeFileError(f"the file names {shown}; the lab plans recipes for {ARCHITECTURE} (Gemma 3) files")
    heads, kv_heads = _count(gf, "attention.head_count"), _count(gf, "attention.head_count_kv")
    strange = next((info.name for info in gf.tensors if len(info.shape) > 1 and mlx_lm_path(info.name) is None), None)
    if strange is not None:
        # the rules above are written for Gemma 3's own matrices; another would need rules of its own
        raise RecipeFileError(f"the matrix {quoted(strange)} is not one of a Gemma 3 text model's")
    return _count(gf, "block_count"), heads // kv_heads


def explain(recipe: str, path=None, *, imatrix: bool = False) -> dict[str, Choice]:
    """{GGUF tensor name: Choice} for every tensor of the shipped Gemma 3 270M file, or of the GGUF
    file at `path`: the type `recipe` gives it and the steps of the rule that chose it. `imatrix`
    plans llama-quantize's run with an importance matrix (mlx-lm's recipes take none)."""
    recipe = _checked_recipe(recipe)
    if recipe in MLX_LM_RECIPES and imatrix:
        raise UnknownRecipeError(f"mlx-lm's {recipe} takes no importance matrix; only llama.cpp's recipes do")
    with open_gguf(shipped_gguf.model_file() if path is None else path) as gf:
        layers, n_gqa = _gemma(gf)
        if recipe in MLX_LM_RECIPES:
            return _mlx_lm_choices(recipe, gf, layers)
        return _llama_cpp_choices(recipe, gf, layers, n_gqa, imatrix)


def plan(recipe: str, path=None, *, imatrix: bool = False) -> dict[str, str]:
    """{GGUF tensor name: type} for the shipped Gemma 3 270M file (lab.study.shipped_gguf), or the
    GGUF file at `path`, under `recipe`.

    A llama.cpp recipe (LLAMA_CPP_RECIPES) gives a GGUF type name per tensor ("Q4_K", "Q8_0",
    "F32"), as llama-quantize --allow-requantize would store it from this file. An mlx-lm recipe
    (MLX_LM_RECIPES) gives the lab.formats registry name of the MLX affine format of each tensor it
    quantizes, the embedding included ("affine4_g64", "affine6_g64"), and "F32" for what mlx-lm
    leaves in float (the norms). An unknown recipe raises UnknownRecipeError; a file the lab cannot
    read raises lab.interop.gguf's errors (FileReadError, GGUFFormatError); a GGUF file that is not
    Gemma 3 raises RecipeFileError; a missing shipped file raises RealFileUnavailableError.
    """
    return {name: choice.type for name, choice in explain(recipe, path, imatrix=imatrix).items()}
