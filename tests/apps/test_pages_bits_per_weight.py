"""Every page's bits-per-weight figures agree, format by format and accounting by accounting.

Issue 37: notebook 9 gave MLX affine 4-bit g128 4.500 bits per weight on the float32 model, and
notebook 10, on the same model, 4.25 in its table and in a Try-this ("MXFP4 and MLX affine 4-bit
g128: the same 4.25 bits per weight"): bfloat16 scales counted, and not named. Here every notebook
runs headless, as the site's build runs it (every precomputed outcome included), and every figure
it shows is read back from its rendered HTML: each table row whose column says bits per weight, and
each sentence that puts a format's title before "N bits per weight".

A figure's accounting is the scale dtype its column header or its sentence names ("float32",
"bfloat16"); one that names none, or both, is the registry's own accounting (bfloat16 scales,
lab.formats.affine.format_record). It matters only for a format whose scales take the weights'
dtype (MLX affine); every other format has one number. Two figures for one format and accounting
must agree, and each must be what lab.study.accounting gives, to the digits the page prints.
"""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

import pytest
from support import RENDERED, rendered_texts, require_real_model, require_shipped_gguf

from lab.formats import FORMATS
from lab.study import accounting

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"

TITLES = {fmt.title: name for name, fmt in FORMATS.items()}
# longest first, so that "MLX affine 4-bit g128" is not read as a shorter title; a title ends where
# a word does ("Q4_K" is not "Q4_K_M")
_TITLE = re.compile(
    r"(?<![\w-])(" + "|".join(re.escape(title) for title in sorted(TITLES, key=len, reverse=True)) + r")(?![\w-])"
)
# a table cell naming a format: its title, perhaps with a preset or a technique after it
# ("MXFP4 (ocp)", "NVFP4 + scale search", "Q4_K (every weight)")
_LABEL = re.compile(_TITLE.pattern + r"\s*(?:\(.*\)|\+.*)?")
_FIGURE = re.compile(r"(\d+(?:\.\d+)?)\s*bits? (?:per|a) weight")
_BITS_HEADER = re.compile(r"bits\s*(?:/|per|a)\s*weight", re.IGNORECASE)
_CLAUSE_END = re.compile(r"(?<=[.?!;])\s+")


def named_accounting(text: str) -> str | None:
    """The scale dtype `text` names, or None where it names none or both."""
    named = {
        dtype
        for dtype, words in (("float32", r"float32"), ("bfloat16", r"b?float16"))
        if re.search(rf"(?<![\w]){words}(?![\w])", text, re.IGNORECASE)
    }
    return named.pop() if len(named) == 1 else None


@dataclass(frozen=True)
class Figure:
    page: str
    format: str  # the registry name
    accounting: str  # the scale dtype counted, or "fixed" where the format fixes its scales
    printed: str
    where: str

    @property
    def value(self) -> float:
        return float(self.printed)

    @property
    def digits(self) -> int:
        return len(self.printed.partition(".")[2])


def figure(page: str, title: str, printed: str, named: str | None, where: str) -> Figure:
    name = TITLES[title]
    counted = (named or accounting.BFLOAT16) if accounting.scale_dtype_matters(name) else "fixed"
    return Figure(page, name, counted, printed, " ".join(where.split())[:160])


class _Page(HTMLParser):
    """A rendered output's tables, as rows of cell texts, and the text outside them."""

    def __init__(self):
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self.prose: list[str] = []
        self._cell: list[str] | None = None
        self._skip = 0

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "style"):
            self._skip += 1
        elif tag == "table":
            self.tables.append([])
        elif tag == "tr" and self.tables:
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []
        elif tag in ("p", "li", "div", "br", "h1", "h2", "h3", "h4"):
            self.prose.append("\n")

    def handle_endtag(self, tag):
        if tag in ("script", "style"):
            self._skip -= 1
        elif tag in ("td", "th") and self._cell is not None and self.tables and self.tables[-1]:
            self.tables[-1][-1].append(" ".join("".join(self._cell).split()))
            self._cell = None

    def handle_data(self, data):
        if self._skip:
            return
        if self._cell is not None:
            self._cell.append(data)
        else:
            self.prose.append(data)


def figures_in(page: str, html: str) -> list[Figure]:
    """Every bits-per-weight figure of one rendered output (see the module)."""
    parsed = _Page()
    parsed.feed(html)
    found = []
    for table in parsed.tables:
        if not table:
            continue
        header = table[0]
        columns = [i for i, cell in enumerate(header) if _BITS_HEADER.search(cell)]
        for row in table[1:]:
            label = next((match for cell in row if (match := _LABEL.fullmatch(cell))), None)
            for column in columns:
                if label is None or column >= len(row) or not re.fullmatch(r"\d+(?:\.\d+)?", row[column]):
                    continue
                named = named_accounting(header[column]) or named_accounting(" ".join(row))
                found.append(figure(page, label.group(1), row[column], named, " | ".join(row)))
    for paragraph in "".join(parsed.prose).split("\n"):
        for clause in _CLAUSE_END.split(paragraph):
            start = 0
            for number in _FIGURE.finditer(clause):
                titles = _TITLE.findall(clause, start, number.start())
                start = number.end()
                found += [figure(page, title, number.group(1), named_accounting(clause), clause) for title in titles]
    return found


def rendered_outputs(notebook: Path) -> list[str]:
    """The HTML of every cell's output, the notebook run headless as the site's build runs it: as
    test_notebooks.py's run of it rendered it (support.RENDERED), or run here where that one was not."""
    if notebook.name not in RENDERED:
        spec = importlib.util.spec_from_file_location(f"bits_{notebook.stem}", notebook)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        outputs, _ = module.app.run()
        RENDERED[notebook.name] = rendered_texts(outputs)
    return RENDERED[notebook.name]


def disagreements(figures: list[Figure]) -> list[str]:
    """Each pair of figures for one format and accounting whose values differ at the digits both print."""
    by_key: dict[tuple[str, str], list[Figure]] = {}
    for one in figures:
        by_key.setdefault((one.format, one.accounting), []).append(one)
    found = []
    for (name, counted), group in by_key.items():
        for i, one in enumerate(group):
            for other in group[i + 1 :]:
                if abs(one.value - other.value) > 0.5 * 10 ** -min(one.digits, other.digits) + 1e-12:
                    found.append(
                        f"{name} ({counted}): {one.page} says {one.printed} ({one.where}); "
                        f"{other.page} says {other.printed} ({other.where})"
                    )
    return found


# What notebook 9 and notebook 10 rendered at 8b1fc10 (their tables' header and one row, and
# notebook 10's Try-this), as marimo's Markdown writes them.
PAGE_9_BEFORE = (
    "<p>MLX keeps an affine group's scale and bias in the weights' own dtype. This checkpoint is float32, "
    "so here they cost 64 bits a group: 4-bit g64 spends 4 + 64/64 = 5 bits per weight and g128 4.5. "
    "Notebook 7's grid is for a bfloat16 checkpoint.</p><table><tr><th>format</th><th>relative RMSE</th>"
    "<th>max error</th><th>bits/weight</th><th>share of weights it could take</th></tr><tr>"
    "<td>MLX affine 4-bit g128</td><td>0.1094</td><td>0.0641</td><td>4.500</td><td>100.0%</td></tr></table>"
)
PAGE_10_BEFORE = (
    "<table><tr><th>format</th><th>bits/weight</th><th>top-1</th></tr><tr><td>MLX affine 4-bit g128</td>"
    "<td>4.25</td><td>0.969</td></tr></table><ol><li>Compare MXFP4 and MLX affine 4-bit g128: the same "
    "4.25 bits per weight. Which keeps the embeddings closer to float32?</li></ol>"
)


def test_the_contradiction_of_notebooks_9_and_10_is_found():
    """The reading below finds what a learner found: the same format, no scale dtype named, two
    numbers; and reads each figure's format, value and accounting."""
    nine, ten = figures_in("09", PAGE_9_BEFORE), figures_in("10", PAGE_10_BEFORE)
    assert [(f.format, f.printed, f.accounting) for f in nine] == [("affine4_g128", "4.500", "bfloat16")]
    assert [(f.format, f.printed, f.accounting) for f in ten] == [
        ("affine4_g128", "4.25", "bfloat16"),
        ("mxfp4", "4.25", "fixed"),
        ("affine4_g128", "4.25", "bfloat16"),
    ]
    assert len(disagreements(nine + ten)) == 2
    # named, the two accountings are two numbers that do not contradict each other
    named = figures_in("09", PAGE_9_BEFORE.replace("<th>bits/weight</th>", "<th>bits/weight (float32 scales)</th>"))
    assert named[0].accounting == "float32" and disagreements(named + ten) == []


@pytest.fixture(scope="module")
def course_figures() -> list[Figure]:
    require_real_model()  # notebooks 9 to 12: a skip on a laptop without the model, a failure in CI
    require_shipped_gguf()  # notebooks 6 and 12
    figures = []
    for notebook in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.py")):
        for html in rendered_outputs(notebook):
            figures += figures_in(notebook.stem[:2], html)
    return figures


def test_no_two_pages_give_one_format_two_numbers(course_figures):
    pages = {one.page for one in course_figures}
    # the pages that state figures: capacity (7), real weights (9), answers (10), files (6), chat (12)
    assert {"06", "07", "09", "10", "12"} <= pages
    assert {(one.format, one.accounting) for one in course_figures} >= {
        ("affine4_g128", "float32"),  # notebooks 9 and 10, on the float32 model
        ("affine4_g128", "bfloat16"),  # notebook 7's table, for a bfloat16 checkpoint
        ("mxfp4", "fixed"),
    }
    assert disagreements(course_figures) == []


def test_every_figure_is_what_the_lab_counts(course_figures):
    wrong = [
        f"{one.page}: {one.format} ({one.accounting}) {one.printed}, the lab counts {truth:g} ({one.where})"
        for one in course_figures
        if abs(
            one.value
            - (
                truth := accounting.bits_per_weight(
                    one.format, accounting.BFLOAT16 if one.accounting == "fixed" else one.accounting
                )
            )
        )
        > 0.5 * 10**-one.digits + 1e-12
    ]
    assert wrong == []


def test_one_function_counts_every_format_under_a_named_scale_dtype():
    """lab.study.accounting is where every page's figure comes from: MLX affine by its scale dtype,
    every other format by its one number; what a tensor of the float32 model measures (notebook 9)
    and what notebook 10's study states are both its float32 count."""
    import numpy as np

    from lab.errors import InputError
    from lab.study import behaviour

    assert accounting.bits_per_weight("affine4_g128", "float32") == 4.5  # 4 + 64/128
    assert accounting.bits_per_weight("affine4_g128", "bfloat16") == 4.25  # 4 + 32/128
    assert accounting.bits_per_weight("affine3_g64", "float16") == 3.5
    assert {accounting.bits_per_weight("mxfp4", dtype) for dtype in ("float32", "bfloat16")} == {4.25}
    assert accounting.scales_named("affine4_g64", "float32") == "float32 scale and bias"
    assert accounting.scales_named("q4k", "float32") == "fixed by the format"
    with pytest.raises(InputError, match="scale dtype is one of"):
        accounting.bits_per_weight("affine4_g64", "int8")
    weights = np.random.default_rng(37).normal(size=(4, 256)).astype(np.float32)
    for name in ("affine4_g128", "affine2_g64", "mxfp4", "q4_0"):
        assert FORMATS[name].quantize(weights).bits_per_weight == accounting.bits_per_weight(name, "float32")
        assert behaviour.stored_bits_per_weight(name) == accounting.bits_per_weight(name, "float32")
    assert behaviour.stored_bits_per_weight(behaviour.FP32) == 32.0
