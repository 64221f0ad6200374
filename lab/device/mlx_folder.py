"""The lab's chat model as an MLX model folder, and the checks that keep a learner's own folder from running code.

    write_folder("mlx_model", "mxfp4")       # config.json, model.safetensors, tokenizer.model, tokenizer_config.json
    check_folder("mlx_model")                # the folder's config, or FolderRefusedError before anything loads
    model, tokenizer = load_folder("mlx_model")   # mlx_lm.load, after check_folder, never trusting code

A folder written here opens in a learner's own script with `mlx_lm.load(folder)`, as the guide's
recipe loads its candidate. The weights are lab.device.verify's model (the shipped file's weights in
mlx-lm's gemma3_text, quantized as mlx_lm.utils.quantize_model does). The tokenizer is the file's own
SentencePiece model rebuilt as the `tokenizer.model` protocol buffer that Gemma ships (transformers'
GemmaTokenizer reads it): the file keeps every piece, its score and its type, exactly what
SentencePiece's BPE needs, with no space prefix and byte fallback, as the file's metadata says.

mlx-lm runs a model's own Python file when its config names a `model_file` and the caller passes
trust_remote_code=True, and transformers runs a tokenizer's code from an `auto_map`. The lab never
passes that flag, and refuses such a folder outright, before anything is imported from it, as it
refuses a `model_type` mlx-lm does not ship. It never downloads: a folder that is not on this
machine is refused rather than looked up on a model hub.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import tempfile
from pathlib import Path

from lab import files
from lab.device import verify
from lab.errors import LabError
from lab.interop.gguf import open_gguf
from lab.study import shipped_gguf
from lab.text import quoted, read_json

#: what a folder's config.json and tokenizer_config.json may take up (a real one is a few KB)
MAX_CONFIG_BYTES = 1 << 20
#: mlx-lm's model modules are named so; anything else in model_type is not a module name
MODEL_TYPE = re.compile(r"[a-z][a-z0-9_]{0,63}")
#: the keys by which a config asks for code of its own
CODE_KEYS = ("model_file", "auto_map")
#: SentencePiece's trainer_spec.model_type for BPE
SENTENCEPIECE_BPE = 2


class FolderRefusedError(LabError):
    """A model folder the lab will not open: it asks to run code of its own, or is not a model mlx-lm ships."""


def _read_config(folder: Path, name: str, *, required: bool) -> dict | None:
    path = folder / name
    if not path.is_file():
        if required:
            raise FolderRefusedError(f"{files.shown_path(folder)} has no {name}, so it is not an MLX model folder")
        return None
    if path.stat().st_size > MAX_CONFIG_BYTES:
        raise FolderRefusedError(f"{name} in {files.shown_path(folder)} is larger than a model's config can be")
    config = read_json(path.read_bytes(), what=name, max_chars=MAX_CONFIG_BYTES)
    if not isinstance(config, dict):
        raise FolderRefusedError(f"{name} in {files.shown_path(folder)} must hold a JSON object")
    return config


def check_folder(folder: str | os.PathLike) -> dict:
    """The folder's config.json, once nothing in it asks the lab to run code; FolderRefusedError otherwise."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FolderRefusedError(
            f"{files.shown_path(folder)} is not a folder on this machine; the lab opens local folders only "
            "and downloads nothing"
        )
    config = _read_config(folder, "config.json", required=True)
    tokenizer_config = _read_config(folder, "tokenizer_config.json", required=False) or {}
    for name, settings in (("config.json", config), ("tokenizer_config.json", tokenizer_config)):
        for key in CODE_KEYS:
            if key in settings:
                raise FolderRefusedError(
                    f"{name} sets {key}, asking to run the folder's own Python code; the lab runs no code "
                    "from a model folder (mlx-lm would need trust_remote_code, which the lab never passes)"
                )
    model_type = config.get("model_type")
    if not isinstance(model_type, str) or not MODEL_TYPE.fullmatch(model_type):
        raise FolderRefusedError(f"config.json's model_type must name one of mlx-lm's models, got {model_type!r}")
    if importlib.util.find_spec(f"mlx_lm.models.{model_type}") is None:
        raise FolderRefusedError(f"config.json's model_type {quoted(model_type)} is not a model mlx-lm ships")
    return config


def load_folder(folder: str | os.PathLike):
    """(model, tokenizer) by mlx_lm.load, after check_folder, offline and without trusting any code."""
    check_folder(folder)
    os.environ["HF_HUB_OFFLINE"] = "1"  # a local folder needs no hub; nothing is looked up if it is missing
    from mlx_lm import load

    return load(str(Path(folder).resolve()), tokenizer_config={"trust_remote_code": False}, trust_remote_code=False)


def tokenizer_model(path: str | os.PathLike | None = None) -> bytes:
    """The GGUF file's SentencePiece model as the `tokenizer.model` protocol buffer it was converted from."""
    from sentencepiece import sentencepiece_model_pb2

    path = shipped_gguf.model_file() if path is None else Path(path)
    with open_gguf(path) as gf:
        pieces = gf.metadata("tokenizer.ggml.tokens")
        scores = gf.metadata("tokenizer.ggml.scores")
        types = gf.metadata("tokenizer.ggml.token_type")
        special = {
            name: gf.metadata(f"tokenizer.ggml.{name}_token_id") for name in ("bos", "eos", "unknown", "padding")
        }
        add_space_prefix = bool(gf.metadata("tokenizer.ggml.add_space_prefix", True))
    proto = sentencepiece_model_pb2.ModelProto()
    for piece, score, kind in zip(pieces, scores, types, strict=True):
        # GGUF's token types are SentencePiece's piece types (1 normal ... 6 byte), copied by the converter
        proto.pieces.add(piece=piece, score=float(score), type=int(kind))
    trainer = proto.trainer_spec
    trainer.model_type = SENTENCEPIECE_BPE
    trainer.vocab_size = len(pieces)
    trainer.byte_fallback = True
    trainer.bos_id, trainer.eos_id = special["bos"], special["eos"]
    trainer.unk_id = special["unknown"] if special["unknown"] is not None else -1
    trainer.pad_id = special["padding"] if special["padding"] is not None else -1
    normalizer = proto.normalizer_spec
    normalizer.name = "identity"
    normalizer.add_dummy_prefix = add_space_prefix
    normalizer.remove_extra_whitespaces = False
    normalizer.escape_whitespaces = True
    return proto.SerializeToString()


def _tokenizer_config(path: Path) -> dict:
    with open_gguf(path) as gf:
        pieces = gf.metadata("tokenizer.ggml.tokens")
        names = {name: gf.metadata(f"tokenizer.ggml.{name}_token_id") for name in ("bos", "eos", "unknown", "padding")}
        add_bos = bool(gf.metadata("tokenizer.ggml.add_bos_token", True))
        add_eos = bool(gf.metadata("tokenizer.ggml.add_eos_token", False))
    config = {"tokenizer_class": "GemmaTokenizer", "add_bos_token": add_bos, "add_eos_token": add_eos}
    for name, key in (("bos", "bos_token"), ("eos", "eos_token"), ("unknown", "unk_token"), ("padding", "pad_token")):
        if names[name] is not None:
            config[key] = pieces[names[name]]
    return config


def write_folder(
    folder: str | os.PathLike,
    fmt: str = verify.REFERENCE,
    *,
    path: str | os.PathLike | None = None,
    dtype: str = "float32",
) -> list[str]:
    """Write the chat model in `fmt` as an MLX model folder inside `folder` (made if missing; every file
    through lab.files.write_inside, whole or not at all). Returns the names written."""
    import mlx.core as mx
    from mlx.utils import tree_flatten

    path = shipped_gguf.model_file() if path is None else Path(path)
    model, config = verify.mlx_lm_model(fmt, path=path, dtype=dtype)
    chat_tokenizer = verify.chat_tokenizer(path)
    config = {
        **config,
        "architectures": ["Gemma3ForCausalLM"],
        "torch_dtype": dtype,
        "bos_token_id": chat_tokenizer.bos,
        "eos_token_id": sorted(chat_tokenizer.eog_ids),
    }
    Path(folder).mkdir(exist_ok=True)
    texts = {
        "config.json": json.dumps(config, indent=2, sort_keys=True) + "\n",
        "tokenizer_config.json": json.dumps(_tokenizer_config(path), indent=2, sort_keys=True) + "\n",
    }
    with tempfile.TemporaryDirectory(prefix="four-bit-lab-mlx-folder-") as scratch:
        weights = Path(scratch) / "model.safetensors"
        mx.save_safetensors(str(weights), dict(tree_flatten(model.parameters())), metadata={"format": "mlx"})
        files.copy_inside(folder, "model.safetensors", weights)
    files.write_inside(folder, "tokenizer.model", tokenizer_model(path))
    for name, text in texts.items():
        files.write_inside(folder, name, text.encode("utf-8"))
    return ["model.safetensors", "tokenizer.model", *texts]
