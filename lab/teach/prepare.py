"""What `labctl.py open` computes before it opens the course, so that no page's first visit waits
for a model study: notebook 10's retrieval study in every format, and what that page shows first
for the format its dropdown starts on (the similarity matrices, the answers, the layer study and
the MLX pane). Each result goes to the disk cache (lab.study.cache) the notebook reads, so a second
run reads everything back in about a second and the page opens in seconds instead of minutes.

    python -m lab.teach.prepare     prints one line per step; exits 0, also when there is nothing to do
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

from lab.device.model import run_model
from lab.study import behaviour, real_weights

#: the format notebook 10's dropdown starts on; the notebook reads it from here
FIRST_FORMAT = "mxfp4"


def prepare_notebook_10(say: Callable[[str], object] = print) -> list[str]:
    """Fill the cache with everything notebook 10 computes on its first visit. Returns the steps
    done, by name; none when the real model is not installed (the notebook then says how to
    install it, and computes nothing)."""
    if not real_weights.real_model_available():
        say(f"notebook 10 has nothing to prepare: {real_weights.INSTALL_HINT}")
        return []
    names = behaviour.study_formats()
    steps = {
        "retrieval study": lambda: behaviour.retrieval_study(
            progress=lambda done, total, name: say(f"  retrieval study: {done} of {total} ({name})"), cache=True
        ),
        "similarity": lambda: behaviour.format_similarity(FIRST_FORMAT, cache=True),
        "answers": lambda: behaviour.retrieval_answers(FIRST_FORMAT, cache=True),
        "layer study": lambda: behaviour.layer_study(FIRST_FORMAT, cache=True),
        "MLX pane": lambda: run_model(FIRST_FORMAT, cache=True),
    }
    say(f"preparing notebook 10 (once: {len(names)} formats of the embedding model; later runs read them back)")
    for step, compute in steps.items():
        started = time.perf_counter()
        compute()
        say(f"  {step}: {time.perf_counter() - started:.1f} s")
    return list(steps)


def main() -> int:
    prepare_notebook_10(lambda line: print(line, flush=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
