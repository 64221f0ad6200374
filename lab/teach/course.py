"""The course's table of contents and the Markdown built from it (index, links, navigation), shared by
the notebooks and the static-site build; and how a notebook reads its number controls."""

from __future__ import annotations

import math
import re

from lab.errors import InputError
from lab.text import Safe, shown

NOTEBOOKS: tuple[tuple[str, str, str], ...] = (
    (
        "01_one_nibble.py",
        "One nibble, six decoders",
        "E2M1, UINT4, INT4, Q4_0, NF4 and IQ4_NL read the same bits; signed zero; three kinds of spacing.",
    ),
    (
        "02_scale_is_a_ruler.py",
        "The scale is a ruler",
        "Spacing and reach, clipping, and why output error depends on the input.",
    ),
    ("03_mxfp4.py", "MXFP4", "One E8M0 power-of-two scale for 32 values; the OCP floor and MLX ceil rules."),
    ("04_nvfp4.py", "NVFP4", "Two E4M3 rulers per 32 values and an FP32 tensor scale; the reciprocal-scale trap."),
    ("05_q4k.py", "Q4_K", "Gain and offset; 0xA5 into lanes 0 and 32; the 12-byte metadata puzzle."),
    (
        "06_files_and_recipes.py",
        "Files and recipes",
        "What a GGUF file really holds; Q4_K_M as a recipe; rejecting what we cannot read.",
    ),
    (
        "07_capacity_and_cost.py",
        "Capacity and cost",
        "The 7 B arithmetic, MLX's bits-per-weight grid, and why storage is not speed.",
    ),
    ("08_the_checks.py", "The checks", "The checklist as a live battery, and a zoo of broken decoders it catches."),
    (
        "09_real_weights.py",
        "Real weights",
        "Every format on a real transformer: which tensors each one hurts, and by how much.",
    ),
    (
        "10_what_four_bits_do_to_answers.py",
        "What four bits do to answers",
        "Similarity, retrieval and per-layer output error on real activations, format by format.",
    ),
    (
        "11_formats_side_by_side.py",
        "Formats side by side",
        "Every format on the same weights: error against bits, one outlier, one byte traced, what MLX runs.",
    ),
    (
        "12_a_chat_models_answers.py",
        "What four bits do to a chat model's answers",
        "Gemma 3 270M under every format: KL divergence, same top token, perplexity, greedy answers.",
    ),
    (
        "13_the_guides_checks.py",
        "The guide's checks, with mlx-lm itself",
        "The MLX guide's verification recipe run by mlx-lm on the same model, and a predicate of your own.",
    ),
)


def link(file: str) -> str:
    """A link between notebooks in the live course (marimo's file query); the site build rewrites it."""
    return f"?file={file}"


INDEX = "00_index.py"


def _number(file: str) -> int:
    return int(file[:2])


def index_markdown() -> str:
    """The index notebook's list of notebooks: one numbered Markdown link per notebook."""
    return "\n".join(f"{_number(file)}. [{title}]({link(file)}): {summary}" for file, title, summary in NOTEBOOKS)


def navigation(file: str) -> str:
    """Previous / index / next links for the foot of notebook `file`, from the table of contents."""
    order = [INDEX, *(entry[0] for entry in NOTEBOOKS)]
    titles = {
        INDEX: "The four-bit lab (contents)",
        **{entry[0]: f"{_number(entry[0])} · {entry[1]}" for entry in NOTEBOOKS},
    }
    position = order.index(file)
    parts = []
    if position > 0:
        previous = order[position - 1]
        parts.append(f"← Previous: [{titles[previous]}]({link(previous)})")
    if file != INDEX and order[position - 1] != INDEX:
        parts.append(f"[Contents]({link(INDEX)})")
    if position + 1 < len(order):
        following = order[position + 1]
        parts.append(f"Next: [{titles[following]}]({link(following)}) →")
    return "---\n\n" + " · ".join(parts)


#: a cell that reads as a number, perhaps with a short unit: "1,234", "−0.25", "7.36 bits", "12.5 %"
_NUMBER = re.compile(r"[−+-]?(\d[\d,]*\.?\d*|\.\d+)(e[−+-]?\d+)?( ?[%×]| [a-zA-Z]{1,5})?")


def table(header: list[str], rows: list[list[str]]) -> Safe:
    """A Markdown table. A cell is text, shown literally whatever it holds (`|`, `<`, `*`, a name
    read from a file), or Safe markup the lab built itself (code_name, a bold verdict).

    A column of numbers is right-aligned, so digits line up; any other column (names, answers,
    sentences) is left-aligned, as text is read."""

    def line(cells) -> str:
        return "| " + " | ".join(shown(cell) for cell in cells) + " |"

    def numeric(column: int) -> bool:
        cells = [str(row[column]).strip() for row in rows if str(row[column]).strip()]
        return bool(cells) and all(_NUMBER.fullmatch(cell) for cell in cells)

    rule = "|" + "".join("---:|" if numeric(i) else ":---|" for i in range(len(header)))
    return Safe("\n".join([line(header), rule, *(line(row) for row in rows)]))


READOUT_CLASS = "lab-readout"
#: what only a kernel can do (open a file, run a model on a typed prompt): hidden on the static
#: site, where LIVE_ONLY_NOTE_CLASS says what the page shows instead and how to get the live lab
LIVE_ONLY_CLASS = "lab-live-only"
LIVE_ONLY_NOTE_CLASS = "lab-static-only"


def markup(rendered) -> str:
    """What marimo rendered (its `.text`: HTML from the lab's own Markdown, outside text in it
    already shown()) or Safe markup, as HTML; any other text shown literally."""
    return rendered.text if hasattr(rendered, "text") and not isinstance(rendered, str) else shown(rendered)


def live_only(rendered, instead=None) -> str:
    """Wrap controls that need the kernel, with `instead` (rendered like them, or plain text, shown
    literally) for the static page, which hides the controls: there a control that does nothing is
    never shown, and the reader learns what the live lab would do here."""
    note = "" if instead is None else f'<div class="{LIVE_ONLY_NOTE_CLASS}" role="note">{markup(instead)}</div>'
    return f'<div class="{LIVE_ONLY_CLASS}">{markup(rendered)}</div>{note}'


def readout(rendered) -> str:
    """Wrap Python-computed output that follows a control; the static site labels it as computed at
    build time, because there no kernel recomputes it when the control moves.

    `rendered` is what marimo rendered (mo.md(...), mo.as_html(...): its `.text` is HTML built from
    the lab's own Markdown, outside text in it already shown()), or Safe markup; plain text is
    shown literally."""
    # a plain str: this goes straight into mo.Html, whose serializer takes only str itself
    return f'<div class="{READOUT_CLASS}">{markup(rendered)}</div>'


def whole_number(value, *, label: str, low: int, high: int) -> int:
    """A number control's value as a whole number in low..high, or InputError saying what to type.

    marimo's number field hands over what was typed: a fraction such as 3.7, or None once the
    field is cleared. Rounding 3.7 to a seed or a block the learner did not ask for would be
    silent garbage, so it is refused in words beside the control instead.
    """
    wanted = f"{label}: type a whole number from {low} to {high}"
    if value is None or (isinstance(value, str) and not value.strip()):
        raise InputError(f"{wanted}; the field is empty.")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputError(f"{wanted}, not {value!r}.")
    if not float(value).is_integer() or not low <= value <= high:
        raise InputError(f"{wanted}, not {value:g}.")
    return int(value)
