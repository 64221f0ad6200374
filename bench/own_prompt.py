"""Notebook 12's own prompt as a learner meets it, against what the page says it costs.

    .venv/bin/python -m bench.own_prompt            # the rows, printed as bench.run prints its table

Each row is timed once, wall clock, with the process's CPU seconds in its note (on a busy machine the
wall clock measures the others' load, and CPU seconds on one BLAS thread are what a quiet two-core
laptop takes at most), in a fresh process's order: refusing an empty prompt and an over-long one
(the tokenizer alone, read cold, no model), loading the model, then the answers, the reference's
and one per format of the box's starting choice (lab.study.chat_study.PROMPT_FORMATS). The budgets
are the page's own words (PROMPT_LOAD_SECONDS, PROMPT_REFERENCE_SECONDS and the most of
PROMPT_FORMAT_SECONDS), so a row that misses says the page states less than the run costs.
`own_prompt_rows()` is for bench.run's table.
"""

from __future__ import annotations

import sys
import time

from bench.run import Row, table
from lab.errors import InputError

#: refusing a prompt must feel instant: the tokenizer read cold, then the prompt tokenized
CHECK_BUDGET_S = 1.0
#: a prompt of 402 tokens, the one the issue saw refused only after a run
OVER_LONG_PROMPT = "word " * 400


def _budget(task: str, seconds: float, budget: float, note: str) -> Row:
    """A row against a budget: the 'peer' is the budget, so a ratio of 1x or more meets it."""
    return Row(task, seconds, f"budget {budget:g} s", budget, 1.0, note=note)


class _Clock:
    """Wall-clock and CPU seconds since the last lap."""

    def __init__(self):
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def lap(self) -> tuple[float, str]:
        wall, cpu = time.perf_counter(), time.process_time()
        seconds, note = wall - self.wall, f"{cpu - self.cpu:.2f} CPU s"
        self.wall, self.cpu = wall, cpu
        return seconds, note


def _refused(text: str) -> tuple[float, str]:
    from lab.study import chat_study

    clock = _Clock()
    try:
        chat_study.check_prompt(text)
    except InputError:
        return clock.lap()
    raise AssertionError(f"{text[:20]!r}… was not refused")


def own_prompt_rows() -> tuple[list[Row], str]:
    from lab.formats import FORMATS
    from lab.study import chat, chat_study, shipped_gguf

    if not shipped_gguf.available():
        return [], f"own-prompt rows skipped: {shipped_gguf.INSTALL_HINT}"
    shipped_gguf.model_file()  # the file's sha256 is checked once per process: not a prompt's cost
    empty, empty_cpu = _refused("  \n")
    over_long, over_long_cpu = _refused(OVER_LONG_PROMPT)
    rows = [
        _budget("own prompt: an empty one refused", empty, CHECK_BUDGET_S, f"no tokenizer, no model; {empty_cpu}"),
        _budget(
            "own prompt: a 402-token one refused",
            over_long,
            CHECK_BUDGET_S,
            f"the tokenizer read cold from the file, no weight decoded; {over_long_cpu}",
        ),
    ]
    clock = _Clock()
    model = chat.load()
    seconds, cpu = clock.lap()
    rows.append(
        _budget(
            "own prompt: loading the model",
            seconds,
            chat_study.PROMPT_LOAD_SECONDS,
            f"once per session; every weight decoded to float32; {cpu}",
        )
    )
    prompt = chat_study.PROMPTS[2]
    titles = chat_study.answer_titles(chat_study.PROMPT_FORMATS)
    clock = _Clock()
    for title, _ in chat_study.answer_each(prompt, chat_study.PROMPT_FORMATS, model=model):
        seconds, cpu = clock.lap()
        reference = title == titles[0]
        rows.append(
            _budget(
                f"own prompt: the answer with {title}",
                seconds,
                chat_study.PROMPT_REFERENCE_SECONDS if reference else max(chat_study.PROMPT_FORMAT_SECONDS),
                f"{chat_study.GREEDY_TOKENS} greedy tokens"
                + ("" if reference else ", the 126 Linears re-quantized first")
                + f"; {cpu}",
            )
        )
    names = ", ".join(FORMATS[name].title for name in chat_study.PROMPT_FORMATS)
    return rows, f"own prompt: the chat template's prompt 3, answered with the file's weights and {names}"


def main() -> int:
    rows, note = own_prompt_rows()
    print(table(rows))
    print(f"\n{note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
