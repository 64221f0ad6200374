"""Benchmark the lab's codecs against their peers, in the same run, as ratios.

    .venv/bin/python bench/run.py                 # 16 M weights (4096 x 4096), table + bench/results/
    .venv/bin/python bench/run.py --rows 512      # a quick run
    .venv/bin/python bench/run.py --no-real       # without the real-model rows
    .venv/bin/python bench/run.py --browser       # page speed and site weight instead (bench/browser.py)

Each line times the lab and the peer doing the same work on the same data, best of --repeat runs,
and reports lab throughput / peer throughput. The targets (issue 6) are ratios measured here, never
in timed tests. The real-model rows time all-MiniLM-L6-v2 (lab.real_weights, the `real` extra) run
through every format once, format by format and in total; they have no peer, and are skipped with
a note when the extra is not installed. The run also records what the article's last check asks for: the workload, tensor
types, hardware, build and thread settings, so a number can be traced to the machine that made it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from lab.codes import e2m1, e4m3  # noqa: E402
from lab.formats import FORMATS, Format  # noqa: E402
from lab.teach import real_weights  # noqa: E402


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
        lab_quantize = best_of(lambda fmt=fmt: fmt.quantize(w), 1 if fmt.name == "q4k" else repeat)
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
    """One row per format and one for the whole run of the real model, or none and the reason."""
    if not real_weights.real_model_available():
        return [], f"real model skipped: the real extra is not installed ({real_weights.INSTALL_HINT})"
    weights = real_weights.load_weights()
    started = time.perf_counter()
    report = real_weights.evaluate_model(weights)
    total_seconds = time.perf_counter() - started
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
    verdict = "meets" if total_seconds < REAL_MODEL_TARGET_SECONDS else "misses"
    rows.append(
        Row(
            f"real model: every format ({len(report.summaries)})",
            total_seconds,
            "(no peer)",
            None,
            None,
            note=f"target under {REAL_MODEL_TARGET_SECONDS:g} s: {verdict}",
        )
    )
    workload = (
        f"{real_weights.MODEL_NAME}: {n_weights:,} float32 weights in {len(report.summaries)} formats, "
        "quantize + dequantize + error metrics per 2-D tensor"
    )
    return rows, workload


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
    args = parser.parse_args(argv)
    if args.browser:
        from bench import browser

        return browser.run(args.out)
    if args.cols % 256:
        parser.error("--cols must be a multiple of 256 so every format can take the rows")
    results, info = run(args.rows, args.cols, args.repeat)
    if not args.no_real:
        real_rows, info["real_model"] = real_model_rows()
        results += real_rows
    text = table(results)
    print(text)
    if info.get("real_model"):
        print(f"\n{info['real_model']}")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "latest.md").write_text(text + "\n")
    payload = {"environment": info, "results": [asdict(r) | {"ratio": r.ratio, "verdict": r.verdict} for r in results]}
    (args.out / "latest.json").write_text(json.dumps(payload, indent=2) + "\n")
    print(f"\nwritten to {args.out / 'latest.md'} and latest.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
