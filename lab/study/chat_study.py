"""Every format on the same chat model: what llama.cpp's perplexity tool reports, and greedy answers.

The model is Gemma 3 270M (lab.study.chat). The reference is the file's own weights decoded to
float32: the Q4_K_M file as llama.cpp wrote it, not the original float model, which the file no
longer holds. A format re-quantizes every block Linear from those weights; where its blocks do not
divide a row the Linear keeps the file's weights, and the result names each fallback.

Per format, over PASSAGE (text every learner can read, included here):
    KL divergence      mean over positions of KL(p_ref || p_fmt) of the next-token distributions, nats
    same top token     share of positions whose most likely next token is the reference's
    Δ NLL              the change in mean negative log-likelihood of the passage's own next tokens;
                       perplexity is exp(NLL)
and per prompt the greedy continuation, with the first token where it leaves the reference's.
These are the columns of llama.cpp's perplexity tool (--kl-divergence), so the table reads like
its README's.

    study = run_study(["q4_0", "q8_0"], cache=True, progress=lambda done, total, label: ...)
    study.rows()          # one dict per format, the reference first
"""

from __future__ import annotations

import functools
import json
import math
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lab.errors import InputError
from lab.formats import FORMATS
from lab.formats.registry import get
from lab.study import cache as result_cache
from lab.study import shipped_gguf
from lab.study.compare import pareto_front
from lab.study.results import CachedResults

#: an included passage: plain prose about the subject of the course, so no download is needed
PASSAGE = (
    "A weight in a language model is a number that the model learned during training. A model with "
    "a billion weights needs four gigabytes to store them as 32-bit floats, so people store them in "
    "fewer bits. A 4-bit format keeps sixteen values for each weight and a scale for each block of "
    "weights. The scale stretches the sixteen values to fit the block, and the error that remains "
    "changes the answers the model gives. Some formats keep a minimum as well as a scale, and some "
    "keep a second, finer scale for every small group inside the block."
)
#: prompts whose greedy answers a learner can judge at a glance
PROMPTS = (
    "The capital of France is",
    "Water boils at a temperature of",
    "<start_of_turn>user\nName three colours of the rainbow.<end_of_turn>\n<start_of_turn>model\n",
)
GREEDY_TOKENS = 20
#: the longest prompt a learner may type, in tokens: its prefill runs in a few seconds on two cores
PROMPT_TOKEN_LIMIT = 256
#: the most characters the prompt box takes; the token limit is the one that counts, checked as typed
PROMPT_CHAR_LIMIT = 2000
#: what a learner's own prompt costs on a two-core laptop, in seconds, as the page says it: loading
#: the model (once per session; later prompts reuse it), the answer with the file's weights
#: (GREEDY_TOKENS tokens), and each format's, the least and the most over the registry (its 126
#: Linears re-quantized first, then the tokens). Measured in CPU seconds on one BLAS thread, the
#: most a quiet two-core machine takes: 1.9 s for the file's weights, 2.1 s (TQ2_0) to 7.9 s (Q2_K;
#: IQ4_NL, IQ4_XS and Q3_K take 7.2 to 7.4 s) a format; the model's load is the issue's quiet 7.5 s.
#: bench/own_prompt.py holds the page to them as budgets.
PROMPT_LOAD_SECONDS = 8
PROMPT_REFERENCE_SECONDS = 2
PROMPT_FORMAT_SECONDS = (2, 8)
#: the formats the prompt box starts with: a 4-bit block format, a K-quant and an 8-bit one
PROMPT_FORMATS = ("q4_0", "q4k", "q8_0")
CACHE_NAMESPACE = "chat_study"
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
)
REFERENCE = "reference"
REFERENCE_TITLE = "the file's weights"
#: a comma-separated list of registry names limits the study notebook 12 runs (the test suite's
#: site build sets it, so CI runs a few formats; the bench runs them all)
FORMATS_ENV = "LAB_CHAT_FORMATS"
MODEL_TITLE = "Gemma 3 270M"


def study_formats() -> list[str]:
    """The formats notebook 12 studies: every registered one, or those $LAB_CHAT_FORMATS names."""
    chosen = os.environ.get(FORMATS_ENV, "").strip()
    if not chosen:
        return list(FORMATS)
    return [get(name.strip()).name for name in chosen.split(",") if name.strip()]


def check_prompt(text: str, tokenizer=None) -> list[int]:
    """A learner's prompt as the model reads it (token ids, <bos> and control tokens included), or
    InputError saying what to change. Only the tokenizer is needed (`tokenizer`, else the shipped
    file's, read without a weight: lab.study.chat.load_tokenizer), and an empty prompt needs not even
    that, so a prompt is refused at once, before any model is loaded."""
    if not isinstance(text, str) or not text.strip():
        raise InputError("type a prompt: it is empty")
    if len(text) > PROMPT_CHAR_LIMIT:
        raise InputError(f"the prompt is {len(text):,} characters; the box takes at most {PROMPT_CHAR_LIMIT:,}")
    if tokenizer is None:
        from lab.study import chat

        tokenizer = chat.load_tokenizer()
    # as ChatModel.tokenize reads a prompt: <bos> first, control tokens such as <start_of_turn> as tokens
    ids = tokenizer.encode(text, add_special=True, parse_special=True)
    if len(ids) > PROMPT_TOKEN_LIMIT:
        raise InputError(
            f"the prompt is {len(ids)} tokens; the study reads at most {PROMPT_TOKEN_LIMIT}: "
            f"shorten it by {len(ids) - PROMPT_TOKEN_LIMIT}"
        )
    return ids


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """float64 log-probabilities of float32 logits [positions, vocab], row by row."""
    shifted = logits.astype(np.float64) - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


@dataclass(frozen=True)
class Continuation:
    prompt: str
    ids: tuple[int, ...]
    text: str
    first_divergence: int | None  # the index of the first token unlike the reference's, None when all match
    agreeing: str  # the text of the tokens before the first divergence (all of it when there is none)
    departing: str  # the text from the first divergent token on


@dataclass(frozen=True)
class FormatResult:
    """One format on the passage and the prompts."""

    name: str  # the registry name, or REFERENCE
    title: str
    bits_per_weight: float | None  # the format's storage of the re-quantized Linears; None for the reference
    kl_divergence: float  # mean nats per position against the reference
    same_top: float  # share of positions with the reference's top token
    nll: float  # mean negative log-likelihood of the passage's next tokens, nats
    nll_delta: float  # nll minus the reference's
    continuations: tuple[Continuation, ...]
    fallbacks: tuple[str, ...]  # Linears kept with the file's weights, with why
    passage_tokens: int  # the passage's tokens the measures ran over, <bos> included

    @property
    def perplexity(self) -> float:
        return math.exp(self.nll)


@dataclass(frozen=True)
class ChatStudy:
    reference: FormatResult
    formats: tuple[FormatResult, ...]

    @property
    def passage_tokens(self) -> int:
        """The passage's tokens, <bos> included: kept with each result, so a study read back from the
        cache says the same as the one that measured it."""
        return self.reference.passage_tokens

    def rows(self) -> list[dict]:
        return [
            {
                "format": result.name,
                "title": result.title,
                "bits_per_weight": result.bits_per_weight,
                "kl_divergence": result.kl_divergence,
                "same_top": result.same_top,
                "nll_delta": result.nll_delta,
                "perplexity": result.perplexity,
                "fallbacks": len(result.fallbacks),
            }
            for result in (self.reference, *self.formats)
        ]

    def format_rows(self) -> list[dict]:
        """The formats' rows (not the reference's), each with `source` and `on_front`: the Pareto front
        of KL divergence against bits per weight, as lab.study.compare marks it for weight error."""
        rows = [{**row, "source": MODEL_TITLE} for row in self.rows()[1:]]
        return pareto_front(rows, error="kl_divergence")

    def divergences(self) -> list[dict]:
        """Where each format's greedy answer to each prompt first leaves the reference's: one row per
        (format, prompt), `position` None when all its tokens match."""
        return [
            {"format": result.name, "title": result.title, "prompt": c.prompt, "position": c.first_divergence}
            for result in self.formats
            for c in result.continuations
        ]


#: positions whose float64 log-probabilities are formed at once: a whole passage's would be another
#: 250 MB beside the reference's, which the peak-memory budget cannot hold
MEASURE_ROWS = 16


def _measure(model, ids: np.ndarray, quantize, reference_log_p: np.ndarray | None):
    """(log-probabilities [positions, vocab] when measuring the reference, else None; KL; same-top
    share; NLL) of `ids` under `quantize`, formed MEASURE_ROWS positions at a time."""
    logits = model.logits(ids, quantize=quantize)[:-1]
    targets = ids[1:]
    kept = np.empty(logits.shape, np.float64) if reference_log_p is None else None
    kl = same = nll = 0.0
    for start in range(0, logits.shape[0], MEASURE_ROWS):
        rows = slice(start, start + MEASURE_ROWS)
        log_p = log_softmax(logits[rows])
        nll -= float(log_p[np.arange(log_p.shape[0]), targets[rows]].sum())
        if kept is not None:
            kept[rows] = log_p
            continue
        reference = reference_log_p[rows]
        kl += float((np.exp(reference) * (reference - log_p)).sum())
        same += int((reference.argmax(axis=-1) == log_p.argmax(axis=-1)).sum())
    positions = logits.shape[0]
    if kept is not None:
        return kept, 0.0, 1.0, nll / positions
    return None, kl / positions, same / positions, nll / positions


def first_divergence(ours: Sequence[int], theirs: Sequence[int]) -> int | None:
    """The index of the first token where two greedy answers differ (one ending early counts), None
    when they are the same tokens."""
    return next(
        (i for i, (a, b) in enumerate(zip(ours, theirs, strict=False)) if a != b),
        None if len(ours) == len(theirs) else min(len(ours), len(theirs)),
    )


def _continuations(model, prompts: Sequence[str], quantize, reference: Sequence[Continuation] | None, tokens: int):
    results = []
    for index, prompt in enumerate(prompts):
        generated = model.generate(prompt, tokens, quantize=quantize)
        divergence = None if reference is None else first_divergence(generated.ids, reference[index].ids)
        split = len(generated.ids) if divergence is None else divergence
        agreeing, departing = model.detokenize(generated.ids[:split]), model.detokenize(generated.ids[split:])
        results.append(Continuation(prompt, generated.ids, generated.text, divergence, agreeing, departing))
    return tuple(results), generated.fallbacks


def _key(path, name: str, passage: str, prompts: Sequence[str], tokens: int) -> str:
    return result_cache.digest(
        result_cache.lab_version(),
        np.__version__,
        result_cache.lab_source_digest(STUDY_SOURCES),
        result_cache.files_digest([path]),
        name,
        passage,
        "\0".join(prompts),
        str(tokens),
    )


#: each format's result, on disk only: a study run again without the cache measures again
_RESULTS = CachedResults(CACHE_NAMESPACE, FormatResult, remember=False)


def run_study(
    formats: Iterable[str] | None = None,
    *,
    model=None,
    passage: str = PASSAGE,
    prompts: Sequence[str] = PROMPTS,
    tokens: int = GREEDY_TOKENS,
    cache: bool = False,
    progress: Callable[[int, int, str], None] | None = None,
) -> ChatStudy:
    """The reference and every named format (all of the registry by default) on `passage` and `prompts`.

    `model` is a lab.study.chat model, loaded from the shipped file only when something is not in
    the cache: a warm study reads its results back without decoding a weight.
    """
    names = list(FORMATS) if formats is None else [get(name).name for name in formats]
    path = model.path if model is not None else shipped_gguf.model_file()
    loaded = {"model": model}
    measured_reference: dict = {}

    def the_model():
        if loaded["model"] is None:
            from lab.study import chat  # decoding 1 GB of weights: only when a result must be computed

            loaded["model"] = chat.load(path)
        return loaded["model"]

    def passage_ids() -> np.ndarray:
        ids = np.asarray(the_model().tokenize(passage), dtype=np.int64)
        if ids.size < 2:
            raise InputError("the passage needs at least one token after <bos>")
        return ids

    def reference_measure():
        if not measured_reference:
            ids = passage_ids()
            log_p, _, _, nll = _measure(the_model(), ids, None, None)
            measured_reference.update(ids=ids, log_p=log_p, nll=nll)
        return measured_reference

    def cached(name: str, compute: Callable[[], FormatResult]) -> FormatResult:
        disk_key = (lambda: _key(path, name, passage, prompts, tokens)) if cache else None
        return _RESULTS.get(name, compute, disk_key=disk_key)

    def reference() -> FormatResult:
        measure = reference_measure()
        continuations, _ = _continuations(the_model(), prompts, None, None, tokens)
        return FormatResult(
            REFERENCE,
            REFERENCE_TITLE,
            None,
            0.0,
            1.0,
            measure["nll"],
            0.0,
            continuations,
            (),
            int(measure["ids"].size),
        )

    total = len(names) + 1
    if progress:
        progress(0, total, "the file's own weights")
    ref = cached(REFERENCE, reference)
    results = []
    for done, name in enumerate(names, start=1):
        fmt = FORMATS[name]
        if progress:
            progress(done, total, fmt.title)

        def measured(fmt=fmt) -> FormatResult:
            measure = reference_measure()
            _, kl, same, nll = _measure(the_model(), measure["ids"], fmt.name, measure["log_p"])
            continuations, fallbacks = _continuations(the_model(), prompts, fmt.name, ref.continuations, tokens)
            return FormatResult(
                fmt.name,
                fmt.title,
                fmt.bits_per_weight,
                kl,
                same,
                nll,
                nll - ref.nll,
                continuations,
                tuple(
                    f"{fallback.layer}: "
                    + (f"stored as {FORMATS[fallback.stored_as].title}; " if fallback.stored_as else "kept; ")
                    + fallback.reason
                    for fallback in fallbacks
                ),
                int(measure["ids"].size),
            )

        results.append(cached(name, measured))
    if progress:
        progress(total, total, "done")
    return ChatStudy(ref, tuple(results))


def answer_titles(formats: Iterable[str]) -> list[str]:
    """What answer_each answers with, in its order: the file's weights, then each format's title."""
    return [REFERENCE_TITLE, *(get(name).title for name in formats)]


def answer_each(
    prompt: str, formats: Iterable[str], *, model, tokens: int = GREEDY_TOKENS
) -> Iterator[tuple[str, Continuation]]:
    """The greedy answers to a learner's prompt, each as soon as it is ready: the reference's, then
    each format's in the order given, with where it departs. The prompt and every format name are
    checked before any work (check_prompt), so a bad one is refused before a token is generated."""
    check_prompt(prompt, model.tokenizer)
    chosen = [get(name) for name in formats]
    reference, _ = _continuations(model, [prompt], None, None, tokens)
    yield REFERENCE_TITLE, reference[0]
    for fmt in chosen:
        continuation, _ = _continuations(model, [prompt], fmt.name, reference, tokens)
        yield fmt.title, continuation[0]


def answers(
    prompt: str, formats: Iterable[str], *, model, tokens: int = GREEDY_TOKENS
) -> list[tuple[str, Continuation]]:
    """Every answer of answer_each, at once."""
    return list(answer_each(prompt, formats, model=model, tokens=tokens))


def prompt_model():
    """The model that answers learners' prompts: loaded by the first (PROMPT_LOAD_SECONDS on two
    cores) and kept for the next, so a second prompt costs only its answers."""
    return _loaded_model(shipped_gguf.model_file())


@functools.lru_cache(maxsize=1)
def _loaded_model(path: Path):
    from lab.study import chat  # decoding 1 GB of weights: only when a prompt is answered

    return chat.load(path)


#: what llama.cpp's own re-quantizations of the file did to the same passage and prompts, pinned by
#: tests/data/make_chat_requant_reference.py with llama-cpp-python (run outside CI, never by the lab)
LLAMA_CPP_PINNED = Path(__file__).resolve().parents[2] / "tests" / "data" / "chat_requant_reference.json"


@dataclass(frozen=True)
class LlamaCppRow:
    """One type as the lab re-quantized it and as llama.cpp's llama_model_quantize did, on the same
    float32 weights, passage and prompts."""

    title: str
    lab_kl: float
    llama_kl: float
    lab_same_top: float
    llama_same_top: float
    lab_nll_delta: float
    llama_nll_delta: float
    #: per prompt: the first token where the lab's greedy answer and llama.cpp's differ, None when equal
    answers_part: tuple[int | None, ...]
    #: llama.cpp's file: its Linears by stored type, fallbacks included (the float32 norms and
    #: embedding left out)
    linear_types: dict[str, int]
    lab_refitted: int  # the Linears the lab's study stored in a fallback type or kept


def llama_cpp_pinned(path: Path = LLAMA_CPP_PINNED) -> dict | None:
    """The pinned llama.cpp results, or None when this checkout has none; InputError when they were
    made for another passage or other prompts than the study's, so they are never shown against it."""
    if not path.is_file():
        return None
    pinned = json.loads(path.read_text(encoding="utf-8"))
    if pinned.get("passage") != PASSAGE or tuple(pinned.get("prompts", ())) != PROMPTS:
        raise InputError(f"{path.name} was made for another passage or prompts; run its script again")
    return pinned


def llama_cpp_rows(study: ChatStudy, pinned: dict) -> list[LlamaCppRow]:
    """Each format of `study` that llama.cpp's pinned run re-quantized too (by GGUF type), side by side."""
    rows = []
    for result in study.formats:
        fmt = FORMATS[result.name]
        theirs = pinned.get(fmt.gguf_type) if fmt.family == "gguf" else None
        if theirs is None:
            continue
        answers = theirs["answers"]
        rows.append(
            LlamaCppRow(
                title=result.title,
                lab_kl=result.kl_divergence,
                llama_kl=float(theirs["kl_divergence"]),
                lab_same_top=result.same_top,
                llama_same_top=float(theirs["same_top"]),
                lab_nll_delta=result.nll_delta,
                llama_nll_delta=float(theirs["nll"]) - float(pinned["f32"]["nll"]),
                answers_part=tuple(
                    first_divergence(mine.ids, answer["greedy"])
                    for mine, answer in zip(result.continuations, answers, strict=True)
                ),
                linear_types={str(name): int(count) for name, count in theirs["tensor_types"].items() if name != "F32"},
                lab_refitted=len(result.fallbacks),
            )
        )
    return rows
