"""What `labctl.py open` computes before it opens the course, so that no page's first visit waits
for a model study: notebook 10's retrieval study in every format, and what that page shows for
each format its menu offers (the similarity matrices, the answers, the layer study and the MLX
pane). Each result goes to the disk cache (lab.study.cache) the notebook reads, so a second
run reads everything back in about a second and the page opens in seconds instead of minutes.
Where the cache cannot keep what it stores (a read-only home, a folder in its way), nothing is
computed: the results reach the page only through the cache, as this runs in a process of its
own, so working them out here would only add a minute or two to every start. It says so instead,
and how to give the cache a folder it can write.

    python -m lab.teach.prepare     prints one line per step; exits 0, also when there is nothing to do
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

from lab.device.model import run_model
from lab.study import behaviour, real_weights
from lab.study import cache as result_cache

#: the format notebook 10's menu starts on; the notebook reads it from here
FIRST_FORMAT = "mxfp4"
#: the formats notebook 10's menu offers for a closer look, each computed in advance so the menu
#: works on the static page: the 4-bit formats the article compares, and 2-bit affine, where the
#: answers break
COMPARED_FORMATS = ("mxfp4", "nvfp4", "affine4_g64", "affine4_g128", "q4k", "q4_0", "iq4_nl", "nf4", "affine2_g64")


def prepare_notebook_10(say: Callable[[str], object] = print) -> list[str]:
    """Fill the cache with everything notebook 10 computes on its first visit. Returns the steps
    done, by name; none when the real model is not installed (the notebook then says how to
    install it, and computes nothing) or the cache cannot keep the results (it says why, and how to mend it)."""
    if not real_weights.real_model_available():
        say(f"notebook 10 has nothing to prepare: {real_weights.INSTALL_HINT}")
        return []
    store = result_cache.ResultCache(behaviour.CACHE_NAMESPACE)
    why = store.why_not_kept()
    if why is not None:
        say(
            f"notebook 10 is not prepared: the cache folder {store.root} cannot be written ({why}), so its "
            "results would not be kept and the page works them out on its first visit after every start; "
            f"to keep them, set {result_cache.CACHE_ENV} to a folder you can write"
        )
        return []
    names = behaviour.study_formats()
    steps = {
        "retrieval study": lambda: behaviour.retrieval_study(
            progress=lambda done, total, name: say(f"  retrieval study: {done} of {total} ({name})"), cache=True
        ),
        "similarity": lambda: [behaviour.format_similarity(name, cache=True) for name in COMPARED_FORMATS],
        "answers": lambda: [behaviour.retrieval_answers(name, cache=True) for name in COMPARED_FORMATS],
        "layer study": lambda: [behaviour.layer_study(name, cache=True) for name in COMPARED_FORMATS],
        "MLX pane": lambda: [run_model(name, cache=True) for name in COMPARED_FORMATS],
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
