"""Gemma 3's forward pass in float32 numpy, as llama.cpp's graph computes it (src/models/gemma3.cpp).

    x = embedding[ids] * sqrt(n_embd)
    per block:
        h = rms_norm(x, attn_norm)
        q, k, v = h Wq^T, h Wk^T, h Wv^T                 split into heads of head_dim
        q, k = rms_norm per head (attn_q_norm, attn_k_norm), then rope (NEOX: pairs i, i + head_dim/2)
        a = softmax(q k^T * attention_scale + mask) v     GQA: query head h reads key/value head h // group
        x = x + rms_norm(a Wo^T, post_attention_norm)
        h = rms_norm(x, ffn_norm)
        x = x + rms_norm((gelu_tanh(h Wgate^T) * h Wup^T) Wdown^T, post_ffw_norm)
    logits = rms_norm(x, output_norm) embedding^T     the output is tied to the embedding

The mask is causal; a sliding-window layer also hides a key whose position is `sliding_window` or more
behind the query (llama-hparams.h, is_masked_swa), and rotates with its own rope base. Positions are
processed in chunks of CHUNK at once, every matmul over a whole chunk; one generated token is a chunk of
one, reading the keys and values the cache kept.

The cache can hold its keys and values as mlx-lm's QuantizedKVCache does (KVCache.quantize): MLX
affine codes, a scale and a bias per `group_size` lanes of head_dim (lab.formats.affine, mx.quantize's
rule bit for bit), read back as float32. Keys are stored after their norm and rope, as mlx-lm's
gemma3_text stores them, so the rotated key is what is quantized.

Where llama.cpp's CPU kernels round, this module does not: ggml looks GELU up in a float16 table and
computes rope angles by repeated float32 multiplication; here both are the formulas themselves.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from lab.formats import affine
from lab.study.chat.gguf_model import Architecture

#: positions a prompt is processed in at once (llama.cpp's default micro-batch is 512 too); it bounds
#: the attention scores to heads x CHUNK x keys floats
CHUNK = 512
_GELU_A = np.float32(0.044715)
_SQRT_2_OVER_PI = np.float32(np.sqrt(2.0 / np.pi))

Block = Mapping[str, np.ndarray]
#: how a block Linear's product h·Wᵀ is computed: (h [positions, in], layer, Linear name) -> [positions, out];
#: None is numpy's h @ W.T with the block's own weight (lab.device passes MLX's quantized matmul)
Linear = Callable[[np.ndarray, int, str], np.ndarray] | None


def rms_norm(x: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    """x / sqrt(mean(x²) + eps) * weight over the last axis, the sum of squares in float64 as ggml keeps it."""
    mean = (np.square(x).sum(axis=-1, keepdims=True, dtype=np.float64) / x.shape[-1]).astype(np.float32)
    return x * (np.float32(1.0) / np.sqrt(mean + np.float32(eps))) * weight


def gelu_tanh(x: np.ndarray) -> np.ndarray:
    """GELU's tanh approximation, the one Gemma's `gelu_pytorch_tanh` and ggml_gelu compute."""
    return np.float32(0.5) * x * (np.float32(1.0) + np.tanh(_SQRT_2_OVER_PI * x * (np.float32(1.0) + _GELU_A * x * x)))


def rope_tables(positions: np.ndarray, head_dim: int, base: float) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin [positions, head_dim / 2] of the angles pos * base^(-2i / head_dim), computed in float64."""
    exponents = np.arange(0, head_dim, 2, dtype=np.float64) / head_dim
    angles = positions.astype(np.float64)[:, None] * base ** -exponents[None, :]
    return np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)


def rope_neox(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    """Rotate x [positions, heads, head_dim] NEOX-style: element i pairs with element i + head_dim / 2."""
    half = x.shape[-1] // 2
    first, second = x[..., :half], x[..., half:]
    cos, sin = cos[:, None, :], sin[:, None, :]
    return np.concatenate([first * cos - second * sin, first * sin + second * cos], axis=-1)


def kv_round_trip(x: np.ndarray, bits: int, group_size: int) -> np.ndarray:
    """Keys or values [..., head_dim] as a quantized KV cache gives them back: MLX affine codes, scales
    and biases along head_dim (mx.quantize's, bit for bit), dequantized to float32 (lab.formats.affine)."""
    return affine.quantize(x, bits, group_size).dequantize()


class KVCache:
    """Every layer's keys [kv heads, positions, head_dim] and values, for the positions run so far;
    after quantize(), as an MLX affine cache holds them."""

    def __init__(self, arch: Architecture):
        self.arch = arch
        self.length = 0
        self._capacity = 0
        self._keys: list[np.ndarray] = []
        self._values: list[np.ndarray] = []
        #: (bits, group size) once quantize() was called, else None
        self.kv_affine: tuple[int, int] | None = None

    def reserve(self, length: int) -> None:
        """Room for `length` positions; the arrays grow by doubling, so appending a token is amortised O(1)."""
        if length <= self._capacity:
            return
        capacity = max(length, 2 * self._capacity, 64)
        arch = self.arch
        for layer in range(arch.n_layer):
            keys = np.empty((arch.n_head_kv, capacity, arch.head_dim_k), np.float32)
            values = np.empty((arch.n_head_kv, capacity, arch.head_dim_v), np.float32)
            if self._capacity:
                keys[:, : self.length] = self._keys[layer][:, : self.length]
                values[:, : self.length] = self._values[layer][:, : self.length]
                self._keys[layer], self._values[layer] = keys, values
            else:
                self._keys.append(keys)
                self._values.append(values)
        self._capacity = capacity

    def quantize(self, bits: int, group_size: int = 64) -> None:
        """mlx-lm's KVCache.to_quantized: the keys and values stored so far are replaced by their MLX
        affine round trip (kv_round_trip), and every chunk stored later is, before attention reads it."""
        affine.check_bits_and_group(bits, group_size)
        self.kv_affine = (bits, group_size)
        for stored in (*self._keys, *self._values):
            stored[:, : self.length] = kv_round_trip(stored[:, : self.length], bits, group_size)

    def store(self, layer: int, start: int, keys: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Write a chunk's keys and values [kv heads, chunk, dim] at `start` (their round trip once
        quantized); return every key and value so far."""
        if self.kv_affine is not None:
            keys, values = (kv_round_trip(part, *self.kv_affine) for part in (keys, values))
        stop = start + keys.shape[1]
        self._keys[layer][:, start:stop] = keys
        self._values[layer][:, start:stop] = values
        return self._keys[layer][:, :stop], self._values[layer][:, :stop]


def _mask(start: int, count: int, first_key: int, n_keys: int, window: int | None) -> np.ndarray:
    """Additive mask [count, n_keys]: 0 where query start + i may read key first_key + j, -inf elsewhere."""
    queries = np.arange(start, start + count)[:, None]
    keys = np.arange(first_key, first_key + n_keys)[None, :]
    hidden = keys > queries
    if window is not None:
        hidden |= queries - keys >= window
    return np.where(hidden, np.float32(-np.inf), np.float32(0.0))


def _softmax(scores: np.ndarray) -> np.ndarray:
    scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return scores / scores.sum(axis=-1, keepdims=True, dtype=np.float64).astype(np.float32)


def attention(
    q: np.ndarray, keys: np.ndarray, values: np.ndarray, start: int, window: int | None, scale: float
) -> np.ndarray:
    """Softmax attention of q [chunk, heads, dim] over keys and values [kv heads, positions, dim] -> [chunk, heads * dim].

    A sliding-window layer reads only the keys inside the window of its earliest query: the rest are
    masked for every query of the chunk, so leaving them out changes nothing but the work.
    """
    count, n_head, _ = q.shape
    n_head_kv = keys.shape[0]
    group = n_head // n_head_kv
    first_key = 0 if window is None else max(0, start - window + 1)
    keys, values = keys[:, first_key:], values[:, first_key:]
    # query head h reads key/value head h // group, as ggml's broadcast of a GQA matmul does
    grouped = (q * np.float32(scale)).transpose(1, 0, 2).reshape(n_head_kv, group * count, -1)
    scores = (grouped @ keys.transpose(0, 2, 1)).reshape(n_head_kv, group, count, -1)
    scores += _mask(start, count, first_key, keys.shape[1], window)
    weights = _softmax(scores).reshape(n_head_kv, group * count, -1)
    out = (weights @ values).reshape(n_head, count, -1)
    return out.transpose(1, 0, 2).reshape(count, -1)


def block_forward(
    x: np.ndarray, block: Block, layer: int, arch: Architecture, cache: KVCache, start: int, linear: Linear = None
) -> np.ndarray:
    """One transformer block over x [chunk, n_embd] at positions start.., storing its keys and values in `cache`."""

    def product(h: np.ndarray, name: str) -> np.ndarray:
        return h @ block[name].T if linear is None else linear(h, layer, name)

    count = x.shape[0]
    swa = arch.is_swa[layer]
    h = rms_norm(x, block["attn_norm"], arch.rms_eps)
    q = product(h, "attn_q").reshape(count, arch.n_head, arch.head_dim_k)
    k = product(h, "attn_k").reshape(count, arch.n_head_kv, arch.head_dim_k)
    v = product(h, "attn_v").reshape(count, arch.n_head_kv, arch.head_dim_v)
    base = arch.rope_base_swa if swa else arch.rope_base
    cos, sin = rope_tables(np.arange(start, start + count), arch.head_dim_k, base)
    q = rope_neox(rms_norm(q, block["attn_q_norm"], arch.rms_eps), cos, sin)
    k = rope_neox(rms_norm(k, block["attn_k_norm"], arch.rms_eps), cos, sin)
    keys, values = cache.store(layer, start, k.transpose(1, 0, 2), v.transpose(1, 0, 2))
    a = attention(q, keys, values, start, arch.sliding_window if swa else None, arch.attention_scale)
    x = x + rms_norm(product(a, "attn_output"), block["post_attention_norm"], arch.rms_eps)
    h = rms_norm(x, block["ffn_norm"], arch.rms_eps)
    f = product(gelu_tanh(product(h, "ffn_gate")) * product(h, "ffn_up"), "ffn_down")
    return x + rms_norm(f, block["post_ffw_norm"], arch.rms_eps)


def hidden_states(
    ids: Sequence[int],
    embedding: np.ndarray,
    blocks: Sequence[Block],
    arch: Architecture,
    cache: KVCache,
    linear: Linear = None,
) -> np.ndarray:
    """The last block's output [len(ids), n_embd] for `ids` following the cache's positions, chunk by chunk."""
    ids = np.asarray(ids, dtype=np.int64)
    start = cache.length
    cache.reserve(start + ids.size)
    outputs = []
    for offset in range(0, ids.size, CHUNK):
        chunk = ids[offset : offset + CHUNK]
        x = embedding[chunk] * np.float32(arch.embedding_scale)
        for layer, block in enumerate(blocks):
            x = block_forward(x, block, layer, arch, cache, start + offset, linear)
        outputs.append(x)
    cache.length = start + ids.size
    return np.concatenate(outputs) if len(outputs) > 1 else outputs[0]


def output_logits(x: np.ndarray, embedding: np.ndarray, output_norm: np.ndarray, arch: Architecture) -> np.ndarray:
    """Logits [positions, vocab]: the final norm, then one BLAS matmul with the tied embedding."""
    return rms_norm(x, output_norm, arch.rms_eps) @ embedding.T
