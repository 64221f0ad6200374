"""lab.study.recipes against the tools whose recipes it names.

- llama.cpp: the shipped Gemma 3 270M file is llama.cpp's own Q4_K_M output, so plan("Q4_K_M") must
  give each of its 236 tensors the type the file holds, read by gguf-py (never by the lab's reader).
- mlx-lm: mlx_lm.convert.mixed_quant_predicate_builder (0.32.2) is run through
  mlx_lm.utils.quantize_model on mlx-lm's own gemma3_text model, built with the file's config and no
  weights; nn.quantize is replaced by a recorder, so mlx-lm's own wrapper decides which modules are
  quantized and with what, and nothing is computed.
- use_more_bits, as rows: the layers llama.cpp's formula (llama-quant.cpp:452-454) promotes at 18 and
  26 layers, written out by hand.
"""

from __future__ import annotations

import re
from collections import Counter

import gguf
import numpy as np
import pytest
from conftest import require_mlx_lm
from support import require_shipped_gguf

from lab.errors import FileReadError, GGUFFormatError, LabError
from lab.formats import FORMATS
from lab.study import recipes

#: the shipped file's type counts, as llama-quantize --allow-requantize IN OUT Q4_K_M also writes
#: them from it (/work/shared/reference/mlx-lm-0.32.2-observed.md, measured with llama-cpp-python
#: 0.3.36's vendored llama-quantize)
SHIPPED_TYPE_COUNTS = {"F32": 109, "Q8_0": 10, "Q5_0": 81, "Q4_K": 27, "Q6_K": 9}
LAYERS = 18
NORMS_PER_LAYER = 6  # attn_norm, attn_q_norm, attn_k_norm, post_attention_norm, ffn_norm, post_ffw_norm

#: (layers, layer, promoted): use_more_bits(i, n) = i < n/8 or i >= 7n/8 or (i - n/8) % 3 == 2,
#: worked by hand. n = 18: n/8 = 2, 7n/8 = 15; n = 26: n/8 = 3, 7n/8 = 22.
PROMOTED = {
    18: {0, 1, 4, 7, 10, 13, 15, 16, 17},
    26: {0, 1, 2, 5, 8, 11, 14, 17, 20, 22, 23, 24, 25},
}
MORE_BITS_ROWS = [(n, i, i in promoted) for n, promoted in PROMOTED.items() for i in range(n)]

#: GGUF name -> mlx-lm gemma3_text module path, as the observed notes list the map (not the lab's table)
MLX_LM_NAMES = {
    "attn_q": "self_attn.q_proj",
    "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj",
    "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
}


#: the gemma3.* keys mlx-lm's ModelArgs take from the file
CONFIG_KEYS = {
    "hidden_size": "embedding_length",
    "num_hidden_layers": "block_count",
    "intermediate_size": "feed_forward_length",
    "num_attention_heads": "attention.head_count",
    "num_key_value_heads": "attention.head_count_kv",
    "head_dim": "attention.key_length",
}


@pytest.fixture(scope="module")
def shipped_file() -> tuple[dict[str, str], dict[str, int]]:
    """The shipped file as gguf-py reads it: {tensor name: type}, and mlx-lm's config from its metadata."""
    reader = gguf.GGUFReader(require_shipped_gguf())
    types = {tensor.name: tensor.tensor_type.name for tensor in reader.tensors}
    config = {arg: int(reader.fields[f"gemma3.{key}"].contents()) for arg, key in CONFIG_KEYS.items()}
    embedding = next(tensor for tensor in reader.tensors if tensor.name == "token_embd.weight")
    config["vocab_size"] = int(embedding.shape[-1])  # gguf-py gives ne, innermost first: [640, vocab]
    return types, config


@pytest.fixture(scope="module")
def shipped_types(shipped_file) -> dict[str, str]:
    return shipped_file[0]


def test_q4_k_m_gives_every_type_of_the_shipped_file(shipped_types):
    require_shipped_gguf()  # named in the test too, so the tier marker sees the real file (conftest.py)
    plan = recipes.plan("Q4_K_M")
    assert len(shipped_types) == 236
    assert plan == shipped_types


def test_the_shipped_files_type_counts_are_llama_quantizes_q4_k_m(shipped_types):
    """F32 is 109, not 110: 18 layers of 6 norms and output_norm. The file holds no output.weight
    (the embedding is tied), and no matrix stays F32."""
    require_shipped_gguf()
    assert Counter(shipped_types.values()) == SHIPPED_TYPE_COUNTS
    assert Counter(recipes.plan("Q4_K_M").values()) == SHIPPED_TYPE_COUNTS
    vectors = [name for name in shipped_types if name.endswith("norm.weight")]
    assert len(vectors) == LAYERS * NORMS_PER_LAYER + 1 == SHIPPED_TYPE_COUNTS["F32"]
    assert "output.weight" not in shipped_types


def test_the_rules_that_explain_the_shipped_files_layer_4():
    """The issue's example: layer 4's attn_v is promoted by (4 - 2) % 3 == 2, and rows of 640 hold no
    whole super-block, so Q6_K falls back to Q8_0; its ffn_down (rows of 2048) stays Q6_K."""
    require_shipped_gguf()
    choices = recipes.explain("Q4_K_M")
    value, down = choices["blk.4.attn_v.weight"], choices["blk.4.ffn_down.weight"]
    assert value.type == "Q8_0" and "(4 - 2) % 3 == 2, so Q6_K" in value.steps[0]
    assert "rows of 640 hold no whole 256-weight block of Q6_K, so it falls back to Q8_0" in value.steps[1]
    assert down.type == "Q6_K" and len(down.steps) == 1
    assert choices["blk.5.attn_v.weight"].type == "Q5_0"
    assert choices["token_embd.weight"].type == "Q8_0"


@pytest.mark.parametrize(("n", "i", "promoted"), MORE_BITS_ROWS)
def test_use_more_bits(n, i, promoted):
    assert recipes.use_more_bits(i, n) is promoted


@pytest.mark.parametrize(
    ("recipe", "layer", "wanted", "stored"),
    [
        ("Q4_K_M", 4, "Q6_K", "Q8_0"),
        ("Q4_K_M", 5, "Q4_K", "Q5_0"),
        ("Q5_K_M", 5, "Q5_K", "Q5_1"),
        ("Q2_K", 0, "Q4_K", "Q5_0"),  # 4 query heads per key/value head: llama-quant.cpp:568-569
        ("Q3_K_M", 1, "Q5_K", "Q5_1"),
        ("Q3_K_M", 2, "Q4_K", "Q5_0"),
        ("Q4_K_S", 3, "Q5_K", "Q5_1"),
        ("Q4_K_S", 4, "Q4_K", "Q5_0"),
        ("IQ4_XS", 9, "Q5_K", "Q5_1"),
        ("Q6_K", 9, "Q6_K", "Q8_0"),
        ("Q4_0", 9, "Q4_0", "Q4_0"),
    ],
)
def test_attention_values_of_the_shipped_file_as_rows(recipe, layer, wanted, stored):
    """The attn_v rule each recipe applies, and the fallback a row of 640 forces."""
    require_shipped_gguf()
    choice = recipes.explain(recipe)[f"blk.{layer}.attn_v.weight"]
    assert choice.type == stored
    assert f"so {wanted} " in choice.steps[0] or f"default type {wanted} " in choice.steps[0]


@pytest.mark.parametrize(
    ("recipe", "imatrix", "types"),
    [
        # IQ4_NL/IQ4_XS raise the first eighth's ffn_down to Q5_K only without an imatrix (llama-quant.cpp:654-655)
        ("IQ4_NL", False, ["Q5_K", "Q5_K", "IQ4_NL"]),
        ("IQ4_NL", True, ["IQ4_NL", "IQ4_NL", "IQ4_NL"]),
        # Q4_0 guards the first eighth with Q4_1 only with one (661-666)
        ("Q4_0", False, ["Q4_0", "Q4_0", "Q4_0"]),
        ("Q4_0", True, ["Q4_1", "Q4_1", "Q4_0"]),
    ],
)
def test_an_importance_matrix_changes_the_first_ffn_down_layers(recipe, imatrix, types):
    require_shipped_gguf()
    plan = recipes.plan(recipe, imatrix=imatrix)
    assert [plan[f"blk.{layer}.ffn_down.weight"] for layer in (0, 1, 2)] == types


@pytest.mark.parametrize(
    ("wanted", "row", "stored"),
    [
        ("Q4_K", 256, "Q4_K"),
        ("Q4_K", 640, "Q5_0"),
        ("Q5_K", 640, "Q5_1"),
        ("Q6_K", 640, "Q8_0"),
        ("Q3_K", 640, "Q4_0"),
        ("Q2_K", 640, "Q4_0"),
        ("IQ4_XS", 640, "IQ4_NL"),
        ("Q4_K", 48, "F16"),  # Q5_0's 32-weight blocks do not fit either
        ("Q8_0", 48, "F16"),  # a 32-weight type has nothing smaller to fall to
        ("Q8_0", 640, "Q8_0"),
    ],
)
def test_the_fallback_for_rows_without_whole_blocks(wanted, row, stored):
    assert recipes.fallback(wanted, row)[0] == stored


def _mlx_lm_decisions(monkeypatch, recipe: str, args) -> dict[str, object]:
    """{module path: what mlx-lm's quantize_model would pass to to_quantized, or False} for
    mixed_quant_predicate_builder(recipe) on a gemma3_text model with these ModelArgs."""
    require_mlx_lm()
    import mlx.nn as nn
    from mlx.utils import tree_flatten
    from mlx_lm import utils
    from mlx_lm.convert import mixed_quant_predicate_builder
    from mlx_lm.models import gemma3_text

    model = gemma3_text.Model(args)
    model.sanitize({})  # a checkpoint without lm_head ties it to the embedding, as mlx-lm's load does
    decided = {}

    def record(model, group_size, bits, mode="affine", class_predicate=None, **_):
        for path, module in tree_flatten(model.leaf_modules(), is_leaf=nn.Module.is_module):
            decided[path] = class_predicate(path, module)

    monkeypatch.setattr(utils.nn, "quantize", record)
    predicate = mixed_quant_predicate_builder(recipe, model)
    utils.quantize_model(model, {}, None, None, mode="affine", quant_predicate=predicate)
    return decided


def _gguf_name(path: str) -> str:
    if path == "model.embed_tokens":
        return "token_embd.weight"
    layer, module = re.fullmatch(r"model\.layers\.(\d+)\.(.+)", path).groups()
    role = next(role for role, name in MLX_LM_NAMES.items() if name == module)
    return f"blk.{layer}.{role}.weight"


@pytest.mark.parametrize("recipe", list(recipes.MLX_LM_RECIPES))
def test_mlx_lm_recipes_are_mlx_lms_predicate_on_its_gemma3_text_model(monkeypatch, shipped_file, recipe):
    require_mlx_lm()
    require_shipped_gguf()
    from mlx_lm.models import gemma3_text

    shipped_types, config = shipped_file
    args = gemma3_text.ModelArgs(model_type="gemma3_text", **config)
    assert (args.hidden_size, args.num_hidden_layers, args.intermediate_size, args.vocab_size) == (
        640,
        18,
        2048,
        262144,
    )
    assert (args.num_attention_heads, args.num_key_value_heads, args.head_dim) == (4, 1, 256)
    decided = _mlx_lm_decisions(monkeypatch, recipe, args)
    quantized = {path: params for path, params in decided.items() if params}
    expected = dict.fromkeys(shipped_types, "F32")
    for path, params in quantized.items():
        assert params["mode"] == "affine"
        expected[_gguf_name(path)] = f"affine{params['bits']}_g{params['group_size']}"
    assert len(quantized) == 18 * 7 + 1  # every Linear of every layer, and the embedding
    assert recipes.plan(recipe) == expected


def test_the_mlx_lm_plan_names_registry_formats_where_the_registry_has_them():
    """Every name a mixed recipe gives is the registry's MLX affine format of those bits and group
    size where one is registered; 6 bits at group 64 is not (a gap in lab.formats)."""
    for bits, group_size in ((2, 64), (3, 64), (4, 64)):
        fmt = FORMATS[recipes.affine_name(bits, group_size)]
        assert (fmt.mlx.mode, fmt.mlx.bits, fmt.mlx.group_size) == ("affine", bits, group_size)
    assert recipes.affine_name(6, 64) == "affine6_g64"


def test_mlx_lms_predicate_promotes_use_more_bits_layers_at_26_layers(monkeypatch):
    """mlx-lm's own predicate on a small 26-layer gemma3_text agrees with the hand-worked rows."""
    require_mlx_lm()
    from mlx_lm.models import gemma3_text

    args = gemma3_text.ModelArgs(
        model_type="gemma3_text",
        hidden_size=64,
        num_hidden_layers=26,
        intermediate_size=128,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=64,
        vocab_size=256,
    )
    decided = _mlx_lm_decisions(monkeypatch, "mixed_4_6", args)
    high = {int(path.split(".")[2]) for path, params in decided.items() if params and params["bits"] == 6}
    down = {int(path.split(".")[2]) for path, params in decided.items() if "down_proj" in path and params["bits"] == 6}
    assert high == down == PROMOTED[26]


def _write_gguf(path, architecture: str, tensors: dict[str, np.ndarray], counts: dict[str, int]) -> None:
    writer = gguf.GGUFWriter(str(path), architecture)
    for key, value in counts.items():
        writer.add_uint32(f"{architecture}.{key}", value)
    for name, array in tensors.items():
        writer.add_tensor(name, array)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


GEMMA_COUNTS = {"block_count": 1, "attention.head_count": 4, "attention.head_count_kv": 1}


def _small_gemma(rows: int = 256, output: bool = False) -> dict[str, np.ndarray]:
    tensors = {"token_embd.weight": np.zeros((64, rows), np.float32), "output_norm.weight": np.ones(rows, np.float32)}
    if output:
        tensors["output.weight"] = np.zeros((64, rows), np.float32)
    for role in MLX_LM_NAMES:
        tensors[f"blk.0.{role}.weight"] = np.zeros((rows, rows), np.float32)
    tensors["blk.0.attn_norm.weight"] = np.ones(rows, np.float32)
    return tensors


def test_a_small_gemma_file_with_whole_super_blocks(tmp_path):
    """Rows of 256 need no fallback; an untied output gets Q6_K and the embedding keeps the default."""
    path = tmp_path / "small.gguf"
    _write_gguf(path, "gemma3", _small_gemma(output=True), GEMMA_COUNTS)
    plan = recipes.plan("Q3_K_M", path)
    assert plan["output.weight"] == "Q6_K" and plan["token_embd.weight"] == "Q3_K"
    # one layer: attn_v 0 < 2 gets Q5_K; ffn_down 0 < 1/16 fails, so Q4_K (llama-quant.cpp:583-584, 634-637)
    assert plan["blk.0.attn_v.weight"] == "Q5_K" and plan["blk.0.ffn_down.weight"] == "Q4_K"
    assert plan["blk.0.attn_output.weight"] == "Q4_K" and plan["blk.0.attn_q.weight"] == "Q3_K"
    assert plan["blk.0.attn_norm.weight"] == "F32"
    mixed = recipes.plan("mixed_3_6", path)
    assert mixed["output.weight"] == "affine6_g64" and mixed["token_embd.weight"] == "affine3_g64"
    # use_more_bits(0, 1): 0 < 1//8 fails, 0 >= 7*1//8 holds
    assert mixed["blk.0.attn_v.weight"] == mixed["blk.0.ffn_down.weight"] == "affine6_g64"
    assert mixed["blk.0.attn_q.weight"] == "affine3_g64" and mixed["blk.0.attn_norm.weight"] == "F32"


@pytest.mark.parametrize("recipe", ["Q4_K_m", "q4_k_m", "Q4_K", "Q4_K_M ", "mixed_4_8", "F16", "", None, 4])
def test_unknown_recipes_are_refused(recipe):
    with pytest.raises(recipes.UnknownRecipeError, match="is not a recipe the lab knows"):
        recipes.plan(recipe)


def test_an_importance_matrix_is_llama_cpps_alone():
    with pytest.raises(recipes.UnknownRecipeError, match="takes no importance matrix"):
        recipes.plan("mixed_4_6", imatrix=True)


def test_files_the_lab_cannot_plan_are_refused(tmp_path):
    text = tmp_path / "notes.gguf"
    text.write_text("not a model")
    with pytest.raises(GGUFFormatError):
        recipes.plan("Q4_K_M", text)
    with pytest.raises(FileReadError):
        recipes.plan("Q4_K_M", tmp_path / "missing.gguf")
    llama = tmp_path / "llama.gguf"
    _write_gguf(llama, "llama", _small_gemma(), {"block_count": 1})
    with pytest.raises(recipes.RecipeFileError, match="the lab plans recipes for gemma3"):
        recipes.plan("Q4_K_M", llama)
    headless = tmp_path / "headless.gguf"
    _write_gguf(headless, "gemma3", _small_gemma(), {"block_count": 1})
    with pytest.raises(recipes.RecipeFileError, match="attention.head_count is not a positive count"):
        recipes.plan("Q4_K_M", headless)
    extra = tmp_path / "extra.gguf"
    _write_gguf(
        extra, "gemma3", {**_small_gemma(), "blk.0.ffn_gate_inp.weight": np.zeros((4, 256), np.float32)}, GEMMA_COUNTS
    )
    for recipe in ("Q4_K_M", "mixed_4_6"):
        with pytest.raises(recipes.RecipeFileError, match="is not one of a Gemma 3 text model's"):
            recipes.plan(recipe, extra)
    assert all(issubclass(error, LabError) for error in (recipes.UnknownRecipeError, recipes.RecipeFileError))
