"""Paper for a workshop: `labctl.py handouts [--seed N] [-o DIR]`.

For each course notebook with exercises (1..8) it writes a worksheet (the questions, with ruled
lines to write on) and an answer key (each answer and its worked arithmetic), as A4 PDFs printed
by headless Chromium. The sheets are drawn in the page by widgets/handout.js from the exercises'
own generator (widgets/codec/teach/exercises.js), so seed N on paper is what a student gets by
typing seed N into the Exercises widget. The page inlines its bundled module, as the standalone
explainers do, under a Content-Security-Policy that lets it fetch nothing.
"""

from __future__ import annotations

import argparse
import html
import json
import re
import sys
import tempfile
from pathlib import Path

from bench.harness.chromium import NO_CHROMIUM, chromium, find_chromium
from lab.files import UnsafeWriteError, check_inside, shown_path, write_inside
from lab.teach.course import NOTEBOOKS
from lab.text import visible
from widgets._bundle import bundle

#: the notebooks whose pages end with exercises (widgets/codec/teach/exercises.js: topics 1..8)
TOPICS = range(1, 9)
SHEETS = ("worksheet", "key")
DEFAULT_SEED = 1
LARGEST_SEED = 2**32 - 1
DEFAULT_FOLDER = Path("handouts")
#: how long one sheet may take to draw in the page; it draws two exercises, in milliseconds
DRAW_TIMEOUT_MS = 30_000

_CSP = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'"

# Print only: A4 with margins, 12 pt body type, black on white, and an exercise kept whole on one
# page. Nothing on the sheet is a control, so there is nothing to hide.
SHEET_CSS = """
@page { size: A4; margin: 18mm 17mm 20mm; }
html { background: #fff; color: #000; }
body { margin: 0; font-family: "DejaVu Sans", "Liberation Sans", Arial, sans-serif; font-size: 12pt;
  line-height: 1.4; overflow-wrap: break-word; font-variant-ligatures: none; }
.handout-header { border-bottom: 1.5pt solid #000; padding-bottom: 6pt; margin-bottom: 12pt; break-inside: avoid; }
.handout-lab { margin: 0; font-size: 11pt; }
.handout-title { margin: 2pt 0 4pt; font-size: 18pt; }
.handout-seed { margin: 0 0 4pt; font-weight: 700; }
.handout-about { margin: 4pt 0 0; font-size: 11pt; }
.handout-name, .handout-answer-line { display: flex; align-items: flex-end; gap: 6pt; margin: 8pt 0 0; }
.handout-blank { flex: 1 1 auto; border-bottom: 1pt solid #000; height: 1.2em; }
.handout-exercise { break-inside: avoid; margin: 0 0 16pt; }
.handout-exercise-title { margin: 0 0 4pt; font-size: 13pt; }
.handout-prompt { margin: 0 0 4pt; }
.handout-options { margin: 2pt 0 4pt; padding-left: 0; list-style: none; }
.handout-line { height: 2.1em; border-bottom: 0.75pt solid #000; }
.handout-answer { margin: 6pt 0 2pt; font-weight: 700; }
.handout-worked { margin: 2pt 0; font-family: "DejaVu Sans Mono", "Liberation Mono", monospace; font-size: 11pt; }
.handout-problem { font-weight: 700; }
"""


class HandoutError(RuntimeError):
    """A sheet could not be made; the message says which and why, in the lab's words."""


def notebook(topic: int) -> tuple[str, str]:
    """The course notebook of `topic`: (its file's stem, such as "01_one_nibble", its title)."""
    file, title, _ = NOTEBOOKS[topic - 1]
    return Path(file).stem, title


def file_name(topic: int, seed: int, sheet: str) -> str:
    return f"{notebook(topic)[0]}-seed{seed}-{sheet}.pdf"


def _module_script() -> str:
    """widgets/handout.js and what it imports as one inline script: the bundle keeps the entry's
    `export` keywords, which a classic inline module does not need."""
    return re.sub(r"^export (?=(const|function|let|class) )", "", bundle("handout.js"), flags=re.MULTILINE)


def page(topic: int, seed: int, sheet: str) -> str:
    """The offline page that draws one sheet; Python sets only its inputs, the module writes it."""
    inputs = {"topic": topic, "title": notebook(topic)[1], "seed": seed, "sheet": sheet}
    script = "\n".join(
        [
            _module_script(),
            # Every character of the inputs that could end the script element is written as an escape.
            "const inputs = " + json.dumps(inputs).replace("<", "\\u003c") + ";",
            'const drawn = writeHandout(document.getElementById("sheet"), inputs);',
            'document.body.dataset.problem = drawn.problem ?? "";',
            'document.body.dataset.ready = "true";',
        ]
    )
    if "</script" in script.lower():
        raise HandoutError("widgets/handout.js contains '</script', which cannot be inlined")
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{_CSP}">
<title>{html.escape(f"{topic} · {notebook(topic)[1]} · {sheet} · seed {seed}")}</title>
<style>
{SHEET_CSS}
</style>
</head>
<body>
<main id="sheet"></main>
<script type="module">
{script}
</script>
</body>
</html>
"""


def read_seed(text: str) -> int:
    """A seed as the exercises take one: a whole number 1..4294967295, in decimal digits."""
    if re.fullmatch(r"[0-9]{1,10}", text.strip()) and 1 <= int(text) <= LARGEST_SEED:
        return int(text)
    raise ValueError(
        f"{visible(text, 40)!r} is not a seed: type a whole number from 1 to {LARGEST_SEED}, "
        "as the exercises' seed field takes"
    )


def _writable(folder: Path) -> None:
    """Make `folder` (and its parents) and check a file can be written there, before Chromium starts."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".handouts-", suffix=".check"):
            pass
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise HandoutError(f"cannot write the handouts into {visible(str(folder), 200)}: {reason}") from error


def write_handouts(folder: Path, seed: int = DEFAULT_SEED, topics=TOPICS) -> list[Path]:
    """Print the worksheet and the answer key of each of `topics` for `seed` into `folder`; the
    paths written, in order. One Chromium prints them all. A link, or anything but a regular file,
    where a sheet would go is refused (UnsafeWriteError) before Chromium starts; each sheet is
    written whole or not at all (lab.files.write_inside)."""
    _writable(folder)
    for topic in topics:
        for sheet in SHEETS:
            check_inside(folder, file_name(topic, seed, sheet))
    executable = find_chromium()
    if executable is None:
        raise HandoutError(f"{NO_CHROMIUM}: the handouts are printed by headless Chromium")
    written = []
    with tempfile.TemporaryDirectory(prefix="four-bit-lab-handouts-") as scratch:
        with chromium(executable) as new_page, new_page() as (browser_page, traffic):
            browser_page.emulate_media(media="print", color_scheme="light")
            for topic in topics:
                for sheet in SHEETS:
                    source = Path(scratch) / f"{topic}-{sheet}.html"
                    source.write_text(page(topic, seed, sheet), encoding="utf-8")
                    browser_page.goto(source.as_uri())
                    browser_page.wait_for_selector("body[data-ready='true']", state="attached", timeout=DRAW_TIMEOUT_MS)
                    problem = browser_page.evaluate("document.body.dataset.problem")
                    if problem or traffic.console_errors:
                        said = problem or "; ".join(traffic.console_errors)
                        raise HandoutError(f"the {sheet} of notebook {topic} could not be drawn: {said}")
                    pdf = browser_page.pdf(prefer_css_page_size=True, print_background=False)
                    target = folder / file_name(topic, seed, sheet)
                    try:
                        written.append(write_inside(folder, target.name, pdf))
                    except OSError as error:
                        raise HandoutError(f"cannot write {shown_path(target)}: {error.strerror}") from error
    return written


class _Arguments(argparse.ArgumentParser):
    """argparse, but a mistake on the command line is one line and exit status 2."""

    def error(self, message):
        self.exit(2, f"handouts: {message} (see --help)\n")


def main(argv: list[str]) -> int:
    parser = _Arguments(
        prog="labctl.py handouts",
        description="Print each course notebook's exercises (1..8) as an A4 worksheet and an answer key (PDF).",
    )
    parser.add_argument(
        "--seed", default=str(DEFAULT_SEED), help=f"the exercises' seed, 1..{LARGEST_SEED} (default {DEFAULT_SEED})"
    )
    parser.add_argument(
        "-o", "--output", default=str(DEFAULT_FOLDER), help=f"the folder to write into (default {DEFAULT_FOLDER}/)"
    )
    arguments = parser.parse_args(argv)
    try:
        seed = read_seed(arguments.seed)
    except ValueError as refused:
        print(f"handouts: {refused}", file=sys.stderr)
        return 2
    try:
        written = write_handouts(Path(arguments.output), seed)
    except UnsafeWriteError as refused:
        print(f"handouts: {refused}", file=sys.stderr)
        return 2
    except HandoutError as failed:
        print(f"handouts: {failed}", file=sys.stderr)
        return 1
    for path in written:
        print(path)
    print(f"wrote {len(written)} sheets for seed {seed} into {visible(arguments.output, 200)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
