"""Gemma 3 270M on the device: every block Linear through mx.quantized_matmul, beside the lab's numpy.

    report = run_chat("mxfp4")           # every MLX device present, notebook 12's prompts
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

from dataclasses import dataclass, field

import numpy as np

from lab.device.compare import accumulation_bound
from lab.device.session import DeviceSession, NoDevice, mlx_layout_of, mlx_parameters
from lab.device.steps import Steps, device_name
from lab.errors import LabError
from lab.formats import FORMATS
from lab.formats.registry import Format, get
from lab.numbers import format_number
from lab.study import cache as result_cache
from lab.study import chat_study, shipped_gguf
from lab.study.chat.gguf_model import LINEARS
from lab.study.requantize import requantize
from lab.study.results import CachedResults
from lab.text import shown

GREEDY_TOKENS = 20
CACHE_NAMESPACE = "device_chat"
SOURCES = ("device", "study/chat", "study/chat_study.py", "study/requantize.py", "study/results.py", "formats", "codes")


@dataclass(frozen=True)
class ChatAnswer:
    prompt: str
    lab_ids: tuple[int, ...]
    device_ids: tuple[int, ...]
    first_divergence: int | None  # the first index where the two answers differ, None when equal
    max_logit_diff: float  # over the steps of the lab's answer, both fed the same tokens
    lab_margin: float | None  # the lab's best-minus-second logit at the first divergence


@dataclass(frozen=True)
class ChatDeviceRun:
    device: str  # "cpu" or "gpu"
    device_name: str
    answers: tuple[ChatAnswer, ...]
    linears: int  # block Linears run, every layer counted
    quantized: int  # of those, through mx.quantized_matmul (the rest: mx.matmul on ŵ)
    worst_linear: str  # where the largest share of the bound was used
    max_abs_diff: float  # the largest |y_MLX − y_lab| of any Linear output
    bound_used: float  # the largest |y_MLX − y_lab| / bound over every output element (≤ 1: explained)
    refusals: tuple[str, ...]

    @property
    def within_bound(self) -> bool:
        return self.bound_used <= 1.0


@dataclass(frozen=True)
class ChatDeviceReport:
    available: bool
    format: str
    title: str
    message: str = ""
    mlx_version: str = ""
    install_hint: str = ""
    fallbacks: int = 0
    runs: tuple[ChatDeviceRun, ...] = field(default_factory=tuple)

    def to_markdown(self) -> str:
        """The report in words and one table per device; every text from outside passes shown()."""
        if not self.available or not self.runs:
            hint = f" {shown(self.install_hint)}" if self.install_hint else ""
            return f"**{shown(self.title)} on a device:** {shown(self.message)}{hint}"
        parts = [
            f"**{shown(self.title)}** on MLX {shown(self.mlx_version)}: {self.runs[0].quantized} of "
            f"{self.runs[0].linears} Linears through `mx.quantized_matmul`, {self.fallbacks} fallbacks "
            "through `mx.matmul` on the lab's decoded weights."
        ]
        for run in self.runs:
            verdict = "within" if run.within_bound else "**beyond**"
            parts.append(
                f"**{shown(run.device)} ({shown(run.device_name)})**: every Linear's output {verdict} the "
                f"float32 accumulation bound (at most {run.bound_used:.1%} of it used, in "
                f"{shown(run.worst_linear)}; largest difference {format_number(run.max_abs_diff, 3)})."
            )
            rows = ["| prompt | the same tokens | largest logit difference | the lab's margin where they part |"]
            rows.append("|---:|---|---:|---:|")
            for index, answer in enumerate(run.answers, start=1):
                same = (
                    f"all {len(answer.lab_ids)}"
                    if answer.first_divergence is None
                    else f"the first {answer.first_divergence}"
                )
                margin = "—" if answer.lab_margin is None else format_number(answer.lab_margin, 3)
                rows.append(f"| {index} | {same} | {format_number(answer.max_logit_diff, 3)} | {margin} |")
            parts.append("\n".join(rows))
            if run.refusals:
                parts.append("MLX refused: " + "; ".join(shown(refusal) for refusal in run.refusals))
        return "\n\n".join(parts)


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
        self.max_abs_diff, self.bound_used, self.worst = 0.0, 0.0, ""
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
            y = self.steps.attempt(
                f"{label}: mx.quantized_matmul",
                lambda: mx.quantized_matmul(h_mx, *layout, transpose=True, **parameters, **extra, stream=device),
            )
        else:
            magnitude = np.abs(w_hat).astype(np.float64)
            if (layer, name) not in self.float_weights:
                self.float_weights[(layer, name)] = mx.array(np.ascontiguousarray(w_hat))
            weight = self.float_weights[(layer, name)]
            y = self.steps.attempt(f"{label}: mx.matmul", lambda: mx.matmul(h_mx, weight.T, stream=device))
        if y is None:  # refused: the lab's product stands in, and the refusal is in the report
            return h @ w_hat.T
        y = np.asarray(y, dtype=np.float32)
        if not self.comparing:
            return y
        y_lab = h @ w_hat.T
        diff = np.abs(y.astype(np.float64) - y_lab)
        bound = accumulation_bound(h, magnitude)
        with np.errstate(divide="ignore", invalid="ignore"):
            used = float(np.max(np.where(diff > 0, diff / bound, 0.0)))
        self.max_abs_diff = max(self.max_abs_diff, float(diff.max()))
        if used >= self.bound_used:
            self.bound_used, self.worst = used, label
        return y


def _device_arrays(spec: Format, model, lab_blocks, fallbacks) -> dict:
    """Per quantized Linear (layer, name): MLX parameters, the bytes in MLX's layout, the bound's m,
    the tensor factor. The lab quantizes again (lab.study.requantize), and each result must decode
    to the very ŵ the lab ran."""
    parameters = mlx_parameters(spec)
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
_REPORTS = CachedResults(CACHE_NAMESPACE, ChatDeviceReport, remember=False)


def device_formats() -> list[str]:
    """The registry formats whose bytes MLX can run: its own modes, and Q4_K through its affine repack."""
    return [name for name, spec in FORMATS.items() if mlx_parameters(spec) is not None]


def run_chat(
    fmt: str,
    prompts: tuple[str, ...] = chat_study.PROMPTS,
    tokens: int = GREEDY_TOKENS,
    *,
    model=None,
    cache: bool = False,
) -> ChatDeviceReport:
    """Gemma 3 270M with every block Linear in `fmt`, on every MLX device, against the lab's numpy."""
    spec = get(fmt)
    session = DeviceSession.open(spec)
    if isinstance(session, NoDevice):
        return ChatDeviceReport(
            session.available,
            spec.name,
            spec.title,
            session.message,
            session.mlx_version or "",
            install_hint=session.install_hint,
        )
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

    def run() -> ChatDeviceReport:
        return _run_on_devices(session, spec, prompts, tokens, model, path)

    return _REPORTS.get(spec.name, run, disk_key=disk_key if cache else None)


def _run_on_devices(session: DeviceSession, spec: Format, prompts, tokens: int, model, path) -> ChatDeviceReport:
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
            ChatDeviceRun(
                device=label,
                device_name=device_name(mx, device),
                answers=answers,
                linears=len(LINEARS) * len(lab_blocks),
                quantized=len(arrays),
                worst_linear=linear.worst,
                max_abs_diff=linear.max_abs_diff,
                bound_used=linear.bound_used,
                refusals=tuple(linear.steps.refusals),
            )
        )
    return ChatDeviceReport(
        True, spec.name, spec.title, mlx_version=session.version, fallbacks=len(fallbacks), runs=tuple(runs)
    )
