"""The MLX guide's four checks (§10), run by mlx-lm on the lab's chat model, one MLX mode at a time.

    checks = mode_checks("mxfp4")            # checks 1 to 4 on mlx-lm's model quantized to MXFP4
    reference = reference_run()              # the unquantized model's greedy answers, check 1's yardstick
    rows = three_implementations(study, {name: mode_checks(name) for name in names}, pinned)

Each mode's results are kept in the result cache (lab.study.cache), keyed by the model file, the
lab's code and the versions of MLX and mlx-lm, so a page reads them back in milliseconds. The work
is lab.device.verify's: this module runs the guide's checks in its order on the notebook's prompts
and puts each result beside the guide's reading of it.

- Check 1: greedy ids for the three prompts of notebook 12, against mlx-lm's unquantized model.
- Check 2: logits at every position of the same prompts, max and mean |difference|, argmax agreement,
  and where the max falls on the guide's bands; from the same logits, the KL divergence and same-top
  share that notebook 12 reports for the lab's own forward pass on its passage.
- Check 3: one-shot against chunked prefill of the chat prompt, on the quantized model.
- Check 4: the two-sentinel run on quantized_matmul and gather_qmm in the mode, at CPU_SHAPE: the
  guide's trigger shape needs n > 32768 rows, which this CPU check scales down (and says so).

May import: lab.device.verify and what it may; mlx and mlx_lm inside functions only.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from lab.device import verify
from lab.errors import InputError
from lab.formats.registry import FORMATS
from lab.study import cache as result_cache
from lab.study import shipped_gguf
from lab.study.chat_study import GREEDY_TOKENS, PROMPTS, first_divergence, log_softmax
from lab.study.results import CachedResults

CACHE_NAMESPACE = "guide_checks"
#: check 3 prefills the chat prompt (16 tokens) in one pass and in pieces of this many tokens: four
#: pieces, the last a short one. Every position costs a product with the whole 262144-row output
#: layer, which mlx-lm quantizes too, and MLX's CPU kernels take a tenth of a second or more for it
PREFILL_CHUNK = 5
#: positions whose log-probabilities are formed at once (262144 float64 values each)
MEASURE_ROWS = 16
#: where check 4's CPU run differs from the guide's: fewer rows, and a smaller K and N
SENTINEL_NOTE = (
    f"at n = {verify.CPU_SHAPE['n']} rows, K = {verify.CPU_SHAPE['K']}, N = {verify.CPU_SHAPE['N']} on this CPU; "
    f"the guide's trigger is n > 32768 with n % 64 != 0 (n = {verify.GUIDE_SHAPE['n']}, "
    f"K = {verify.GUIDE_SHAPE['K']}, N = {verify.GUIDE_SHAPE['N']}), which the CPU would take minutes over. "
    "The row count still leaves a partial tile (4130 % 64 = 34)"
)
SENTINEL_OPERATIONS = ("quantized_matmul", "gather_qmm")
STUDY_SOURCES = (
    "codes",
    "formats",
    "interop",
    "errors.py",
    "study/chat",
    "study/chat_study.py",
    "study/results.py",
    "device/verify.py",
    "device/guide_checks.py",
)


@dataclass(frozen=True)
class PromptRun:
    """Checks 1 and 2 on one prompt."""

    prompt: str
    ids: tuple[int, ...]  # the greedy continuation
    text: str
    first_divergence: int | None  # against the unquantized model's; None when every token matches
    reading: str  # the guide's reading of that index
    positions: int  # check 2's positions: the prompt's tokens
    max_difference: float
    mean_difference: float
    argmax_agreement: int
    kl_divergence: float  # of the next-token distributions at the prompt's positions, mean nats
    same_top: float


@dataclass(frozen=True)
class SentinelRun:
    operation: str
    rows: int
    unwritten_rows: int
    max_difference: float


@dataclass(frozen=True)
class ModeChecks:
    """The guide's four checks on mlx-lm's model in one MLX mode."""

    name: str  # the registry name
    title: str
    mlx_mode: str  # "affine 4-bit, group 64", as MLX names it
    bits_per_weight: float  # of everything mlx-lm quantized, the embedding included (float32 scales)
    quantized_weights: int  # weights in the quantized Linears and embedding
    prompts: tuple[PromptRun, ...]
    band: str  # the largest of the prompts' max |difference| on the guide's bands
    prefill_tokens: int
    prefill_chunk: int
    prefill_max_difference: float
    prefill_same_argmax: bool
    sentinels: tuple[SentinelRun, ...]
    seconds: float  # all four checks, the model's quantization included, cold

    @property
    def max_difference(self) -> float:
        return max(run.max_difference for run in self.prompts)


@dataclass(frozen=True)
class ReferenceRun:
    """The unquantized mlx-lm model's greedy answers: check 1's yardstick."""

    prompts: tuple[str, ...]
    ids: tuple[tuple[int, ...], ...]
    texts: tuple[str, ...]


_CHECKS: CachedResults[ModeChecks] = CachedResults(CACHE_NAMESPACE, ModeChecks)
_REFERENCE: CachedResults[ReferenceRun] = CachedResults(CACHE_NAMESPACE, ReferenceRun)


def _key(name: str, tokens: int) -> str:
    import mlx.core as mx
    import mlx_lm

    return result_cache.digest(
        result_cache.lab_version(),
        result_cache.lab_source_digest(STUDY_SOURCES),
        result_cache.files_digest([shipped_gguf.model_file()]),
        name,
        str(tokens),
        *PROMPTS,
        mx.__version__,
        mlx_lm.__version__,
    )


def _prompt_ids() -> list[list[int]]:
    tokenizer = verify.chat_tokenizer()
    # as notebook 12's study tokenizes them (lab.study.chat.ChatModel.tokenize): <bos>, special tokens parsed
    return [tokenizer.encode(prompt, parse_special=True) for prompt in PROMPTS]


def reference_run(tokens: int = GREEDY_TOKENS) -> ReferenceRun:
    """The unquantized model's greedy ids for the three prompts, from the cache when it holds them."""

    def compute() -> ReferenceRun:
        tokenizer = verify.chat_tokenizer()
        ids = tuple(tuple(verify.greedy_ids(verify.REFERENCE, prompt, tokens)) for prompt in _prompt_ids())
        return ReferenceRun(PROMPTS, ids, tuple(tokenizer.decode(list(run)) for run in ids))

    return _REFERENCE.get((verify.REFERENCE, tokens), compute, disk_key=lambda: _key(verify.REFERENCE, tokens))


def _logits(model, ids: list[int]) -> np.ndarray:
    import mlx.core as mx

    logits = model(mx.array(ids)[None])[0].astype(mx.float32)
    mx.eval(logits)
    return np.array(logits)


@functools.lru_cache(maxsize=len(PROMPTS))
def _reference_logits(ids: tuple[int, ...]) -> np.ndarray:
    return _logits(verify.mlx_lm_model(verify.REFERENCE)[0], list(ids))


def prompt_logits(candidate_model, ids: list[int]) -> dict:
    """Check 2 on one prompt: the candidate's logits at every position against the unquantized
    model's (max and mean |difference|, argmax agreement), and from the same logits the KL divergence
    of its next-token distributions (nats, mean over positions) and the share with the same top token,
    the measures notebook 12 gives the lab's own forward pass on its passage."""
    expected, got = _reference_logits(tuple(ids)), _logits(candidate_model, ids)
    difference = np.abs(expected - got)
    p, q = log_softmax(expected), log_softmax(got)
    return {
        "positions": len(ids),
        "max_difference": float(difference.max()),
        "mean_difference": float(difference.mean()),
        "argmax_agreement": int((expected.argmax(axis=-1) == got.argmax(axis=-1)).sum()),
        "kl": float((np.exp(p) * (p - q)).sum(axis=-1).mean()),
        "same_top": float((p.argmax(axis=-1) == q.argmax(axis=-1)).mean()),
    }


def stored_bits(model) -> tuple[float, int]:
    """(bits per weight, weights) of every quantized layer of an mlx-lm model, read from the arrays
    it holds: packed weights, scales and biases over the weights they stand for."""
    import mlx.nn as nn
    from mlx.utils import tree_flatten

    bits = weights = 0
    for _path, module in tree_flatten(model.leaf_modules(), is_leaf=nn.Module.is_module):
        if not isinstance(module, nn.QuantizedLinear | nn.QuantizedEmbedding):
            continue
        arrays = [module.weight, module.scales] + ([module.biases] if module.get("biases") is not None else [])
        bits += 8 * sum(array.nbytes for array in arrays)
        weights += module.weight.shape[0] * module.weight.shape[1] * 32 // module.bits
    return bits / weights, weights


def mode_checks(name: str, tokens: int = GREEDY_TOKENS) -> ModeChecks:
    """The four checks on mlx-lm's model in the registry's MLX mode `name`, from the cache when it
    holds them (a cold run quantizes the model and takes tens of seconds)."""
    if name not in verify.mlx_modes():
        raise InputError(f"{name!r} is not an MLX mode of the registry; choose one of {', '.join(verify.mlx_modes())}")
    return _CHECKS.get((name, tokens), lambda: _measured(name, tokens), disk_key=lambda: _key(name, tokens))


def _measured(name: str, tokens: int) -> ModeChecks:
    started = time.perf_counter()
    reference = reference_run(tokens)
    mode = verify.mlx_modes()[name]
    model = verify.mlx_lm_model(name)[0]
    tokenizer = verify.chat_tokenizer()
    runs = []
    for prompt, ids, expected in zip(PROMPTS, _prompt_ids(), reference.ids, strict=True):
        got = verify.greedy_run(model, ids, tokens)
        divergence = first_divergence(expected, got)
        logits = prompt_logits(model, ids)
        runs.append(
            PromptRun(
                prompt,
                tuple(got),
                tokenizer.decode(got),
                divergence,
                verify.divergence_reading(divergence, tokens),
                logits["positions"],
                logits["max_difference"],
                logits["mean_difference"],
                logits["argmax_agreement"],
                logits["kl"],
                logits["same_top"],
            )
        )
    chat_prompt = _prompt_ids()[-1]
    prefill = verify.compare_prefill(model, chat_prompt, PREFILL_CHUNK)
    sentinels = tuple(
        SentinelRun(check.operation, check.rows, check.unwritten_rows, check.max_difference)
        for check in (verify.sentinel_check(operation, mode, verify.CPU_SHAPE) for operation in SENTINEL_OPERATIONS)
    )
    bits, weights = stored_bits(model)
    worst = max(runs, key=lambda run: run.max_difference)
    return ModeChecks(
        name,
        FORMATS[name].title,
        f"{mode.mode}, {mode.bits}-bit, group {mode.group_size}",
        bits,
        weights,
        tuple(runs),
        verify.LogitCheck(worst.positions, worst.max_difference, worst.mean_difference, worst.argmax_agreement).band,
        len(chat_prompt),
        PREFILL_CHUNK,
        prefill.max_difference,
        prefill.argmax_one_shot == prefill.argmax_chunked,
        sentinels,
        time.perf_counter() - started,
    )


def three_implementations(
    study, reference: ReferenceRun, checks: Mapping[str, ModeChecks], pinned: Mapping | None
) -> list[dict]:
    """The unquantized model and each MLX mode as the lab's numpy forward pass ran them (notebook 12's
    study, `study`), as mlx-lm ran them (`reference`, `checks`) and, for the unquantized model, as
    llama.cpp's pinned run did (`pinned`: lab.study.chat_study.llama_cpp_pinned(), which has no MLX
    mode). Per prompt: where each implementation's greedy answer leaves its own unquantized answer,
    and where the lab's and mlx-lm's answers part from each other (None: never, over all tokens)."""
    by_name = {result.name: result for result in study.formats}
    llama = (pinned or {}).get("f32")
    rows = [
        {
            "format": verify.REFERENCE,
            "title": "unquantized (float32)",
            "lab_bits_per_weight": None,
            "mlx_lm_bits_per_weight": None,
            "lab_departures": (None,) * len(PROMPTS),
            "mlx_lm_departures": (None,) * len(PROMPTS),
            "lab_against_mlx_lm": tuple(
                first_divergence(c.ids, ids)
                for c, ids in zip(study.reference.continuations, reference.ids, strict=True)
            ),
            "llama_cpp_against_mlx_lm": None
            if llama is None
            else tuple(
                first_divergence(answer["greedy"][: len(ids)], ids)
                for answer, ids in zip(llama["answers"], reference.ids, strict=True)
            ),
        }
    ]
    for name, checked in checks.items():
        ours = by_name.get(name)
        if ours is None:
            continue
        rows.append(
            {
                "format": name,
                "title": checked.title,
                "lab_bits_per_weight": ours.bits_per_weight,
                "mlx_lm_bits_per_weight": checked.bits_per_weight,
                "lab_departures": tuple(c.first_divergence for c in ours.continuations),
                "mlx_lm_departures": tuple(run.first_divergence for run in checked.prompts),
                "lab_against_mlx_lm": tuple(
                    first_divergence(c.ids, run.ids) for c, run in zip(ours.continuations, checked.prompts, strict=True)
                ),
                "llama_cpp_against_mlx_lm": None,
            }
        )
    return rows
