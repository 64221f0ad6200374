"""One block of a registry format on every MLX device: what the block pane asks MLX to do, and what came back.

lab.device.blocks resolves the format and opens the session; everything here reads the Format it
was handed (its MLX mode, quantizer and NaN scale bytes) and the tensor itself (NVFP4's tensor
scale), never a format's name:
    mx.quantize         on the original weights, compared byte for byte with the lab's bytes,
                        then decoded by MLX again: MLX's own round trip beside the lab's;
    mx.dequantize       of the lab's bytes with dtype=float32, against the lab's dequantize(),
                        and what the default dtype would have handed back instead;
    mx.quantized_matmul with the learner's input x, against a float64 dot product of the lab's
                        dequantized weights.
"""

from __future__ import annotations

import numpy as np

from lab._arrays import to_float32_input
from lab.device.compare import compare_exact, compare_matmul, compare_values, non_finite_values
from lab.device.decoding import (
    default_dtype_comparison,
    dequantize_allowance,
    forgotten_global_scale,
    nan_scale_note,
    tensor_scale_range,
)
from lab.device.report import Comparison, DeviceReport, DeviceRun, verdicts
from lab.device.round_trip import round_trip
from lab.device.session import DeviceSession
from lab.device.steps import Steps, device_name, learner_input
from lab.errors import LabError, ShapeError
from lab.formats import mlx_layout
from lab.formats.registry import Format, MLXMode

#: settings a lab tensor carries beyond MLX's parameters, shown with them where the tensor has them
_TENSOR_SETTINGS = ("rule", "global_scale")


def measure_on_devices(session: DeviceSession, spec: Format, w, tensor, x, options: dict) -> DeviceReport:
    """The block pane's report: the lab's tensor of `spec` (given, or quantized from w with
    `options`) through MLX on each of the session's devices. run_block documents the arguments."""
    mx = session.mx
    try:
        weights = None if w is None else to_float32_input(w)
        # a huge block can overflow a scale to inf; the comparison shows it, a warning would not help
        with np.errstate(over="ignore", invalid="ignore"):
            lab_tensor = tensor if tensor is not None else spec.quantize(w, **options)
    except LabError as error:
        message = f"The lab could not quantize this input: {error}"
        return DeviceReport("block", spec.name, spec.title, message, mlx_version=session.version)
    if weights is not None and weights[0].shape != lab_tensor.shape:
        raise ShapeError(f"w has shape {weights[0].shape} but the tensor holds {lab_tensor.shape}")
    layout = _checked_layout(spec, lab_tensor)
    inputs = learner_input(x, lab_tensor.shape[-1])
    runs = tuple(
        _run_block_on(mx, label, device, spec, lab_tensor, layout, weights, inputs) for label, device in session.devices
    )
    shown = spec.mlx.parameters()
    shown.update({name: getattr(lab_tensor, name) for name in _TENSOR_SETTINGS if hasattr(lab_tensor, name)})
    return DeviceReport(
        "block",
        spec.name,
        spec.title,
        verdicts(runs),
        mlx_version=session.version,
        shape=tuple(lab_tensor.shape),
        parameters=shown,
        runs=runs,
    )


def _checked_layout(fmt: Format, tensor) -> tuple[np.ndarray, ...]:
    """The tensor's arrays in MLX's layout, checked against the format's MLX bits and group size."""
    mode, layout = fmt.mlx, tensor.mlx_layout()
    length, packed, scales = tensor.shape[-1], layout[0], layout[1]
    if packed.shape[-1] * 32 != length * mode.bits or scales.shape[-1] * mode.group_size != length:
        raise LabError(
            f"running {fmt.title} needs {mode.bits}-bit codes with one scale per {mode.group_size} weights; this "
            f"{type(tensor).__name__} packs {packed.shape[-1] * 32 / length:g} bits a weight and "
            f"{length / scales.shape[-1]:g} weights a scale"
        )
    return layout


def _run_block_on(mx, label, device, fmt: Format, tensor, layout, weights, inputs) -> DeviceRun:
    steps = Steps(mx)
    parameters, group_size, bits = fmt.mlx.parameters(), fmt.mlx.group_size, fmt.mlx.bits
    shape = tensor.shape
    rows = int(np.prod(shape[:-1], dtype=np.int64))
    group_shape = shape[:-1] + (shape[-1] // group_size,)

    def as_rows(array):  # MLX quantizes matrices: every leading axis folds into rows
        return np.ascontiguousarray(array).reshape(rows, -1)

    lab_arrays = [as_rows(array) for array in layout]
    # float scales and biases go to MLX in the dtype the tensor keeps them in (affine of bfloat16
    # weights keeps bfloat16 ones); code words and scale bytes go as they are
    float_dtype = getattr(tensor, "dtype", "float32")
    lab_mx = [mlx_layout.to_mx(a, float_dtype) if a.dtype.kind == "f" else mx.array(a) for a in lab_arrays]
    global_scale = getattr(tensor, "global_scale", None)
    with_global = {} if global_scale is None else {"global_scale": mx.array(global_scale, dtype=mx.float32)}
    comparisons, notes, flags = [], [], []
    with np.errstate(over="ignore", invalid="ignore"):  # inf and NaN weights are reported, not warned about
        lab_weights = tensor.dequantize()
    allowance = dequantize_allowance(lab_arrays, bits, lab_weights)

    recorded_round_trip = None
    if weights is not None:
        values, dtype = weights
        w_mx = mx.array(as_rows(values)).astype(getattr(mx, dtype))

        def mlx_quantize():
            return mx.quantize(w_mx, **parameters, **with_global, stream=device)

        quantized = steps.attempt("mx.quantize", mlx_quantize)
        if quantized is not None:
            comparisons += _compare_quantized(lab_arrays, quantized, shape, fmt.mlx)
            returned = steps.attempt(
                "mx.dequantize of mx.quantize's own arrays (dtype=float32)",
                lambda: mx.dequantize(*mlx_quantize(), **parameters, **with_global, dtype=mx.float32, stream=device),
            )
            if returned is not None:
                recorded_round_trip = round_trip(
                    values, lab_weights, returned.reshape(shape), group_size=group_size, allowance=allowance
                )
                comparisons.append(recorded_round_trip.comparison)
                mlx_scales = quantized[1].reshape(group_shape)
                flags.append(non_finite_values("MLX's round trip", recorded_round_trip.mlx, mlx_scales, group_size))

    dequantized = steps.attempt(
        "mx.dequantize(dtype=float32)",
        lambda: mx.dequantize(*lab_mx, **parameters, **with_global, dtype=mx.float32, stream=device),
    )
    default_dtype, forgotten_factor = None, None
    if dequantized is not None:
        mlx_weights = dequantized.reshape(shape)
        lab_scales = lab_arrays[1].reshape(group_shape)
        comparisons.append(
            compare_values(
                "mx.dequantize(dtype=float32) vs lab dequantize()",
                lab_weights,
                mlx_weights,
                group_size=group_size,
                group_label="scale group",
                **allowance,
            )
        )
        flags.append(non_finite_values("mx.dequantize of the lab's bytes", mlx_weights, lab_scales, group_size))
        default = steps.attempt(
            "mx.dequantize(default dtype)",
            lambda: mx.dequantize(*lab_mx, **parameters, **with_global, stream=device),
        )
        if default is not None:
            default_dtype = steps.dtypes[0]
            comparisons.append(default_dtype_comparison(default_dtype, default.reshape(shape), mlx_weights, group_size))
        if global_scale is not None:
            forgotten = steps.attempt(
                "mx.dequantize without global_scale",
                lambda: mx.dequantize(*lab_mx, **parameters, dtype=mx.float32, stream=device),
            )
            if forgotten is not None:
                forgotten_factor, note = forgotten_global_scale(
                    forgotten.reshape(shape), mlx_weights, global_scale, tensor.tensor_factor
                )
                notes.append(note)
        nan_scales = nan_scale_note(fmt.nan_scale_bytes, lab_scales, group_size, lab_weights, mlx_weights)
        if nan_scales:
            notes.append(nan_scales)

    matmul = None
    y_mlx, note = _quantized_matmul(mx, steps, inputs, lab_mx, parameters, with_global, tensor, device)
    if y_mlx is not None:
        original = None if weights is None else as_rows(weights[0])
        matmul = compare_matmul(inputs, as_rows(lab_weights), y_mlx, original, note)
    return DeviceRun(
        device=label,
        device_name=device_name(mx, device),
        comparisons=tuple(comparisons),
        matmul=matmul,
        default_dtype=default_dtype,
        forgotten_global_scale_factor=forgotten_factor,
        notes=tuple(notes),
        refusals=tuple(steps.refusals),
        round_trip=recorded_round_trip,
        non_finite=tuple(flag for flag in flags if flag is not None),
    )


def _compare_quantized(lab_arrays, quantized, shape, mode: MLXMode) -> list[Comparison]:
    """mx.quantize's arrays against the lab's, byte for byte; differing codes listed per element."""
    lab_packed, mlx_packed = lab_arrays[0].astype(np.uint32), quantized[0].astype(np.uint32)
    lab_bytes, mlx_bytes = lab_packed.view(np.uint8), mlx_packed.view(np.uint8)
    lab_codes, mlx_codes = (mlx_layout.unpack(packed, mode.bits).reshape(shape) for packed in (lab_packed, mlx_packed))
    comparisons = [
        compare_exact(
            "mx.quantize packed codes vs lab",
            "byte",
            lab_codes,
            mlx_codes,
            group_size=mode.group_size,
            group_label="scale group",
            total=lab_bytes.size,
            identical=int((lab_bytes == mlx_bytes).sum()),
        )
    ]
    # after the codes MLX returns scales, and biases in the modes that have them
    group_shape = shape[:-1] + (shape[-1] // mode.group_size,)
    for (name, unit), lab_array, mlx_array in zip(
        (("scales", "scale"), ("biases", "bias")), lab_arrays[1:], quantized[1:], strict=False
    ):
        comparisons.append(
            compare_exact(
                f"mx.quantize {name} vs lab",
                unit,
                lab_array.reshape(group_shape),
                mlx_array.reshape(group_shape),
                group_size=1,
                group_label="scale group",
            )
        )
    return comparisons


def _quantized_matmul(mx, steps: Steps, inputs, lab_mx, parameters, with_global, tensor, device):
    """y = x @ ŵ.T from MLX; with a tensor scale MLX's matmul cannot take, the factor is applied after."""
    x_mx = mx.array(inputs)

    def call(**extra):
        return mx.quantized_matmul(x_mx, *lab_mx, transpose=True, **parameters, **extra, stream=device)

    if not with_global:
        return steps.attempt("mx.quantized_matmul", call), ""
    quiet = Steps(mx)
    y_mlx = quiet.attempt("mx.quantized_matmul(global_scale=...)", lambda: call(**with_global))
    if y_mlx is not None:
        return y_mlx, "mx.quantized_matmul took global_scale itself."
    y_mlx = steps.attempt("mx.quantized_matmul", call)
    if y_mlx is None:
        return None, ""
    factor = np.float32(tensor.tensor_factor)
    divisor = tensor_scale_range(tensor.global_scale, tensor.tensor_factor)
    return y_mlx * factor, (
        f"This MLX's quantized_matmul takes no global_scale ({quiet.refusals[0]}); its output was multiplied "
        f"by the tensor factor global_scale / {divisor:.6g} = {float(factor):.9g} in float32 afterwards."
    )
