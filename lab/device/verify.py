"""The MLX guide's verification recipe (§10), run by mlx-lm itself on the lab's chat model.

    greedy_ids("reference", prompt_ids, 20)   # mlx-lm's own gemma3_text on the shipped file's weights
    greedy_ids("mxfp4", prompt_ids, 20)       # ... quantized as `mlx_lm.convert -q --q-mode mxfp4` does
    model, config = mlx_lm_model("affine4_g64")

The bridge, written once. The chat model's weights are the ones lab.study.chat decodes from the GGUF
file (float32). mlx-lm's `gemma3_text.Model` runs them after two changes that decide whether it agrees
with llama.cpp token for token:

- Norms. llama.cpp's converter stores each Gemma RMSNorm weight as 1 + w, and llama.cpp multiplies by
  it as stored; mlx-lm's RMSNorm multiplies by 1 + weight itself. So 1 is taken off every norm here.
- Output. Gemma ties its output layer to the token embedding. The file has no output tensor, so there
  is no `lm_head.weight`, and `Model.sanitize` drops the lm_head and ties the output to the embedding.

The quantized models are made as mlx-lm makes them: `mlx_lm.utils.quantize_model` with its default
predicate, which quantizes every Linear whose rows the group divides and the token embedding too,
unlike the lab's own chat study, which leaves the embedding (the output layer) in float32.

Decoding is the guide's check 1: `mlx_lm.generate.generate_step` with an argmax sampler and mlx-lm's
own prompt cache, `tokens` steps, with no stop at an end-of-turn token (ids are compared, not text).
Nothing from a model folder runs: the weights come from a GGUF file the lab reads itself, and mlx-lm
is never asked to trust remote code.

The guide's §11, a quantized KV cache, runs on plain caches standing in for Gemma's rotating ones
(kv_quantized_greedy_ids, kv_decode), and kv_study gives lab.study.kv_study's table from mlx-lm.

May import: lab.formats, lab.study.chat, lab.study.kv_study and lab's root modules; mlx and mlx_lm
inside functions only, so that the lab imports where they are not installed.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from lab.errors import InputError, LabError
from lab.formats import affine
from lab.formats.registry import FORMATS, MLXMode
from lab.study import chat, shipped_gguf
from lab.study import kv_study as kv_study_module
from lab.study.chat.gguf_model import Architecture, Weights

#: the unquantized model's name in greedy_ids and mlx_lm_model
REFERENCE = "reference"

#: GGUF block tensor name -> mlx-lm's name inside model.layers.i
BLOCK_NAMES = {
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
#: the block tensors llama.cpp's converter stores as 1 + w
NORMS = ("attn_q_norm", "attn_k_norm", "attn_norm", "post_attention_norm", "ffn_norm", "post_ffw_norm")
#: the model's float dtypes the bridge can give mlx-lm
DTYPES = ("float32", "float16")
#: formats built at once in one process (a float32 copy of the model is 1.1 GB)
MODELS_KEPT = 2


class VerifyError(LabError):
    """A request the verification recipe cannot run: an unknown format, or prompt ids the model cannot read."""


def mlx_modes() -> dict[str, MLXMode]:
    """Every registry format with an MLX mode of its own, by name: what greedy_ids can quantize to."""
    return {name: fmt.mlx for name, fmt in FORMATS.items() if fmt.mlx is not None}


def sliding_window_pattern(arch: Architecture) -> int:
    """mlx-lm's `sliding_window_pattern`: every p-th layer attends globally and the rest over the
    window. The file's per-layer flags must follow that rule, or mlx-lm would run another model."""
    globals_at = [layer for layer, swa in enumerate(arch.is_swa) if not swa]
    pattern = globals_at[0] + 1 if globals_at else arch.n_layer + 1
    if tuple((layer + 1) % pattern != 0 for layer in range(arch.n_layer)) != arch.is_swa:
        raise chat.UnsupportedModelError(
            "the file's sliding-window layers do not repeat as one global layer in every "
            f"{pattern}, the only arrangement mlx-lm's gemma3_text runs"
        )
    return pattern


def model_config(arch: Architecture) -> dict:
    """The model's config.json as mlx-lm reads it (gemma3_text's ModelArgs), from the file's metadata."""
    return {
        "model_type": "gemma3_text",
        "hidden_size": arch.n_embd,
        "num_hidden_layers": arch.n_layer,
        "intermediate_size": arch.n_ff,
        "num_attention_heads": arch.n_head,
        "num_key_value_heads": arch.n_head_kv,
        "head_dim": arch.head_dim_k,
        "rms_norm_eps": arch.rms_eps,
        "vocab_size": arch.n_vocab,
        "rope_theta": arch.rope_base,
        "rope_local_base_freq": arch.rope_base_swa,
        # the lab keeps the scale 1/sqrt(query_pre_attn_scalar); mlx-lm keeps the scalar
        "query_pre_attn_scalar": round(1.0 / arch.attention_scale**2),
        "sliding_window": arch.sliding_window,
        "sliding_window_pattern": sliding_window_pattern(arch),
        "max_position_embeddings": arch.context_length,
    }


def mlx_lm_weights(weights: Weights) -> dict[str, np.ndarray]:
    """The decoded float32 weights under mlx-lm's names, with 1 taken off every norm (see above)."""
    named = {"model.embed_tokens.weight": weights.token_embd, "model.norm.weight": weights.output_norm - 1.0}
    for layer, block in enumerate(weights.blocks):
        for gguf_name, array in block.items():
            named[f"model.layers.{layer}.{BLOCK_NAMES[gguf_name]}.weight"] = (
                array - 1.0 if gguf_name in NORMS else array
            )
    return named


@lru_cache(maxsize=1)
def _float_model(path: Path) -> tuple[dict, dict[str, np.ndarray], chat.Tokenizer]:
    """The file's config, mlx-lm-named float32 weights and tokenizer, decoded once per process."""
    model = chat.load(path)
    return model_config(model.arch), mlx_lm_weights(model.weights), model.tokenizer


def chat_tokenizer(path: str | os.PathLike | None = None) -> chat.Tokenizer:
    """The file's own tokenizer (lab.study.chat's, llama.cpp's rules), as the bridge read it."""
    path = shipped_gguf.model_file() if path is None else Path(path)
    return _float_model(path.resolve())[2]


def _format_name(fmt: str) -> str:
    if fmt != REFERENCE and fmt not in mlx_modes():
        known = ", ".join([REFERENCE, *mlx_modes()])
        raise VerifyError(f"{fmt!r} is not a format mlx-lm quantizes to; choose one of {known}")
    return fmt


def _all_but_the_embedding(path: str, _module) -> bool:
    return path != "model.embed_tokens"


#: rows of the embedding quantized at once: MLX's CPU mx.quantize in mxfp4 and nvfp4 holds about 80
#: bytes per weight while it works, 13 GB for Gemma's whole 262144 x 640 embedding at once
EMBEDDING_ROWS_AT_ONCE = 8192


def quantized_embedding(embedding, mode: MLXMode, rows_at_once: int = EMBEDDING_ROWS_AT_ONCE):
    """nn.QuantizedEmbedding.from_embedding(embedding, ...), quantized a slice of rows at a time. Its
    groups run along each row, so the bytes are the same as one mx.quantize of the whole table."""
    import mlx.core as mx
    import mlx.nn as nn

    table = embedding.weight
    # the layer's own random start is replaced below before anything evaluates it
    layer = nn.QuantizedEmbedding(*table.shape, mode.group_size, mode.bits, mode=mode.mode)
    slices = []
    for start in range(0, table.shape[0], rows_at_once):
        part = mx.quantize(table[start : start + rows_at_once], mode.group_size, mode.bits, mode=mode.mode)
        mx.eval(part)
        slices.append(part)
    layer.weight, layer.scales = (mx.concatenate([part[index] for part in slices]) for index in (0, 1))
    layer.biases = mx.concatenate([part[2] for part in slices]) if len(slices[0]) > 2 else None
    return layer


@lru_cache(maxsize=MODELS_KEPT)
def _built(path: Path, fmt: str, dtype: str):
    import mlx.core as mx
    from mlx_lm.models import gemma3_text
    from mlx_lm.utils import quantize_model

    config, weights, _tokenizer = _float_model(path)
    model = gemma3_text.Model(gemma3_text.ModelArgs.from_dict(config))
    as_mlx = {name: mx.array(array).astype(getattr(mx, dtype)) for name, array in weights.items()}
    model.load_weights(list(model.sanitize(as_mlx).items()), strict=True)
    if fmt != REFERENCE:
        mode = mlx_modes()[fmt]
        embedding = model.model.embed_tokens
        # quantize_model's default predicate, with the embedding left to the row-by-row copy below
        model, config = quantize_model(
            model, config, mode.group_size, mode.bits, mode=mode.mode, quant_predicate=_all_but_the_embedding
        )
        model.model.embed_tokens = quantized_embedding(embedding, mode)
    model.eval()
    mx.eval(model.parameters())
    mx.clear_cache()  # the float copies quantize_model replaced would otherwise stay in MLX's pool
    return model, config


def mlx_lm_model(fmt: str = REFERENCE, *, path: str | os.PathLike | None = None, dtype: str = "float32"):
    """(model, config): the chat model in mlx-lm's gemma3_text, unquantized (`"reference"`) or
    quantized to the registry format `fmt` as mlx_lm.utils.quantize_model does."""
    if dtype not in DTYPES:
        raise VerifyError(f"dtype {dtype!r} is not one the bridge gives mlx-lm; choose one of {', '.join(DTYPES)}")
    path = shipped_gguf.model_file() if path is None else Path(path)
    return _built(path.resolve(), _format_name(fmt), dtype)


def _checked_ids(prompt_ids: Sequence[int], vocabulary: int) -> list[int]:
    ids = list(prompt_ids)
    if not ids:
        raise VerifyError("the prompt has no token ids; give at least one (2, <bos>, starts every Gemma prompt)")
    for index, token in enumerate(ids):
        if isinstance(token, bool) or not isinstance(token, int | np.integer) or not 0 <= token < vocabulary:
            raise VerifyError(f"prompt id {index} is {token!r}, not a token id from 0 to {vocabulary - 1}")
    return [int(token) for token in ids]


def greedy_ids(fmt: str, prompt_ids: Sequence[int], tokens: int) -> list[int]:
    """The guide's check 1: `tokens` greedy token ids after `prompt_ids`, from mlx-lm's own model code
    and prompt cache, on the shipped Gemma unquantized (`"reference"`) or quantized to `fmt`."""
    path, ids, tokens = _checked_run(fmt, prompt_ids, tokens)
    return greedy_run(mlx_lm_model(fmt, path=path)[0], ids, tokens)


def _checked_run(fmt: str, prompt_ids: Sequence[int], tokens) -> tuple[Path, list[int], int]:
    """(the shipped file, the prompt's ids, the count of new tokens) of a run the model can take."""
    _format_name(fmt)
    tokens = _checked_tokens(tokens)
    # the guide's first line: TF32 off before the first matmul (it matters on CUDA, not on the CPU)
    os.environ.setdefault("MLX_ENABLE_TF32", "0")
    path = shipped_gguf.model_file()
    config = _float_model(path.resolve())[0]
    ids = _checked_ids(prompt_ids, config["vocab_size"])
    if len(ids) + tokens > config["max_position_embeddings"]:
        raise VerifyError(
            f"{len(ids)} prompt ids and {tokens} new tokens pass the model's context of "
            f"{config['max_position_embeddings']} positions"
        )
    return path, ids, tokens


def greedy_run(model, ids: list[int], tokens: int) -> list[int]:
    """The guide's greedy_ids on any mlx-lm model: generate_step with an argmax sampler and mlx-lm's
    own prompt cache, `tokens` steps, no stop at an end-of-turn token."""
    import mlx.core as mx
    from mlx_lm.generate import generate_step

    if tokens == 0:
        return []
    steps = generate_step(mx.array(ids), model, max_tokens=tokens, sampler=lambda logits: mx.argmax(logits, axis=-1))
    return [int(token) for token, _logprobs in steps]


def _checked_tokens(tokens) -> int:
    if isinstance(tokens, bool) or not isinstance(tokens, int | np.integer) or tokens < 0:
        raise InputError(f"tokens must be a count of tokens to generate, got {tokens!r}")
    return int(tokens)


def _check_window(positions: int, window: int) -> None:
    if positions > window:
        raise VerifyError(
            f"{positions} positions (the prompt's and the new tokens') pass the model's sliding window of "
            f"{window}: the quantized KV cache runs on plain caches standing in for mlx-lm's rotating ones, "
            "which hold the same keys only while every position fits the window"
        )


def plain_prompt_cache(model, positions: int) -> list:
    """One plain `mlx_lm.models.cache.KVCache` per layer, standing in for mlx-lm's own prompt cache
    (make_prompt_cache: a RotatingKVCache of `sliding_window` keys in each sliding-window layer) for
    a run of `positions` positions, the prompt's and every generated token's.

    While every position fits the window the two hold the same keys and values: a RotatingKVCache
    drops nothing before it is full. The window itself is the masks' work, and mlx-lm asks the plain
    cache for the same sliding-window mask (KVCache.make_mask passes the window to create_causal_mask).
    Past the window the rotating cache drops its oldest keys and the plain one keeps them, leaving the
    window to the mask alone: a different computation, not proven equal here, so it is refused.
    """
    from mlx_lm.models.cache import KVCache

    _check_window(positions, model.args.sliding_window)
    return [KVCache() for _ in model.layers]


def decode_steps(
    model,
    ids: list[int],
    tokens: int,
    *,
    prompt_cache: list | None = None,
    kv_bits: int | None = None,
    kv_group_size: int = 64,
    forced: Sequence[int] | None = None,
) -> tuple[list[int], np.ndarray]:
    """(ids, float32 log-probabilities [tokens, vocab]): `tokens` steps of mlx-lm's own generate_step on
    any mlx-lm model, no stop at an end-of-turn token, and the distribution each step sampled from.

    Each step takes its argmax, or with `forced` the forced token: the sampler hands generate_step the
    given id, so the log-probabilities are this model's along another run's path (teacher forcing, one
    token a step exactly as greedy decoding feeds them). `prompt_cache` is mlx-lm's own when None.
    With `kv_bits`, generate_step quantizes the cache itself (quantized_kv_start=0, its
    maybe_quantize_kv_cache and KVCache.to_quantized) after its first model call, which reads the
    prompt but its last token in float (a one-id prompt: the whole prompt); every later key and value
    is quantized as QuantizedKVCache stores it, before attention reads it. Gemma 3's own prompt cache cannot be quantized: pass plain_prompt_cache's.
    """
    import mlx.core as mx
    from mlx_lm.generate import generate_step

    if tokens == 0:
        return [], np.empty((0, model.args.vocab_size), np.float32)
    chosen = iter(() if forced is None else forced)

    def sampler(logprobs):
        token = next(chosen, None)
        # generate_step samples one step past the last it yields; that step takes the argmax
        return mx.argmax(logprobs, axis=-1) if token is None else mx.array([int(token)])

    steps = generate_step(
        mx.array(ids),
        model,
        max_tokens=tokens,
        sampler=sampler,
        prompt_cache=prompt_cache,
        kv_bits=kv_bits,
        kv_group_size=kv_group_size,
        quantized_kv_start=0,
    )
    ids_out, rows = [], []
    for token, logprobs in steps:
        ids_out.append(int(token))
        rows.append(np.array(logprobs.astype(mx.float32)))
    return ids_out, np.stack(rows)


def kv_decode(
    fmt: str,
    prompt_ids: Sequence[int],
    tokens: int,
    kv_bits: int | None,
    *,
    forced: Sequence[int] | None = None,
    kv_group_size: int = 64,
) -> tuple[list[int], np.ndarray]:
    """decode_steps on the shipped Gemma in `fmt` (see mlx_lm_model): with `kv_bits`, mlx-lm's
    quantized KV cache on plain_prompt_cache's stand-ins, else mlx-lm's own prompt cache."""
    path, ids, tokens = _checked_run(fmt, prompt_ids, tokens)
    if kv_bits is not None:
        affine.check_bits_and_group(kv_bits, kv_group_size)
        _check_window(len(ids) + tokens, _float_model(path.resolve())[0]["sliding_window"])
    if forced is not None:
        if len(forced) != tokens:
            raise InputError(f"forced holds {len(forced)} token ids for {tokens} steps")
        _checked_ids(forced, _float_model(path.resolve())[0]["vocab_size"])
    model = mlx_lm_model(fmt, path=path)[0]
    cache = None if kv_bits is None else plain_prompt_cache(model, len(ids) + tokens)
    return decode_steps(
        model, ids, tokens, prompt_cache=cache, kv_bits=kv_bits, kv_group_size=kv_group_size, forced=forced
    )


def kv_quantized_greedy_ids(fmt: str, prompt_ids: Sequence[int], tokens: int, kv_bits: int, kv_group_size: int = 64):
    """The guide's §11: greedy ids with mlx-lm's quantized KV cache (generate_step's kv_bits, from the
    first position: quantized_kv_start=0), on the shipped Gemma in `fmt`.

    mlx-lm 0.32.2 cannot quantize Gemma 3's own prompt cache: five of every six layers keep their
    sliding window in a RotatingKVCache, whose to_quantized raises NotImplementedError ("RotatingKVCache
    Quantization NYI"). So the run is given a plain KVCache per layer instead (plain_prompt_cache), and
    mlx-lm's own generate_step converts each into its QuantizedKVCache (KVCache.to_quantized: mx.quantize,
    affine, `kv_bits` bits in groups of `kv_group_size` along head_dim, keys after rope). The stand-in
    holds what the rotating cache holds only while the prompt and the new tokens fit the sliding window
    (512 positions for this model); a longer run is refused with VerifyError. With kv_bits=None the
    same stand-ins give mlx-lm's own run exactly: the same ids and the same log-probabilities, bit for bit
    (tests/oracles/test_kv_cache.py).
    """
    if kv_bits is None:
        raise InputError("kv_bits must be a width of MLX affine's; greedy_ids runs the float cache")
    return kv_decode(fmt, prompt_ids, tokens, kv_bits, kv_group_size=kv_group_size)[0]


def kv_study(
    *,
    weights: Iterable[str] = kv_study_module.WEIGHTS,
    kv_bits: Iterable[int | None] = kv_study_module.KV_BITS,
    prompts: Sequence[str] = kv_study_module.PROMPTS,
    tokens: int = kv_study_module.TOKENS,
    cache: bool = False,
    progress: Callable[[int, int, str], None] | None = None,
) -> kv_study_module.KVStudy:
    """lab.study.kv_study's table from mlx-lm: each pair through kv_decode (mlx-lm's models, its
    QuantizedKVCache and generate_step), beside the lab's numpy table (kv_study.side_by_side)."""
    import mlx.core as mx
    import mlx_lm

    def decode(fmt: str, ids: list[int], steps: int, bits: int | None, forced):
        return kv_decode(fmt, ids, steps, bits, forced=forced, kv_group_size=kv_study_module.KV_GROUP_SIZE)

    return kv_study_module.measure(
        decode,
        kv_study_module.MLX_LM,
        weights=weights,
        kv_bits=kv_bits,
        prompts=prompts,
        tokens=tokens,
        versions=(mx.__version__, mlx_lm.__version__),
        cache=cache,
        progress=progress,
    )


# --- the guide's checks 1 to 4 (§10), each on the bridge's models -----------------------------------

#: check 1: "divergence at token 0 through 5 is a red flag"; later, a flipped near-tie
RED_FLAG_BEFORE = 6
#: check 2's calibration (§9.1's measurement): max |logit difference| of quantization noise, and of corruption
NOISE_BAND = (0.3, 1.3)
CORRUPTION_BAND = (3.3, 17.8)


def divergence_reading(index: int | None, tokens: int) -> str:
    """The guide's reading of check 1's result."""
    if index is None:
        return f"exact match on all {tokens} tokens: the strongest signal there is"
    if index < RED_FLAG_BEFORE:
        return (
            f"diverged at token {index}: a red flag. The first tokens after a prompt are usually decided "
            "by a wide margin, so something structural is wrong, not quantization noise"
        )
    return (
        f"diverged at token {index} of {tokens}: a near-tie flipped and the runs separated; "
        "on its own that is usually benign, so track the index from release to release"
    )


@dataclass(frozen=True)
class LogitCheck:
    """Check 2: every position's logits of one prompt, candidate against reference."""

    positions: int
    max_difference: float
    mean_difference: float
    argmax_agreement: int

    @property
    def band(self) -> str:
        """Where the max |difference| falls on the guide's calibration."""
        if self.max_difference >= CORRUPTION_BAND[0]:
            return "corruption band (3.3 to 17.8 in the guide's measurement): assume a broken kernel until proven otherwise"
        if self.max_difference <= NOISE_BAND[1]:
            return "noise band (0.3 to 1.3 in the guide's measurement): quantization noise"
        return "between the guide's bands (1.3 to 3.3): this model's logit scale decides; compare with other modes"


def _logits(model, ids: list[int]):
    import mlx.core as mx

    logits = model(mx.array(ids)[None])[0].astype(mx.float32)
    mx.eval(logits)
    return logits


def logit_check(fmt: str, prompt_ids: Sequence[int], *, reference: str = REFERENCE) -> LogitCheck:
    """The guide's check 2 on one prompt, the lab's model in `fmt` against `reference`."""
    config = _float_model(shipped_gguf.model_file().resolve())[0]
    ids = _checked_ids(prompt_ids, config["vocab_size"])
    return compare_logits(mlx_lm_model(reference)[0], mlx_lm_model(fmt)[0], ids)


def compare_logits(reference_model, candidate_model, ids: list[int]) -> LogitCheck:
    """Check 2 on any two mlx-lm models: max and mean |logit difference| and argmax agreement at every position."""
    import mlx.core as mx

    expected, got = _logits(reference_model, ids), _logits(candidate_model, ids)
    difference = mx.abs(expected - got)
    agree = mx.sum(mx.argmax(expected, axis=-1) == mx.argmax(got, axis=-1))
    return LogitCheck(len(ids), float(mx.max(difference).item()), float(mx.mean(difference).item()), int(agree.item()))


@dataclass(frozen=True)
class PrefillCheck:
    """Check 3: the last position's logits after one-shot prefill against chunked prefill, on one model."""

    tokens: int
    chunk: int
    max_difference: float
    argmax_one_shot: int
    argmax_chunked: int


def prefill_check(fmt: str, prompt_ids: Sequence[int], chunk: int) -> PrefillCheck:
    """The guide's check 3 on the lab's model in `fmt`."""
    config = _float_model(shipped_gguf.model_file().resolve())[0]
    ids = _checked_ids(prompt_ids, config["vocab_size"])
    return compare_prefill(mlx_lm_model(fmt)[0], ids, chunk)


def compare_prefill(model, ids: list[int], chunk: int) -> PrefillCheck:
    """Check 3 on any mlx-lm model: prefill in one pass and in `chunk`-token pieces through mlx-lm's
    prompt cache; a large difference is the row-count bug's signature."""
    import mlx.core as mx
    from mlx_lm.models.cache import make_prompt_cache

    if isinstance(chunk, bool) or not isinstance(chunk, int | np.integer) or chunk < 1:
        raise InputError(f"the chunk must be a count of tokens, got {chunk!r}")
    tokens = mx.array(ids)[None]

    def last_logits(step: int):
        cache = make_prompt_cache(model)
        for start in range(0, tokens.shape[1], step):
            out = model(tokens[:, start : start + step], cache=cache)
        return out[0, -1].astype(mx.float32)

    one_shot, chunked = last_logits(tokens.shape[1]), last_logits(int(chunk))
    mx.eval(one_shot, chunked)
    return PrefillCheck(
        tokens.shape[1],
        int(chunk),
        float(mx.max(mx.abs(one_shot - chunked)).item()),
        int(mx.argmax(one_shot).item()),
        int(mx.argmax(chunked).item()),
    )


@dataclass(frozen=True)
class SentinelCheck:
    """Check 4: rows of one quantized product that differ between two runs whose recycled memory held
    different sentinels, so were never written by the kernel."""

    operation: str
    device: str
    rows: int
    unwritten_rows: int
    max_difference: float


#: the guide's trigger shape (n > 32768 and n % 64 != 0) with its K, N and E; the CPU runs smaller K and N
GUIDE_SHAPE = {"n": 32802, "K": 1024, "N": 512, "E": 8}
CPU_SHAPE = {"n": 4130, "K": 128, "N": 64, "E": 8}


def sentinel_check(operation: str, mode: MLXMode, shape: dict[str, int], device=None) -> SentinelCheck:
    """The guide's check 4 for `quantized_matmul` or `gather_qmm`: seed MLX's allocator pool with one
    sentinel, run the product, repeat with another on the same inputs, and count the rows that moved."""
    import mlx.core as mx

    if operation not in ("quantized_matmul", "gather_qmm"):
        raise InputError(f"check 4 runs quantized_matmul or gather_qmm, not {operation!r}")
    device = device or mx.default_device()
    n, k, n_out, experts = shape["n"], shape["K"], shape["N"], shape["E"]

    def run(sentinel: float):
        with mx.stream(device):
            mx.random.seed(0)
            weights = mx.random.normal(shape=(experts, n_out, k)).astype(mx.bfloat16)
            packed = mx.quantize(weights, mode.group_size, mode.bits, mode=mode.mode)
            x = mx.random.normal(shape=(n, k)).astype(mx.bfloat16)
            order = mx.sort(mx.random.randint(0, experts, shape=(n,)))
            mx.eval(packed, x, order)
            for _ in range(8):  # fill the recycle pool with the sentinel; no mx.clear_cache, on purpose
                junk = mx.full((n, n_out), sentinel, dtype=mx.bfloat16)
                mx.eval(junk)
                del junk
            biases = packed[2] if len(packed) > 2 else None
            options = {"transpose": True, "group_size": mode.group_size, "bits": mode.bits, "mode": mode.mode}
            if operation == "gather_qmm":
                # each row its own 1 x K matrix, as mlx-lm's SwitchGLU calls it: the guide's listing passes
                # x as one (n, K) matrix, which gather_qmm reads as n products of n rows, (n, n, N)
                rows = x.reshape(n, 1, k)
                out = mx.gather_qmm(
                    rows, packed[0], packed[1], biases, rhs_indices=order, sorted_indices=True, **options
                ).reshape(n, n_out)
            else:
                out = mx.quantized_matmul(
                    x, packed[0][0], packed[1][0], None if biases is None else biases[0], **options
                )
            mx.eval(out)
            return out.astype(mx.float32)

    first, second = run(1234.0), run(-4321.0)
    difference = mx.abs(first - second)
    per_row = mx.max(difference, axis=-1)
    return SentinelCheck(operation, str(device), n, int(mx.sum(per_row > 0).item()), float(mx.max(difference).item()))
