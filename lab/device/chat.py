"""Gemma 3 270M on the device: every block Linear through mx.quantized_matmul, beside the lab's numpy.

    report = run_chat("mxfp4")           # a DeviceReport: every MLX device present, notebook 12's prompts
    report.to_markdown()

This is the MLX guide's verification recipe, run on the lab's own bytes: the same prompts answered
greedily twice, once by the lab's float32 numpy with the format's decoded weights ŵ, once with each
Linear's product x·Ŵᵀ computed by MLX from the very bytes the lab decoded (`mlx_layout()`; Q4_K
through its affine repack). A Linear the format cannot hold (a fallback) runs as mx.matmul on the
lab's ŵ. Everything else (norms, attention, RoPE, GeGLU, the tied output) stays the lab's numpy,
so every difference is MLX's matmul.

Per prompt: both greedy answers' token ids, the first token where they part, and the largest
logit difference with the lab's answer fed to both (teacher forcing), beside the lab's own margin
between its best two tokens at the step where they part: an answer may part only where that margin
is within the difference. In that teacher-forced pass, per Linear and on the very input MLX
received, MLX's product is held to the lab's and to the float32 accumulation bound of
lab.device.compare (2·γ_{K+3}·Σ|x_k|·m_k): the share of the bound used must stay at or under 1.

`run_chat(fmt, cache=True)` keeps the report (lab.study.cache), keyed by the model file, the lab's
code, the MLX version, every device's name, the format, the prompts and the token count.
"""

from __future__ import annotations

import numpy as np

from lab.device.compare import LinearTally, accumulation_bound
from lab.device.report import ChatAnswer, DeviceReport, DeviceRun, verdicts
from lab.device.session import DeviceSession, mlx_layout_of, mlx_mode
from lab.device.steps import Steps, device_name
from lab.errors import LabError
from lab.formats import FORMATS
from lab.formats.registry import Format, get
from lab.study import cache as result_cache
from lab.study import chat_study, shipped_gguf
from lab.study.chat.gguf_model import LINEARS
from lab.study.requantize import requantize
from lab.study.results import CachedResults

GREEDY_TOKENS = 20
CACHE_NAMESPACE = "device_chat"
SOURCES = ("device", "study/chat", "study/chat_study.py", "study/requantize.py", "study/results.py", "formats", "codes")


class _DeviceLinears:
    """forward.Linear for one device: each block Linear's product from MLX, compared on the spot."""

    def __init__(self, mx, device, lab_blocks, arrays: dict) -> None:
        self.mx, self.device, self.steps = mx, device, Steps(mx)
        self.lab_blocks = lab_blocks
        self.arrays = {
            key: (parameters, [mx.array(np.ascontiguousarray(a)) for a in layout], magnitude, global_scale)
            for key, (parameters, layout, magnitude, global_scale) in arrays.items()
        }
        self.float_weights = {}
        self.tally = LinearTally()
        #: whether each product is held to the lab's and to the bound (the teacher-forced pass), or
        #: only computed (greedy generation, a token at a time, where the check would double the work)
        self.comparing = False

    def __call__(self, h: np.ndarray, layer: int, name: str) -> np.ndarray:
        mx, device = self.mx, self.device
        w_hat = self.lab_blocks[layer][name]
        h_mx = mx.array(np.ascontiguousarray(h))
        label = f"blk.{layer}.{name}"
        if (layer, name) in self.arrays:
            parameters, layout, magnitude, global_scale = self.arrays[(layer, name)]
            extra = {} if global_scale is None else {"global_scale": mx.array(global_scale, dtype=mx.float32)}
            path = "mx.quantized_matmul"
            y = self.steps.attempt(
                f"{label}: {path}",
                lambda: mx.quantized_matmul(h_mx, *layout, transpose=True, **parameters, **extra, stream=device),
            )
        else:
            magnitude = np.abs(w_hat).astype(np.float64)
            if (layer, name) not in self.float_weights:
                self.float_weights[(layer, name)] = mx.array(np.ascontiguousarray(w_hat))
            weight, path = self.float_weights[(layer, name)], "mx.matmul"
            y = self.steps.attempt(f"{label}: {path}", lambda: mx.matmul(h_mx, weight.T, stream=device))
        if not self.comparing:
            # refused: the lab's product stands in, and the refusal is in the report
            return h @ w_hat.T if y is None else np.asarray(y, dtype=np.float32)
        y_lab = h @ w_hat.T
        self.tally.add(label, path, y, y_lab, accumulation_bound(h, magnitude))
        return y_lab if y is None else np.asarray(y, dtype=np.float32)


def _device_arrays(spec: Format, model, lab_blocks, fallbacks) -> dict:
    """Per quantized Linear (layer, name): MLX parameters, the bytes in MLX's layout, the bound's m,
    the tensor factor. The lab quantizes again (lab.study.requantize), and each result must decode
    to the very ŵ the lab ran."""
    parameters = mlx_mode(spec).parameters()
    refitted = {fallback.layer for fallback in fallbacks}
    held = {
        (layer, name): block[name]
        for layer, block in enumerate(model.weights.blocks)
        for name in LINEARS
        if f"blk.{layer}.{name}" not in refitted
    }
    requantized = requantize({f"blk.{layer}.{name}": w for (layer, name), w in held.items()}, spec, keep_tensors=True)
    arrays = {}
    for layer, name in held:
        label = f"blk.{layer}.{name}"
        tensor, w_hat = requantized.tensors[label], lab_blocks[layer][name]
        if not np.array_equal(requantized.weights[label], w_hat):
            raise LabError(f"{spec.title} of {label} quantized twice gave different weights")
        layout = mlx_layout_of(spec, tensor)
        magnitude = np.abs(w_hat).astype(np.float64)
        if len(layout) == 3:  # affine: a bias per group, which ŵ = s·q + b may partly cancel
            magnitude += 2 * np.repeat(np.abs(layout[2].astype(np.float64)), parameters["group_size"], axis=-1)
        arrays[(layer, name)] = (parameters, layout, magnitude, getattr(tensor, "global_scale", None))
    return arrays


def _answer(model, spec: Format, prompt: str, tokens: int, linear) -> ChatAnswer:
    lab = model.generate(prompt, tokens, quantize=spec.name)
    device = model.generate(prompt, tokens, quantize=spec.name, linear=linear)
    fed = list(lab.prompt_ids) + list(lab.ids[:-1])
    lab_logits = model.logits(fed, quantize=spec.name, last=len(lab.ids))
    linear.comparing = True
    try:
        device_logits = model.logits(fed, quantize=spec.name, last=len(lab.ids), linear=linear)
    finally:
        linear.comparing = False
    part = chat_study.first_divergence(device.ids, lab.ids)
    margin = None
    if part is not None and part < len(lab.ids):
        best_two = np.sort(lab_logits[part])[-2:]
        margin = float(best_two[1] - best_two[0])
    return ChatAnswer(
        prompt=prompt,
        lab_ids=lab.ids,
        device_ids=device.ids,
        first_divergence=part,
        max_logit_diff=float(np.max(np.abs(device_logits.astype(np.float64) - lab_logits))),
        lab_margin=margin,
    )


#: reports on disk only: each is a run on this machine's devices, computed again without the cache
_REPORTS = CachedResults(CACHE_NAMESPACE, DeviceReport, remember=False)


def device_formats() -> list[str]:
    """The registry formats whose bytes MLX can run: its own modes, and Q4_K through its affine repack."""
    return [name for name, spec in FORMATS.items() if mlx_mode(spec) is not None]


def run_chat(
    fmt: str,
    prompts: tuple[str, ...] = chat_study.PROMPTS,
    tokens: int = GREEDY_TOKENS,
    *,
    model=None,
    cache: bool = False,
) -> DeviceReport:
    """Gemma 3 270M with every block Linear in `fmt`, on every MLX device, against the lab's numpy."""
    spec = get(fmt)
    session = DeviceSession.open("chat", spec, mlx_mode(spec))
    if isinstance(session, DeviceReport):
        return session
    path = model.path if model is not None else shipped_gguf.model_file()

    def disk_key() -> str:
        return result_cache.digest(
            result_cache.lab_source_digest(SOURCES),
            result_cache.files_digest([path]),
            session.version,
            *(f"{label}={device_name(session.mx, device)}" for label, device in session.devices),
            spec.name,
            *prompts,
            str(tokens),
        )

    def run() -> DeviceReport:
        return _run_on_devices(session, spec, prompts, tokens, model, path)

    return _REPORTS.get(spec.name, run, disk_key=disk_key if cache else None)


def _run_on_devices(session: DeviceSession, spec: Format, prompts, tokens: int, model, path) -> DeviceReport:
    mx = session.mx
    if model is None:
        from lab.study import chat  # decoding 1 GB of weights: only when the report must be computed

        model = chat.load(path)
    lab_blocks, fallbacks = model.blocks(spec.name)
    arrays = _device_arrays(spec, model, lab_blocks, fallbacks)
    runs = []
    for label, device in session.devices:
        linear = _DeviceLinears(mx, device, lab_blocks, arrays)
        answers = tuple(_answer(model, spec, prompt, tokens, linear) for prompt in prompts)
        runs.append(
            DeviceRun(
                device=label,
                device_name=device_name(mx, device),
                layers=linear.tally.layers(),
                answers=answers,
                refusals=tuple(linear.steps.refusals),
            )
        )
    return DeviceReport(
        "chat",
        spec.name,
        spec.title,
        verdicts(runs),
        mlx_version=session.version,
        parameters=mlx_mode(spec).parameters(),
        fallbacks=len(fallbacks),
        runs=tuple(runs),
    )
