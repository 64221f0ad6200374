"""Pins what mlx-lm computes for the shipped Gemma 3 270M file, for tests/oracles/test_mlx_lm_oracle.py to
hold lab.device.verify to.

Nothing of the lab is imported: the file is read and dequantized by gguf-py, the weights renamed for
mlx-lm here, the prompt ids are llama.cpp's (tests/data/chat_requant_reference.json, notebook 12's
prompts), and mlx-lm's own code quantizes and decodes. Run outside CI (minutes):

    .venv/bin/python tests/data/make_mlx_lm_reference.py [path/to/gemma-3-270m-q4_k_m.gguf]

with gguf==0.19.0, mlx[cpu]==0.32.4 and mlx-lm==0.32.2, on the file whose sha256 is SHIPPED_SHA256
(the script refuses another), by default the one the lab joins into ~/.cache/four-bit-lab-models (or
$LAB_MODEL_DIR). It writes tests/data/mlx_lm_reference.json:

    per format (the unquantized "reference", and mlx_lm.utils.quantize_model with its default predicate
    in each mode below) and per prompt: 20 greedy ids from mlx_lm.generate.generate_step with an
    argmax sampler, and the logits at the prompt's last position: the top 20 (ids and values) and
    the values at SPREAD_IDS
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import sys
from pathlib import Path

import gguf
import mlx.core as mx
import mlx.nn as nn
import numpy as np
from mlx_lm.generate import generate_step
from mlx_lm.models import gemma3_text
from mlx_lm.utils import quantize_model

SHIPPED_SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
DATA = Path(__file__).resolve().parent
OUT = DATA / "mlx_lm_reference.json"
GREEDY_TOKENS = 20
TOP = 20
SPREAD_IDS = list(range(11, 262144, 2621))
#: (name, mode, bits, group size): the registry's names for mlx-lm's modes
MODES = [
    ("mxfp4", "mxfp4", 4, 32),
    ("nvfp4", "nvfp4", 4, 16),
    ("affine4_g64", "affine", 4, 64),
    ("affine8_g64", "affine", 8, 64),
    ("mxfp8", "mxfp8", 8, 32),
]
RENAME = {
    "attn_q": "self_attn.q_proj",
    "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj",
    "attn_q_norm": "self_attn.q_norm",
    "attn_k_norm": "self_attn.k_norm",
    "attn_norm": "input_layernorm",
    "post_attention_norm": "post_attention_layernorm",
    "ffn_norm": "pre_feedforward_layernorm",
    "post_ffw_norm": "post_feedforward_layernorm",
    "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
}


def default_file() -> Path:
    folder = Path(os.environ.get("LAB_MODEL_DIR", Path.home() / ".cache" / "four-bit-lab-models"))
    return folder / "gemma-3-270m-q4_k_m.gguf"


def field(reader: gguf.GGUFReader, key: str):
    value = reader.fields[key]
    return value.parts[value.data[0]].tolist()[0]


def read(path: Path) -> tuple[dict, dict[str, np.ndarray]]:
    reader = gguf.GGUFReader(path)
    arch = "gemma3"
    n_layer = field(reader, f"{arch}.block_count")
    weights = {}
    for tensor in reader.tensors:
        values = gguf.quants.dequantize(tensor.data, tensor.tensor_type).astype(np.float32)
        shape = [int(n) for n in reversed(tensor.shape.tolist())]
        values = values.reshape(shape)
        name = tensor.name.removesuffix(".weight")
        if name == "token_embd":
            weights["model.embed_tokens.weight"] = values
        elif name == "output_norm":
            weights["model.norm.weight"] = values - 1.0  # stored as 1 + w; mlx-lm adds the 1 itself
        else:
            _, layer, part = name.split(".", 2)
            weights[f"model.layers.{layer}.{RENAME[part]}.weight"] = values - 1.0 if part.endswith("norm") else values
    head_dim = field(reader, f"{arch}.attention.key_length")
    config = {
        "model_type": "gemma3_text",
        "hidden_size": field(reader, f"{arch}.embedding_length"),
        "num_hidden_layers": n_layer,
        "intermediate_size": field(reader, f"{arch}.feed_forward_length"),
        "num_attention_heads": field(reader, f"{arch}.attention.head_count"),
        "num_key_value_heads": field(reader, f"{arch}.attention.head_count_kv"),
        "head_dim": head_dim,
        "rms_norm_eps": field(reader, f"{arch}.attention.layer_norm_rms_epsilon"),
        "vocab_size": weights["model.embed_tokens.weight"].shape[0],
        "rope_theta": field(reader, f"{arch}.rope.freq_base"),
        "rope_local_base_freq": 10000.0,
        "query_pre_attn_scalar": head_dim,
        "sliding_window": field(reader, f"{arch}.attention.sliding_window"),
        "sliding_window_pattern": 6,
        "max_position_embeddings": field(reader, f"{arch}.context_length"),
    }
    return config, weights


def build(config: dict, weights: dict[str, np.ndarray], mode: tuple | None):
    model = gemma3_text.Model(gemma3_text.ModelArgs.from_dict(config))
    arrays = {name: mx.array(values) for name, values in weights.items()}
    model.load_weights(list(model.sanitize(arrays).items()), strict=True)
    if mode is not None:
        _, name, bits, group_size = mode
        table = model.model.embed_tokens.weight
        model, _ = quantize_model(
            model, config, group_size, bits, mode=name, quant_predicate=lambda path, _: path != "model.embed_tokens"
        )
        # The default predicate quantizes the embedding too, by QuantizedEmbedding.from_embedding: one
        # mx.quantize of the whole table, which in mxfp4 and nvfp4 holds 13 GB on MLX's CPU. Its groups
        # run along rows, so the same call on slices of rows gives the same bytes (the suite checks that).
        embedding = nn.QuantizedEmbedding(*table.shape, group_size, bits, mode=name)
        parts = [
            mx.quantize(table[start : start + 8192], group_size, bits, mode=name)
            for start in range(0, table.shape[0], 8192)
        ]
        for part in parts:
            mx.eval(part)
        embedding.weight = mx.concatenate([part[0] for part in parts])
        embedding.scales = mx.concatenate([part[1] for part in parts])
        embedding.biases = mx.concatenate([part[2] for part in parts]) if len(parts[0]) > 2 else None
        model.model.embed_tokens = embedding
    mx.eval(model.parameters())
    return model


def run(model, ids: list[int]) -> dict:
    logits = model(mx.array(ids)[None])[0, -1].astype(mx.float32)
    values = np.array(logits)
    top = np.argsort(-values, kind="stable")[:TOP]
    steps = generate_step(mx.array(ids), model, max_tokens=GREEDY_TOKENS, sampler=lambda lg: mx.argmax(lg, axis=-1))
    return {
        "greedy": [int(token) for token, _ in steps],
        "top_ids": top.tolist(),
        "top_logits": values[top].tolist(),
        "spread_logits": values[SPREAD_IDS].tolist(),
    }


def main() -> None:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else default_file()
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != SHIPPED_SHA256:
        sys.exit(f"{path} is not the shipped file (sha256 {digest})")
    mx.set_cache_limit(1 << 28)
    prompts = json.loads((DATA / "chat_requant_reference.json").read_text())["f32"]["answers"]
    config, weights = read(path)
    out = {
        "made_by": "tests/data/make_mlx_lm_reference.py",
        "versions": {"mlx": mx.__version__, "mlx_lm": __import__("mlx_lm").__version__, "gguf": "0.19.0"},
        "file_sha256": digest,
        "greedy_tokens": GREEDY_TOKENS,
        "spread_ids": SPREAD_IDS,
        "prompts": [{"prompt": entry["prompt"], "ids": entry["ids"]} for entry in prompts],
        "formats": {},
    }
    for mode in [None, *MODES]:
        name = "reference" if mode is None else mode[0]
        model = build(config, weights, mode)
        out["formats"][name] = [run(model, entry["ids"]) for entry in prompts]
        print(name, [answer["greedy"][:8] for answer in out["formats"][name]], flush=True)
        del model
        gc.collect()
        mx.clear_cache()  # freed float copies would stay in MLX's pool for the next model
    OUT.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
