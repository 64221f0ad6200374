"""mlx-lm on the lab's chat model, on this CPU: the bridge's load, greedy tokens a second beside the lab's
own numpy forward pass, and the guide's four checks for one mode, cold.

    .venv/bin/python -m bench.mlx_lm_rows        # the rows, printed as bench.run prints its table

Tokens a second are measured in one run, the lab's numpy generation (lab.study.chat) as the peer of
mlx-lm's (lab.device.verify.greedy_ids), 20 greedy tokens after notebook 12's first prompt, so the
ratio says how mlx-lm's CPU decode compares with the lab's. The checks' row holds them to the issue's
budget: every check for one mode, its model built cold, in at most 60 s. `mlx_lm_rows()` is for
bench.run's table.
"""

from __future__ import annotations

import sys
import time

from bench.run import Row, table

TOKENS = 20
#: every check for one mode, the model built cold, at most this many seconds (issue 38)
CHECKS_BUDGET_S = 60.0
MODE = "mxfp4"


def _timed(function) -> tuple[float, object]:
    start = time.perf_counter()
    value = function()
    return time.perf_counter() - start, value


def mlx_lm_rows() -> tuple[list[Row], str]:
    from lab.device import verify
    from lab.formats import FORMATS
    from lab.study import chat, chat_study, shipped_gguf

    if not shipped_gguf.available():
        return [], f"mlx-lm rows skipped: {shipped_gguf.INSTALL_HINT}"
    try:
        import mlx_lm  # noqa: F401
    except ImportError as error:
        return [], f"mlx-lm rows skipped: {error}"
    path = shipped_gguf.model_file()
    load_seconds, _ = _timed(lambda: verify.mlx_lm_model(verify.REFERENCE, path=path))
    model = chat.load(path)
    ids = model.tokenize(chat_study.PROMPTS[0])
    lab_seconds, _ = _timed(lambda: model.generate(chat_study.PROMPTS[0], TOKENS))
    mlx_seconds, _ = _timed(lambda: verify.greedy_ids(verify.REFERENCE, ids, TOKENS))
    mode = FORMATS[MODE].mlx

    def every_check():
        verify.greedy_ids(MODE, ids, TOKENS)
        verify.logit_check(MODE, ids)
        verify.prefill_check(MODE, ids, 2)
        for operation in ("quantized_matmul", "gather_qmm"):
            verify.sentinel_check(operation, mode, verify.CPU_SHAPE)

    checks_seconds, _ = _timed(every_check)
    rows = [
        Row("mlx-lm: the bridge's load (GGUF -> gemma3_text, float32)", load_seconds, "-", None, None),
        Row(
            f"mlx-lm: {TOKENS} greedy tokens, float32 ({TOKENS / mlx_seconds:.1f} tokens/s)",
            mlx_seconds,
            f"the lab's numpy ({TOKENS / lab_seconds:.1f} tokens/s)",
            lab_seconds,
            None,
        ),
        Row(
            f"mlx-lm: the four checks for {MODE}, cold",
            checks_seconds,
            f"budget {CHECKS_BUDGET_S:g} s",
            CHECKS_BUDGET_S,
            1.0,
            note="check 4 at the CPU's shape (lab.device.verify.CPU_SHAPE)",
        ),
    ]
    return rows, "mlx-lm: lab.device.verify on the shipped Gemma 3 270M, MLX's CPU"


if __name__ == "__main__":
    found, info = mlx_lm_rows()
    print(table(found))
    print(info, file=sys.stderr)
