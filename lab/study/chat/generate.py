"""The chat model: the tokenizer, the logits of a sequence, and greedy generation with a KV cache,
with the file's weights or with every block Linear re-quantized by a format of lab.formats."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lab.errors import InputError
from lab.formats import affine
from lab.study.chat import forward
from lab.study.chat.gguf_model import LINEARS, Architecture, Weights
from lab.study.chat.tokenizer import Tokenizer
from lab.study.requantize import RoundTrip, TensorRecord, requantize

Quantize = None | str | RoundTrip
#: re-quantized weights kept per format name: each set is another 400 MB of float32, so two at most,
#: the least recently used going first
QUANTIZED_FORMATS_KEPT = 2
STOP_END = "end of generation"
STOP_LENGTH = "max_tokens"


@dataclass(frozen=True)
class Generation:
    """What generate() produced: the ids it read and wrote, the text, and how it ran."""

    prompt_ids: tuple[int, ...]
    ids: tuple[int, ...]  # the generated tokens, an end-of-generation token included when one came
    text: str  # the generated tokens' text (control tokens show as nothing)
    stop: str  # STOP_END or STOP_LENGTH
    quantize: str | None  # the format's name, "round trip" for a callable, None for the file's weights
    fallbacks: tuple[TensorRecord, ...]
    prompt_seconds: float  # reading the prompt and choosing the first token
    seconds_per_token: float  # each later token, on average (0.0 when only one was generated)


def quantized_blocks(
    weights: Weights, quantize: str | RoundTrip
) -> tuple[tuple[dict[str, np.ndarray], ...], tuple[TensorRecord, ...]]:
    """The blocks with every Linear replaced by its round trip (lab.study.requantize); norms and the
    embedding stay as read.

    A named format that cannot hold a Linear's rows stores it as llama.cpp would: a GGUF K-quant in
    its fallback type (Q5_0 for Q4_K) where that type's blocks divide the row; any other keeps the
    file's weights, as MLX's converter leaves such a layer in float. Each fallback says which
    Linear, why, and what it got.
    """
    linears = {f"blk.{layer}.{name}": block[name] for layer, block in enumerate(weights.blocks) for name in LINEARS}
    requantized = requantize(linears, quantize)
    blocks = tuple(
        {**block, **{name: requantized.weights[f"blk.{layer}.{name}"] for name in LINEARS}}
        for layer, block in enumerate(weights.blocks)
    )
    return blocks, requantized.fallbacks


def _checked_ids(ids, n_vocab: int) -> np.ndarray:
    if isinstance(ids, str):
        raise InputError("token ids are a list of ints; tokenize() text first")
    values = list(ids)
    if not values:
        raise InputError("the model needs at least one token id")
    bad = [value for value in values if isinstance(value, bool) or not isinstance(value, int | np.integer)]
    if bad:
        raise InputError(f"token ids must be ints, got {bad[0]!r}")
    array = np.asarray(values, dtype=np.int64)
    outside = array[(array < 0) | (array >= n_vocab)]
    if outside.size:
        raise InputError(f"token ids must lie in 0..{n_vocab - 1}, got {int(outside[0])}")
    return array


class ChatModel:
    """Gemma 3 from a GGUF file: tokenize, detokenize, logits and greedy generation (see lab.study.chat)."""

    def __init__(self, path: Path, arch: Architecture, weights: Weights, tokenizer: Tokenizer):
        self.path = path
        self.arch = arch
        self.weights = weights
        self.tokenizer = tokenizer
        self._quantized: OrderedDict[str, tuple[tuple[dict[str, np.ndarray], ...], tuple[TensorRecord, ...]]] = (
            OrderedDict()
        )

    def tokenize(self, text: str, *, add_bos: bool = True, special: bool = True) -> list[int]:
        """Token ids of `text`, <bos> first; `special` reads control tokens such as <start_of_turn> as tokens."""
        return self.tokenizer.encode(text, add_special=add_bos, parse_special=special)

    def detokenize(self, ids: Sequence[int], *, special: bool = False) -> str:
        """The text of `ids`; control tokens show only with `special`."""
        return self.tokenizer.decode(ids, special=special)

    def blocks(self, quantize: Quantize = None) -> tuple[tuple[dict[str, np.ndarray], ...], tuple[TensorRecord, ...]]:
        """The blocks the forward pass runs, and the fallbacks: a named format's are made once and kept."""
        if quantize is None:
            return self.weights.blocks, ()
        if not isinstance(quantize, str):
            return quantized_blocks(self.weights, quantize)
        if quantize in self._quantized:
            self._quantized.move_to_end(quantize)
        else:
            # room first, then the new set: making it beside a full cache would hold one set too many
            while len(self._quantized) >= QUANTIZED_FORMATS_KEPT:
                self._quantized.popitem(last=False)
            self._quantized[quantize] = quantized_blocks(self.weights, quantize)
        return self._quantized[quantize]

    def _check_length(self, length: int) -> None:
        if length > self.arch.context_length:
            raise InputError(f"{length} positions do not fit the model's context of {self.arch.context_length}")

    def logits(
        self, ids: Sequence[int], *, quantize: Quantize = None, last: int | None = None, linear: forward.Linear = None
    ) -> np.ndarray:
        """float32 [len(ids), vocab]: the logits after each position, every position processed at once;
        with `last`, only those of the last `last` positions (the output matmul is the costly part).
        `linear` computes each block Linear's product in place of numpy (forward.Linear)."""
        array = _checked_ids(ids, self.arch.n_vocab)
        self._check_length(array.size)
        if last is not None and (isinstance(last, bool) or not isinstance(last, int) or not 1 <= last <= array.size):
            raise InputError(f"last must be a whole number from 1 to {array.size}, got {last!r}")
        blocks, _ = self.blocks(quantize)
        x = forward.hidden_states(array, self.weights.token_embd, blocks, self.arch, forward.KVCache(self.arch), linear)
        kept = x if last is None else x[-last:]
        return forward.output_logits(kept, self.weights.token_embd, self.weights.output_norm, self.arch)

    def _prompt_run(
        self,
        prompt_ids: np.ndarray,
        blocks,
        cache: forward.KVCache,
        linear: forward.Linear,
        kv_bits: int | None,
        kv_group_size: int,
    ) -> np.ndarray:
        """The last prompt position's hidden state [1, n_embd], the prompt's keys and values left in `cache`.

        Without kv_bits the prompt runs in one pass. With it, as mlx-lm's generate_step runs with
        quantized_kv_start=0: its first call reads the prompt but its last token against float keys
        and values, the cache is then quantized, and the last token reads the quantized cache, its
        own key and value quantized first (a one-token prompt is that first call, read in float).
        """
        embedding, arch = self.weights.token_embd, self.arch
        if kv_bits is None:
            return forward.hidden_states(prompt_ids, embedding, blocks, arch, cache, linear)[-1:]
        calls = [prompt_ids[:-1], prompt_ids[-1:]] if prompt_ids.size > 1 else [prompt_ids]
        x = forward.hidden_states(calls[0], embedding, blocks, arch, cache, linear)[-1:]
        cache.quantize(kv_bits, kv_group_size)
        for ids in calls[1:]:
            x = forward.hidden_states(ids, embedding, blocks, arch, cache, linear)
        return x

    def _start(self, prompt, tokens: int, quantize: Quantize, kv_bits: int | None, kv_group_size: int, name: str):
        """(prompt ids, blocks, fallbacks, an empty cache with room) for `tokens` steps (the caller's
        argument `name`), every input checked before a weight is re-quantized."""
        if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 1:
            raise InputError(f"{name} must be a whole number >= 1, got {tokens!r}")
        if kv_bits is not None:
            affine.check_bits_and_group(kv_bits, kv_group_size)
        prompt_ids = _checked_ids(self.tokenize(prompt) if isinstance(prompt, str) else prompt, self.arch.n_vocab)
        self._check_length(prompt_ids.size + tokens)
        blocks, fallbacks = self.blocks(quantize)
        cache = forward.KVCache(self.arch)
        cache.reserve(prompt_ids.size + tokens)
        return prompt_ids, blocks, fallbacks, cache

    def _next_logits(self, x: np.ndarray) -> np.ndarray:
        return forward.output_logits(x, self.weights.token_embd, self.weights.output_norm, self.arch)[0]

    def generate(
        self,
        prompt: str | Sequence[int],
        max_tokens: int = 32,
        *,
        quantize: Quantize = None,
        linear: forward.Linear = None,
        kv_bits: int | None = None,
        kv_group_size: int = 64,
    ) -> Generation:
        """Greedy continuation of `prompt` (text, tokenized with <bos> and special tokens, or ids): up to
        `max_tokens` tokens, stopping after an end-of-generation token. The prompt runs in one pass; each
        new token then runs alone against the KV cache. `linear` computes each block Linear's product
        in place of numpy (forward.Linear). `kv_bits` keeps the cache as mlx-lm's quantized KV cache
        does, MLX affine in groups of `kv_group_size` (see _prompt_run for when it is quantized)."""
        prompt_ids, blocks, fallbacks, cache = self._start(
            prompt, max_tokens, quantize, kv_bits, kv_group_size, "max_tokens"
        )
        embedding, arch = self.weights.token_embd, self.arch
        eog = self.tokenizer.eog_ids
        started = time.perf_counter()
        x = self._prompt_run(prompt_ids, blocks, cache, linear, kv_bits, kv_group_size)
        ids = [int(np.argmax(self._next_logits(x)))]
        prompt_seconds = time.perf_counter() - started
        started = time.perf_counter()
        while ids[-1] not in eog and len(ids) < max_tokens:
            x = forward.hidden_states(ids[-1:], embedding, blocks, arch, cache, linear)
            ids.append(int(np.argmax(self._next_logits(x))))
        elapsed = time.perf_counter() - started
        later = len(ids) - 1
        return Generation(
            prompt_ids=tuple(int(index) for index in prompt_ids),
            ids=tuple(ids),
            text=self.detokenize(ids),
            stop=STOP_END if ids[-1] in eog else STOP_LENGTH,
            quantize=quantize if quantize is None or isinstance(quantize, str) else "round trip",
            fallbacks=fallbacks,
            prompt_seconds=prompt_seconds,
            seconds_per_token=elapsed / later if later else 0.0,
        )

    def decode(
        self,
        prompt: str | Sequence[int],
        tokens: int,
        *,
        forced: Sequence[int] | None = None,
        quantize: Quantize = None,
        kv_bits: int | None = None,
        kv_group_size: int = 64,
    ) -> tuple[list[int], np.ndarray]:
        """(ids, logits float32 [tokens, vocab]): `tokens` decoding steps as generate() takes them, no
        stop at an end-of-generation token, and the logits each step saw. Each step appends its
        argmax, or with `forced` the forced token (teacher forcing: the logits are then this model's
        next-token distributions along another model's path)."""
        if forced is not None and len(forced) != tokens:
            raise InputError(f"forced holds {len(forced)} token ids for {tokens} steps")
        forced_ids = None if forced is None else _checked_ids(forced, self.arch.n_vocab)
        prompt_ids, blocks, _, cache = self._start(prompt, tokens, quantize, kv_bits, kv_group_size, "tokens")
        x = self._prompt_run(prompt_ids, blocks, cache, None, kv_bits, kv_group_size)
        embedding, arch = self.weights.token_embd, self.arch
        rows = np.empty((tokens, arch.n_vocab), np.float32)
        ids: list[int] = []
        for step in range(tokens):
            if step:
                x = forward.hidden_states(ids[-1:], embedding, blocks, arch, cache, None)
            rows[step] = self._next_logits(x)
            ids.append(int(np.argmax(rows[step]) if forced_ids is None else forced_ids[step]))
        return ids, rows
