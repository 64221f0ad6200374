"""Which registry formats the installed MLX can run, measured, never assumed.

For every format: MLX's quantization mode, or "none"; and for a format with a GGUF type, what
`mx.load` hands back for a small GGUF file holding that type (written with the lab's writer),
set against gguf-py's decode of the same bytes as read back from the file. mx.load can return a
float tensor it dequantized itself, a quantized triple (packed weights, scales, biases) that
mx.dequantize then decodes, no arrays at all, or a refusal; each row says which, and how far
MLX's weights are from gguf-py's, or the error text.
"""

from __future__ import annotations

import pathlib
import tempfile

import gguf
import numpy as np

from lab.device.q4k import dequantize_loaded
from lab.device.steps import Steps, mlx_version
from lab.formats import FORMATS, mlx_layout
from lab.interop.gguf.write import write_gguf

#: the tensor's name in the probe file, ending in ".weight" as GGUF's weight tensors do: MLX names
#: a quantized triple's scales and biases by cutting seven characters (".weight") off it, so
#: "lab.probe" would come back with "la.scales" beside it
PROBE_TENSOR = "probe.weight"
PROBE_SCALES = "probe.scales"
PROBE_BIASES = "probe.biases"
#: two rows of 256 weights: one super-block of Q4_K, Q6_K and IQ4_XS per row, whole blocks of every GGUF type
PROBE_SHAPE = (2, 256)


def probe_weights(seed: int = 0) -> np.ndarray:
    """The weights every GGUF type is written from: N(0, 1), float32 [2, 256]."""
    return np.random.default_rng(seed).standard_normal(PROBE_SHAPE).astype(np.float32)


def mlx_support(seed: int = 0) -> list[dict]:
    """One row per registry format: its MLX mode, and what mx.load does with its GGUF type.

    Row keys: format, title, mlx_mode ("none" where MLX has no mode), gguf_type ("none"), mx_load
    (the kind of answer: "float tensor", "quantized triple", "no arrays", "refused", "not GGUF",
    or "MLX not installed"), returned (the arrays' dtypes and shapes), max_abs_diff (MLX's weights
    against gguf-py's; None where there are none to compare), error (MLX's error text, or ""),
    and mlx_version.
    """
    try:
        mx = mlx_layout.mlx_core()
    except mlx_layout.MLXUnavailableError as error:
        mx, missing = None, str(error)
    weights = probe_weights(seed)
    rows = []
    for fmt in FORMATS.values():
        row = {
            "format": fmt.name,
            "title": fmt.title,
            "mlx_mode": "none" if fmt.mlx is None else fmt.mlx.mode,
            "gguf_type": fmt.gguf_type or "none",
            "mx_load": "not GGUF",
            "returned": "",
            "max_abs_diff": None,
            "error": "",
            "mlx_version": "none" if mx is None else mlx_version(mx),
        }
        if mx is None:
            row.update(mx_load="MLX not installed", error=missing)
        elif fmt.gguf_type is not None:
            row.update(_load_type(mx, fmt.gguf_type, weights))
        rows.append(row)
    return rows


def _load_type(mx, type_name: str, weights: np.ndarray) -> dict:
    """Write `weights` as `type_name` in a GGUF file, mx.load it and compare with gguf-py's decode."""
    steps = Steps(mx)
    with tempfile.TemporaryDirectory(prefix="four-bit-lab-") as folder:
        path = write_gguf(pathlib.Path(folder) / "probe.gguf", {PROBE_TENSOR: weights}, {PROBE_TENSOR: type_name})
        stored = gguf.GGUFReader(path).tensors[0]
        with np.errstate(over="ignore", invalid="ignore"):  # a NaN scale decodes as NaN, as gguf-py does
            reference = gguf.quants.dequantize(np.array(stored.data), stored.tensor_type).reshape(weights.shape)
        # mx.load maps the file lazily: attempt evaluates the arrays while the file still exists
        loaded = steps.attempt("mx.load", lambda: mx.load(str(path)))
    if loaded is None:
        return {"mx_load": "refused", "error": steps.refusals[-1].removeprefix("mx.load: ")}
    dtypes = dict(zip(loaded, steps.dtypes, strict=True))
    returned = ", ".join(f"{name} {dtypes[name]} {list(array.shape)}" for name, array in sorted(loaded.items()))
    if PROBE_TENSOR not in loaded:
        return {"mx_load": "no arrays" if not loaded else "other arrays", "returned": returned}
    if PROBE_SCALES not in loaded:
        values = loaded[PROBE_TENSOR].astype(np.float32).reshape(weights.shape)
        return {"mx_load": "float tensor", "returned": returned, "max_abs_diff": _max_abs_diff(values, reference)}
    row = {"mx_load": "quantized triple", "returned": returned}
    values, implied = dequantize_loaded(
        mx,
        steps,
        "mx.dequantize",
        loaded[PROBE_TENSOR],
        loaded[PROBE_SCALES],
        loaded.get(PROBE_BIASES),
        weights.shape[-1],
    )
    if implied is None:
        return {**row, "error": "the arrays' shapes imply no whole group size and bit width"}
    group_size, bits = implied
    if values is None:
        return {**row, "error": steps.refusals[-1]}
    return {
        **row,
        "returned": f"{returned}; group {group_size}, {bits} bits",
        "max_abs_diff": _max_abs_diff(values, reference),
    }


def _max_abs_diff(values: np.ndarray, reference: np.ndarray) -> float:
    return float(np.max(np.abs(values.astype(np.float64) - reference.astype(np.float64))))
