"""What notebook 13 writes of the MLX guide's checks run by mlx-lm: its tables, each mode's answers,
and the predicate builder's report, in the lab's words.

    guide_modes()                         the MLX modes the page runs: $LAB_GUIDE_MODES, or GUIDE_MODES
    quantized_table(checks, layers)       what mlx-lm quantizes in each mode, and what the lab's study does
    greedy_table(reference, checks)       check 1: where each mode's answer leaves the unquantized one
    logits_table(checks)                  check 2: logit differences on the guide's bands, KL, same top
    kernels_table(checks)                 checks 3 and 4: chunked prefill, and the two-sentinel runs
    answers_view(reference, checked)      one mode's three answers beside the unquantized model's
    implementations_table(rows)           the lab's numpy, mlx-lm and llama.cpp on the same prompts
    predicate_report(text, layers)        the builder: its rows read, planned, counted and written as Python

A model's answer is text from outside the lab: it passes lab.text.shown_lines. A predicate's rows
are typed by a learner: they are read as data by lab.device.predicates and never run.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from lab.device import predicates
from lab.device.guide_checks import SENTINEL_NOTE, ModeChecks, ReferenceRun
from lab.device.verify import CORRUPTION_BAND, RED_FLAG_BEFORE
from lab.errors import InputError
from lab.formats import FORMATS
from lab.numbers import format_number
from lab.study import accounting, kv_study
from lab.teach import course
from lab.text import Safe, code_name, shown, shown_lines

#: the modes the page runs: the external check's three (a 4-bit float format of each scale kind and
#: MLX's affine default). `labctl.py verify` and lab.device.verify.greedy_ids take every MLX mode.
GUIDE_MODES = ("mxfp4", "nvfp4", "affine4_g64")
MODES_ENV = "LAB_GUIDE_MODES"
#: the builder's starting rows: mlx-lm's mixed_4_6 idea on this model's 18 layers, by hand
DEFAULT_RULES = """model.embed_tokens  all  affine8_g64
*.v_proj  0-2  affine8_g64
*.down_proj  0-2  affine8_g64
*.v_proj  15-17  affine8_g64
*.down_proj  15-17  affine8_g64
*  all  affine4_g64"""
#: the most characters the builder's box takes
RULES_CHAR_LIMIT = 4000


def guide_modes() -> list[str]:
    """The MLX modes the page runs: those $LAB_GUIDE_MODES names (the test suite's quick run), else
    GUIDE_MODES."""
    chosen = [name.strip() for name in os.environ.get(MODES_ENV, "").split(",") if name.strip()]
    modes = chosen or list(GUIDE_MODES)
    unknown = [name for name in modes if name not in FORMATS or FORMATS[name].mlx is None]
    if unknown:
        raise InputError(f"${MODES_ENV} names {', '.join(map(repr, unknown))}, which are not MLX modes of the registry")
    return modes


def _position(index: int | None) -> str:
    return "none" if index is None else str(index)


def quantized_table(checks: Sequence[ModeChecks], layers: Mapping[str, tuple[int, int]]) -> Safe:
    """Per mode: bits per quantized weight (float32 scales, as this float32 model stores them), and
    the weights mlx-lm's default predicate quantizes against those the lab's study quantizes (its
    Linears only: the embedding, which is also the output layer, stays float32)."""
    embedding = layers["model.embed_tokens"]
    embedding_weights = embedding[0] * embedding[1]
    linear_weights = sum(out * inner for path, (out, inner) in layers.items() if path != "model.embed_tokens")
    rows = [
        [
            checked.title,
            format_number(accounting.bits_per_weight(checked.name, "float32")),
            format_number(checked.bits_per_weight),
            f"{checked.quantized_weights / 1e6:.1f} M",
            f"{linear_weights / 1e6:.1f} M",
            f"{embedding_weights / 1e6:.1f} M",
        ]
        for checked in checks
    ]
    return course.table(
        [
            "mode",
            "bits/weight (float32 scales)",
            "read off mlx-lm's arrays",
            "weights mlx-lm quantizes",
            "weights the lab's study quantizes",
            "of which the embedding",
        ],
        rows,
    )


def _verdict(index: int | None) -> str:
    """The guide's reading of a first departure, in a few words for a table cell."""
    if index is None:
        return "exact match"
    return "red flag" if index < RED_FLAG_BEFORE else "a near-tie flipped"


def greedy_table(reference: ReferenceRun, checks: Sequence[ModeChecks]) -> Safe:
    """Check 1: per mode and prompt, the first token unlike the unquantized model's, and the guide's
    reading of it in a few words (greedy_readings says each in full)."""
    rows = [
        [checked.title, f"prompt {number}", _position(run.first_divergence), _verdict(run.first_divergence)]
        for checked in checks
        for number, run in enumerate(checked.prompts, start=1)
    ]
    return course.table(["mode", "prompt", "first departure", "the guide's reading"], rows)


def greedy_readings(reference: ReferenceRun) -> str:
    """The guide's readings of check 1, in full, once under the table (lab.device.verify's
    divergence_reading says the same for one index)."""
    tokens = len(reference.ids[0])
    return (
        f"**Exact match** on all {tokens} tokens: the strongest signal there is. **Red flag**: a departure "
        f"before token {RED_FLAG_BEFORE}. The first tokens after a prompt are usually decided by a wide "
        "margin, so something structural is wrong, not quantization noise. **A near-tie flipped**: a later "
        "departure, the runs separated after one close call; on its own usually benign, so track the index "
        "from release to release."
    )


def logits_table(checks: Sequence[ModeChecks]) -> Safe:
    """Check 2: per mode and prompt, max and mean |logit difference|, argmax agreement, and from the
    same logits the KL divergence and same-top share; then the mode's worst on the guide's bands."""
    rows = [
        [
            checked.title,
            f"prompt {number}",
            f"{run.max_difference:.2f}",
            f"{run.mean_difference:.3f}",
            f"{run.argmax_agreement} of {run.positions}",
            f"{run.kl_divergence:.3f}",
            f"{run.same_top:.0%}",
        ]
        for checked in checks
        for number, run in enumerate(checked.prompts, start=1)
    ]
    return course.table(
        ["mode", "prompt", "max |Δ logit|", "mean |Δ logit|", "same argmax", "KL divergence", "same top token"], rows
    )


def bands_table(checks: Sequence[ModeChecks]) -> Safe:
    return course.table(
        ["mode", "largest max |Δ logit|", "on the guide's bands"],
        [[checked.title, f"{checked.max_difference:.2f}", checked.band] for checked in checks],
    )


def kernels_table(checks: Sequence[ModeChecks]) -> Safe:
    """Check 3 (one-shot against chunked prefill) and check 4 (rows never written, per product)."""
    rows = []
    for checked in checks:
        sentinels = {run.operation: run for run in checked.sentinels}
        rows.append(
            [
                checked.title,
                f"{checked.prefill_max_difference:.3g}",
                "yes" if checked.prefill_same_argmax else "no",
                *(
                    f"{sentinels[op].unwritten_rows} of {sentinels[op].rows}"
                    for op in ("quantized_matmul", "gather_qmm")
                ),
                f"{checked.seconds:.0f} s",
            ]
        )
    return course.table(
        [
            "mode",
            f"check 3: max |Δ| one-shot against chunks of {checks[0].prefill_chunk}" if checks else "check 3",
            "same next token",
            "check 4: unwritten rows, quantized_matmul",
            "gather_qmm",
            "all four checks, cold",
        ],
        rows,
    )


def sentinel_note() -> str:
    return f"Check 4 ran {SENTINEL_NOTE}."


def _answer(text: str) -> Safe:
    return Safe(shown_lines(text))


def answers_view(reference: ReferenceRun, checked: ModeChecks) -> Safe:
    """One mode's greedy answers beside the unquantized model's, prompt by prompt."""
    rows = [
        [
            Safe(f"<code>{shown(prompt)}</code>") if "\n" not in prompt else _answer(prompt),
            _answer(ours),
            _answer(run.text),
            _position(run.first_divergence),
        ]
        for prompt, ours, run in zip(reference.prompts, reference.texts, checked.prompts, strict=True)
    ]
    return course.table(["prompt", "unquantized", checked.title, "first departure"], rows)


def implementations_table(rows: Sequence[dict]) -> Safe:
    """lab.device.guide_checks.three_implementations as a table: per format and prompt, each
    implementation's first departure from its own unquantized answer, and where the lab's and
    mlx-lm's answers part."""
    table_rows = []
    for row in rows:
        for number in range(len(row["lab_departures"])):
            llama = row["llama_cpp_against_mlx_lm"]
            table_rows.append(
                [
                    row["title"],
                    f"prompt {number + 1}",
                    _position(row["lab_departures"][number]),
                    _position(row["mlx_lm_departures"][number]),
                    _position(row["lab_against_mlx_lm"][number]),
                    "no pinned run" if llama is None else _position(llama[number]),
                ]
            )
    return course.table(
        [
            "format",
            "prompt",
            "lab (numpy): departs at",
            "mlx-lm: departs at",
            "lab and mlx-lm part at",
            "llama.cpp and mlx-lm part at",
        ],
        table_rows,
    )


def _rows_of(text: str) -> list[dict]:
    """The builder's lines as rows of three fields: a pattern, a band ("all" for every layer) and a
    format, separated by spaces; blank lines and lines starting with # are skipped."""
    if len(text) > RULES_CHAR_LIMIT:
        raise predicates.PredicateError("rows", f"the rows run to {len(text)} characters; at most {RULES_CHAR_LIMIT}")
    rows = []
    for line in text.splitlines():
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        number = len(rows) + 1
        if len(fields) != 3:
            raise predicates.PredicateError(
                f"row {number}",
                f"has {len(fields)} fields; write a pattern, the layers (all, 5 or 0-5) and a format, "
                "separated by spaces",
            )
        pattern, band, fmt = fields
        rows.append({"pattern": pattern, "layers": "" if band.lower() == "all" else band, "format": fmt})
    if not rows:
        raise predicates.PredicateError("rows", "there are no rows; write at least one")
    return rows


def predicate_report(text: str, layers: Mapping[str, tuple[int, int]]) -> Safe:
    """The builder's report on `text`: which layers each format takes, the whole model's bits per
    weight before any weight is touched, and the predicate as Python text to copy. PredicateError
    (with the field it names) for rows the lab refuses."""
    rules = predicates.read_rules(_rows_of(text), layer_count=predicates.layer_count(layers))
    planned = predicates.plan(rules, layers)
    summary = course.table(
        ["layers", "which", "format", "modules", "weights"],
        [
            [
                Safe(code_name(row.role)),
                row.layers,
                "float32 (left alone)" if row.fmt == predicates.FLOAT else FORMATS[row.fmt].title,
                str(row.modules),
                f"{row.parameters / 1e6:.2f} M",
            ]
            for row in predicates.summary_rows(planned, layers)
        ],
    )
    bits = predicates.bits_per_weight(planned, layers, "float32")
    source = predicates.predicate_source(rules)
    return Safe(
        f"{summary}\n\n**{format_number(round(bits, 4))} bits per weight** over the {len(layers)} modules "
        "`nn.quantize` considers (float32 scales, the float32 layers at 32 bits), before any weight is "
        f"touched.\n\nThe same rules as a predicate for `nn.quantize(model, class_predicate=...)`:\n\n"
        f"```python\n{source}\n```"
    )


def bands_reading(checks: Sequence[ModeChecks]) -> str:
    """Where the modes' largest logit differences fall, and what the other checks say of it."""
    corrupt = [checked.title for checked in checks if checked.max_difference >= CORRUPTION_BAND[0]]
    early = [
        checked.title
        for checked in checks
        if any(run.first_divergence is not None and run.first_divergence < RED_FLAG_BEFORE for run in checked.prompts)
    ]
    faults = [
        checked.title
        for checked in checks
        if checked.prefill_max_difference > 0 or any(run.unwritten_rows for run in checked.sentinels)
    ]
    if not corrupt and not early:
        return "No mode lands in the guide's corruption band or departs within its first tokens."
    head = (
        f"In the guide's corruption band: {len(corrupt)} of {len(checks)} modes"
        + (f" ({', '.join(corrupt)})" if corrupt else "")
        + f". Departing within the first {RED_FLAG_BEFORE} tokens of some prompt: {len(early)} of {len(checks)}."
        " By the guide's reading, a broken kernel."
    )
    if faults:
        return head + f" Checks 3 and 4, in the next section, find a fault in {', '.join(faults)}."
    return head + (
        " Yet checks 3 and 4, in the next section, find no kernel fault in any of them. The guide calibrated its bands on"
        " other models; a 270M model at 4 bits moves its logits further. A band is a measurement on one"
        " model, not a law: read it beside a second implementation, as the last table does."
    )


def implementations_reading(rows: Sequence[dict]) -> str:
    """What the three implementations' table shows, unquantized and quantized."""
    unquantized = rows[0]
    lab_same = all(index is None for index in unquantized["lab_against_mlx_lm"])
    llama = unquantized["llama_cpp_against_mlx_lm"]
    parts = [
        "Unquantized, the lab's answers "
        + ("are mlx-lm's, token for token" if lab_same else "and mlx-lm's differ")
        + (
            ""
            if llama is None
            else (", and so are llama.cpp's" if all(index is None for index in llama) else "; llama.cpp's differ")
        )
        + "."
    ]
    quantized = rows[1:]
    if quantized:
        apart = sum(index is not None for row in quantized for index in row["lab_against_mlx_lm"])
        total = sum(len(row["lab_against_mlx_lm"]) for row in quantized)
        early = sum(
            index is not None and index < RED_FLAG_BEFORE for row in quantized for index in row["lab_departures"]
        )
        parts.append(
            f"The lab's numpy pass, which shares no code with MLX and keeps the embedding in float32, "
            f"leaves its unquantized answer within the first {RED_FLAG_BEFORE} tokens on {early} of {total} "
            "prompts: early departures are what 4 bits do to this small model, not a kernel fault."
            if early
            else f"The lab's numpy pass, which keeps the embedding in float32, never leaves its unquantized "
            f"answer within the first {RED_FLAG_BEFORE} tokens."
        )
        parts.append(
            f"Quantized, the lab's and mlx-lm's answers part on {apart} of {total} prompts: mlx-lm also "
            "quantizes the embedding, which scores every next token, and the two round their float32 "
            "products in different orders, so a near-tie can fall either way."
        )
    parts.append("llama.cpp's pinned run has none of MLX's modes, so it meets the others unquantized only.")
    return " ".join(parts)


def kv_weights(modes: Sequence[str]) -> list[str]:
    """The weights the KV-cache table runs: the float model, and the page's modes that
    lab.study.kv_study studies by default."""
    return [kv_study.REFERENCE, *(name for name in kv_study.WEIGHTS if name in modes)]


def kv_table(rows: Sequence[dict]) -> Safe:
    """lab.study.kv_study.side_by_side as a table: per weights and cache, what changed, KL divergence
    and same-top share in each implementation, and each prompt's first departure."""

    def departures(indices) -> str:
        return ", ".join(_position(index) for index in indices)

    return course.table(
        [
            "weights",
            "KV cache",
            "changed",
            "KL, lab",
            "KL, mlx-lm",
            "same top, lab",
            "same top, mlx-lm",
            "departs at, lab",
            "departs at, mlx-lm",
        ],
        [
            [
                "float32" if row["weights"] == kv_study.REFERENCE else FORMATS[row["weights"]].title,
                row["kv_cache"],
                row["changed"],
                f"{row['lab_kl']:.4f}",
                f"{row['mlx_kl']:.4f}",
                f"{row['lab_same_top']:.0%}",
                f"{row['mlx_same_top']:.0%}",
                departures(row["lab_departures"]),
                departures(row["mlx_departures"]),
            ]
            for row in rows
        ],
    )


def kv_reading(rows: Sequence[dict]) -> str:
    """Which hurts this model more, read off the table: the KV cache alone or the weights alone."""
    kv_only = [row for row in rows if row["changed"] == "KV only"]
    weights_only = [row for row in rows if row["changed"] == "weights only"]
    if not kv_only or not weights_only:
        return ""
    worst_kv = max(kv_only, key=lambda row: row["lab_kl"])
    least_weights = min(weights_only, key=lambda row: row["lab_kl"])
    more = "the weights" if least_weights["lab_kl"] > worst_kv["lab_kl"] else "the KV cache"
    return (
        f"The harshest cache alone ({worst_kv['kv_cache']}) moves the next-token distributions by "
        f"{worst_kv['lab_kl']:.4f} nats in the lab ({worst_kv['mlx_kl']:.4f} in mlx-lm); the gentlest "
        f"weights alone ({FORMATS[least_weights['weights']].title}) by {least_weights['lab_kl']:.4f} "
        f"({least_weights['mlx_kl']:.4f}). On this model {more} hurt more."
    )
