"""Single-file explainer pages: one per widget, opening straight from disk with no server.

Each page inlines the widget's bundled ES module (its code, the shared codec and UI helpers), the
lab stylesheet, the widget's default state as computed by the Python class, and host.js, which
plays the anywidget model. A Content-Security-Policy of default-src 'none' means the page cannot
fetch anything even if someone edits it to try.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

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

_CSP = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:"


def _module_body(source: str) -> str:
    """An ES module's text with its `export` keywords and imports removed, to sit inside one inline
    script. host.js imports only codec modules that every widget's bundle already holds (ui.js
    imports codec/text.js), so its imports are already declared there."""
    source = re.sub(r"^import\b[^;]*;[ \t]*\n?", "", source, flags=re.MULTILINE)
    source = re.sub(r"^export default ", "const widgetModule = ", source, flags=re.MULTILINE)
    return re.sub(r"^export (?=(const|function|let|class) )", "", source, flags=re.MULTILINE)


def page(slug: str) -> str:
    widget_class, module_file, title = PAGES[slug]
    widget = widget_class()
    # Presenter view is how this reader wants to see the page, not part of what a link shares.
    inputs = [name for name in widget_class._inputs if name != "presenter"]
    state = {name: getattr(widget, name) for name in inputs}
    host = _module_body((HERE / "host.js").read_text(encoding="utf-8"))
    script = "\n".join(
        [
            _module_body(bundle(module_file)),
            host,
            f"const defaults = {json.dumps(state, sort_keys=True)};",
            f"const inputNames = {json.dumps(inputs)};",
            # The link's values are used only if the widget itself accepts them together; otherwise
            # the page shows the defaults and says why, so a bad link can never break the page.
            "function fromLink() {",
            "  const link = readFragment(defaults, inputNames);",
            "  const problem = widgetModule.check({ ...defaults, ...link.values });",
            "  if (problem === null) return { state: { ...defaults, ...link.values }, note: link.problem };",
            "  return { state: { ...defaults }, note: `The link's values do not work (${problem}), so the defaults are shown.` };",
            "}",
            'const linkNote = document.getElementById("link-note");',
            "function showNote(note) {",
            '  linkNote.textContent = note ?? "";',
            "  linkNote.hidden = !note;",
            "}",
            "const start = fromLink();",
            "showNote(start.note);",
            "const model = createModel(start.state, inputNames);",
            'widgetModule.render({ model, el: document.getElementById("widget") });',
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
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="{_CSP}">
<title>{html.escape(title)} · the four-bit lab</title>
<style>
{stylesheet()}
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


def write_all(directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for slug in PAGES:
        path = directory / f"{slug}.html"
        path.write_text(page(slug), encoding="utf-8")
        written.append(path)
    return written
