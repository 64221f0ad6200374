"""A small chat model run by the lab itself: Gemma 3 270M from the shipped Q4_K_M GGUF file, in float32 numpy.

    model = load()                                       # the shipped file (lab.study.shipped_gguf)
    load_tokenizer().encode(text)                        # the tokenizer alone, in under a second
    ids = model.tokenize("The capital of France is")     # [2, ...]: <bos>, then the file's SentencePiece
    model.detokenize(ids)                                # back to text
    model.logits(ids)                                    # float32 [len(ids), 262144]
    model.generate("The capital of France is", 20)       # greedy, with a KV cache -> Generation
    model.generate(prompt, 20, quantize="q4_0")          # every block Linear re-quantized by a lab format
    model.generate(prompt, 20, quantize=lambda w: ŵ)     # ... or by any round trip

tokenize() reads control tokens such as <start_of_turn> as tokens, as llama-cpp-python's completions
do (special=False reads them as text), and generate() tokenizes a text prompt so.

What the file asks for is read from it: the architecture from its gemma3.* metadata, the tokenizer
from its own vocabulary, scores and token types. Whatever this forward pass does not implement (another
architecture, rope scaling, a logit softcap, an untied output, a missing tensor, an unknown key) is
refused with UnsupportedModelError, never approximated. Every weight is decoded once to float32 by the
lab's own decoders (1.1 GB) and the file is closed. On two cores that takes 4 to 10 s and a peak of
1.5 GB; a generated token then takes about 0.11 s, most of it the tied output matmul (262144 x 640).

`quantize` replaces the 126 block Linears (attn_q, attn_k, attn_v, attn_output, ffn_gate, ffn_up,
ffn_down of 18 blocks) by the round trip of the file's decoded weights; the token embedding, which is
also the output layer, and the norms stay as read. Where a format's blocks do not divide a row, a
GGUF K-quant stores that Linear in llama.cpp's fallback type (Q5_0 for Q4_K, as the shipped file
does) and any other format keeps the file's weights; Generation.fallbacks names each one.

llama.cpp is the oracle (tests/data/make_chat_reference.py): the token ids of a battery of texts, and
on a float32 copy of the file the logits and greedy continuations of pinned prompts.

    gguf_model   the architecture from metadata, the tensor check, the float32 weights
    tokenizer    llama.cpp's SentencePiece tokenizer, with its special-token handling
    forward      RMSNorm, NEOX rope, sliding-window and global attention, GeGLU; the KV cache
    generate     ChatModel, Generation, the Linears re-quantized by lab.study.requantize

May import: lab.formats, lab.interop, lab.study.requantize, lab.study.shipped_gguf and lab's root
modules.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

from lab.interop.gguf import open_gguf
from lab.study import shipped_gguf
from lab.study.chat.generate import STOP_END, STOP_LENGTH, ChatModel, Generation, Quantize
from lab.study.chat.gguf_model import Architecture, UnsupportedModelError, read_architecture, read_weights
from lab.study.chat.tokenizer import Tokenizer


def load(path: str | os.PathLike | None = None) -> ChatModel:
    """The model in the GGUF file at `path` (by default the shipped Gemma 3 270M), weights decoded to float32."""
    path = shipped_gguf.model_file() if path is None else Path(path)
    with open_gguf(path) as gf:
        arch = read_architecture(gf)
        tokenizer = Tokenizer.from_gguf(gf)
        if len(tokenizer.pieces) != arch.n_vocab:
            raise UnsupportedModelError(
                f"the vocabulary has {len(tokenizer.pieces)} tokens but token_embd has {arch.n_vocab} rows"
            )
        weights = read_weights(gf, arch)
    return ChatModel(path, arch, weights, tokenizer)


def load_tokenizer(path: str | os.PathLike | None = None) -> Tokenizer:
    """The tokenizer of the GGUF file at `path` (by default the shipped one) without its weights:
    reading the vocabulary takes a fraction of a second where load() decodes 1.1 GB. Kept once
    read, so checking each prompt a learner types costs only its tokenizing."""
    return _tokenizer_of(shipped_gguf.model_file() if path is None else Path(path))


@functools.lru_cache(maxsize=1)
def _tokenizer_of(path: Path) -> Tokenizer:
    with open_gguf(path) as gf:
        return Tokenizer.from_gguf(gf)


__all__ = [
    "STOP_END",
    "STOP_LENGTH",
    "Architecture",
    "ChatModel",
    "Generation",
    "Quantize",
    "Tokenizer",
    "UnsupportedModelError",
    "load",
    "load_tokenizer",
]
