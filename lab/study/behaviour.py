"""What quantized weights do to a model's answers: similarity, retrieval, and error layer by layer.

    similarity(model_fp32, model_q, sentences)   cosine matrices of both models, and each sentence's
                                                 cosine between its two embeddings
    format_similarity("mxfp4")                   the same for the lab's SIMILARITY_SENTENCES, cached
    retrieval_study(progress=...)                top-1, MRR and median margin on the lab's retrieval
                                                 task, per format
    retrieval_answers("mxfp4")                   each question's margin under float32 and the format,
                                                 and the passage it picks
    layer_study("mxfp4")                         each Linear's weight error beside its output error on
                                                 real activations, and the input channels behind it

The article's row lesson, Δy = Σ(ŵᵢ − wᵢ)xᵢ, says output error depends on the input. At model
scale that means a Linear's weight error ‖Ŵ − W‖/‖W‖ does not rank layers the way their output
error ‖(Ŵ − W)x‖/‖Wx‖ does: a few input channels carry activations far larger than the rest, and
the weight errors in those columns are multiplied by them. `layer_study` measures both on the
activations all-MiniLM-L6-v2 really sees and names the channels.

Every format of lab.formats.FORMATS runs with its default preset, as `lab.study.model.load(name)`
quantizes; a Linear a format cannot hold stays float32 and the rows say how many did. Embeddings
and layer studies are cached in memory per format, so a notebook control that changes only which
format is shown recomputes nothing. With `cache=True` they are also kept on disk (lab.study.cache),
keyed by the model's files, the format, the lab's version, the versions of numpy and tokenizers and
the source code that computes them, so opening the notebook again reads them back instead of
quantizing and running the model once per format.
"""

from __future__ import annotations

import functools
import importlib.metadata
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from lab.errors import InputError
from lab.formats import FORMATS
from lab.formats.registry import get
from lab.study import accounting
from lab.study import cache as result_cache
from lab.study import model as sentence_model
from lab.study.metrics import relative_error
from lab.study.results import CachedResults
from lab.study.retrieval_data import PASSAGES, QUERIES

#: the row name of the unquantized model
FP32 = "fp32"
#: the MLX affine bit widths the study always covers, at MLX's default group of 64
AFFINE_BIT_WIDTHS = (2, 3, 4, 8)
#: input channels named as outliers per layer
TOP_CHANNELS = 8
#: layers named as the ones whose rank moves most between the two error rankings
DISAGREEING_LAYERS = 3

#: sentences for the similarity heatmap: five topics, two phrasings each, so the float32 matrix has
#: bright 2×2 blocks on its diagonal that a damaged model blurs
SIMILARITY_SENTENCES: tuple[str, ...] = (
    "The cat is sleeping on the warm windowsill.",
    "A kitten naps in the sunshine by the window.",
    "The stock market fell sharply this morning.",
    "Share prices dropped steeply at the opening bell.",
    "Add the flour slowly and stir until the batter is smooth.",
    "Mix in the flour a little at a time so no lumps form.",
    "The train to Edinburgh is delayed by forty minutes.",
    "Our rail service north is running almost an hour late.",
    "Four-bit weights save memory but add rounding error.",
    "Storing weights in fewer bits trades accuracy for space.",
)

Progress = Callable[[int, int, str], object]


def study_formats() -> tuple[str, ...]:
    """fp32, every registry format in registry order, and the affine widths if the registry lacks any."""
    names = [FP32, *FORMATS]
    names += [f"affine{bits}_g64" for bits in AFFINE_BIT_WIDTHS if f"affine{bits}_g64" not in FORMATS]
    return tuple(names)


def stored_bits_per_weight(name: str) -> float:
    """What format `name` (or fp32) stores per weight of this model: its weights are float32, so
    MLX affine's scale and bias are float32 too (lab.study.accounting), 4 + 64/128 = 4.5 bits per
    weight at 4-bit g128, as notebook 9 measures on the same model."""
    return 32.0 if name == FP32 else accounting.bits_per_weight(name, accounting.FLOAT32)


def _checked_name(name: str) -> str:
    """fp32 or a registry name; anything else raises UnknownFormatError listing the registry."""
    if name == FP32:
        return name
    return get(name).name


def _checked_sentences(sentences) -> list[str]:
    if isinstance(sentences, str) or not isinstance(sentences, (list, tuple)):
        raise InputError(f"sentences must be a list of strings, not {type(sentences).__name__}")
    if not sentences:
        raise InputError("there are no sentences to compare: the list is empty")
    return list(sentences)


# --------------------------------------------------------------------------------------------
# The on-disk cache's key
# --------------------------------------------------------------------------------------------

#: the code behind every number of this module, relative to the lab package: the formats and the
#: codes beneath them, the forward pass, the weights loader, the texts and this module itself
STUDY_SOURCES = (
    "codes",
    "formats",
    "_arrays.py",
    "errors.py",
    "study/real_weights.py",
    "study/metrics.py",
    "study/model.py",
    "study/requantize.py",
    "study/results.py",
    "study/retrieval_data.py",
    "study/behaviour.py",
    "study/accounting.py",
)
CACHE_NAMESPACE = "behaviour"


@functools.cache
def _package_version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def model_key() -> str:
    """What every cached result of this module depends on besides its format: the model's files
    (weights, configuration, tokenizer), the lab's version and source code, numpy and tokenizers."""
    files = [path for path in sentence_model.model_folder().rglob("*") if path.is_file()]
    return result_cache.digest(
        result_cache.lab_version(),
        np.__version__,
        _package_version("tokenizers"),
        result_cache.lab_source_digest(STUDY_SOURCES),
        result_cache.files_digest(files),
    )


def _disk_key(cache: bool, *parts: str):
    """The on-disk key of a result of this module named by `parts`, made only when asked (with
    `cache`), since model_key() reads the model's files; None keeps the result in memory only."""
    return (lambda: result_cache.digest(model_key(), *parts)) if cache else None


# --------------------------------------------------------------------------------------------
# Embeddings per format, cached
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Embeddings:
    """One format's embeddings of the lab's texts: retrieval queries, passages, similarity sentences."""

    name: str
    bits_per_weight: float  # the format's storage on this float32 model (32 for fp32): stored_bits_per_weight()
    fallbacks: tuple[tuple[str, str], ...]  # (Linear, reason) for each Linear left float32
    queries: np.ndarray
    passages: np.ndarray
    sentences: np.ndarray


_EMBEDDINGS = CachedResults(CACHE_NAMESPACE, Embeddings)


def embeddings(name: str, cache: bool = False) -> Embeddings:
    """The model quantized with format `name` (or fp32) applied to every text of the study; cached
    in memory, and with `cache=True` on disk too (read back bit for bit)."""
    name = _checked_name(name)
    return _EMBEDDINGS.get(name, lambda: _embed(name), disk_key=_disk_key(cache, "embeddings", name))


def _embed(name: str) -> Embeddings:
    model = sentence_model.load(None if name == FP32 else name)
    texts = [*QUERIES, *PASSAGES, *SIMILARITY_SENTENCES]
    vectors = model.embed(texts)
    queries, passages, sentences = np.split(vectors, np.cumsum([len(QUERIES), len(PASSAGES)]))
    return Embeddings(
        name=name,
        bits_per_weight=stored_bits_per_weight(name),
        fallbacks=model.fallbacks,
        queries=queries,
        passages=passages,
        sentences=sentences,
    )


def clear_caches() -> None:
    """Forget every cached embedding, captured input and layer study (the bench times a cold run)."""
    _EMBEDDINGS.clear()
    _FP32_PARTS.clear()
    _LAYER_STUDIES.clear()


# --------------------------------------------------------------------------------------------
# Similarity
# --------------------------------------------------------------------------------------------


def cosine_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine similarity of every row of a with every row of b, float64 [len(a), len(b)]."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return a @ b.T


def row_cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine of row i of a with row i of b, float64 [len(a)]."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    return np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


@dataclass(frozen=True)
class Similarity:
    fp32: np.ndarray  # cosine matrix of the float32 model's embeddings
    quantized: np.ndarray  # cosine matrix of the quantized model's embeddings
    per_sentence: np.ndarray  # cosine between each sentence's float32 and quantized embeddings


def similarity_of(fp32_embeddings: np.ndarray, quantized_embeddings: np.ndarray) -> Similarity:
    """The Similarity of two models' embeddings of the same sentences."""
    return Similarity(
        fp32=cosine_matrix(fp32_embeddings, fp32_embeddings),
        quantized=cosine_matrix(quantized_embeddings, quantized_embeddings),
        per_sentence=row_cosines(fp32_embeddings, quantized_embeddings),
    )


def similarity(model_fp32, model_q, sentences: list[str]) -> Similarity:
    """Both models' cosine matrices over `sentences` and each sentence's fp32-to-quantized cosine."""
    sentences = _checked_sentences(sentences)
    return similarity_of(model_fp32.embed(sentences), model_q.embed(sentences))


def format_similarity(name: str, cache: bool = False) -> Similarity:
    """similarity() for SIMILARITY_SENTENCES with format `name`, from the cached embeddings
    (`cache`: see embeddings())."""
    return similarity_of(embeddings(FP32, cache).sentences, embeddings(name, cache).sentences)


# --------------------------------------------------------------------------------------------
# Retrieval
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RetrievalScore:
    top1: float  # share of queries whose right passage scores highest
    mrr: float  # mean of 1 / rank of the right passage
    ranks: np.ndarray  # rank of each query's right passage, 1 = first
    margins: np.ndarray  # right passage's cosine minus the best distractor's: >= 0 where answered right
    picks: np.ndarray  # index of each query's highest-scoring passage (its own where the margin is >= 0)


def score_retrieval(queries: np.ndarray, passages: np.ndarray) -> RetrievalScore:
    """Query i's right passage is passage i; every other passage is a distractor.

    A passage ranks above the right one only if its cosine is strictly larger, so a tie goes to
    the right passage, and a margin of exactly 0 is still a right answer.
    """
    queries, passages = np.asarray(queries), np.asarray(passages)
    if queries.ndim != 2 or queries.shape != passages.shape or len(queries) < 2:
        raise InputError(
            "retrieval needs as many queries as passages, at least two, one embedding a row; "
            f"got {queries.shape} and {passages.shape}"
        )
    scores = cosine_matrix(queries, passages)
    right = np.diagonal(scores).copy()
    ranks = 1 + np.count_nonzero(scores > right[:, None], axis=1)
    distractors = scores.copy()
    np.fill_diagonal(distractors, -np.inf)
    best_distractor = distractors.argmax(axis=1)
    margins = right - distractors[np.arange(len(right)), best_distractor]
    picks = np.where(margins >= 0, np.arange(len(right)), best_distractor)
    return RetrievalScore(
        top1=float(np.mean(ranks == 1)), mrr=float(np.mean(1.0 / ranks)), ranks=ranks, margins=margins, picks=picks
    )


def retrieval_row(name: str, cache: bool = False) -> dict:
    """One format's row of the retrieval study, from the cached embeddings (`cache`: see embeddings())."""
    ours, reference = embeddings(name, cache), embeddings(FP32, cache)
    score = score_retrieval(ours.queries, ours.passages)
    mine = np.concatenate([ours.queries, ours.passages])
    theirs = np.concatenate([reference.queries, reference.passages])
    return {
        "format": name,
        "title": "float32" if name == FP32 else FORMATS[name].title,
        "bits_per_weight": ours.bits_per_weight,
        "top1": score.top1,
        "mrr": score.mrr,
        "median_margin": float(np.median(score.margins)),
        "mean_cosine_to_fp32": float(np.mean(row_cosines(mine, theirs))),
        "fallbacks": len(ours.fallbacks),
    }


@dataclass(frozen=True)
class RetrievalAnswers:
    """Each question's answer from the float32 model and from one format, side by side."""

    format_title: str
    questions: tuple[str, ...]
    fp32_margins: np.ndarray  # as RetrievalScore.margins, float32 model
    margins: np.ndarray  # the same with the format's weights
    picks: np.ndarray  # the passage the format's model answers each question with

    @property
    def lost(self) -> np.ndarray:
        """Questions float32 answers right and the format answers wrong."""
        return np.flatnonzero((self.fp32_margins >= 0) & (self.margins < 0))

    @property
    def gained(self) -> np.ndarray:
        """Questions float32 answers wrong and the format answers right."""
        return np.flatnonzero((self.fp32_margins < 0) & (self.margins >= 0))

    @property
    def closer(self) -> int:
        """How many questions came closer to a wrong answer (a smaller margin) with the format."""
        return int(np.count_nonzero(self.margins < self.fp32_margins))

    @property
    def median_shift(self) -> float:
        """The median change of margin, format minus float32: below 0 where answers got closer calls."""
        return float(np.median(self.margins - self.fp32_margins))

    def records(self) -> list[dict]:
        """One row per question: question, both margins, both outcomes, and the passage picked."""
        return [
            {
                "question": question,
                "fp32_margin": float(fp32_margin),
                "margin": float(margin),
                "outcome": _outcome(fp32_margin >= 0, margin >= 0),
                "picked": PASSAGES[pick],
            }
            for question, fp32_margin, margin, pick in zip(
                self.questions, self.fp32_margins, self.margins, self.picks, strict=True
            )
        ]


#: a question's outcome, by (float32 right, format right)
OUTCOMES = {
    (True, True): "right in both",
    (True, False): "lost: now wrong",
    (False, True): "gained: now right",
    (False, False): "wrong in both",
}


def _outcome(fp32_right, format_right) -> str:
    return OUTCOMES[bool(fp32_right), bool(format_right)]


def retrieval_answers(name: str, cache: bool = False) -> RetrievalAnswers:
    """Every question's margin under float32 and under format `name`, and the passage it picks
    (`cache`: see embeddings()). The margin is how far the right passage's cosine stands above
    the best distractor's: top-1 counts only its sign, so it shows damage top-1 cannot."""
    name = _checked_name(name)
    ours, reference = embeddings(name, cache), embeddings(FP32, cache)
    score = score_retrieval(ours.queries, ours.passages)
    return RetrievalAnswers(
        format_title="float32" if name == FP32 else FORMATS[name].title,
        questions=QUERIES,
        fp32_margins=score_retrieval(reference.queries, reference.passages).margins,
        margins=score.margins,
        picks=score.picks,
    )


#: a retrieval row's fields, as retrieval_row() makes them
ROW_FIELDS = (
    "format",
    "title",
    "bits_per_weight",
    "top1",
    "mrr",
    "median_margin",
    "mean_cosine_to_fp32",
    "fallbacks",
)


#: every format's retrieval row, by format name, in one disk entry
_RETRIEVAL_ROWS = CachedResults(CACHE_NAMESPACE, dict[str, dict], remember=False)


def retrieval_study(
    formats: tuple[str, ...] | None = None, progress: Progress | None = None, cache: bool = False
) -> list[dict]:
    """Top-1 accuracy and MRR on the lab's retrieval task for fp32 and every format.

    Rows: {format, title, bits_per_weight, top1, mrr, median_margin, mean_cosine_to_fp32, fallbacks}. `formats`
    defaults to study_formats(); `progress(done, total, name)` is called after each format.
    `cache=True` keeps the rows, and each format's embeddings, on disk and reads them back when
    nothing they depend on has changed (see model_key()); the rows are the same either way. A row
    read back needs no embeddings: those are read (or computed) only when a row is missing.
    """
    names = study_formats() if formats is None else tuple(_checked_name(name) for name in formats)
    # one file for every format's row (one file to open, not twenty), joined by formats added later
    key = result_cache.digest(model_key(), "retrieval_rows") if cache else None
    saved = (_RETRIEVAL_ROWS.load(key) or {}) if cache else {}
    changed = False
    rows = []
    for done, name in enumerate(names, start=1):
        row = saved.get(name)
        if not (isinstance(row, dict) and tuple(row) == ROW_FIELDS and row["format"] == name):
            row = retrieval_row(name, cache)
            saved[name], changed = row, True
        rows.append(dict(row))
        if progress is not None:
            progress(done, len(names), name)
    if cache and changed:
        _RETRIEVAL_ROWS.store(key, saved)
    return rows


def formats_that_lose_answers(study: list[dict]) -> list[dict]:
    """The rows of a retrieval_study whose top-1 is below float32's: the only formats this task
    tells apart from float32 (every other row answers as many questions right)."""
    fp32 = next(row for row in study if row["format"] == FP32)
    return [row for row in study if row["top1"] < fp32["top1"]]


# --------------------------------------------------------------------------------------------
# Layer by layer: weight error against output error on real activations
# --------------------------------------------------------------------------------------------


def descending_ranks(values: np.ndarray) -> np.ndarray:
    """Rank 1 for the largest value; tied values share the mean of their ranks (as Spearman needs)."""
    _, inverse, counts = np.unique(-np.asarray(values, dtype=np.float64), return_inverse=True, return_counts=True)
    ends = np.cumsum(counts)
    return ((ends - counts + 1 + ends) / 2.0)[inverse]


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rank correlation: Pearson's correlation of the tie-averaged ranks; NaN if either is constant."""
    ra, rb = descending_ranks(a), descending_ranks(b)
    ra, rb = ra - ra.mean(), rb - rb.mean()
    denominator = np.sqrt(np.sum(ra * ra) * np.sum(rb * rb))
    return float(np.sum(ra * rb) / denominator) if denominator > 0 else float("nan")


def output_relative_error(w: np.ndarray, w_hat: np.ndarray, x: np.ndarray) -> float:
    """‖(Ŵ − W)xᵀ‖ / ‖Wxᵀ‖ over every row of x [tokens, in_features] (Frobenius, before the bias)."""
    w64, x64 = np.asarray(w, dtype=np.float64), np.asarray(x, dtype=np.float64)
    delta = np.asarray(w_hat, dtype=np.float64) - w64
    return float(np.linalg.norm(x64 @ delta.T) / np.linalg.norm(x64 @ w64.T))


@dataclass(frozen=True)
class ChannelOutliers:
    """Where one Linear's inputs are large, and how much of its output error comes from there."""

    layer: str
    rms: np.ndarray  # per input channel, RMS of the activation over every token
    top_channels: np.ndarray  # the TOP_CHANNELS channels of largest RMS, largest first
    peak_to_median: float  # largest channel RMS / median channel RMS
    error_share: float  # ‖ΔW[:, top] x[:, top]‖² / ‖ΔW x‖²: the top channels' error on its own
    signal_share: float  # ‖W[:, top] x[:, top]‖² / ‖W x‖²: the same channels' share of the output itself
    channel_share: float  # len(top_channels) / in_features, for comparison


def channel_outliers(layer: str, w: np.ndarray, w_hat: np.ndarray, x: np.ndarray, top_k: int = TOP_CHANNELS):
    """The input channels of largest RMS, and the shares of ‖ΔW xᵀ‖² and ‖W xᵀ‖² their terms alone make.

    Δy = Σ_c ΔW[:, c]·x_c: keeping only the top channels' terms gives their own error. Cross terms
    between channels mean the share is not additive: it can exceed 1 when the other channels
    partly cancel the top ones.
    """
    x64, w64 = np.asarray(x, dtype=np.float64), np.asarray(w, dtype=np.float64)
    delta = np.asarray(w_hat, dtype=np.float64) - w64
    rms = np.sqrt(np.mean(x64 * x64, axis=0))
    top = np.argsort(-rms, kind="stable")[:top_k]
    total = np.sum(np.square(x64 @ delta.T))
    alone = np.sum(np.square(x64[:, top] @ delta[:, top].T))
    signal = np.sum(np.square(x64[:, top] @ w64[:, top].T)) / np.sum(np.square(x64 @ w64.T))
    return ChannelOutliers(
        layer=layer,
        rms=rms,
        top_channels=top,
        peak_to_median=float(rms.max() / np.median(rms)),
        error_share=float(alone / total) if total > 0 else 0.0,
        signal_share=float(signal),
        channel_share=top_k / rms.size,
    )


@dataclass(frozen=True)
class LayerStudy:
    """Each quantized Linear's weight error beside its output error, and where the rankings part."""

    format: str
    layers: tuple[str, ...]  # the Linears the format quantized, in model order
    kept_float: tuple[str, ...]  # the Linears the format could not hold (float32, no error)
    weight_error: np.ndarray  # ‖Ŵ − W‖ / ‖W‖ per layer
    output_error: np.ndarray  # ‖(Ŵ − W)xᵀ‖ / ‖Wxᵀ‖ per layer, over the real inputs
    weight_rank: np.ndarray  # 1 = largest weight error
    output_rank: np.ndarray  # 1 = largest output error
    peak_to_median: np.ndarray  # per layer, largest input-channel RMS / median
    spearman: float  # rank correlation of the two errors over `layers`
    disagreeing: tuple[str, ...]  # the layers whose rank moves most, most first
    outliers: Mapping[str, ChannelOutliers]  # for each disagreeing layer
    tokens: int  # rows of real input each Linear saw

    def records(self) -> list[dict]:
        """One dict per quantized layer, for tables and charts."""
        return [
            {
                "layer": name,
                "weight_error": float(self.weight_error[i]),
                "output_error": float(self.output_error[i]),
                "weight_rank": float(self.weight_rank[i]),
                "output_rank": float(self.output_rank[i]),
                "rank_shift": float(self.weight_rank[i] - self.output_rank[i]),
                "peak_to_median": float(self.peak_to_median[i]),
                "disagreeing": name in self.disagreeing,
            }
            for i, name in enumerate(self.layers)
        ]


def layer_errors(
    format_name: str,
    weights: Mapping[str, np.ndarray],
    quantized: Mapping[str, np.ndarray],
    inputs: Mapping[str, np.ndarray],
    kept_float: tuple[str, ...] = (),
    top_k: int = TOP_CHANNELS,
    progress: Progress | None = None,
) -> LayerStudy:
    """The layer study from plain arrays: original and quantized weights and each Linear's inputs.

    `progress(done, total, layer)` is called after each layer's output error, the slow part.
    """
    layers = tuple(name for name in weights if name not in kept_float)
    if len(layers) < 2:
        raise InputError(f"{format_name} quantized {len(layers)} Linear(s); ranking layers needs at least 2")
    weight_error = np.array([relative_error(weights[n], quantized[n]) for n in layers])
    output_error = np.empty(len(layers))
    for i, n in enumerate(layers):
        output_error[i] = output_relative_error(weights[n], quantized[n], inputs[n])
        if progress is not None:
            progress(i + 1, len(layers), n)
    weight_rank, output_rank = descending_ranks(weight_error), descending_ranks(output_error)
    rms = {n: np.sqrt(np.mean(np.square(inputs[n], dtype=np.float64), axis=0)) for n in layers}
    shift = np.abs(weight_rank - output_rank)
    # most moved first; among equal moves, the layer with the larger output error
    order = np.lexsort((-output_error, -shift))[:DISAGREEING_LAYERS]
    disagreeing = tuple(layers[i] for i in order if shift[i] > 0)
    return LayerStudy(
        format=format_name,
        layers=layers,
        kept_float=tuple(kept_float),
        weight_error=weight_error,
        output_error=output_error,
        weight_rank=weight_rank,
        output_rank=output_rank,
        peak_to_median=np.array([rms[n].max() / np.median(rms[n]) for n in layers]),
        spearman=spearman(weight_error, output_error),
        disagreeing=disagreeing,
        outliers={n: channel_outliers(n, weights[n], quantized[n], inputs[n], top_k) for n in disagreeing},
        tokens=int(next(iter(inputs.values())).shape[0]),
    )


_FP32_PARTS: dict[str, tuple] = {}
_LAYER_STUDIES = CachedResults(CACHE_NAMESPACE, LayerStudy)


def captured_inputs() -> tuple[Mapping[str, np.ndarray], dict[str, np.ndarray]]:
    """The float32 model's Linear weights, and each Linear's inputs over the retrieval passages; cached."""
    if "inputs" not in _FP32_PARTS:
        model = sentence_model.load()
        _, inputs = model.embed_with_inputs(list(PASSAGES))
        _FP32_PARTS["inputs"] = (model.linear_weights, inputs)
    return _FP32_PARTS["inputs"]


def layer_study(name: str, progress: Progress | None = None, cache: bool = False) -> LayerStudy:
    """The layer study of format `name` on the float32 model's real inputs; cached per format in
    memory, and with `cache=True` on disk too (see model_key()).

    Every Linear sees the same inputs, the float32 model's, so the output error of a layer is its
    own weights' doing and not what earlier quantized layers passed on. `progress(done, total,
    layer)` is called after each layer that is computed; a study read back from disk calls it once.
    """
    name = get(name).name

    def compute() -> LayerStudy:
        weights, inputs = captured_inputs()
        model = sentence_model.load(name)
        kept = tuple(layer for layer, _ in model.fallbacks)
        return layer_errors(name, weights, model.linear_weights, inputs, kept, progress=progress)

    def loaded(found: LayerStudy) -> None:
        if progress is not None:
            progress(len(found.layers), len(found.layers), found.layers[-1])

    return _LAYER_STUDIES.get(name, compute, disk_key=_disk_key(cache, "layer_study", name), on_load=loaded)
