"""The on-device pane: the block the learner is looking at, run through the installed MLX.

    run_block(fmt, w, tensor=None, x=None, **options)   any registered format MLX has a mode for
    run_q4k(raw, x=None)                                 Q4_K bytes: MLX's affine rewrite and mx.load

Every MLX device present gets its own run: the CPU always, the GPU when there is one. Without
MLX the report says so and how to install it; a step MLX refuses becomes a line in the report,
not an exception. The modules, one job each:

    report      the dataclasses a run produces (DeviceReport, DeviceRun, Comparison, RoundTrip...)
    render      report_markdown(report): the report as markdown, in words ("row 0, element 5"), not tuples
    compare     pure numpy comparisons, rounding allowances and the float32 accumulation bound, no MLX
    steps       the guarded MLX calls, the device list, refusals
    session     DeviceSession: the installed MLX and its devices, how MLX runs each format
                (mlx_parameters), and the one wording of "nothing runs here" (NoDevice)
    blocks      run_block: every format in the registry with an MLX mode
    decoding    what MLX's decoder does with the lab's bytes beyond the plain comparison
    round_trip  MLX's own quantize-then-dequantize beside the lab's
    q4k         run_q4k, mx.load of a GGUF file, and the diagnosis of what MLX got wrong
    support     mlx_support: which registry formats MLX runs, and what mx.load makes of each GGUF type
    model       run_model: the real model's Linears through mx.quantized_matmul

May import: lab.codes, lab.formats, lab.interop, lab.study and lab's root modules; never lab.teach.
"""

from lab.device.blocks import resolve_format, run_block
from lab.device.compare import FLOAT32_UNIT_ROUNDOFF, compare_matmul, compare_values
from lab.device.model import run_model
from lab.device.q4k import GGUF_TENSOR_NAME, run_q4k
from lab.device.render import LISTED_DIFFERENCES, NAMED_GROUPS, report_markdown
from lab.device.report import (
    Breakdown,
    Comparison,
    DeviceReport,
    DeviceRun,
    Difference,
    MatmulComparison,
    NonFinite,
    NonFiniteValue,
    RoundTrip,
)
from lab.device.steps import mlx_devices
from lab.device.support import mlx_support

__all__ = [
    "FLOAT32_UNIT_ROUNDOFF",
    "GGUF_TENSOR_NAME",
    "LISTED_DIFFERENCES",
    "NAMED_GROUPS",
    "Breakdown",
    "Comparison",
    "DeviceReport",
    "DeviceRun",
    "Difference",
    "MatmulComparison",
    "NonFinite",
    "NonFiniteValue",
    "RoundTrip",
    "compare_matmul",
    "compare_values",
    "mlx_devices",
    "mlx_support",
    "report_markdown",
    "resolve_format",
    "run_block",
    "run_model",
    "run_q4k",
]
