"""Paper for a workshop: `labctl.py handouts [--seed N] [--notebooks 1,3,9-12] [--pages N] [-o DIR]`.

By default it writes one booklet for the workshop: a worksheet (a cover with the seed and the
notebooks chosen, then each notebook's questions with ruled lines to write on, as many as fill
its pages) and its answer key (the same questions, each answer and its worked arithmetic), as two
A4 PDFs. `--separate` writes the older sheets instead: for each notebook with exercises, a
worksheet and a key of its first two questions. Headless Chromium prints them; widgets/handout.js
draws them in the page from the exercises' own generator (widgets/codec/teach/exercises.js), so
seed N on paper is what a student gets by typing seed N into the Exercises widget (a booklet's
round r question: after pressing New instance r times). The page inlines its bundled module, as
the standalone explainers do, under a Content-Security-Policy that lets it fetch nothing.
"""

from __future__ import annotations

import argparse
import html
import json
import re
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

from bench.harness.chromium import NO_CHROMIUM, chromium, find_chromium
from lab.files import UnsafeWriteError, check_inside, shown_path, write_inside
from lab.teach.course import NOTEBOOKS
from lab.text import visible
from widgets._bundle import bundle

#: the notebooks whose pages end with exercises (widgets/codec/teach/exercises.js: topics 1..12)
TOPICS = range(1, 13)
SHEETS = ("worksheet", "key")
DEFAULT_SEED = 1
LARGEST_SEED = 2**32 - 1
DEFAULT_FOLDER = Path("handouts")
#: how long one sheet may take to draw in the page, in milliseconds: a booklet lays out and measures
#: a few hundred questions
DRAW_TIMEOUT_MS = 60_000
#: a booklet's pages per notebook, by default and at most (widgets/handout.js's LARGEST_PAGES_PER_NOTEBOOK)
DEFAULT_PAGES = 1
LARGEST_PAGES = 4

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
.handout-where { margin: 0 0 4pt; font-size: 11pt; }
/* A booklet page is one printed page's box (A4 less the margins, less 3 mm for rounding): the
   module fills it with whole questions and never lets one run over. */
.booklet-page { box-sizing: border-box; width: 176mm; height: 256mm; overflow: hidden; break-after: page; }
.booklet-page:last-child { break-after: auto; }
.booklet-seed { margin: 24pt 0 12pt; font-size: 40pt; }
.booklet-notebook { margin: 0 0 10pt; font-size: 18pt; border-bottom: 1.5pt solid #000; padding-bottom: 4pt; }
.booklet-contents { padding-left: 1.2em; }
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
    return _page_of(f"{topic} · {notebook(topic)[1]} · {sheet} · seed {seed}", "writeHandout", inputs)


def _page_of(title: str, writer: str, inputs: dict, after: str = "") -> str:
    """An offline page whose script runs `writer` (widgets/handout.js) on `inputs`, then marks the
    body ready (with the problem it met, if any)."""
    script = "\n".join(
        [
            _module_script(),
            # Every character of the inputs that could end the script element is written as an escape.
            "const inputs = " + json.dumps(inputs).replace("<", "\\u003c") + ";",
            f'const drawn = {writer}(document.getElementById("sheet"), inputs);',
            'document.body.dataset.problem = drawn.problem ?? "";',
            after,
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
<title>{html.escape(title)}</title>
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


def booklet_name(seed: int, sheet: str) -> str:
    return f"booklet-seed{seed}-{sheet}.pdf"


def booklet_page(seed: int, topics, sheet: str, pages: int = DEFAULT_PAGES, chosen: dict | None = None) -> str:
    """The offline page that draws one sheet of a booklet; `chosen` (the key's) is what the
    worksheet's page chose to ask, as it reported it."""
    notebooks = [{"topic": topic, "title": notebook(topic)[1]} for topic in topics]
    inputs = {"seed": seed, "sheet": sheet, "notebooks": notebooks, "pages": pages, "chosen": chosen}
    title = f"workshop booklet · {sheet} · seed {seed}"
    return _page_of(title, "writeBooklet", inputs, "document.body.dataset.chosen = JSON.stringify(drawn.chosen);")


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


def _printer(executable):
    """Open `executable`'s page for printing sheets; a context giving print_page(name, html, what) ->
    (pdf bytes, the body's dataset), which raises HandoutError when the sheet could not be drawn."""

    @contextmanager
    def printing():
        with tempfile.TemporaryDirectory(prefix="four-bit-lab-handouts-") as scratch:
            with chromium(executable) as new_page, new_page() as (browser_page, traffic):
                browser_page.emulate_media(media="print", color_scheme="light")

                def print_page(name: str, text: str, what: str) -> tuple[bytes, dict]:
                    source = Path(scratch) / name
                    source.write_text(text, encoding="utf-8")
                    browser_page.goto(source.as_uri())
                    browser_page.wait_for_selector("body[data-ready='true']", state="attached", timeout=DRAW_TIMEOUT_MS)
                    data = browser_page.evaluate("({...document.body.dataset})")
                    if data.get("problem") or traffic.console_errors:
                        said = data.get("problem") or "; ".join(traffic.console_errors)
                        raise HandoutError(f"{what} could not be drawn: {said}")
                    return browser_page.pdf(prefer_css_page_size=True, print_background=False), data

                yield print_page

    return printing()


def _ready(folder: Path, names: list[str]):
    """Check `folder` takes `names` (no link where one goes) and find Chromium, before it starts."""
    _writable(folder)
    for name in names:
        check_inside(folder, name)
    executable = find_chromium()
    if executable is None:
        raise HandoutError(f"{NO_CHROMIUM}: the handouts are printed by headless Chromium")
    return executable


def _write(folder: Path, name: str, pdf: bytes) -> Path:
    try:
        return write_inside(folder, name, pdf)
    except OSError as error:
        raise HandoutError(f"cannot write {shown_path(folder / name)}: {error.strerror}") from error


def write_handouts(folder: Path, seed: int = DEFAULT_SEED, topics=TOPICS) -> list[Path]:
    """Print the worksheet and the answer key of each of `topics` for `seed` into `folder`; the
    paths written, in order. One Chromium prints them all. A link, or anything but a regular file,
    where a sheet would go is refused (UnsafeWriteError) before Chromium starts; each sheet is
    written whole or not at all (lab.files.write_inside)."""
    executable = _ready(folder, [file_name(topic, seed, sheet) for topic in topics for sheet in SHEETS])
    written = []
    with _printer(executable) as print_page:
        for topic in topics:
            for sheet in SHEETS:
                pdf, _ = print_page(
                    f"{topic}-{sheet}.html", page(topic, seed, sheet), f"the {sheet} of notebook {topic}"
                )
                written.append(_write(folder, file_name(topic, seed, sheet), pdf))
    return written


def write_booklet(folder: Path, seed: int = DEFAULT_SEED, topics=TOPICS, pages: int = DEFAULT_PAGES) -> list[Path]:
    """Print the workshop's booklet for `seed` and `topics` into `folder`: the worksheet, whose page
    chooses as many questions as fill each notebook's `pages` pages, then the key of those questions.
    The paths written; links refused and files written whole, as write_handouts does."""
    executable = _ready(folder, [booklet_name(seed, sheet) for sheet in SHEETS])
    with _printer(executable) as print_page:
        worksheet, drawn = print_page("worksheet.html", booklet_page(seed, topics, "worksheet", pages), "the booklet")
        chosen = json.loads(drawn["chosen"])
        key, _ = print_page("key.html", booklet_page(seed, topics, "key", pages, chosen), "the booklet's key")
    return [_write(folder, booklet_name(seed, "worksheet"), worksheet), _write(folder, booklet_name(seed, "key"), key)]


def read_notebooks(text: str) -> list[int]:
    """Notebooks as `--notebooks` takes them: numbers and ranges such as "1,3,9-12", each a notebook
    with exercises; in course order, each once."""
    chosen = set()
    for part in text.split(","):
        match = re.fullmatch(r"\s*([0-9]{1,2})\s*(?:-\s*([0-9]{1,2})\s*)?", part)
        low, high = (int(match[1]), int(match[2] or match[1])) if match else (0, 0)
        if not match or low > high or low not in TOPICS or high not in TOPICS:
            raise ValueError(
                f"{visible(part.strip(), 40)!r} is not a notebook with exercises: choose from "
                f"{TOPICS.start} to {TOPICS.stop - 1}, as in 1,3,9-12"
            )
        chosen.update(range(low, high + 1))
    return sorted(chosen)


def read_pages(text: str) -> int:
    if re.fullmatch(r"[0-9]", text.strip()) and 1 <= int(text) <= LARGEST_PAGES:
        return int(text)
    raise ValueError(f"{visible(text, 40)!r} is not a number of pages: type a whole number from 1 to {LARGEST_PAGES}")


class _Arguments(argparse.ArgumentParser):
    """argparse, but a mistake on the command line is one line and exit status 2."""

    def error(self, message):
        self.exit(2, f"handouts: {message} (see --help)\n")


def main(argv: list[str]) -> int:
    parser = _Arguments(
        prog="labctl.py handouts",
        description=(
            "Print a workshop's booklet of the exercises (a worksheet with a cover, and its answer key, A4 PDF), "
            "or with --separate a worksheet and a key per notebook."
        ),
    )
    parser.add_argument(
        "--seed", default=str(DEFAULT_SEED), help=f"the exercises' seed, 1..{LARGEST_SEED} (default {DEFAULT_SEED})"
    )
    parser.add_argument(
        "--notebooks",
        default=f"{TOPICS.start}-{TOPICS.stop - 1}",
        help=f"the notebooks in the booklet, such as 1,3,9-12 (default all: {TOPICS.start}-{TOPICS.stop - 1})",
    )
    parser.add_argument(
        "--pages",
        default=str(DEFAULT_PAGES),
        help=f"pages of questions per notebook in the booklet, 1..{LARGEST_PAGES} (default {DEFAULT_PAGES})",
    )
    parser.add_argument(
        "--separate", action="store_true", help="a worksheet and a key of two questions per notebook instead"
    )
    parser.add_argument(
        "-o", "--output", default=str(DEFAULT_FOLDER), help=f"the folder to write into (default {DEFAULT_FOLDER}/)"
    )
    arguments = parser.parse_args(argv)
    try:
        seed = read_seed(arguments.seed)
        topics = read_notebooks(arguments.notebooks)
        pages = read_pages(arguments.pages)
    except ValueError as refused:
        print(f"handouts: {refused}", file=sys.stderr)
        return 2
    folder = Path(arguments.output)
    try:
        written = (
            write_handouts(folder, seed, topics) if arguments.separate else write_booklet(folder, seed, topics, pages)
        )
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
