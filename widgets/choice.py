"""A choice whose every outcome is computed in advance (widgets/choice.js), for the course pages.

A marimo menu or slider needs a kernel to recompute what depends on it, so on a static page it
would do nothing. Where a control has few options (a format menu, a slider's steps, a short list
of seeds), the notebook instead computes the outcome of every option with its usual cells and
hands them to `PrecomputedChoice.outcomes`, which marks each panel with the options it belongs
to; the widget's menus and sliders show the matching panels and hide the rest, in the browser,
live or static. What a reader sees for an option is what the kernel computed for it.

    choice = PrecomputedChoice("real-weights", [Control("format", "format", ["Q4_K", "NF4"], "Q4_K")])
    mo.Html(choice.outcomes(["format"], {("Q4_K",): q4k_html, ("NF4",): nf4_html}))

Computing every outcome before the page shows anything made a live page wait for options nobody
had picked yet (notebook 3's 70 blocks, each with its MLX run: 9.5 s). So `outcomes` also takes a
function of the options, and then computes what the page needs now: every outcome where the page
must carry them all (the static site's export, a script or test run, marimo's editor), but in a
page a reader has open under `marimo run` (`labctl.py open`) only the outcome shown, with a
placeholder panel for each other one. A cell that passes the choice's UI element
(`menu = mo.ui.anywidget(choice)`) then runs again when the reader picks an option, and computes
that one:

    menu = mo.ui.anywidget(choice)                      # in the cell that shows the controls
    mo.Html(menu.outcomes(["format"], lambda name: view(name)))   # in a cell that reads `menu`
"""

from __future__ import annotations

import html
import itertools
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import anywidget
import traitlets as t

from lab.teach.course import markup

from ._bundle import bundle, stylesheet

_NAME = re.compile(r"[a-z][a-z0-9_-]{0,63}")
# a menu; a slider over ordered options (its steps); a field for a whole number in a short range
# (a seed list: options "0", "1", ... in order), which refuses anything else in the lab's words
KINDS = ("select", "slider", "number")
MOST_OUTCOMES = 400  # a page carries every outcome, so their number stays small
# A heading in a panel: marimo's outline lists every heading of the page, hidden or not, and each
# option's copy would be listed again (with an id repeated as often).
_HEADING = re.compile(r"<h([1-6])\b[^>]*>(.*?)</h\1>", re.DOTALL)
# What a panel not yet computed holds (on demand, live): it shows from the pick until the kernel's
# run of the cell replaces it, a second or two; the bar moves, so the page is seen to be working.
PENDING = (
    '<p class="lab-outcome-pending" role="status">Working this choice out: the kernel is computing it, '
    "and it shows here in a moment.</p>"
    '<progress class="lab-outcome-progress" aria-label="working this choice out"></progress>'
)


@dataclass(frozen=True)
class Control:
    """One control: `name` keys its panels, `label` is shown, `options` are the labels it offers."""

    name: str
    label: str
    options: Sequence[str]
    value: str
    kind: str = "select"

    def __post_init__(self) -> None:
        if not _NAME.fullmatch(self.name):
            raise ValueError(f"a control's name is lowercase letters, digits, '-' or '_', not {self.name!r}")
        if not self.label.strip():
            raise ValueError(f"control {self.name!r} needs a label")
        if self.kind not in KINDS:
            raise ValueError(f"control {self.name!r}: kind is one of {KINDS}, not {self.kind!r}")
        options = list(self.options)
        if not options or any(not isinstance(o, str) or not o for o in options) or len(set(options)) != len(options):
            raise ValueError(f"control {self.name!r}: options are distinct, non-empty texts")
        whole = all(re.fullmatch(r"0|[1-9][0-9]{0,8}", option) for option in options)
        if self.kind == "number" and (not whole or options != [str(int(options[0]) + n) for n in range(len(options))]):
            raise ValueError(f"control {self.name!r}: a number field's options are consecutive whole numbers")
        if self.value not in options:
            raise ValueError(f"control {self.name!r}: its value {self.value!r} is not one of its options")
        object.__setattr__(self, "options", tuple(options))


class PrecomputedChoice(anywidget.AnyWidget):
    """Menus and sliders that switch between outcomes computed in advance (see the module)."""

    _esm = bundle("choice.js")
    _css = stylesheet()
    #: links the controls to their panels; unique on a page
    group = t.Unicode("").tag(sync=True)
    #: [{name, label, kind, options, value}], as `Control` checked them
    controls = t.List(t.Dict()).tag(sync=True)
    #: the option each control shows now, by control name (the browser sets it)
    values = t.Dict().tag(sync=True)

    def __init__(self, group: str, controls: Sequence[Control], on_demand: bool | None = None) -> None:
        """`on_demand`: whether `outcomes` computes only the outcome shown (see the module); by
        default, whether a reader's page under `marimo run` is being drawn (kernel_on_demand()).
        Decided once, here: the cells that run again on a pick run without the page's request."""
        if not _NAME.fullmatch(group):
            raise ValueError(f"a choice's group is lowercase letters, digits, '-' or '_', not {group!r}")
        names = [control.name for control in controls]
        if not names or len(set(names)) != len(names):
            raise ValueError("a choice has one or more controls, with distinct names")
        self._by_name = {control.name: control for control in controls}
        super().__init__(
            group=group,
            controls=[
                {"name": c.name, "label": c.label, "kind": c.kind, "options": list(c.options), "value": c.value}
                for c in controls
            ],
            values={c.name: c.value for c in controls},
        )
        self.on_demand = kernel_on_demand() if on_demand is None else on_demand
        # The options whose outcomes show: the browser's values while every one is an option, else
        # the last such (a field holding a typo keeps the last good outcome on screen, widgets/ui.js).
        self.shown = dict(self.values)
        self.observe(self._follow, names="values")

    def _follow(self, change) -> None:
        values = change["new"]
        if all(values.get(name) in control.options for name, control in self._by_name.items()):
            self.shown = dict(values)

    def outcomes(
        self,
        depends_on: Sequence[str],
        views: Mapping[tuple[str, ...], object] | Callable[..., object],
    ) -> str:
        """HTML holding one panel per combination of the options of the controls `depends_on`
        names, in that order. `views` maps each combination to what marimo rendered for it
        (mo.md(...), mo.vstack(...): its `.text` is HTML from the lab's own Markdown, outside text in
        it already shown()); a plain str is shown literally. Or `views` is a function called with a
        combination's options, in that order, which is called for every combination, or, on
        demand, for the one shown only (the others get placeholder panels). Only the combination
        shown shows."""
        unknown = [name for name in depends_on if name not in self._by_name]
        if unknown or not depends_on or len(set(depends_on)) != len(depends_on):
            raise ValueError(f"outcomes depend on distinct controls of this choice, not {list(depends_on)}")
        options = {name: self._by_name[name].options for name in depends_on}
        shown = {name: self.shown[name] for name in depends_on}
        if callable(views):
            view = views
            keys = [tuple(shown.values())] if self.on_demand else itertools.product(*options.values())
            views = {key: view(*key) for key in keys}
        return outcome_panels(self.group, options, shown, views, complete=not self.on_demand)


def kernel_on_demand() -> bool:
    """True while marimo draws a page a reader opened under `marimo run` (`labctl.py open`): a
    kernel stays beside it to compute an option's outcome when it is picked. False wherever a page
    must carry every outcome: the static site's export (marimo runs it in edit mode, with no
    browser's request), a script or test run (`app.run()`), marimo's editor, and outside marimo."""
    import marimo as mo

    meta = mo.app_meta()
    return meta.mode == "run" and meta.request is not None


def outcome_panels(
    group: str,
    options: Mapping[str, Sequence[str]],
    current: Mapping[str, str],
    views: Mapping[tuple[str, ...], object],
    complete: bool = True,
) -> str:
    """HTML holding one panel per combination of `options` (name -> the options, in order), marked
    for `group`; `views` as for PrecomputedChoice.outcomes, keyed in the order of `options`. The
    panel for `current` shows. A PrecomputedChoice's controls show the others, or a lab widget
    whose `outcomes` trait names the group, keyed by its input traits (widgets.NibbleDecoder's code).
    `complete=False` lets `views` leave out combinations other than `current`: each gets a panel
    that says it is being worked out, which shows while the kernel computes it."""
    if not _NAME.fullmatch(group):
        raise ValueError(f"a group is lowercase letters, digits, '-' or '_', not {group!r}")
    names = list(options)
    wanted = list(itertools.product(*(options[name] for name in names)))
    if len(wanted) > MOST_OUTCOMES:
        raise ValueError(f"{len(wanted)} outcomes is more than a page should carry ({MOST_OUTCOMES})")
    if complete and (missing := [key for key in wanted if key not in views]):
        raise ValueError(f"no outcome for {missing[0]} (and {len(missing) - 1} more)")
    if extra := sorted(set(views) - set(wanted)):
        raise ValueError(f"an outcome for {extra[0]}, which no control offers")
    shown_first = tuple(current.get(name) for name in names)
    if shown_first not in views:
        raise ValueError(f"the current values {shown_first} are not among the outcomes")
    panels = []
    for key in wanted:
        when = html.escape(json.dumps(dict(zip(names, key, strict=True)), ensure_ascii=False), quote=True)
        hidden = "" if key == shown_first else " hidden"
        if key not in views:
            panels.append(
                f'<div class="lab-outcome" data-lab-choice="{group}" data-lab-when="{when}" hidden>{PENDING}</div>'
            )
            continue
        content = _HEADING.sub(
            r'<p class="lab-outcome-heading" role="heading" aria-level="\1">\2</p>', markup(views[key])
        )
        panels.append(
            f'<div class="lab-outcome" data-lab-choice="{group}" data-lab-when="{when}"{hidden}>{content}</div>'
        )
    return "".join(panels)
