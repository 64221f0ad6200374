"""What notebook 12 writes of the chat-model study: its tables, each greedy answer marked where it
departs, and the own prompt's check and cost, in the lab's words.

A model's answer is text from outside the lab: it passes lab.text.shown_lines, so it reads in its
lines (a newline is a line break, never a literal \\n) and nothing in it runs. A change is written
with format_signed, so a negative Δ NLL has the same minus sign as every other number of the lab.

    study_table(study)             the table llama.cpp's README prints, a row per format
    llama_cpp_table(rows)          the lab's measures beside llama.cpp's re-quantizations
    marked_answer(answer)          one greedy answer, its departure in bold between ⟨ ⟩
    answers_table(answers)         (title, answer) pairs as a two-column table
    prompt_reading(text)           the prompt box's line under the field: its tokens, or what to change
    prompt_cost(formats)           what answering costs on two cores, from the measured figures
    prompt_step(formats, step)     the progress bar's line at each step of answering
"""

from __future__ import annotations

from collections.abc import Iterable

from lab.numbers import format_number, format_signed
from lab.study import chat_study
from lab.study.chat_study import Continuation, LlamaCppRow
from lab.teach import course
from lab.text import Safe, shown_lines

#: the measures' decimals, as llama.cpp's perplexity tool prints them
DECIMALS = 4


def study_table(study: chat_study.ChatStudy) -> Safe:
    """The reference and every format: bits per weight, KL divergence, same top token, Δ NLL (with
    a real minus sign), perplexity and the Linears refitted."""
    rows = [
        [
            row["title"],
            "the file's" if row["bits_per_weight"] is None else format_number(round(row["bits_per_weight"], 4)),
            f"{row['kl_divergence']:.{DECIMALS}f}",
            f"{row['same_top']:.1%}",
            format_signed(row["nll_delta"], DECIMALS, plus=True),
            f"{row['perplexity']:.2f}",
            str(row["fallbacks"]),
        ]
        for row in study.rows()
    ]
    return course.table(
        [
            "format",
            "bits/weight (bfloat16 scales)",
            "KL divergence",
            "same top token",
            "Δ NLL",
            "perplexity",
            "Linears refitted",
        ],
        rows,
    )


def llama_cpp_table(rows: Iterable[LlamaCppRow]) -> Safe:
    """Each type's measures by the lab and by llama.cpp, side by side."""
    return course.table(
        [
            "format",
            "KL, lab",
            "KL, llama.cpp",
            "same top, lab",
            "same top, llama.cpp",
            "Δ NLL, lab",
            "Δ NLL, llama.cpp",
        ],
        [
            [
                row.title,
                f"{row.lab_kl:.{DECIMALS}f}",
                f"{row.llama_kl:.{DECIMALS}f}",
                f"{row.lab_same_top:.1%}",
                f"{row.llama_same_top:.1%}",
                format_signed(row.lab_nll_delta, DECIMALS, plus=True),
                format_signed(row.llama_nll_delta, DECIMALS, plus=True),
            ]
            for row in rows
        ],
    )


def marked_answer(answer: Continuation) -> Safe:
    """A greedy answer as a table cell: the part that agrees with the reference's as written, the
    part from the first token that departs in bold between ⟨ ⟩; both in their lines."""
    agreeing = shown_lines(answer.agreeing)
    if answer.first_divergence is None:
        return agreeing
    return Safe(f"{agreeing}<strong>⟨{shown_lines(answer.departing)}⟩</strong>")


def answers_table(answers: Iterable[tuple[str, Continuation]]) -> Safe:
    return course.table(["format", "greedy answer"], [[title, marked_answer(answer)] for title, answer in answers])


def prompt_reading(text: str) -> str:
    """What the prompt box says under the field as the learner types, by the tokenizer alone (no
    model is loaded): how many tokens the model will read, or InputError saying what to change."""
    ids = chat_study.check_prompt(text)
    return f"{len(ids)} of at most {chat_study.PROMPT_TOKEN_LIMIT} tokens, <bos> included."


def _format_seconds() -> str:
    least, most = chat_study.PROMPT_FORMAT_SECONDS
    return f"{least} to {most} s"


def prompt_cost(formats: int) -> str:
    """The cost of answering with the file's weights and `formats` formats on a two-core laptop, in
    the figures bench/own_prompt.py holds the page to."""
    least, most = (
        chat_study.PROMPT_REFERENCE_SECONDS + formats * seconds for seconds in chat_study.PROMPT_FORMAT_SECONDS
    )
    total = f"about {least} s" if least == most else f"{least} to {most} s"
    return (
        f"On a two-core laptop the first prompt loads the model, about {chat_study.PROMPT_LOAD_SECONDS} s. "
        f"Then the answer with the file's weights takes about {chat_study.PROMPT_REFERENCE_SECONDS} s, and each "
        f"format's {_format_seconds()} (its 126 Linears are re-quantized first): with "
        f"{formats} format{'' if formats == 1 else 's'}, {total}. The answers appear one by one as they are ready."
    )


def prompt_step(formats: list[str], step: int) -> str:
    """The progress bar's line at `step` of answering a prompt with `formats`: 0 loads the model,
    1 is the file's weights' answer, then each format's in order; past the last, done."""
    titles = chat_study.answer_titles(formats)
    if step == 0:
        return f"loading the model: about {chat_study.PROMPT_LOAD_SECONDS} s, for the first prompt only"
    if step == 1:
        return f"answer 1 of {len(titles)}, {titles[0]}: about {chat_study.PROMPT_REFERENCE_SECONDS} s"
    if step <= len(titles):
        return f"answer {step} of {len(titles)}, {titles[step - 1]}: {_format_seconds()}"
    return "done"
