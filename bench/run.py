"""Benchmark the lab's codecs against their peers, in the same run, as ratios.

    .venv/bin/python -m bench.run                 # 16 M weights (4096 x 4096), table + bench/results/
    .venv/bin/python -m bench.run --rows 512      # a quick run
    .venv/bin/python -m bench.run --no-real       # without the real-model rows
    .venv/bin/python -m bench.run --browser       # page speed and site weight instead (bench/browser.py)
    .venv/bin/python -m bench.run --first-render  # only each notebook's live first render (bench/browser.py)

Each line times the lab and the peer doing the same work on the same data, best of --repeat runs,
and reports lab throughput / peer throughput. The targets (issue 6) are ratios measured here, never
in timed tests. The real-model rows time all-MiniLM-L6-v2 (lab.real_weights, the `real` extra) run
through every format once, format by format and in total, first with an empty result cache and
then again with it warm; they have no peer, and are skipped with a note when the extra is not
installed. Q4_K quantize is also timed against the lab's own quantizer from before issue 13's
speed work (read from the repository's history), in CPU seconds in the same run. Q8_0 decode is
timed on the real GGUF file's token_embd (lab.study.shipped_gguf, Gemma 3 270M) against gguf-py's,
in turns in the same run, with the peak memory of the lab's decode against the output's size; it is
skipped with a note when the file's package or gguf-py is not installed. The run also records
what the article's last check asks for: the workload, tensor types, hardware, build and thread
settings and the load average, so a number can be traced to the machine that made it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import tracemalloc
import types
from collections.abc import Callable
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path

import numpy as np

from lab.codes import e2m1, e4m3
from lab.files import UnsafeWriteError, check_inside, write_inside
from lab.formats import FORMATS, Format
from lab.study import real_weights

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Row:
    task: str
    lab_seconds: float
    peer: str
    peer_seconds: float | None
    target_ratio: float | None
    note: str = ""

    @property
    def ratio(self) -> float | None:
        return None if self.peer_seconds is None else self.peer_seconds / self.lab_seconds

    @property
    def verdict(self) -> str:
        if self.target_ratio is None or self.ratio is None:
            return "-"
        return "meets" if self.ratio >= self.target_ratio else "misses"


def best_of(function, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - start)
    return best


def environment(rows: int, cols: int) -> dict:
    info = {
        "workload": f"synthetic N(0, 0.02) weights, {rows} x {cols} = {rows * cols:,} float32, decode = dequantize",
        "tensor_types": [fmt.title for fmt in FORMATS.values()] + ["E2M1", "E4M3"],
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "machine": platform.machine(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "system": f"{platform.system()} {platform.release()}",
        "threads": {
            name: os.environ.get(name) for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
        },
        "phase": "offline quantization and full-tensor decode (neither prefill nor token decode)",
        # Ratios are taken within one run, but the rows without a peer (the real-model studies)
        # depend on how busy the machine was: 1, 5, 15-minute load averages.
        "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
    }
    try:
        import mlx.core as mx

        info["mlx"] = mx.__version__
        info["mlx_device"] = str(mx.default_device())
    except ImportError:
        info["mlx"] = None
    try:
        import gguf

        info["gguf"] = getattr(gguf, "__version__", "installed")
    except ImportError:
        info["gguf"] = None
    return info


#: speed goals, as the lab's speed over its peer's in the same run: (registry name, task) -> ratio
TARGET_RATIOS = {
    ("mxfp4", "quantize"): 5.0,
    ("nvfp4", "quantize"): 3.0,
    ("affine4_g64", "quantize"): 0.5,
    ("q4k", "decode"): 5.0,
}


#: issue 13: Q4_K quantize at least this many times faster than the code before the speed work
Q4K_QUANTIZE_TARGET_SPEEDUP = 3.0
#: the commit before issue 13's speed work, whose Q4_K quantizer is the peer of the row below
Q4K_QUANTIZE_PEER_COMMIT = "ec60641"
Q4K_QUANTIZE_SOURCE = "lab/formats/q4k/quantize.py"


def best_cpu_of(function, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        function()
        best = min(best, time.process_time() - start)
    return best


def quantizer_at(commit: str):
    """The Q4_K quantize function as the lab had it at `commit`, read with `git show` from this
    repository's history (it imports today's layout helpers, whose names have not changed), or
    None where that history is not at hand (a shallow clone, a source archive). Keeping the old
    code in history rather than as a second copy in the tree leaves one quantizer in the lab."""
    try:
        shown = subprocess.run(
            ["git", "show", f"{commit}:{Q4K_QUANTIZE_SOURCE}"], cwd=ROOT, capture_output=True, text=True, check=True
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    module = types.ModuleType(f"q4k_quantize_{commit}")
    exec(compile(shown.stdout, f"{commit}:{Q4K_QUANTIZE_SOURCE}", "exec"), module.__dict__)
    return module.quantize


def q4k_quantize_peer_row(w: np.ndarray, repeat: int) -> Row:
    """Q4_K quantize against the quantizer of the commit before issue 13's speed work, both timed
    here in CPU seconds (other people's work on a shared machine disturbs them far less than the
    wall clock). The two write the same bytes (tests/apps/test_speed_bench.py)."""
    fmt = FORMATS["q4k"]
    lab_seconds = best_cpu_of(lambda: fmt.quantize(w), repeat)
    title = f"{fmt.title} quantize CPU s vs the code before the speed work"
    previous = quantizer_at(Q4K_QUANTIZE_PEER_COMMIT)
    if previous is None:
        peer = f"(lab at {Q4K_QUANTIZE_PEER_COMMIT}: no git history here)"
        return Row(title, lab_seconds, peer, None, Q4K_QUANTIZE_TARGET_SPEEDUP, note="CPU seconds")
    return Row(
        title,
        lab_seconds,
        f"lab at {Q4K_QUANTIZE_PEER_COMMIT} (from git history)",
        best_cpu_of(lambda: previous(w), repeat),
        Q4K_QUANTIZE_TARGET_SPEEDUP,
        note="CPU seconds, same run",
    )


def _mlx_peer(w: np.ndarray, fmt: Format):
    """MLX's own quantize and dequantize of w for this format, as timed callables, or None."""
    try:
        import mlx.core as mx
    except ImportError:
        return None
    parameters = fmt.mlx.parameters()
    w_mx = mx.array(w)
    parts = mx.quantize(w_mx, **parameters)
    mx.eval(*parts)
    return (
        f"MLX {mx.__version__} CPU",
        "mx.quantize",
        "mx.dequantize",
        lambda: mx.eval(*mx.quantize(w_mx, **parameters)),
        lambda: mx.eval(mx.dequantize(*parts, dtype=mx.float32, **parameters)),
    )


def _gguf_peer(raw: np.ndarray, w: np.ndarray, fmt: Format):
    """gguf-py's quantize (where it has one for the type) and dequantize, as timed callables, or None."""
    try:
        import gguf
    except ImportError:
        return None
    qtype = gguf.GGMLQuantizationType[fmt.gguf_type]
    try:
        gguf.quants.quantize(w[:1], qtype)
        quantize = partial(gguf.quants.quantize, w, qtype)
    except NotImplementedError:
        quantize = None
    return "gguf-py", "quants.quantize", "quants.dequantize", quantize, lambda: gguf.quants.dequantize(raw, qtype)


def format_rows(w: np.ndarray, repeat: int) -> list[Row]:
    """A quantize row and a decode row for every registry format, each against MLX where MLX has the
    format, else against gguf-py; a format registered later joins with no edit here."""
    results = []
    for fmt in FORMATS.values():
        tensor = fmt.quantize(w)
        lab_quantize = best_of(lambda fmt=fmt: fmt.quantize(w), repeat)
        lab_decode = best_of(tensor.dequantize, repeat)
        peer = _mlx_peer(w, fmt) if fmt.mlx else _gguf_peer(tensor.to_gguf(), w, fmt) if fmt.gguf_type else None
        if peer is None:
            peer = ("no peer installed", "", "", None, None)
        library, quantize_call, decode_call, peer_quantize, peer_decode = peer
        quantize_peer = f"{library} {quantize_call}" if peer_quantize else f"({library} has no {fmt.title} quantizer)"
        results.append(
            Row(
                f"{fmt.title} quantize",
                lab_quantize,
                quantize_peer,
                best_of(peer_quantize, repeat) if peer_quantize else None,
                TARGET_RATIOS.get((fmt.name, "quantize")),
            )
        )
        results.append(
            Row(
                f"{fmt.title} decode",
                lab_decode,
                f"{library} {decode_call}" if peer_decode else f"({library})",
                best_of(peer_decode, repeat) if peer_decode else None,
                TARGET_RATIOS.get((fmt.name, "decode")),
            )
        )
    return results


def run(rows: int, cols: int, repeat: int) -> tuple[list[Row], dict]:
    rng = np.random.default_rng(0)
    w = rng.normal(0, 0.02, (rows, cols)).astype(np.float32)
    results: list[Row] = []

    results += format_rows(w, repeat)
    results.append(q4k_quantize_peer_row(w, repeat))

    codes = rng.integers(0, 16, size=w.shape, dtype=np.uint8)
    try:
        import ml_dtypes

        results.append(
            Row(
                "E2M1 decode",
                best_of(lambda: e2m1.decode(codes), repeat),
                "ml_dtypes float4_e2m1fn cast",
                best_of(lambda: codes.view(ml_dtypes.float4_e2m1fn).astype(np.float32), repeat),
                None,
            )
        )
        scaled = w * 100
        results.append(
            Row(
                "E4M3 encode",
                best_of(lambda: e4m3.encode(scaled), repeat),
                "ml_dtypes float8_e4m3fn cast",
                best_of(lambda: scaled.astype(ml_dtypes.float8_e4m3fn), repeat),
                None,
            )
        )
    except ImportError:
        # The lab's own timings still count; say why their peer columns are empty.
        missing = "ml_dtypes is not installed (the test extra has it)"
        results.append(Row("E2M1 decode", best_of(lambda: e2m1.decode(codes), repeat), missing, None, None))
    return results, environment(rows, cols)


#: issue 6: the whole real model through every format, in seconds
REAL_MODEL_TARGET_SECONDS = 10.0


def real_model_rows() -> tuple[list[Row], str]:
    """One row per format, and the whole run twice: with a fresh (cold) result cache, then warm."""
    if not real_weights.real_model_available():
        return [], f"real model skipped: the real extra is not installed ({real_weights.INSTALL_HINT})"
    weights = real_weights.load_weights()
    # A cache folder of the bench's own, so the cold run really computes whatever the user's cache holds.
    with tempfile.TemporaryDirectory(prefix="lab-bench-cache-") as folder:
        # CPU seconds beside the wall-clock ones: on a shared machine the gap is other people's work.
        started, cpu_started = time.perf_counter(), time.process_time()
        report = real_weights.evaluate_model(weights, cache=folder)
        cold_seconds, cold_cpu = time.perf_counter() - started, time.process_time() - cpu_started
        started, cpu_started = time.perf_counter(), time.process_time()
        real_weights.evaluate_model(weights, cache=folder)
        warm_seconds, warm_cpu = time.perf_counter() - started, time.process_time() - cpu_started
    n_weights = sum(w.size for w in weights.values() if w.ndim == 2)
    rows = [
        Row(
            f"real model: {summary.format}",
            summary.seconds,
            "(no peer)",
            None,
            None,
            note=f"relative RMSE {summary.relative_rmse:.4f}, {summary.bits_per_weight:.3f} bits/weight, "
            f"coverage {summary.coverage:.1%}",
        )
        for summary in report.summaries.values()
    ]
    verdict = "meets" if cold_seconds < REAL_MODEL_TARGET_SECONDS else "misses"
    every = f"real model: every format ({len(report.summaries)})"
    rows.append(
        Row(
            f"{every}, cold cache",
            cold_seconds,
            "(no peer)",
            None,
            None,
            note=f"target under {REAL_MODEL_TARGET_SECONDS:g} s: {verdict}; CPU {cold_cpu:.2f} s",
        )
    )
    rows.append(
        Row(
            f"{every}, warm cache",
            warm_seconds,
            "(no peer)",
            None,
            None,
            note=f"read back from the result cache; CPU {warm_cpu:.2f} s",
        )
    )
    workload = (
        f"{real_weights.MODEL_NAME}: {n_weights:,} float32 weights in {len(report.summaries)} formats, "
        "quantize + dequantize + error metrics per 2-D tensor"
    )
    return rows, workload


#: issue: Q8_0 decode of the real file's token_embd at least as fast as gguf-py's, in the same run,
#: and its peak of traced memory at most this many times the float32 output
Q8_0_DECODE_TARGET_RATIO = 1.0
Q8_0_DECODE_PEAK_GOAL = 1.25
#: the real GGUF file's Q8_0 tensor: 262144 x 640 weights, a 671 MB float32 output
REAL_Q8_0_TENSOR = "token_embd.weight"


def best_of_each(functions: dict[str, Callable], repeat: int) -> dict[str, float]:
    """The best time of each function, run in turns, one of each per repeat: a busy spell on a
    shared machine then slows every contender, not only the one it happens to fall on."""
    best = dict.fromkeys(functions, float("inf"))
    for _ in range(repeat):
        for name, function in functions.items():
            start = time.perf_counter()
            function()
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def peak_traced_bytes(function) -> int:
    """The most bytes allocated at once while `function` runs, as tracemalloc sees them (numpy
    reports its arrays' memory to it; a memory map is not an allocation)."""
    tracemalloc.start()
    try:
        function()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def real_q8_0_decode_rows(repeat: int) -> tuple[list[Row], str]:
    """The lab's two Q8_0 decode paths on the real file's token_embd against gguf-py's decode, timed
    in turns, with the peak memory of each against the float32 output: GGUFFile.decode reads the
    memory-mapped bytes in place; from_gguf(raw).dequantize() first builds the tensor, whose copy
    of the codes (a quarter of the output) keeps it from aliasing the file."""
    try:
        import gguf
    except ImportError:
        return [], "real GGUF rows skipped: gguf-py is not installed (the test extra has it)"
    from lab.interop.gguf import open_gguf
    from lab.study import shipped_gguf

    try:
        path = shipped_gguf.model_file()
    except shipped_gguf.RealFileUnavailableError as error:
        return [], f"real GGUF rows skipped: {error}"
    fmt = FORMATS["q8_0"]
    with open_gguf(path) as gf:
        info = gf.tensor(REAL_Q8_0_TENSOR)
        raw = gf.raw(REAL_Q8_0_TENSOR)
        output_bytes = info.n_elements * 4
        # the default budget, a quarter of physical memory, would refuse this tensor on a machine under 2.7 GB
        calls = {
            "file": lambda: gf.decode(REAL_Q8_0_TENSOR, budget=output_bytes),
            "tensor": lambda: fmt.from_gguf(raw).dequantize(),
            "peer": lambda: gguf.quants.dequantize(raw, gguf.GGMLQuantizationType.Q8_0),
        }
        seconds = best_of_each(calls, repeat)
        peaks = {name: peak_traced_bytes(calls[name]) / output_bytes for name in calls}
        tensor = fmt.from_gguf(raw)
        dequantize_peak = peak_traced_bytes(tensor.dequantize) / output_bytes
    verdict = "meets" if peaks["file"] <= Q8_0_DECODE_PEAK_GOAL else "misses"
    output = f"the {output_bytes / 1e6:.3g} MB output"
    peer = "gguf-py quants.dequantize"
    rows = [
        Row(
            f"Q8_0 decode, real {REAL_Q8_0_TENSOR}: GGUFFile.decode",
            seconds["file"],
            peer,
            seconds["peer"],
            Q8_0_DECODE_TARGET_RATIO,
            note=f"peak {peaks['file']:.2f}x {output}, goal <= {Q8_0_DECODE_PEAK_GOAL:g}x: {verdict}; "
            f"gguf-py's peak {peaks['peer']:.2f}x",
        ),
        Row(
            f"Q8_0 decode, real {REAL_Q8_0_TENSOR}: from_gguf(raw).dequantize()",
            seconds["tensor"],
            peer,
            seconds["peer"],
            Q8_0_DECODE_TARGET_RATIO,
            note=f"peak {peaks['tensor']:.2f}x {output}, the tensor's own copy of the codes included; "
            f"dequantize() alone {dequantize_peak:.2f}x",
        ),
    ]
    workload = (
        f"{path.name}: {REAL_Q8_0_TENSOR}, Q8_0, shape {info.shape} ({info.n_elements:,} weights), decoded to "
        f"float32 by the lab and by gguf-py in turns, best of {repeat}; peaks traced by tracemalloc"
    )
    return rows, workload


#: sentences the model rows embed: the retrieval task's passages, which are real prose
MODEL_SENTENCES = 64


def model_rows() -> list[Row]:
    """The lab's numpy forward pass (lab.study.model) on 64 sentences, and the whole retrieval study.

    The embed row's peer is the same forward pass with MXFP4 weights: quantizing changes the
    weights, not the work, so the two should take the same time. The study row is every format of
    lab.study.behaviour.retrieval_study from a cold cache, so it counts quantizing and embedding.
    """
    from lab.study import behaviour, retrieval_data
    from lab.study import model as sentence_model

    sentences = list(retrieval_data.PASSAGES[:MODEL_SENTENCES])
    fp32, quantized = sentence_model.load(), sentence_model.load("mxfp4")
    rows = [
        Row(
            f"model: embed {len(sentences)} sentences",
            best_of(lambda: fp32.embed(sentences), 3),
            "same pass, MXFP4 weights",
            best_of(lambda: quantized.embed(sentences), 3),
            None,
            note="lab numpy forward pass of all-MiniLM-L6-v2, float32",
        )
    ]
    behaviour.clear_caches()
    started = time.perf_counter()
    study = behaviour.retrieval_study()
    rows.append(
        Row(
            "model: retrieval study, every format",
            time.perf_counter() - started,
            "(no peer)",
            None,
            None,
            note=f"{len(study)} rows, {len(retrieval_data.PAIRS)} queries and passages each",
        )
    )
    return rows


def per_format_study_rows() -> list[Row]:
    """Each format on its own, in CPU seconds (the wall-clock ones move with other people's work):
    the whole-model study of each study row, cold (an empty result cache) and then warm, and each
    format's share of the retrieval study (quantize the model's Linears, embed every text), cold."""
    from lab.study import behaviour

    weights = real_weights.load_weights()
    rows = []
    with tempfile.TemporaryDirectory(prefix="lab-bench-cache-") as folder:
        for name in real_weights.study_rows():
            seconds = []
            for _ in ("cold", "warm"):
                cpu_started = time.process_time()
                real_weights.evaluate_model(weights, formats=[name], cache=folder)
                seconds.append(time.process_time() - cpu_started)
            rows.append(Row(f"real model CPU s: {name}, cold", seconds[0], "(no peer)", None, None, note="-"))
            rows.append(Row(f"real model CPU s: {name}, warm", seconds[1], "(no peer)", None, None, note="-"))
    behaviour.clear_caches()
    for name in behaviour.study_formats():
        cpu_started = time.process_time()
        behaviour.retrieval_row(name)  # fp32 first: every later row only adds its own format's model
        seconds = time.process_time() - cpu_started
        rows.append(Row(f"retrieval study CPU s: {name}", seconds, "(no peer)", None, None, note="cold"))
    return rows


#: notebook 12's budgets on two cores (issue #24): a token, one format's study cold, every format
#: cold, every format warm, in seconds; and the peak resident memory, in bytes
CHAT_TOKEN_BUDGET_S = 0.15
CHAT_ONE_FORMAT_COLD_S = 20.0
CHAT_EVERY_FORMAT_COLD_S = 300.0
CHAT_WARM_S = 2.0
CHAT_PEAK_RSS_BYTES = 3 * 10**9


def _budget_row(task: str, seconds: float, budget: float, note: str) -> Row:
    """A row against a budget: the 'peer' is the budget, so a ratio of 1x or more meets it."""
    return Row(task, seconds, f"budget {budget:g} s", budget, 1.0, note=note)


def chat_rows() -> tuple[list[Row], str]:
    """Gemma 3 270M in the lab's numpy (lab.study.chat) and notebook 12's study (lab.study.chat_study):
    a generated token, one format's study cold and warm, every format's cold and warm, peak RSS."""
    import resource

    from lab.study import chat, chat_study, shipped_gguf

    if not shipped_gguf.available():
        return [], f"chat rows skipped: {shipped_gguf.INSTALL_HINT}"
    started = time.perf_counter()
    model = chat.load()
    load_seconds = time.perf_counter() - started
    generation = model.generate(chat_study.PROMPTS[0], 32)
    rows = [
        _budget_row(
            "chat: one generated token",
            generation.seconds_per_token,
            CHAT_TOKEN_BUDGET_S,
            f"greedy with a KV cache, {len(generation.ids)} tokens; loading the model took {load_seconds:.1f} s",
        )
    ]
    previous = os.environ.get(chat_study.FORMATS_ENV)
    try:
        for label, formats, cold_budget in (
            ("one format (q4_0)", ["q4_0"], CHAT_ONE_FORMAT_COLD_S),
            (f"every format ({len(FORMATS)})", list(FORMATS), CHAT_EVERY_FORMAT_COLD_S),
        ):
            with tempfile.TemporaryDirectory(prefix="lab-bench-cache-") as folder:
                os.environ["LAB_CACHE_DIR"] = folder
                for state, budget in (("cold", cold_budget), ("warm", CHAT_WARM_S)):
                    started = time.perf_counter()
                    # warm: no model passed, so the study must read every result back without one
                    chat_study.run_study(formats, model=model if state == "cold" else None, cache=True)
                    rows.append(
                        _budget_row(
                            f"chat study: {label}, {state}",
                            time.perf_counter() - started,
                            budget,
                            "reference + formats: passage KL, same top, NLL; greedy answers to 3 prompts",
                        )
                    )
    finally:
        os.environ.pop("LAB_CACHE_DIR", None)
        if previous is not None:
            os.environ[chat_study.FORMATS_ENV] = previous
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kilobytes on Linux
    note = f"peak RSS of the bench process after the chat rows: {peak / 1e9:.2f} GB (budget {CHAT_PEAK_RSS_BYTES / 1e9:g} GB)"
    verdict = "meets" if peak <= CHAT_PEAK_RSS_BYTES else "misses"
    return rows, f"{note}: {verdict}"


#: notebook 10's first visit on two cores once labctl.py open has prepared it (issue #24), in seconds
NOTEBOOK_10_FIRST_VISIT_S = 30.0

# notebook 10 run headless, as a kernel runs it for a first visit: every cell, in a fresh process
_RUN_NOTEBOOK_10 = (
    "import importlib.util; "
    "spec = importlib.util.spec_from_file_location('nb10', 'notebooks/10_what_four_bits_do_to_answers.py'); "
    "module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module); module.app.run()"
)


def notebook_10_rows() -> list[Row]:
    """`labctl.py open`'s preparation (lab.teach.prepare) from an empty cache, then notebook 10's
    first visit, each in a fresh process sharing one result cache of its own."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="lab-bench-cache-") as folder:
        env = {**os.environ, "LAB_CACHE_DIR": folder}
        for task, command, budget, note in (
            (
                "notebook 10: labctl open's preparation, cold",
                ["-m", "lab.teach.prepare"],
                None,
                "every format's retrieval row, then the first format's views",
            ),
            (
                "notebook 10: first visit after it",
                ["-c", _RUN_NOTEBOOK_10],
                NOTEBOOK_10_FIRST_VISIT_S,
                "every cell, in a fresh process, from the prepared cache",
            ),
        ):
            started = time.perf_counter()
            subprocess.run([sys.executable, *command], cwd=ROOT, env=env, check=True, capture_output=True)
            seconds = time.perf_counter() - started
            if budget is None:
                rows.append(Row(task, seconds, "(no peer)", None, None, note=note))
            else:
                rows.append(_budget_row(task, seconds, budget, note))
    return rows


def table(results: list[Row]) -> str:
    lines = [
        "| task | lab s | peer | peer s | lab speed / peer | target | verdict | note |",
        "|---|---:|---|---:|---:|---:|---|---|",
    ]
    for row in results:
        peer_seconds = "-" if row.peer_seconds is None else f"{row.peer_seconds:.3f}"
        ratio = "-" if row.ratio is None else f"{row.ratio:.2f}x"
        target = "-" if row.target_ratio is None else f">= {row.target_ratio:g}x"
        lines.append(
            f"| {row.task} | {row.lab_seconds:.3f} | {row.peer} | {peer_seconds} | {ratio} | {target} | {row.verdict} "
            f"| {row.note or '-'} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=4096)
    parser.add_argument("--cols", type=int, default=4096)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    parser.add_argument("--no-real", action="store_true", help="leave out the real-model rows")
    parser.add_argument("--browser", action="store_true", help="only the browser and site rows (bench/browser.py)")
    parser.add_argument(
        "--first-render",
        action="store_true",
        help="only each notebook's live first render, against 3 s (bench/browser.py)",
    )
    args = parser.parse_args(argv)
    # refused now rather than after the minutes of measuring: a link where a result goes is never written through
    try:
        stem = "first_render" if args.first_render else "browser" if args.browser else "latest"
        for name in (f"{stem}.md", f"{stem}.json"):
            check_inside(args.out, name)
    except UnsafeWriteError as error:
        parser.exit(2, f"--out: {error}\n")
    if args.browser or args.first_render:
        from bench import browser

        return browser.run(args.out, first_render_only=args.first_render)
    if args.cols % 256:
        parser.error("--cols must be a multiple of 256 so every format can take the rows")
    results, info = run(args.rows, args.cols, args.repeat)
    if not args.no_real:
        real_gguf_rows, info["real_gguf"] = real_q8_0_decode_rows(args.repeat)
        results += real_gguf_rows
        chat, info["chat"] = chat_rows()
        results += chat
        from bench.mlx_lm_rows import mlx_lm_rows
        from bench.own_prompt import own_prompt_rows

        own_prompt, info["own_prompt"] = own_prompt_rows()
        results += own_prompt
        mlx_lm, info["mlx_lm"] = mlx_lm_rows()
        results += mlx_lm
        real_rows, info["real_model"] = real_model_rows()
        results += real_rows
        if real_rows:
            results += model_rows()
            results += per_format_study_rows()
            results += notebook_10_rows()
    text = table(results)
    print(text)
    for key in ("real_gguf", "chat", "own_prompt", "mlx_lm", "real_model"):
        if info.get(key):
            print(f"\n{info[key]}")
    args.out.mkdir(parents=True, exist_ok=True)
    write_inside(args.out, "latest.md", text + "\n")
    payload = {"environment": info, "results": [asdict(r) | {"ratio": r.ratio, "verdict": r.verdict} for r in results]}
    write_inside(args.out, "latest.json", json.dumps(payload, indent=2) + "\n")
    print(f"\nwritten to {args.out / 'latest.md'} and latest.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
