"""lab.text: text from outside is shown literally and never becomes markup, in HTML, in marimo's
Markdown (with every extension marimo turns on) and in a Markdown table cell."""

from __future__ import annotations

import html
import re

import marimo as mo
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lab.teach import course
from lab.text import CODE_NAME_CHARS, ELLIPSIS, LINE_BREAK, Safe, code_name, quoted, shown, shown_lines, visible

#: markup that would do something if it were not text: HTML, Markdown, marimo's extensions
PAYLOADS = [
    "<b>x</b>",
    "**x** __x__ *x* _x_",
    "[a](javascript:alert(1))",
    "![a](data:image/svg+xml,<svg onload=alert(1)>)",
    "<javascript:alert(1)>",
    "<https://example.invalid/>",
    "https://example.invalid/ www.example.invalid",
    "`code` ``code``",
    "$x^2$ $$y$$ \\(z\\)",
    ":smile: :+1:",
    "~~del~~ ~sub~ ^sup^ ^^ins^^ ==mark== ++ctrl+alt++",
    "{++add++} {--del--} {~~a~>b~~} {==mark==} {>>note<<}",
    "# heading",
    "1. list",
    "- item",
    "> quote",
    "| cell | cell |",
    "&amp; &lt; &#60; &#x3c;",
    "a\\*b\\_c",
    "- [ ] task",
    "<!-- comment -->",
    "<img src=x onerror=alert(1)>",
]


def rendered_text(markdown: str) -> str:
    """What a reader sees of marimo's rendering: the HTML with marimo's wrapper removed, unescaped."""
    markup = mo.md(markdown).text
    inner = re.sub(r'^<span class="markdown prose dark:prose-invert contents">(.*)</span>$', r"\1", markup, flags=re.S)
    return inner


@pytest.mark.parametrize("payload", PAYLOADS)
def test_a_payload_renders_as_the_text_it_was(payload):
    inner = rendered_text(shown(payload))
    # one paragraph and nothing else: no element of the payload's own
    paragraph = re.fullmatch(r'<span class="paragraph">(.*)</span>', inner, flags=re.S)
    assert paragraph is not None, inner
    assert "<" not in paragraph.group(1) and html.unescape(paragraph.group(1)) == payload


@pytest.mark.parametrize("payload", PAYLOADS)
def test_a_payload_in_a_table_cell_stays_in_its_cell(payload):
    table = mo.md(course.table(["name", "n"], [[payload, 1]])).text
    cells = re.findall(r"<td[^>]*>(.*?)</td>", table, flags=re.S)
    assert len(cells) == 2 and html.unescape(cells[0]) == payload and "<" not in cells[0]


@pytest.mark.parametrize(
    ("text", "spelt"),
    [
        ("a\u202eb", "a\\u202eb"),  # a right-to-left override reorders what follows
        ("zero\u200bwidth", "zero\\u200bwidth"),
        ("bom\ufeff", "bom\\ufeff"),
        ("nul\x00", "nul\\x00"),
        ("line\nbreak\ttab\rreturn", "line\\nbreak\\ttab\\rreturn"),
        ("no\u00a0break", "no\\xa0break"),
        ("ideographic\u3000space", "ideographic\\u3000space"),
        ("separator\u2028", "separator\\u2028"),
        ("tag \U000e0041", "tag \\U000e0041"),
        ("Größe 日本語 🧪 עברית", "Größe 日本語 🧪 עברית"),  # printable text of any script stays
    ],
)
def test_hidden_characters_are_spelt_out(text, spelt):
    assert visible(text) == spelt
    assert html.unescape(shown(text)) == spelt


def test_a_cut_ends_in_an_ellipsis_and_never_inside_an_escape():
    assert visible("x" * 10, 5) == "xxxx" + ELLIPSIS
    assert visible("abc\u202edef", 6) == "abc" + ELLIPSIS  # \u202e is six characters: left out whole
    assert visible("abc\u202edef", 10) == "abc\\u202e" + ELLIPSIS
    assert visible("short", 5) == "short"
    with pytest.raises(ValueError):
        visible("x", 0)
    # the cut happens before escaping, so a reference is never cut in half
    assert shown("<" * 10, 4) == "&lt;&lt;&lt;" + ELLIPSIS


def test_quoted_names_a_value_between_quotes_cut_at_its_limit():
    assert quoted("blk.0.attn_q.weight") == "'blk.0.attn_q.weight'"
    assert quoted("n" * 200) == "'" + "n" * 79 + ELLIPSIS + "'"


def test_safe_markup_passes_and_everything_else_is_escaped():
    name = code_name("<b>blk</b>.0.weight")
    assert isinstance(name, Safe) and shown(name) is name
    assert "<b>" not in name and html.unescape(re.sub(r"<[^>]+>", "", name)) == "<b>blk</b>.0.weight"
    # a cell that is Safe markup keeps it; a cell of text shows its markup as text
    table = course.table(["a"], [[name], ["<code>x</code>"]])
    assert "<code>&lt;b&gt;" in table and "&lt;code&gt;x" in table


def test_a_name_too_long_is_cut_in_code_name():
    cut = code_name("layer." * 100)
    assert html.unescape(re.sub(r"<[^>]+>", "", cut)).endswith(ELLIPSIS)
    assert len(html.unescape(re.sub(r"<[^>]+>", "", cut))) == CODE_NAME_CHARS


@given(st.text(max_size=80))
def test_any_text_reads_back_as_its_visible_form(text):
    escaped = shown(text)
    # no character HTML or Markdown reads survives, except inside the references themselves
    assert not re.search(r"[!-/:-@\[-`{-~]", re.sub(r"&(#\d+|amp|lt|gt|quot);", "", escaped))
    assert html.unescape(escaped) == visible(text)
    assert all(char.isprintable() for char in visible(text))


#: notebook 12's reference answer to "Water boils at a temperature of", as the model wrote it
WATER_ANSWER = "100 degrees Celsius.\n\nThe boiling point of water is 100 degrees Celsius."


def test_a_models_answer_shows_its_newlines_as_line_breaks_not_as_backslashes():
    cell = shown_lines(WATER_ANSWER)
    assert cell == "100 degrees Celsius&#46;<br><br>The boiling point of water is 100 degrees Celsius&#46;"
    inner = rendered_text(cell)
    paragraph = re.fullmatch(r'<span class="paragraph">(.*)</span>', inner, flags=re.S).group(1)
    assert [html.unescape(line) for line in paragraph.split("<br>")] == WATER_ANSWER.split("\n")
    assert "\\n" not in html.unescape(paragraph)
    # in a table cell the breaks stay inside the cell, and the table keeps its two columns
    table = mo.md(course.table(["format", "greedy answer"], [["Q4_0", cell]])).text
    cells = re.findall(r"<td[^>]*>(.*?)</td>", table, flags=re.S)
    assert len(cells) == 2 and cells[1] == cell


@pytest.mark.parametrize(
    ("text", "spelt"),
    [
        # every other control is still spelt out: a carriage return, a tab, a NUL, the line and
        # paragraph separators (which would break a line unseen) and a bidi override
        ("a\r\nb", ["a\\r", "b"]),
        ("tab\there\x00", ["tab\\there\\x00"]),
        ("line\u2028para\u2029", ["line\\u2028para\\u2029"]),
        ("\u202eevil\n", ["\\u202eevil", ""]),
        ("\n", ["", ""]),
    ],
)
def test_only_a_newline_becomes_a_break(text, spelt):
    assert [html.unescape(line) for line in shown_lines(text).split(LINE_BREAK)] == spelt


@pytest.mark.parametrize("payload", PAYLOADS)
def test_a_payload_in_lines_renders_as_the_text_it_was(payload):
    inner = rendered_text(shown_lines(f"{payload}\n{payload}"))
    paragraph = re.fullmatch(r'<span class="paragraph">(.*)</span>', inner, flags=re.S)
    assert paragraph is not None, inner
    lines = paragraph.group(1).split("<br>")
    assert all("<" not in line for line in lines) and [html.unescape(line) for line in lines] == [payload, payload]


def test_a_cut_counts_a_break_as_one_character_and_safe_markup_passes():
    assert shown_lines("ab\ncd", 4) == "ab<br>" + ELLIPSIS
    assert shown_lines("ab\ncd", 5) == "ab<br>cd"
    with pytest.raises(ValueError):
        shown_lines("x", 0)
    markup = Safe("<code>x</code>")
    assert shown_lines(markup) is markup


@given(st.text(max_size=80))
def test_any_text_reads_back_in_its_lines(text):
    lines = shown_lines(text).split(LINE_BREAK)
    # no tag but the breaks, and each line reads back as the visible form of the text's own line
    assert not any("<" in line for line in lines)
    assert [html.unescape(line) for line in lines] == [visible(line) for line in text.split("\n")]
