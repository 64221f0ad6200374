"""Q4_K on the device: MLX's two paths for a GGUF Q4_K block, against gguf-py's decoder.

There are two MLX paths: the block rewritten as MLX affine groups of 32 (lab.formats.q4k.to_mlx_affine,
with the parameters the format's record names as its `mlx_rewrite`), and a real GGUF file read back
with mx.load. The reference for Q4_K is gguf-py's decoder; where
MLX disagrees with it the pane says where, names the known misreading of Q4_K
that reproduces MLX's values if one does, and never moves the lab.
"""

from __future__ import annotations

import pathlib
import tempfile
from dataclasses import dataclass, replace

import numpy as np

from lab.device.compare import (
    compare_matmul,
    compare_values,
    product_and_sum_allowance,
    rounding_allowance,
)
from lab.device.report import Comparison, DeviceReport, DeviceRun, verdicts
from lab.device.session import DeviceSession
from lab.device.steps import Steps, device_name, learner_input
from lab.formats import q4k
from lab.formats.q4k import misreadings

GGUF_TENSOR_NAME = "lab.q4k"


def run_q4k(raw, x=None) -> DeviceReport:
    """Run Q4_K bytes [..., 144k] through MLX's two paths on every device, against gguf-py's decoder.

    (a) the blocks as MLX affine groups of 32 (lab.formats.q4k.to_mlx_affine) through mx.dequantize
        and mx.quantized_matmul;
    (b) a GGUF file written with gguf-py's GGUFWriter and read back with mx.load, whatever that
        returns, compared per element, per 32-lane subblock and per 256-weight block.
    """
    tensor = q4k.Q4KTensor(raw)
    session = DeviceSession.open("q4k", q4k.FORMAT, q4k.FORMAT.mlx_rewrite)
    if isinstance(session, DeviceReport):
        return session
    mx = session.mx
    # gguf-py loads when a Q4_K pane runs: notebooks that show only the MXFP4 or NVFP4 pane reach
    # this module through lab.device and need it not at start-up.
    import gguf

    with np.errstate(over="ignore", invalid="ignore"):  # an inf or NaN d is the block's own answer
        reference = gguf.quants.dequantize(tensor.raw, gguf.GGMLQuantizationType[q4k.FORMAT.gguf_type])
        lab_weights = tensor.dequantize()
    inputs = learner_input(x, tensor.shape[-1])
    lab_check = compare_values(
        "lab.q4k decode vs gguf-py",
        reference,
        lab_weights,
        group_size=q4k.SUBBLOCK_WEIGHTS,
        group_label="subblock",
        allowed=np.zeros(reference.shape),
        rounding="nothing",
        block_size=q4k.BLOCK_WEIGHTS,
    )
    runs = tuple(_run_q4k_on(mx, label, device, tensor, reference, inputs) for label, device in session.devices)
    return DeviceReport(
        "q4k",
        q4k.FORMAT.name,
        q4k.FORMAT.title,
        verdicts(runs),
        mlx_version=session.version,
        shape=tuple(tensor.shape),
        parameters=q4k.FORMAT.mlx_rewrite.parameters(),
        reference_checks=(lab_check,),
        runs=runs,
    )


def _run_q4k_on(mx, label, device, tensor, reference, inputs) -> DeviceRun:
    steps = Steps(mx)
    shape = tensor.shape
    rows = int(np.prod(shape[:-1], dtype=np.int64))
    layout = tensor.to_mlx_affine()
    packed, scales, biases = (np.ascontiguousarray(a).reshape(rows, -1) for a in layout)
    affine_mx = [mx.array(packed), mx.array(scales), mx.array(biases)]
    parameters = q4k.FORMAT.mlx_rewrite.parameters()
    comparisons, notes = [], []

    dequantized = steps.attempt(
        "mx.dequantize of the affine layout",
        lambda: mx.dequantize(*affine_mx, **parameters, dtype=mx.float32, stream=device),
    )
    if dequantized is not None:
        comparisons.append(
            compare_values(
                "affine path: mx.dequantize vs gguf-py",
                reference,
                dequantized.reshape(shape),
                group_size=q4k.SUBBLOCK_WEIGHTS,
                group_label="subblock",
                allowed=product_and_sum_allowance(layout[1], tensor.codes, reference),
                rounding="float32 rounding of gain·q and of the sum",
                block_size=q4k.BLOCK_WEIGHTS,
            )
        )
    y_mlx = steps.attempt(
        "mx.quantized_matmul of the affine layout",
        lambda: mx.quantized_matmul(mx.array(inputs), *affine_mx, transpose=True, **parameters, stream=device),
    )
    # the reference is gguf-py's decode, as for every Q4_K comparison, not the lab's own decoder
    matmul = None if y_mlx is None else compare_matmul(inputs, reference.reshape(rows, -1), y_mlx)

    loaded = _load_gguf(mx, steps, tensor, device)
    if loaded is not None:
        notes.append(f"mx.load on a Q4_K GGUF file returned {loaded.description}.")
        comparison = _compare_loaded(mx, steps, loaded, reference, tensor, device)
        if comparison is None:
            notes.append("Nothing MLX returned could be set against gguf-py's weights.")
        else:
            comparisons.append(comparison)
    return DeviceRun(
        device=label,
        device_name=device_name(mx, device),
        comparisons=tuple(comparisons),
        matmul=matmul,
        notes=tuple(notes),
        refusals=tuple(steps.refusals),
    )


@dataclass(frozen=True)
class _Loaded:
    arrays: dict[str, np.ndarray]  # as numpy; bfloat16 widened to float32
    dtypes: dict[str, str]  # the dtype MLX chose for each
    description: str


def _load_gguf(mx, steps: Steps, tensor: q4k.Q4KTensor, device) -> _Loaded | None:
    """Write the bytes as a Q4_K tensor in a real GGUF file and mx.load it; None if MLX refused."""
    import gguf

    with tempfile.TemporaryDirectory(prefix="four-bit-lab-") as folder:
        path = pathlib.Path(folder) / "block.gguf"
        writer = gguf.GGUFWriter(str(path), arch="four-bit-lab")
        writer.add_tensor(
            GGUF_TENSOR_NAME,
            np.ascontiguousarray(tensor.raw),
            raw_dtype=gguf.GGMLQuantizationType[q4k.FORMAT.gguf_type],
        )
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()

        # mx.load maps the file lazily: attempt evaluates the arrays while the file still exists
        loaded = steps.attempt("mx.load of the GGUF file", lambda: mx.load(str(path), stream=device))
    if loaded is None:
        return None
    dtypes = dict(zip(loaded, steps.dtypes, strict=True))
    arrays = {name: loaded[name] for name in sorted(loaded)}
    # the shape as MLX's .shape prints it: the note quotes what mx.load handed back
    # and the tensor's name in the file last, so that 'lab.q4k' does not read as the lab's decoder
    description = ", ".join(
        f"an array of {dtypes[name]} of .shape {array.shape} for the file's tensor '{name}'"
        for name, array in arrays.items()
    )
    return _Loaded(arrays=arrays, dtypes=dtypes, description=description or "no arrays")


def _compare_loaded(mx, steps: Steps, loaded: _Loaded, reference, tensor: q4k.Q4KTensor, device) -> Comparison | None:
    """Whatever mx.load returned, set against gguf-py's decode of the same bytes.

    A float array is compared as it is; packed (weights, scales[, biases]) are decoded first
    with the group size and bits their shapes imply.
    """
    name = GGUF_TENSOR_NAME
    if name not in loaded.arrays:
        return None
    if f"{name}.scales" in loaded.arrays:
        values, implied = dequantize_loaded(
            mx,
            steps,
            "mx.dequantize of the arrays mx.load returned",
            loaded.arrays[name],
            loaded.arrays[f"{name}.scales"],
            loaded.arrays.get(f"{name}.biases"),
            reference.shape[-1],
            stream=device,
        )
        if implied is None:
            return None
        returned = "float32"
    else:
        values, returned = loaded.arrays[name], loaded.dtypes[name]
    if values is None or values.size != reference.size or values.dtype.kind != "f":
        return None
    values = values.reshape(reference.shape).astype(np.float32)
    rounding_dtype = returned if returned in ("float16", "bfloat16") else "float32"
    comparison = compare_values(
        f"GGUF path: mx.load ({returned}) vs gguf-py",
        reference,
        values,
        group_size=q4k.SUBBLOCK_WEIGHTS,
        group_label="subblock",
        allowed=rounding_allowance(reference, rounding_dtype),
        rounding=f"{rounding_dtype} rounding",
        ulp_dtype=rounding_dtype,
        block_size=q4k.BLOCK_WEIGHTS,
    )
    return replace(comparison, note=_diagnose_loaded(values, tensor, rounding_dtype, comparison))


def dequantize_loaded(mx, steps: Steps, what: str, packed, scales, biases, length: int, stream=None):
    """mx.dequantize of packed weights, scales and biases (or None) as mx.load returned them, for
    rows of `length`, with the group size and bits their shapes imply.

    (values float32, (group_size, bits)); (None, None) where the shapes imply no whole group size
    and bit width; (None, implied) where MLX refused, and `steps` records why under `what`.
    """
    implied = _implied_group_size_and_bits(packed, scales, length)
    if implied is None:
        return None, None
    group_size, bits = implied
    values = steps.attempt(
        what,
        lambda: mx.dequantize(
            mx.array(packed),
            mx.array(scales),
            None if biases is None else mx.array(biases),
            group_size=group_size,
            bits=bits,
            dtype=mx.float32,
            **({} if stream is None else {"stream": stream}),
        ),
    )
    return values, implied


def _implied_group_size_and_bits(packed: np.ndarray, scales: np.ndarray, length: int) -> tuple[int, int] | None:
    """The group size and bits the shapes of packed uint32 words and scales imply for rows of `length`.

    None when they imply no whole number of either, so nothing can be decoded.
    """
    if packed.ndim == 0 or scales.ndim == 0 or scales.shape[-1] == 0 or length % scales.shape[-1]:
        return None
    if (packed.shape[-1] * 32) % length:
        return None
    return length // scales.shape[-1], packed.shape[-1] * 32 // length


def _diagnose_loaded(values: np.ndarray, tensor: q4k.Q4KTensor, rounding_dtype: str, comparison: Comparison) -> str:
    """When MLX disagrees, name a known misreading of Q4_K (lab.formats.q4k.misreadings) that reproduces it exactly."""
    if comparison.within_rounding == comparison.total:
        return ""
    misreading = misreadings.misreading_matching(tensor.raw, values, rounding_dtype)
    if misreading is None:
        return "None of lab.zoo's deliberately wrong decoders reproduces MLX's values."
    return (
        f"MLX's values equal, at every element, lab.zoo's deliberately wrong decoder "
        f"'{misreading.name}' rounded to {rounding_dtype}: {misreading.what_is_wrong}"
    )
