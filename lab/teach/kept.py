"""A typo keeps the output: a notebook cell driven by a field keeps what it drew last from a valid
entry while the field holds one the lab refuses.

Without this, a cell that raises (or stops) on a refused entry takes its whole output away, and the
page shrinks under the learner's eyes while they fix one character. Instead the cell shows the
refusal, in the lab's words (the error's type and message, as every refusal in the course reads),
then the last good output, dimmed (greyed and a little faded: its text keeps its contrast) under a
note that names the input it was drawn from, until the field is valid again.

Make one `KeptOutput` where the field is made, in a cell that does not re-run when the field
changes (so it outlives the cell that reads the field, and a new context, such as another tensor,
starts afresh), and let the cell that reads the field draw through it:

    block_kept = kept.KeptOutput()  # in the cell that makes block_field, before its last line

    def _draw():
        block = course.whole_number(block_field.value, label="block", low=0, high=9)
        return kept.Drawn(render(block), f"block {block}")

    mo.Html(block_kept.show(_draw))

The widgets keep their figures the same way in the browser (widgets/ui.js mountInPlace, keptNote),
with the same note and the same dimming, so a typo reads alike in a cell and in a figure.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from lab.errors import LabError
from lab.teach.course import markup
from lab.text import shown

#: how a kept output is dimmed (widgets/ui.js KEPT_STYLE): greyed, a little faded
DIMMED_STYLE = "filter: grayscale(1); opacity: 0.85;"
#: the note over a kept output (ui.js PAGE_NOTE_STYLE) and the refusal: an edge, so each is told
#: apart from the prose without colour; the note's is dashed, the refusal's solid
NOTE_STYLE = "border-left: 6px dashed currentColor; padding: 8px 12px; margin: 0 0 8px 0;"
REFUSAL_STYLE = "border-left: 6px solid currentColor; padding: 8px 12px; margin: 0 0 8px 0;"
#: the attribute that says what a kept cell shows: "following" (the field's own entry), "stale"
#: (the last valid entry's output, kept) or "refused" (nothing valid was drawn yet)
STATE_ATTRIBUTE = "data-lab-kept"


@dataclass(frozen=True)
class Drawn:
    """What a cell drew from a valid entry: `output` as marimo rendered it (mo.md(...),
    mo.vstack(...)) or Safe markup, plain text shown literally; `input` names the entry in the
    lab's words ("block 5"), for the note once it is kept."""

    output: object
    input: str


def kept_note(input_text: str) -> str:
    """The note over a kept output (ui.js keptNote says the same for a figure)."""
    return f"Showing the last valid input: {input_text}. What is shown here follows again once the field is valid."


class KeptOutput:
    """The last output one field-driven cell drew from a valid entry (see the module)."""

    def __init__(self) -> None:
        self._html: str | None = None
        self._input: str | None = None

    def show(self, draw: Callable[[], Drawn]) -> str:
        """HTML for the cell: `draw()`'s output, kept, or where it raises LabError (the field's
        entry refused, in the lab's words) the refusal above the output kept from the last entry
        that drew, dimmed under a note naming that entry; the refusal alone when none has yet.
        A plain str, as mo.Html takes it (its serializer takes only str itself); it is markup the
        lab built, so Safe(...) it for course.readout."""
        try:
            drawn = draw()
        except LabError as error:
            return self._refused(error)
        self._html = markup(drawn.output)
        self._input = drawn.input
        return f'<div {STATE_ATTRIBUTE}="following">{self._html}</div>'

    def _refused(self, error: LabError) -> str:
        refusal = f'<p role="alert" style="{REFUSAL_STYLE}">{shown(f"{type(error).__name__}: {error}", 400)}</p>'
        if self._html is None:
            return f'<div {STATE_ATTRIBUTE}="refused">{refusal}</div>'
        note = f'<p data-lab-kept-note="" role="note" style="{NOTE_STYLE}">{shown(kept_note(self._input), 400)}</p>'
        return f'<div {STATE_ATTRIBUTE}="stale">{refusal}{note}<div style="{DIMMED_STYLE}">{self._html}</div></div>'
