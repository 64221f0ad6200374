"""What a Gemma 3 GGUF file asks for: its architecture, read from metadata, and its weights, decoded once.

The keys are read as llama.cpp reads them (src/models/gemma3.cpp, load_arch_hparams, and the common
part of llama-model.cpp's load_hparams). Every `gemma3.*` key must be one this module knows, and each
known key must hold a value the forward pass implements: a rope scaling, a logit softcap, a per-layer
head count or an unknown key is refused with UnsupportedModelError, never ignored, because ignoring
it would compute some other model's numbers.

Weights come out as float32 through the lab's own decoders (lab.interop.gguf). The norm weights are
used as stored: llama.cpp's converter (conversion/gemma.py, Gemma3Model.norm_shift) already adds the
1 of Gemma's `x * (1 + w)` when it writes the file, so the stored values sit near 1 and above.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from lab.errors import LabError
from lab.interop.gguf import GGUFFile, decode_raw
from lab.text import quoted

ARCHITECTURE = "gemma3"
#: the block Linears, in the order a block runs them: what `quantize` replaces
LINEARS = ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down")
NORMS = ("attn_norm", "attn_q_norm", "attn_k_norm", "post_attention_norm", "ffn_norm", "post_ffw_norm")
#: llama.cpp's default for Gemma 3 when the file names no pattern: five sliding-window layers, then one global
DEFAULT_SWA_PATTERN = 6
#: llama.cpp's default rope base for sliding-window layers (llama-hparams.h, rope_freq_base_train_swa)
DEFAULT_ROPE_BASE_SWA = 10000.0
#: the one Gemma 3 size whose attention scale llama.cpp takes from n_embd / n_head (the 27B, 62 layers),
#: following gemma_pytorch's query_pre_attn_scalar
LAYERS_OF_27B = 62
#: rows of the token embedding decoded per slice, so the decode's temporaries stay a few tens of MB
EMBEDDING_ROWS_PER_SLICE = 16384

#: keys whose values the forward pass reads or checks; anything else under gemma3.* is refused
_REQUIRED_KEYS = (
    "context_length",
    "embedding_length",
    "block_count",
    "feed_forward_length",
    "attention.head_count",
    "attention.head_count_kv",
    "attention.layer_norm_rms_epsilon",
)
_OPTIONAL_KEYS = (
    "attention.key_length",
    "attention.value_length",
    "rope.freq_base",
    "rope.freq_base_swa",
    "rope.dimension_count",
    "attention.sliding_window",
    "attention.sliding_window_pattern",
    "final_logit_softcapping",
    "attn_logit_softcapping",
    "rope.scaling.type",
    "rope.scaling.factor",
    "rope.scale_linear",
    "rope.scaling.attn_factor",
    # only YaRN reads these two, and a YaRN scaling type is refused
    "rope.scaling.original_context_length",
    "rope.scaling.finetuned",
)


class UnsupportedModelError(LabError):
    """A model file asks for something this Gemma 3 forward pass does not implement."""


@dataclass(frozen=True)
class Architecture:
    """Gemma 3's sizes and constants, as the file's metadata gives them.

    is_swa holds one flag per layer: True where the layer attends over a sliding window of
    `sliding_window` positions (and rotates with rope_base_swa), False where it attends globally.
    """

    context_length: int
    n_vocab: int
    n_embd: int
    n_layer: int
    n_ff: int
    n_head: int
    n_head_kv: int
    head_dim_k: int
    head_dim_v: int
    rms_eps: float
    rope_base: float
    rope_base_swa: float
    sliding_window: int
    is_swa: tuple[bool, ...]
    attention_scale: float

    @property
    def embedding_scale(self) -> float:
        """Gemma multiplies token embeddings by sqrt(n_embd); llama.cpp computes it as sqrtf in float32."""
        return float(np.sqrt(np.float32(self.n_embd)))


@dataclass(frozen=True)
class Weights:
    """The decoded float32 weights: the tied embedding, the final norm, and one dict per block
    keyed by LINEARS and NORMS (Linears as [out, in], as the file stores them)."""

    token_embd: np.ndarray
    output_norm: np.ndarray
    blocks: tuple[dict[str, np.ndarray], ...]


def _key(gf: GGUFFile, name: str, default=None):
    return gf.metadata(f"{ARCHITECTURE}.{name}", default)


def _count(gf: GGUFFile, name: str, default=None) -> int:
    value = _key(gf, name, default)
    if isinstance(value, np.ndarray):
        raise UnsupportedModelError(
            f"{ARCHITECTURE}.{name} holds one value per layer; this forward pass takes one value for every layer"
        )
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise UnsupportedModelError(f"{ARCHITECTURE}.{name} must be a positive whole number, got {value!r}")
    return value


def _number(gf: GGUFFile, name: str, default: float) -> float:
    value = _key(gf, name, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise UnsupportedModelError(f"{ARCHITECTURE}.{name} must be a finite number, got {value!r}")
    return float(value)


def _refuse_unknown_keys(gf: GGUFFile) -> None:
    known = {f"{ARCHITECTURE}.{name}" for name in _REQUIRED_KEYS + _OPTIONAL_KEYS}
    prefix = f"{ARCHITECTURE}."
    unknown = [key for key in gf.keys if key.startswith(prefix) and key not in known]
    if unknown:
        raise UnsupportedModelError(
            f"the file sets {', '.join(quoted(key) for key in unknown)}, which this Gemma 3 forward pass does not implement"
        )
    missing = [name for name in _REQUIRED_KEYS if _key(gf, name) is None]
    if missing:
        raise UnsupportedModelError(f"the file lacks {', '.join(prefix + name for name in missing)}")


def _refuse_changed_math(gf: GGUFFile, head_dim_k: int) -> None:
    """Keys llama.cpp would honour by computing something else: softcaps, rope scaling, a partial rope."""
    for name in ("final_logit_softcapping", "attn_logit_softcapping"):
        if _number(gf, name, 0.0) != 0.0:
            raise UnsupportedModelError(f"{ARCHITECTURE}.{name} asks for logit softcapping, which Gemma 3 does not use")
    scaling = _key(gf, "rope.scaling.type", "none")
    if scaling not in ("none", "linear"):
        raise UnsupportedModelError(f"{ARCHITECTURE}.rope.scaling.type is {quoted(str(scaling))}; only unscaled rope")
    for name in ("rope.scaling.factor", "rope.scale_linear"):
        if _number(gf, name, 0.0) not in (0.0, 1.0):
            raise UnsupportedModelError(f"{ARCHITECTURE}.{name} asks for scaled rope positions; only unscaled rope")
    if _number(gf, "rope.scaling.attn_factor", 1.0) != 1.0:
        raise UnsupportedModelError(f"{ARCHITECTURE}.rope.scaling.attn_factor rescales attention; only unscaled rope")
    if _count(gf, "rope.dimension_count", head_dim_k) != head_dim_k:
        raise UnsupportedModelError(
            f"{ARCHITECTURE}.rope.dimension_count asks for rope over part of each head; only over all {head_dim_k}"
        )


def _swa_layers(gf: GGUFFile, n_layer: int, sliding_window: int) -> tuple[bool, ...]:
    """llama.cpp's load_swa_pattern: a per-layer flag array, else layer i slides unless i % n is n - 1."""
    if sliding_window == 0:
        return (False,) * n_layer
    pattern = _key(gf, "attention.sliding_window_pattern", DEFAULT_SWA_PATTERN)
    if isinstance(pattern, np.ndarray):
        if pattern.dtype != bool or pattern.shape != (n_layer,):
            raise UnsupportedModelError(
                f"{ARCHITECTURE}.attention.sliding_window_pattern must hold one flag per layer ({n_layer})"
            )
        return tuple(bool(flag) for flag in pattern)
    if isinstance(pattern, bool) or not isinstance(pattern, int) or pattern < 0:
        raise UnsupportedModelError(f"{ARCHITECTURE}.attention.sliding_window_pattern must be a count, got {pattern!r}")
    return tuple(pattern == 0 or layer % pattern < pattern - 1 for layer in range(n_layer))


def read_architecture(gf: GGUFFile) -> Architecture:
    """The architecture the file's metadata describes, or UnsupportedModelError naming what it cannot run."""
    architecture = gf.metadata("general.architecture")
    if architecture != ARCHITECTURE:
        raise UnsupportedModelError(
            f"the file's general.architecture is {quoted(str(architecture))}; this forward pass runs {ARCHITECTURE}"
        )
    _refuse_unknown_keys(gf)
    n_embd = _count(gf, "embedding_length")
    n_layer = _count(gf, "block_count")
    n_head = _count(gf, "attention.head_count")
    n_head_kv = _count(gf, "attention.head_count_kv")
    if n_head % n_head_kv:
        raise UnsupportedModelError(f"{n_head} query heads cannot share {n_head_kv} key/value heads evenly")
    head_dim_k = _count(gf, "attention.key_length", n_embd // n_head)
    _refuse_changed_math(gf, head_dim_k)
    sliding_window = _key(gf, "attention.sliding_window", 0)
    if isinstance(sliding_window, bool) or not isinstance(sliding_window, int) or sliding_window < 0:
        raise UnsupportedModelError(f"{ARCHITECTURE}.attention.sliding_window must be a count, got {sliding_window!r}")
    rms_eps = _number(gf, "attention.layer_norm_rms_epsilon", 0.0)
    if rms_eps <= 0:
        raise UnsupportedModelError(f"{ARCHITECTURE}.attention.layer_norm_rms_epsilon must be positive, got {rms_eps}")
    query_scalar = n_embd // n_head if n_layer == LAYERS_OF_27B else head_dim_k
    if "token_embd.weight" not in _tensor_names(gf):
        raise UnsupportedModelError("the file lacks token_embd.weight")
    return Architecture(
        context_length=_count(gf, "context_length"),
        n_vocab=gf.tensor("token_embd.weight").shape[0],
        n_embd=n_embd,
        n_layer=n_layer,
        n_ff=_count(gf, "feed_forward_length"),
        n_head=n_head,
        n_head_kv=n_head_kv,
        head_dim_k=head_dim_k,
        head_dim_v=_count(gf, "attention.value_length", n_embd // n_head),
        rms_eps=rms_eps,
        rope_base=_number(gf, "rope.freq_base", 10000.0),
        rope_base_swa=_number(gf, "rope.freq_base_swa", DEFAULT_ROPE_BASE_SWA),
        sliding_window=sliding_window,
        is_swa=_swa_layers(gf, n_layer, sliding_window),
        attention_scale=float(np.float32(1.0) / np.sqrt(np.float32(query_scalar))),
    )


def _tensor_names(gf: GGUFFile) -> set[str]:
    return {info.name for info in gf.tensors}


def expected_shapes(arch: Architecture) -> dict[str, tuple[int, ...]]:
    """Every tensor the forward pass reads, with its shape outermost first: exactly what the file must hold."""
    q_rows = arch.n_head * arch.head_dim_k
    k_rows = arch.n_head_kv * arch.head_dim_k
    v_rows = arch.n_head_kv * arch.head_dim_v
    shapes = {"token_embd.weight": (arch.n_vocab, arch.n_embd), "output_norm.weight": (arch.n_embd,)}
    block = {
        "attn_q": (q_rows, arch.n_embd),
        "attn_k": (k_rows, arch.n_embd),
        "attn_v": (v_rows, arch.n_embd),
        "attn_output": (arch.n_embd, arch.n_head * arch.head_dim_v),
        "ffn_gate": (arch.n_ff, arch.n_embd),
        "ffn_up": (arch.n_ff, arch.n_embd),
        "ffn_down": (arch.n_embd, arch.n_ff),
        "attn_norm": (arch.n_embd,),
        "attn_q_norm": (arch.head_dim_k,),
        "attn_k_norm": (arch.head_dim_k,),
        "post_attention_norm": (arch.n_embd,),
        "ffn_norm": (arch.n_embd,),
        "post_ffw_norm": (arch.n_embd,),
    }
    for layer in range(arch.n_layer):
        shapes.update({f"blk.{layer}.{name}.weight": shape for name, shape in block.items()})
    return shapes


def check_tensors(gf: GGUFFile, arch: Architecture) -> None:
    """The file holds exactly the tensors Gemma 3 reads, in their shapes: a missing one, an extra one (an
    untied output, an EmbeddingGemma dense head) or a wrong shape is refused."""
    expected = expected_shapes(arch)
    names = _tensor_names(gf)
    missing = sorted(set(expected) - names)
    if missing:
        raise UnsupportedModelError(f"the file lacks {len(missing)} tensors Gemma 3 needs, first {quoted(missing[0])}")
    extra = sorted(names - set(expected))
    if extra:
        raise UnsupportedModelError(
            f"the file holds tensors this Gemma 3 forward pass does not use: {', '.join(quoted(n) for n in extra[:5])}"
        )
    for name, shape in expected.items():
        if gf.tensor(name).shape != shape:
            raise UnsupportedModelError(
                f"tensor {quoted(name)} has shape {gf.tensor(name).shape}; the metadata asks for {shape}"
            )


def _embedding(gf: GGUFFile) -> np.ndarray:
    """The token embedding decoded slice by slice into one float32 array, so the decode never holds a
    second copy of its 671 MB."""
    info = gf.tensor("token_embd.weight")
    raw = gf.raw(info.name)
    out = np.empty(info.shape, np.float32)
    for start in range(0, info.shape[0], EMBEDDING_ROWS_PER_SLICE):
        stop = start + EMBEDDING_ROWS_PER_SLICE
        out[start:stop] = decode_raw(raw[start:stop], info.type_name)
    return out


def read_weights(gf: GGUFFile, arch: Architecture) -> Weights:
    """Every tensor decoded once to float32 (check_tensors first)."""
    check_tensors(gf, arch)
    blocks = tuple(
        {name: np.ascontiguousarray(gf.decode(f"blk.{layer}.{name}.weight")) for name in LINEARS + NORMS}
        for layer in range(arch.n_layer)
    )
    return Weights(token_embd=_embedding(gf), output_norm=gf.decode("output_norm.weight"), blocks=blocks)
