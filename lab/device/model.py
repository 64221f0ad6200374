"""all-MiniLM-L6-v2 on the device: every quantized Linear through MLX's own kernel, beside the lab's numpy.

    report = run_model("mxfp4")            # a DeviceReport: every MLX device present, the similarity sentences
    report.to_markdown()

The forward pass is lab.study.model's, with one change: each encoder Linear's product x·Ŵᵀ is
computed by MLX from the lab's bytes (`to_mlx()`; Q4_K through its affine repack
`to_mlx_affine()`, groups of 32) with `mx.quantized_matmul`, and a Linear the format left float32
by `mx.matmul`. Everything else (embeddings, attention, LayerNorm, GELU) stays the lab's numpy, so
every difference is the quantized matmul's. Per Linear the lab's own x·Ŵᵀ is computed in float32
on the very input MLX received, and the two are compared against the accumulation bound below;
at the output, MLX-linear embeddings are compared with the lab's numpy embeddings of the same bytes.

The accumulation bound. Both sides compute y = Σ_k x_k·ŵ_k over K inputs in float32, in orders
we do not know (MLX may also factor an affine group as s·Σq·x + b·Σx). Any summation order of K
terms has error at most γ_{K−1}·Σ|terms| (Higham, Accuracy and Stability of Numerical Algorithms,
§3.1), with γ_n = n·u/(1 − n·u) and u = 2^-24. Each product x_k·ŵ_k adds one rounding; forming ŵ
from a code, a scale and a bias adds at most two, each relative to m_k = |s·q_k| + |b| ≤ |ŵ_k| +
2|b| (b = 0 outside affine); a tensor-wide factor (NVFP4's global scale) one more. So each side is
within γ_{K+3}·Σ_k |x_k|·m_k of the exact sum, and

    |y_MLX − y_lab| ≤ 2·γ_{K+3}·Σ_k |x_k|·m_k          per output element.

For K = 1536 that is about 1.8e-4 of Σ|x_k|·m_k; real differences are far smaller, because
rounding errors mostly cancel, and the report shows how much of the bound each layer uses.

Without MLX the report says so and how to install it; a Linear MLX refuses is a line in the report
and the lab's own product stands in for it, so the pass still completes.

`run_model(fmt, cache=True)` keeps the report on disk (lab.study.cache), keyed by everything it
depends on: the model's files and the lab's code (lab.study.behaviour.model_key), this pane's code,
the MLX version, every device's name, the format and the sentences. A report read back is the one
that run computed, on the same MLX and the same devices.
"""

from __future__ import annotations

import numpy as np

from lab.device.compare import LinearTally, accumulation_bound
from lab.device.report import DeviceReport, DeviceRun, verdicts
from lab.device.session import DeviceSession, mlx_layout_of, mlx_mode
from lab.device.steps import Steps, device_name, mlx_version
from lab.errors import LabError
from lab.formats.registry import Format, get
from lab.study import behaviour
from lab.study import cache as result_cache
from lab.study import model as sentence_model
from lab.study.requantize import requantize
from lab.study.results import CachedResults


def _device_arrays(fmt: Format, original, quantized_model):
    """Per quantized Linear: (MLX parameters, numpy arrays in MLX's layout, m = |s·q| + |b| bound size).

    The lab's tensors are quantized again here (lab.study.requantize, with the format's defaults as
    load() does), and each one's dequantize() must equal the model's weight exactly: MLX gets the
    very bytes the lab used.
    """
    kept = {name for name, _ in quantized_model.fallbacks}
    requantized = requantize({name: w for name, w in original.items() if name not in kept}, fmt, keep_tensors=True)
    parameters = mlx_mode(fmt).parameters()
    arrays = {}
    for name, tensor in requantized.tensors.items():
        w_hat = quantized_model.linear_weights[name]
        if not np.array_equal(requantized.weights[name], w_hat):
            raise LabError(
                f"{fmt.title} of {name} quantized twice gave different weights; the lab is not deterministic"
            )
        layout = mlx_layout_of(fmt, tensor)
        magnitude = np.abs(w_hat).astype(np.float64)
        if len(layout) == 3:  # affine: a bias per group, which ŵ = s·q + b may partly cancel
            group = parameters["group_size"]
            magnitude += 2 * np.repeat(np.abs(layout[2].astype(np.float64)), group, axis=-1)
        arrays[name] = (parameters, layout, magnitude, getattr(tensor, "global_scale", None))
    return arrays


class _DeviceLinears(sentence_model.SentenceModel):
    """The lab's forward pass with every Linear's x·Ŵᵀ taken from MLX on one device."""

    def __init__(self, base: sentence_model.SentenceModel, mx, device, arrays: dict) -> None:
        # the base model's float weights (embeddings, LayerNorms, biases): the same as the lab's pass
        super().__init__(base.config, base._weights, base.linear_weights, base.fallbacks)
        self.mx, self.device, self.steps = mx, device, Steps(mx)
        self.arrays = {
            name: (parameters, [mx.array(np.ascontiguousarray(a)) for a in layout], magnitude, global_scale)
            for name, (parameters, layout, magnitude, global_scale) in arrays.items()
        }
        self.float_weights = {
            name: mx.array(np.ascontiguousarray(w)) for name, w in base.linear_weights.items() if name not in arrays
        }
        self.tally = LinearTally()  # a Linear runs once per batch: the tally keeps the largest of each

    def _linear(self, x: np.ndarray, name: str, captured: dict | None) -> np.ndarray:
        mx, device = self.mx, self.device
        w_hat = self.linear_weights[name]
        y_lab = x @ w_hat.T
        x_mx = mx.array(x)
        if name in self.arrays:
            parameters, layout, magnitude, global_scale = self.arrays[name]
            extra = {} if global_scale is None else {"global_scale": mx.array(global_scale, dtype=mx.float32)}
            path = "mx.quantized_matmul"
            y = self.steps.attempt(
                f"{name}: {path}",
                lambda: mx.quantized_matmul(x_mx, *layout, transpose=True, **parameters, **extra, stream=device),
            )
        else:
            magnitude, path = np.abs(w_hat).astype(np.float64), "mx.matmul (kept float32)"
            weight = self.float_weights[name]
            y = self.steps.attempt(f"{name}: {path}", lambda: mx.matmul(x_mx, weight.T, stream=device))
        self.tally.add(name, path, y, y_lab, accumulation_bound(x, magnitude))
        if captured is not None:
            captured[name] = x
        return (y_lab if y is None else y.astype(np.float32)) + self._weights[f"{name}.bias"]


#: this pane's code, beside behaviour.model_key()'s: what a cached report also depends on
PANE_SOURCES = ("device",)
CACHE_NAMESPACE = "device_model"


def _report_key(mx, spec: Format, sentences: list[str], devices) -> str:
    return result_cache.digest(
        behaviour.model_key(),
        result_cache.lab_source_digest(PANE_SOURCES),
        mlx_version(mx),
        *(f"{label}={device_name(mx, device)}" for label, device in devices),
        spec.name,
        *sentences,
    )


#: reports on disk only: each is a run on this machine's devices, computed again without the cache
_REPORTS = CachedResults(CACHE_NAMESPACE, DeviceReport, remember=False)


def run_model(fmt: str, sentences: list[str] | None = None, cache: bool = False) -> DeviceReport:
    """all-MiniLM-L6-v2 quantized with `fmt`, its Linears on every MLX device, against the lab's numpy.

    sentences: what to embed (default: lab.study.behaviour.SIMILARITY_SENTENCES). cache: keep the
    report on disk and read it back while nothing it depends on has changed (see the module's
    docstring).
    """
    spec = get(fmt)
    sentences = list(behaviour.SIMILARITY_SENTENCES if sentences is None else sentences)
    session = DeviceSession.open("model", spec, mlx_mode(spec))
    if isinstance(session, DeviceReport):
        return session
    mx, devices = session.mx, session.devices
    return _REPORTS.get(
        spec.name,
        lambda: _run_on_devices(mx, spec, sentences, devices),
        disk_key=(lambda: _report_key(mx, spec, sentences, devices)) if cache else None,
    )


def _run_on_devices(mx, spec: Format, sentences: list[str], devices) -> DeviceReport:
    original = sentence_model.load().linear_weights
    base = sentence_model.load(spec.name)
    arrays = _device_arrays(spec, original, base)
    lab_embeddings = base.embed(sentences)
    runs = []
    for label, device in devices:
        device_model = _DeviceLinears(base, mx, device, arrays)
        device_embeddings = device_model.embed(sentences)
        seen = {layer.layer: layer for layer in device_model.tally.layers()}
        runs.append(
            DeviceRun(
                device=label,
                device_name=device_name(mx, device),
                layers=tuple(seen[name] for name in base.config.linear_names),
                embedding_max_abs_diff=float(np.max(np.abs(device_embeddings - lab_embeddings))),
                embedding_min_cosine=float(np.min(behaviour.row_cosines(device_embeddings, lab_embeddings))),
                refusals=tuple(device_model.steps.refusals),
            )
        )
    return DeviceReport(
        "model",
        spec.name,
        spec.title,
        verdicts(runs),
        mlx_version=mlx_version(mx),
        parameters=mlx_mode(spec).parameters(),
        sentences=len(sentences),
        runs=tuple(runs),
    )
