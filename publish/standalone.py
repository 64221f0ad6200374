"""Single-file explainer pages: one per widget, opening straight from disk with no server.

Each page inlines the widget's bundled ES module (its code, the shared codec and UI helpers), the
lab stylesheet, the widget's default state as computed by the Python class, and host.js, which
plays the anywidget model. A Content-Security-Policy of default-src 'none' means the page cannot
fetch anything even if someone edits it to try.

`explainer NAME -o FILE` writes FILE as export writes its page: only where there is nothing of
that name or a page this command wrote before (EXPLAINER_MARK, in the page's head, says so), never
through a link, and whole or not at all (lab.files.write_inside).
"""

from __future__ import annotations

import html
import json
import re
import sys
import urllib.parse
from pathlib import Path

import traitlets

from lab.errors import InputError, LabError
from lab.files import UnsafeWriteError, shown_path, write_inside
from lab.text import read_json, visible
from widgets import CodeExplorer, Exercises, NibbleDecoder, OwnershipView, Q4KExplorer, ScaleLab
from widgets._bundle import HERE, bundle, stylesheet

PAGES = {
    "nibble-decoder": (NibbleDecoder, "nibble.js", "One nibble, six decoders"),
    "scale-lab": (ScaleLab, "scale_lab.js", "The scale is a ruler"),
    "ownership": (OwnershipView, "ownership.js", "Who owns which scale: MXFP4 and NVFP4"),
    "q4k-explorer": (Q4KExplorer, "q4k_explorer.js", "Inside a Q4_K block"),
    "code-explorer": (CodeExplorer, "code_explorer.js", "Every code clickable: E2M1, E8M0, E4M3"),
    "exercises": (Exercises, "exercises.js", "Exercises that check themselves"),
}

# The share bar's layout: the box shows an embed code whole, wrapping rather than leaving a phone.
SHARE_STYLE = """.lab-share { margin-top: 24px; }
.lab-share h2 { font-size: 1.1em; margin: 0 0 4px; }
.lab-share-buttons { display: flex; flex-wrap: wrap; gap: 8px; }
.lab-share-text { box-sizing: border-box; width: 100%; font: 16px/1.4 ui-monospace, monospace; color: var(--lab-ink);
  background: var(--lab-surface); border: 1px solid var(--lab-muted); padding: 6px; white-space: pre-wrap;
  overflow-wrap: anywhere; }"""

_CSP = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:"
# Written first in every explainer page's head, so that writing an explainer again may replace a
# page this command wrote, and only such a page: a file of the same name without it is someone's own.
EXPLAINER_MARK = '<meta name="generator" content="the four-bit lab\'s explainer">'


def written_by_explainer(head: bytes) -> bool:
    """Whether a file's first bytes are an explainer page's head, which EXPLAINER_MARK opens."""
    return EXPLAINER_MARK.encode("utf-8") in head


def _module_body(source: str) -> str:
    """An ES module's text with its `export` keywords and imports removed, to sit inside one inline
    script. host.js imports only codec modules that every widget's bundle already holds (ui.js
    imports codec/text.js), so its imports are already declared there."""
    source = re.sub(r"^import\b[^;]*;[ \t]*\n?", "", source, flags=re.MULTILINE)
    source = re.sub(r"^export default ", "const widgetModule = ", source, flags=re.MULTILINE)
    return re.sub(r"^export (?=(const|function|let|class) )", "", source, flags=re.MULTILINE)


def _inputs(widget_class) -> list[str]:
    # Presenter view is how this reader wants to see the page, not part of what a link shares.
    return [name for name in widget_class._inputs if name != "presenter"]


def _script_json(value) -> str:
    """`value` as JSON to sit inside an inline script: "<" written as an escape, so no text in it
    (an author's state holds any text) can end the script element."""
    return json.dumps(value, sort_keys=True).replace("<", "\\u003c")


def page(slug: str, given: dict | None = None) -> str:
    """The explainer page `slug`; with `given` (checked by read_state), that state is what the page
    opens with when its link carries none."""
    widget_class, module_file, title = PAGES[slug]
    widget = widget_class()
    inputs = _inputs(widget_class)
    state = {name: getattr(widget, name) for name in inputs}
    host = _module_body((HERE / "host.js").read_text(encoding="utf-8"))
    script = "\n".join(
        [
            _module_body(bundle(module_file)),
            host,
            f"const defaults = {json.dumps(state, sort_keys=True)};",
            f"const given = {_script_json(given or {})};",
            f"const inputNames = {json.dumps(inputs)};",
            # The link's values are used only if the widget itself accepts them together; otherwise
            # the page shows the defaults and says why, so a bad link can never break the page.
            "function fromLink() {",
            "  const linked = location.hash.length > 1;",
            "  const link = linked ? readFragment(defaults, inputNames) : { values: given, problem: null };",
            "  const problem = widgetModule.check({ ...defaults, ...link.values });",
            "  if (problem === null) return { state: { ...defaults, ...link.values }, note: link.problem };",
            '  const whose = linked ? "The link\'s values do" : "The state this page was written with does";',
            "  return { state: { ...defaults }, note: `${whose} not work (${problem}), so the defaults are shown.` };",
            "}",
            'const linkNote = document.getElementById("link-note");',
            "function showNote(note) {",
            '  linkNote.textContent = note ?? "";',
            "  linkNote.hidden = !note;",
            "}",
            "const start = fromLink();",
            "showNote(start.note);",
            "const model = createModel(start.state, inputNames, defaults);",
            'widgetModule.render({ model, el: document.getElementById("widget") });',
            f'shareBar(document.querySelector("main"), {json.dumps(slug + ".html")}, {json.dumps(title)});',
            "reportHeight();",
            # Editing the link by hand (or following another link to this page) applies it too.
            'window.addEventListener("hashchange", () => {',
            "  const next = fromLink();",
            "  showNote(next.note);",
            "  for (const [name, value] of Object.entries(next.state)) model.set(name, value);",
            "});",
            'document.body.dataset.ready = "true";',
        ]
    )
    # "</script" inside the code would end the element early; the sources never contain it.
    if "</script" in script.lower():
        raise ValueError(f"{module_file} contains '</script', which cannot be inlined")
    return f"""<!doctype html>
<html lang="en">
<head>
{EXPLAINER_MARK}
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="{_CSP}">
<title>{html.escape(title)} · the four-bit lab</title>
<style>
{stylesheet()}
{SHARE_STYLE}
</style>
</head>
<body class="lab-page">
<main>
<h1>{html.escape(title)}</h1>
<p id="link-note" class="lab-link-note" role="alert" hidden></p>
<div id="widget"></div>
</main>
<script type="module">
{script}
</script>
</body>
</html>
"""


def write_all(folder: Path, under: str = "") -> list[Path]:
    """Every explainer page, into `folder`/`under` (a subfolder made where missing), and the paths
    written. `folder` is made too; below it no link is followed (lab.files.write_inside)."""
    folder.mkdir(parents=True, exist_ok=True)
    return [write_inside(folder, Path(under, f"{slug}.html"), page(slug)) for slug in PAGES]


# The longest state an author may give: far more than any widget's inputs, and short enough that
# reading it is instant.
LONGEST_STATE = 100_000


def _same_shape(value, reference) -> bool:
    """host.js's sameShape: what a link's value must look like to be taken, in Python."""
    if isinstance(reference, list):
        return isinstance(value, list) and len(value) == len(reference) and all(map(_same_shape, value, reference))
    if isinstance(reference, bool) or isinstance(value, bool):
        return type(value) is type(reference)
    if isinstance(reference, (int, float)):
        return isinstance(value, (int, float)) and value == value and abs(value) != float("inf")
    return type(value) is type(reference)


def _described(reference) -> str:
    """What a value shaped like `reference` is, in words."""
    if isinstance(reference, bool):
        return "true or false"
    if isinstance(reference, int):
        return "a whole number"
    if isinstance(reference, float):
        return "a number"
    if isinstance(reference, list):
        return f"a list of {len(reference)} values"
    if isinstance(reference, dict):
        return "a set of named values"
    return "text"


def read_state(slug: str, text: str) -> dict:
    """The state an author gives for explainer `slug`, as a page's link carries it ("#%7B…%7D",
    its JSON, or the JSON with or without the "#"), checked as the widget checks its inputs.
    Raises InputError in the lab's words for anything else."""
    if len(text) > LONGEST_STATE:
        raise InputError(f"the state is {len(text):,} characters long; a state is at most {LONGEST_STATE:,}")
    try:
        unquoted = urllib.parse.unquote(text.strip().removeprefix("#"), errors="strict")
    except UnicodeDecodeError:
        raise InputError("the state is not a page's link state: copy it from the page's Copy link") from None
    try:
        parsed = read_json(unquoted, what="the state")
    except InputError as error:
        raise InputError(f"{error}, so it is not a page's link state: copy it from the page's Copy link") from None
    if not isinstance(parsed, dict):
        raise InputError('the state must be a set of named values, as in #{"code": 5}')
    widget_class = PAGES[slug][0]
    defaults = widget_class()
    inputs = _inputs(widget_class)
    unknown = [name for name in parsed if name not in inputs]
    if unknown:
        names = ", ".join(visible(name, 40) for name in unknown)
        raise InputError(f"{slug} has no input {names}; its inputs are {', '.join(inputs)}")
    for name, value in parsed.items():
        reference = getattr(defaults, name)
        if not _same_shape(value, reference) or (isinstance(reference, int) and value != int(value)):
            raise InputError(
                f"{slug}'s {name} must be {_described(reference)} (its default is {visible(json.dumps(reference), 60)}), "
                f"got {visible(json.dumps(value), 60)}"
            )
    try:
        widget = widget_class(**parsed)
    except (LabError, traitlets.TraitError) as error:
        raise InputError(f"{slug} refuses this state: {visible(str(error), 200)}") from None
    if getattr(widget, "message", ""):
        raise InputError(f"{slug} refuses this state: {visible(widget.message, 200)}")
    return parsed


USAGE = "explainer NAME [--state '#…'] -o FILE.html, NAME one of " + ", ".join(PAGES)


def main(argv: list[str]) -> int:
    """`labctl.py explainer NAME [--state '#…'] -o FILE.html`: one explainer, with the state an
    author copied from its page, as one self-contained file."""
    words = list(argv)
    options = {}
    for flag in ("--state", "-o"):
        if flag in words:
            at = words.index(flag)
            if at + 1 >= len(words):
                print(f"{flag} needs a value: {USAGE}", file=sys.stderr)
                return 2
            options[flag] = words.pop(at + 1)
            words.pop(at)
    if len(words) != 1 or words[0] not in PAGES or "-o" not in options:
        print(f"usage: {USAGE}", file=sys.stderr)
        return 2
    slug, target = words[0], Path(options["-o"])
    try:
        given = read_state(slug, options["--state"]) if "--state" in options else None
    except InputError as error:
        print(f"--state: {error}", file=sys.stderr)
        return 2
    try:
        # the folder -o names is taken as given; the file itself must be free or this command's own
        write_inside(target.parent, target.name, page(slug, given), replace=written_by_explainer)
    except UnsafeWriteError as error:
        print(f"-o: {error}", file=sys.stderr)
        return 2
    except OSError as error:
        print(f"cannot write {shown_path(target)} ({error.strerror or error})", file=sys.stderr)
        return 1
    print(
        f"wrote {shown_path(target)}: {PAGES[slug][2]}, opening with {'the given state' if given else 'its defaults'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
