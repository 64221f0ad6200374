"""lab.device.predicates against MLX's own nn.quantize: the predicate text the lab writes for a
learner, run here (and only here) on a small mlx-lm gemma3_text, must quantize every module exactly
as plan() said, and the bytes MLX keeps must give plan's bits per weight. The real model's list of
layers is held to the shipped GGUF file's own tensor shapes."""

from __future__ import annotations

import pytest
from conftest import require_mlx_lm
from support import require_shipped_gguf

from lab.device import predicates, verify
from lab.interop.gguf import open_gguf
from lab.study.chat.gguf_model import NORMS

#: a Gemma 3 small enough to build in milliseconds, every row a multiple of 128 so that any group divides it
SMALL = {
    "model_type": "gemma3_text",
    "hidden_size": 128,
    "num_hidden_layers": 4,
    "intermediate_size": 256,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "head_dim": 64,
    "vocab_size": 256,
    "sliding_window": 16,
    "sliding_window_pattern": 2,
}

RULE_SETS = {
    "bands in different formats": [
        {"pattern": "k_proj", "layers": "3", "format": "float"},
        {"pattern": "mlp.down_proj", "layers": "0–1", "format": "affine8_g32"},
        {"pattern": "mlp.down_proj", "layers": "2-3", "format": "affine4_g128"},
        {"pattern": "*", "layers": "", "format": "mxfp4"},
    ],
    "a float row and first match wins": [
        {"pattern": "self_attn.v_proj", "layers": "", "format": "float"},
        {"pattern": "*_proj", "layers": "1", "format": "nvfp4"},
        {"pattern": "layers.*.*.*", "layers": "0-3", "format": "affine4_g64"},
        {"pattern": "embed_tokens", "layers": "", "format": "mxfp8"},
    ],
    "a few layers, the rest float": [
        {"pattern": "model.layers.*.mlp.*", "layers": "1-2", "format": "affine2_g64"},
        {"pattern": "q_proj", "layers": "3", "format": "affine3_g64"},
        {"pattern": "embed_tokens", "layers": "", "format": "nvfp4"},
    ],
}


def _small_model():
    require_mlx_lm()
    from mlx_lm.models import gemma3_text

    model = gemma3_text.Model(gemma3_text.ModelArgs.from_dict(SMALL))
    model.sanitize({})  # no lm_head weight: the output is tied to the embedding, as in the lab's chat model
    return model


@pytest.mark.parametrize("name", RULE_SETS)
def test_nn_quantize_with_the_written_predicate_does_what_plan_said(name):
    import mlx.core as mx
    import mlx.nn as nn
    from mlx.utils import tree_flatten

    model = _small_model()
    layers = predicates.quantizable_layers(model)
    # every Linear and the Embedding, by mlx-lm's own walk of the model
    expected_paths = {path for path, module in model.named_modules() if isinstance(module, nn.Linear | nn.Embedding)}
    assert set(layers) == expected_paths and len(layers) == 4 * 7 + 1
    rules = predicates.read_rules(RULE_SETS[name], layer_count=SMALL["num_hidden_layers"])
    planned = predicates.plan(rules, layers)
    assert set(planned.values()) - {None}, "each set quantizes something"
    assert None in planned.values(), "each set leaves something in float"

    types_before = {
        path: type(module) for path, module in tree_flatten(model.leaf_modules(), is_leaf=nn.Module.is_module)
    }
    namespace: dict = {}
    exec(compile(predicates.predicate_source(rules), "class_predicate.py", "exec"), namespace)  # the test only
    nn.quantize(model, class_predicate=namespace["class_predicate"])
    modules = dict(tree_flatten(model.leaf_modules(), is_leaf=nn.Module.is_module))
    stored_bits = 0
    for path, fmt in planned.items():
        module = modules[path]
        if fmt is None:
            assert type(module) in (nn.Linear, nn.Embedding), path
            stored_bits += module.weight.nbytes * 8
            continue
        assert isinstance(module, nn.QuantizedLinear | nn.QuantizedEmbedding), path
        mode = verify.mlx_modes()[fmt]
        assert (module.mode, module.bits, module.group_size) == (mode.mode, mode.bits, mode.group_size), path
        stored_bits += sum(array.nbytes * 8 for _name, array in tree_flatten(module.parameters()))
    # the norms and the rope stay as they were
    assert {path: type(module) for path, module in modules.items() if path not in layers} == {
        path: kind for path, kind in types_before.items() if path not in layers
    }

    weights = sum(rows * columns for rows, columns in layers.values())
    assert predicates.bits_per_weight(planned, layers) == pytest.approx(stored_bits / weights, rel=1e-12)
    # and the quantized model still runs
    logits = model(mx.array([[2, 17, 40]]))
    assert logits.shape == (1, 3, SMALL["vocab_size"]) and bool(mx.all(mx.isfinite(logits)))


def test_the_chat_models_layers_are_mlx_lms_with_the_files_shapes():
    path = require_shipped_gguf()
    require_mlx_lm()
    layers = predicates.linear_layers()
    # Gemma 3 270M: 18 layers of q, k, v, o, gate, up and down, and the token embedding (the output
    # layer is the embedding, tied)
    assert len(layers) == 18 * 7 + 1 == 127
    assert layers["model.embed_tokens"] == (262144, 640)
    assert layers["model.layers.0.self_attn.q_proj"] == (1024, 640)
    assert layers["model.layers.17.mlp.down_proj"] == (640, 2048)
    with open_gguf(path) as gf:
        from_file = {"model.embed_tokens": tuple(gf.tensor("token_embd.weight").shape)}
        for layer in range(18):
            for gguf_name, mlx_name in verify.BLOCK_NAMES.items():
                if gguf_name not in NORMS:
                    from_file[f"model.layers.{layer}.{mlx_name}"] = tuple(
                        gf.tensor(f"blk.{layer}.{gguf_name}.weight").shape
                    )
    assert layers == from_file
    assert predicates.bits_per_weight(dict.fromkeys(layers), layers) == 32.0
