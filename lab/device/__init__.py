"""The on-device pane: the block the learner is looking at, run through the installed MLX.

    run_block(fmt, w, tensor=None, x=None, **options)   any registered format MLX has a mode for
    run_q4k(raw, x=None)                                 Q4_K bytes: MLX's affine rewrite and mx.load

Every MLX device present gets its own run: the CPU always, the GPU when there is one. Without
MLX the report says so and how to install it; a step MLX refuses becomes a line in the report,
not an exception. The modules, one job each:

    report      the one report every pane returns (DeviceReport, one DeviceRun per device) and its parts
    render      report_markdown(report): any pane's report as markdown, in words ("row 0, element 5"),
                not tuples; and how many differences a report lists
    compare     pure numpy comparisons, rounding allowances, the float32 accumulation bound and the
                per-Linear tally, no MLX
    steps       the guarded MLX calls, the device list, refusals
    session     DeviceSession: the installed MLX and its devices, the MLX mode a format runs in
                (mlx_mode), and the one report of "nothing runs here"
    blocks      run_block: resolves the format, opens the session, hands both down to block_runs
    block_runs  a block of any format with an MLX mode, on every device
    decoding    what MLX's decoder does with the lab's bytes beyond the plain comparison
    round_trip  MLX's own quantize-then-dequantize beside the lab's
    q4k         run_q4k, mx.load of a GGUF file, and the diagnosis of what MLX got wrong
    support     mlx_support: which registry formats MLX runs, and what mx.load makes of each GGUF type
    model       run_model: the embedding model's Linears through mx.quantized_matmul
    chat        run_chat: the chat model's Linears through mx.quantized_matmul, its greedy answers
    verify      the MLX guide's recipe (§10, §11) by mlx-lm itself: the bridge from the GGUF to
                mlx-lm's gemma3_text, greedy ids, checks 1 to 4, the quantized KV cache
    guide_checks  notebook 13's checks per mode, cached, and the three implementations' table
    predicates  an nn.quantize predicate built from rows of data, never from code
    mlx_folder  the chat model written as an MLX folder mlx_lm.load opens, and a folder checked before loading
    verify_folders  `labctl.py verify` on two MLX folders

May import: lab.codes, lab.formats, lab.interop, lab.study and lab's root modules; never lab.teach.
"""

from lab.device.blocks import resolve_format, run_block
from lab.device.compare import FLOAT32_UNIT_ROUNDOFF, compare_matmul, compare_values
from lab.device.model import run_model
from lab.device.q4k import GGUF_TENSOR_NAME, run_q4k
from lab.device.render import LISTED_DIFFERENCES, NAMED_GROUPS, report_markdown
from lab.device.report import (
    Breakdown,
    ChatAnswer,
    Comparison,
    DeviceReport,
    DeviceRun,
    Difference,
    LayerDifference,
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
    "ChatAnswer",
    "Comparison",
    "DeviceReport",
    "DeviceRun",
    "Difference",
    "LayerDifference",
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
