"""The KV cache quantized beside the weights (the MLX guide's §11): which hurts Gemma 3 270M more.

Weight quantization changes the model once; KV-cache quantization changes what every later token
reads of the earlier ones. Each row runs one pair, weights x cache, on notebook 12's prompts:

    weights   WEIGHTS: the file's weights ("reference"), or every block Linear re-quantized by a format
    KV cache  KV_BITS: float, or MLX affine at 8 or 4 bits in groups of KV_GROUP_SIZE along head_dim,
              mlx-lm's QuantizedKVCache rule (kv_bits, kv_group_size), from the first position

and measures it against the float model with a float cache over `tokens` decoding steps per prompt:

    KL divergence     mean over the steps of KL(p_ref || p) of the next-token distributions, nats
    same top token    share of the steps whose most likely token is the reference's
    departure         per prompt, the first step whose greedy token leaves the reference's (None: none)

Teacher forcing: every run is fed the reference's greedy path, one token a step as greedy decoding
feeds them, so each step's distribution is the model's own on the same prefix. Up to its first
departure a greedy run of the model takes that very path, so the first step whose argmax differs
from the reference's token is where its own greedy answer departs, without a second run.

Two implementations give the rows: the lab's numpy model (lab.study.chat: the cache round-trips its
keys and values through lab.formats.affine, mx.quantize's rule bit for bit) and mlx-lm's own
(lab.device.verify.kv_study: its QuantizedKVCache and quantized attention). Both quantize the cache
on mlx-lm's schedule: generate_step quantizes after its first model call, so the prompt but its last
token is read in float, and every later key and value is quantized before attention reads it.

    lab = run_study(cache=True)                     # this module: the lab's numpy model
    mlx = lab.device.verify.kv_study(cache=True)    # the same table from mlx-lm
    side_by_side(lab, mlx)                          # one dict per (weights, cache), both columns

The weights differ between the two by design: the lab re-quantizes the 126 block Linears and leaves
the token embedding, which is also the output layer, in float32; mlx-lm's quantize_model quantizes
the embedding too. The KV-only rows share the weights and compare the two caches alone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lab.errors import InputError
from lab.formats.affine import check_bits_and_group
from lab.formats.registry import get
from lab.study import cache as result_cache
from lab.study import chat, shipped_gguf
from lab.study.chat_study import PROMPTS, REFERENCE, first_divergence, log_softmax
from lab.study.results import CachedResults

#: the weights of the rows: the file's own, and two 4-bit formats with an MLX mode of their own
WEIGHTS = (REFERENCE, "affine4_g64", "mxfp4")
#: the caches of the rows: float (None), then mlx-lm's kv_bits
KV_BITS = (None, 8, 4)
#: mlx-lm's default kv_group_size
KV_GROUP_SIZE = 64
#: decoding steps per prompt: a full table (nine rows, three prompts) took 18 s in the lab's numpy
#: and 88 s in mlx-lm on a shared two-core CPU, loading and building the models included
#: (mlx-lm decodes about three tokens a second there, and generate_step runs one step past the last)
TOKENS = 8
LAB = "lab numpy"
MLX_LM = "mlx-lm"
CACHE_NAMESPACE = "kv_study"
STUDY_SOURCES = (
    "codes",
    "formats",
    "_arrays.py",
    "errors.py",
    "interop",
    "study/chat",
    "study/requantize.py",
    "study/results.py",
    "study/chat_study.py",
    "study/kv_study.py",
    "device/verify.py",
)

#: decode(weights, prompt ids, tokens, kv_bits, forced) -> (ids, [tokens, vocab] logits or
#: log-probabilities): `tokens` steps, each taking its argmax or, given `forced`, the forced id
Decoder = Callable[[str, list[int], int, int | None, Sequence[int] | None], tuple[list[int], np.ndarray]]


@dataclass(frozen=True)
class KVResult:
    """One (weights, cache) pair against the float model with a float cache."""

    implementation: str  # LAB or MLX_LM
    weights: str  # REFERENCE or a registry name
    kv_bits: int | None  # None: a float cache
    kl_divergence: float  # mean nats per step
    same_top: float  # share of steps with the reference's top token
    departures: tuple[int | None, ...]  # per prompt: the first step off the reference's greedy path
    steps: int  # the steps measured, every prompt's together

    @property
    def changed(self) -> str:
        """What the row changes: "nothing", "KV only", "weights only" or "weights and KV"."""
        return {
            (False, False): "nothing",
            (False, True): "KV only",
            (True, False): "weights only",
            (True, True): "weights and KV",
        }[(self.weights != REFERENCE, self.kv_bits is not None)]


def cache_title(kv_bits: int | None) -> str:
    return "float" if kv_bits is None else f"{kv_bits}-bit g{KV_GROUP_SIZE}"


@dataclass(frozen=True)
class KVStudy:
    implementation: str
    prompts: tuple[str, ...]
    tokens: int
    results: tuple[KVResult, ...]

    def rows(self) -> list[dict]:
        """One dict per (weights, cache), the float pair first."""
        return [
            {
                "implementation": result.implementation,
                "weights": result.weights,
                "kv_cache": cache_title(result.kv_bits),
                "changed": result.changed,
                "kl_divergence": result.kl_divergence,
                "same_top": result.same_top,
                "departures": result.departures,
            }
            for result in self.results
        ]


def side_by_side(lab: KVStudy, mlx: KVStudy) -> list[dict]:
    """The two implementations' rows for the pairs both measured, in the lab study's order; InputError
    when they read other prompts or another number of steps."""
    if (lab.prompts, lab.tokens) != (mlx.prompts, mlx.tokens):
        raise InputError("the two studies read other prompts or another number of steps; run them alike")
    theirs = {(result.weights, result.kv_bits): result for result in mlx.results}
    rows = []
    for ours in lab.results:
        other = theirs.get((ours.weights, ours.kv_bits))
        if other is None:
            continue
        rows.append(
            {
                "weights": ours.weights,
                "kv_cache": cache_title(ours.kv_bits),
                "changed": ours.changed,
                "lab_kl": ours.kl_divergence,
                "mlx_kl": other.kl_divergence,
                "lab_same_top": ours.same_top,
                "mlx_same_top": other.same_top,
                "lab_departures": ours.departures,
                "mlx_departures": other.departures,
            }
        )
    return rows


def _checked_pairs(weights: Iterable[str], kv_bits: Iterable[int | None]) -> list[tuple[str, int | None]]:
    names = [name if name == REFERENCE else get(name).name for name in weights]
    widths = list(kv_bits)
    for bits in widths:
        if bits is not None:
            check_bits_and_group(bits, KV_GROUP_SIZE)
    pairs = [(name, bits) for name in names for bits in widths]
    # the float pair comes first: every other is measured against its path
    return [(REFERENCE, None), *(pair for pair in pairs if pair != (REFERENCE, None))]


def _key(path, implementation: str, versions: Sequence[str], pair, prompts: Sequence[str], tokens: int) -> str:
    return result_cache.digest(
        result_cache.lab_version(),
        np.__version__,
        *versions,
        result_cache.lab_source_digest(STUDY_SOURCES),
        result_cache.files_digest([path]),
        implementation,
        pair[0],
        cache_title(pair[1]),
        "\0".join(prompts),
        str(tokens),
    )


#: each pair's result, on disk only: a study run again without the cache measures again
_RESULTS = CachedResults(CACHE_NAMESPACE, KVResult, remember=False)


def measure(
    decode: Decoder,
    implementation: str,
    *,
    weights: Iterable[str] = WEIGHTS,
    kv_bits: Iterable[int | None] = KV_BITS,
    prompts: Sequence[str] = PROMPTS,
    tokens: int = TOKENS,
    versions: Sequence[str] = (),
    path: Path | None = None,
    cache: bool = False,
    progress: Callable[[int, int, str], None] | None = None,
) -> KVStudy:
    """The table of one implementation, whose `decode` runs a pair (see Decoder) on the model file at
    `path` (the shipped one by default). `versions` name what decides its numbers beyond the lab's
    code and that file (mlx and mlx-lm's versions)."""
    if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 1:
        raise InputError(f"tokens must be a whole number >= 1, got {tokens!r}")
    pairs = _checked_pairs(weights, kv_bits)
    prompts = tuple(prompts)
    path = shipped_gguf.model_file() if path is None else path
    reference: list[tuple[list[int], list[int], np.ndarray]] = []  # per prompt: ids, path, log-probabilities

    def reference_runs():
        if not reference:
            tokenizer = chat.load_tokenizer(path)  # the tokenizer alone, read without a weight
            for prompt in prompts:
                ids = tokenizer.encode(prompt, add_special=True, parse_special=True)
                greedy, logits = decode(REFERENCE, ids, tokens, None, None)
                reference.append((ids, greedy, log_softmax(logits)))
        return reference

    def measured(pair) -> KVResult:
        kl = same = 0.0
        departures = []
        for ids, greedy, reference_log_p in reference_runs():
            if pair == (REFERENCE, None):
                log_p = reference_log_p
            else:
                log_p = log_softmax(decode(pair[0], ids, tokens, pair[1], greedy)[1])
            kl += float((np.exp(reference_log_p) * (reference_log_p - log_p)).sum())
            chosen = log_p.argmax(axis=-1)
            same += int((chosen == np.asarray(greedy)).sum())
            departures.append(first_divergence(chosen.tolist(), greedy))
        steps = len(prompts) * tokens
        return KVResult(implementation, pair[0], pair[1], kl / steps, same / steps, tuple(departures), steps)

    results = []
    for done, pair in enumerate(pairs):
        if progress:
            progress(done, len(pairs), f"{pair[0]}, {cache_title(pair[1])} cache")
        disk_key = (lambda pair=pair: _key(path, implementation, versions, pair, prompts, tokens)) if cache else None
        results.append(_RESULTS.get(pair, lambda pair=pair: measured(pair), disk_key=disk_key))
    if progress:
        progress(len(pairs), len(pairs), "done")
    return KVStudy(implementation, prompts, tokens, tuple(results))


def run_study(
    *,
    model=None,
    weights: Iterable[str] = WEIGHTS,
    kv_bits: Iterable[int | None] = KV_BITS,
    prompts: Sequence[str] = PROMPTS,
    tokens: int = TOKENS,
    cache: bool = False,
    progress: Callable[[int, int, str], None] | None = None,
) -> KVStudy:
    """The table in the lab's numpy model: `model` (a lab.study.chat model), else the shipped file's,
    loaded only when a result is not in the cache."""
    path = model.path if model is not None else shipped_gguf.model_file()
    loaded = {"model": model}

    def decode(name: str, ids: list[int], steps: int, bits: int | None, forced):
        if loaded["model"] is None:  # decoding 1 GB of weights: only when a result must be computed
            loaded["model"] = chat.load(path)
        quantize = None if name == REFERENCE else name
        return loaded["model"].decode(
            ids, steps, forced=forced, quantize=quantize, kv_bits=bits, kv_group_size=KV_GROUP_SIZE
        )

    return measure(
        decode,
        LAB,
        weights=weights,
        kv_bits=kv_bits,
        prompts=prompts,
        tokens=tokens,
        path=path,
        cache=cache,
        progress=progress,
    )
