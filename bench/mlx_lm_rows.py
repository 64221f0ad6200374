"""mlx-lm on the lab's chat model, on this CPU: the bridge's load, greedy tokens a second beside the lab's
own numpy forward pass, and the guide's four checks for one mode, cold.

    .venv/bin/python -m bench.mlx_lm_rows        # the rows, printed as bench.run prints its table

Tokens a second are measured in one run, the lab's numpy generation (lab.study.chat) as the peer of
mlx-lm's (lab.device.verify.greedy_ids), 20 greedy tokens after notebook 12's first prompt, so the
ratio says how mlx-lm's CPU decode compares with the lab's. The checks' row holds notebook 13's
(lab.device.guide_checks) to the issue's budget: every check for one mode, its model built cold,
in at most 60 s. `mlx_lm_rows()` is for
bench.run's table.
"""

from __future__ import annotations

import os
import sys
import tempfile
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
    from lab.device import guide_checks, verify
    from lab.formats import FORMATS
    from lab.study import cache as result_cache
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
    # notebook 13's checks for one mode as its page runs them (three prompts, twenty tokens), in a
    # result cache of their own so nothing is read back: the unquantized answers first, then the
    # mode's model quantized and checked
    with tempfile.TemporaryDirectory(prefix="four-bit-lab-bench-cache-") as folder:
        os.environ[result_cache.CACHE_ENV], before = folder, os.environ.get(result_cache.CACHE_ENV)
        try:
            reference_seconds, _ = _timed(guide_checks.reference_run)
            checks_seconds, checked = _timed(lambda: guide_checks.mode_checks(MODE))
        finally:
            if before is None:
                del os.environ[result_cache.CACHE_ENV]
            else:
                os.environ[result_cache.CACHE_ENV] = before
    rows = [
        Row("mlx-lm: the bridge's load (GGUF -> gemma3_text, float32)", load_seconds, "-", None, None),
        Row(
            f"mlx-lm: {TOKENS} greedy tokens, float32 ({TOKENS / mlx_seconds:.1f} tokens/s)",
            mlx_seconds,
            f"the lab's numpy ({TOKENS / lab_seconds:.1f} tokens/s)",
            lab_seconds,
            None,
        ),
        Row("mlx-lm: notebook 13's unquantized answers, cold", reference_seconds, "-", None, None),
        Row(
            f"mlx-lm: notebook 13's four checks for {FORMATS[MODE].title}, cold",
            checks_seconds,
            f"budget {CHECKS_BUDGET_S:g} s",
            CHECKS_BUDGET_S,
            1.0,
            note=f"its model quantized as mlx-lm does, three prompts of {TOKENS} tokens; check 4 at "
            f"lab.device.verify.CPU_SHAPE; {checked.seconds:.1f} s by its own clock",
        ),
    ]
    return rows, "mlx-lm: lab.device.verify on the shipped Gemma 3 270M, MLX's CPU"


if __name__ == "__main__":
    found, info = mlx_lm_rows()
    print(table(found))
    print(info, file=sys.stderr)
