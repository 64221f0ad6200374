"""Pins what mlx-lm's quantized KV cache does to the shipped Gemma 3 270M file, for
tests/oracles/test_kv_cache.py to hold lab.device.verify.kv_quantized_greedy_ids to.

Nothing of the lab is imported: the file is read, renamed and quantized by make_mlx_lm_reference.py's
own helpers (gguf-py and mlx-lm), on the same prompt ids. Run outside CI (a few minutes):

    .venv/bin/python tests/data/make_kv_cache_reference.py [path/to/gemma-3-270m-q4_k_m.gguf]

with gguf==0.19.0, mlx[cpu]==0.32.4 and mlx-lm==0.32.2. mlx-lm 0.32.2 cannot quantize Gemma 3's own
prompt cache (its sliding-window layers keep a RotatingKVCache, whose to_quantized raises), so each
run is given one plain mlx_lm.models.cache.KVCache per layer, which mlx-lm's generate_step converts
with KVCache.to_quantized (kv_bits, kv_group_size 64, quantized_kv_start=0). First the script checks
that substitution where it can: with kv_bits=None the plain caches give mlx-lm's own run
(make_prompt_cache) the same ids and log-probabilities, bit for bit, on every prompt; it stops if not.
It writes tests/data/kv_cache_reference.json:

    per format (the unquantized "reference", affine4_g64 and mxfp4 as quantize_model makes them),
    per kv_bits (8, 4) and per prompt: GREEDY_TOKENS greedy ids; and per prompt the substitution
    check's largest |log-probability difference| over its steps (0.0: bit for bit)
"""

from __future__ import annotations

import gc
import hashlib
import json
import sys
from pathlib import Path

import mlx.core as mx
import numpy as np
from make_mlx_lm_reference import DATA, MODES, SHIPPED_SHA256, build, default_file, read
from mlx_lm.generate import generate_step
from mlx_lm.models.cache import KVCache, make_prompt_cache

OUT = DATA / "kv_cache_reference.json"
GREEDY_TOKENS = 20
KV_BITS = (8, 4)
KV_GROUP_SIZE = 64
FORMATS = ("reference", "affine4_g64", "mxfp4")


def run(model, ids: list[int], cache, kv_bits: int | None) -> tuple[list[int], np.ndarray]:
    steps = generate_step(
        mx.array(ids),
        model,
        max_tokens=GREEDY_TOKENS,
        sampler=lambda logprobs: mx.argmax(logprobs, axis=-1),
        prompt_cache=cache,
        kv_bits=kv_bits,
        kv_group_size=KV_GROUP_SIZE,
        quantized_kv_start=0,
    )
    pairs = [(int(token), np.array(logprobs.astype(mx.float32))) for token, logprobs in steps]
    return [token for token, _ in pairs], np.stack([row for _, row in pairs])


def plain_cache(model) -> list:
    return [KVCache() for _ in model.layers]


def main() -> None:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else default_file()
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != SHIPPED_SHA256:
        sys.exit(f"{path} is not the shipped file (sha256 {digest})")
    mx.set_cache_limit(1 << 28)
    prompts = json.loads((DATA / "chat_requant_reference.json").read_text())["f32"]["answers"]
    config, weights = read(path)
    if max(len(entry["ids"]) for entry in prompts) + GREEDY_TOKENS > config["sliding_window"]:
        sys.exit("a prompt and its tokens pass the sliding window, where the plain caches are no stand-in")
    out = {
        "made_by": "tests/data/make_kv_cache_reference.py",
        "versions": {"mlx": mx.__version__, "mlx_lm": __import__("mlx_lm").__version__, "gguf": "0.19.0"},
        "file_sha256": digest,
        "greedy_tokens": GREEDY_TOKENS,
        "kv_group_size": KV_GROUP_SIZE,
        "prompts": [{"prompt": entry["prompt"], "ids": entry["ids"]} for entry in prompts],
        "substitution_max_difference": [],
        "formats": {},
    }
    modes = {mode[0]: mode for mode in MODES}
    for name in FORMATS:
        model = build(config, weights, modes.get(name))
        if name == "reference":
            for entry in prompts:
                own_ids, own = run(model, entry["ids"], make_prompt_cache(model), None)
                plain_ids, plain = run(model, entry["ids"], plain_cache(model), None)
                if own_ids != plain_ids:
                    sys.exit(f"plain caches changed the float run of {entry['prompt']!r}: {own_ids} != {plain_ids}")
                out["substitution_max_difference"].append(float(np.max(np.abs(own - plain))))
            print("substitution", out["substitution_max_difference"], flush=True)
        out["formats"][name] = {
            str(bits): [run(model, entry["ids"], plain_cache(model), bits)[0] for entry in prompts] for bits in KV_BITS
        }
        print(name, {bits: [ids[:8] for ids in runs] for bits, runs in out["formats"][name].items()}, flush=True)
        del model
        gc.collect()
        mx.clear_cache()  # freed float copies would stay in MLX's pool for the next model
    OUT.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
