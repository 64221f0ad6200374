"""Text from outside the lab, made safe to show: the one boundary every caller goes through.

A string the lab did not write itself (a GGUF file's metadata, a tensor's name, an upload's file
name, a typed field, a link's fragment) is data. It must read back exactly as it was written, and
nothing in it may ever run: not as HTML (`<script>`, `<img onerror>`), not as Markdown (a
`[link](javascript:…)`, an autolink, `**bold**`, a table's `|`), not as marimo's Markdown
extensions (`$math$`, `:emoji:`, a bare `www.` link).

    visible(text, limit)   what a reader should see: every character that would be invisible or
                           would reorder what follows (controls, zero-width and bidi marks, line and
                           paragraph separators) spelt as an escape such as \\u202e; cut at `limit`
                           characters with a visible "…", never inside an escape
    shown(text, limit)     visible(), then every ASCII character that HTML or Markdown gives a
                           meaning to written as a character reference (&lt; &#42; …), so the result
                           is inert in HTML text, an HTML attribute, a Markdown paragraph and a
                           Markdown table cell, and renders as the visible text
    shown_lines(text, limit)
                           shown(), but each newline a line break (<br>) instead of the escape \\n:
                           text written in lines (a model's answer) reads as it was written, and
                           every other hidden character (\\r, \\t, a bidi mark) is still spelt out
    code_name(name)        a dotted name (a tensor's, a metadata key's) as inline code that wraps
                           only at its dots, shown() part by part
    Safe                   a str the lab wrote itself from shown() parts and its own markup; the
                           table and readout builders pass a Safe through and shown() everything else
    read_json(text, what=) JSON text from outside (a link's state, a posted answer, a file) as a
                           value, or InputError in the lab's words: too long, nested too deep (checked
                           before parsing, so a pasted "[[[[…" never reaches Python's recursion
                           limit), not UTF-8, NaN or Infinity, a lone surrogate

The browser's copy of visible() is `widgets/codec/text.js` (`visibleText`); the golden vectors hold
the two to the same output. Widgets only ever write text nodes, so they need visible(), not shown().
"""

from __future__ import annotations

import itertools
import json
import re
import unicodedata

from lab.errors import InputError

#: Unicode categories a reader cannot see, or that change how the text around them reads:
#: controls (Cc), format characters such as zero-width spaces and bidi overrides (Cf), surrogates
#: (Cs), private use (Co), unassigned (Cn), and the line and paragraph separators (Zl, Zp)
HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
#: spaces other than the plain one (no-break, en, em, ideographic …) look like a space but are not
#: one; they are shown as escapes so a name that differs only in its spaces reads differently
OTHER_SPACES = "Zs"
#: the mark that says a value was cut
ELLIPSIS = "…"

#: ASCII characters with a meaning in HTML or in marimo's Markdown (emphasis, links, tables, code,
#: headings, lists, math, emoji, tildes, carets, critic marks, keys, magic links); letters, digits
#: and the plain space are the only ASCII characters left as they are
_MEANINGFUL = "".join(chr(code) for code in range(0x21, 0x7F) if not chr(code).isalnum())
_REFERENCES = {
    ord(char): {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}.get(char, f"&#{ord(char)};")
    for char in _MEANINGFUL
}


class Safe(str):
    """Markup the lab built itself, with any outside text in it already passed through shown()."""

    __slots__ = ()


#: the controls a reader knows by their usual escapes
_NAMED_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _spelt(char: str) -> str:
    """One character as the reader sees it: itself, or an escape naming its code point."""
    if char == " ":
        return char
    if char in _NAMED_ESCAPES:
        return _NAMED_ESCAPES[char]
    category = unicodedata.category(char)
    if category in HIDDEN_CATEGORIES or category == OTHER_SPACES:
        code = ord(char)
        if code <= 0xFF:
            return f"\\x{code:02x}"
        return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"
    return char


def _check_limit(limit: int | None) -> None:
    if limit is not None and limit < 1:
        raise ValueError(f"a shown value needs room for at least the ellipsis; got limit {limit}")


def visible(text, limit: int | None = None) -> str:
    """`text` with every hidden character spelt out, cut to `limit` characters (… included).

    Anything that is not a str (a number, bytes from a file) is shown as its str(). The cut counts
    what the reader sees, so an escape is either whole or left out, and a cut value ends in "…".
    """
    text = text if isinstance(text, str) else str(text)
    _check_limit(limit)
    if text.isascii() and text.isprintable():  # the common case (a tensor name): nothing to spell
        return text if limit is None or len(text) <= limit else text[: limit - len(ELLIPSIS)] + ELLIPSIS
    return _cut([_spelt(char) for char in text], limit)


def _cut(pieces: list[str], limit: int | None) -> str:
    """The pieces (each character as the reader sees it) joined, cut to `limit` characters with the
    ellipsis last, never inside a piece."""
    if limit is None or sum(map(len, pieces)) <= limit:
        return "".join(pieces)
    kept, used = [], 0
    for piece in pieces:
        if used + len(piece) > limit - len(ELLIPSIS):
            break
        kept.append(piece)
        used += len(piece)
    return "".join(kept) + ELLIPSIS


def shown(text, limit: int | None = None) -> Safe:
    """`text` as HTML and Markdown that display it literally: visible(text, limit), with every
    ASCII character HTML or Markdown reads (< > & " ' * _ ` [ ] ( ) | # $ : / . and the rest)
    written as a character reference. Already-Safe markup passes unchanged."""
    if isinstance(text, Safe):
        return text
    return Safe(visible(text, limit).translate(_REFERENCES))


#: what a newline becomes in shown_lines: a break in HTML text, a Markdown paragraph and a table cell
LINE_BREAK = "<br>"


def shown_lines(text, limit: int | None = None) -> Safe:
    """`text` as shown() writes it, except that each newline is a line break: a model's answer
    ("100 degrees Celsius.\\n\\nThe boiling point") reads in its lines, not with a literal \\n.
    Every other hidden character stays spelt out, a carriage return and a line separator (U+2028)
    included, so the breaks shown are exactly the text's newlines. For HTML text, a Markdown
    paragraph or a Markdown table cell (not an HTML attribute, where a tag has no place); `limit`
    counts a break as one character."""
    if isinstance(text, Safe):
        return text
    text = text if isinstance(text, str) else str(text)
    _check_limit(limit)
    # a spelt piece never holds a real newline (a newline alone is spelt \\n), so after the cut the
    # text splits into its lines exactly where the original's newlines were
    kept = _cut(["\n" if char == "\n" else _spelt(char) for char in text], limit)
    return Safe(LINE_BREAK.join(line.translate(_REFERENCES) for line in kept.split("\n")))


def quoted(text, limit: int | None = 80) -> str:
    """A name inside a message, between quotes and visible, cut at `limit`: the message is later
    shown() whole, so only the quoting and the cut happen here."""
    return f"'{visible(text, limit)}'"


#: the longest name code_name shows whole; a longer one (a file can name a tensor with a page of
#: text) keeps its start and ends in "…"
CODE_NAME_CHARS = 160


def code_name(name: str, limit: int = CODE_NAME_CHARS) -> Safe:
    """A dotted name (a tensor's, a metadata key's) as inline code, shown literally, free to break
    after each dot: on a phone, encoder.layer.0.attention.output.dense.weight wraps at its dots
    rather than mid-word or off the page, and copies back as the same name."""
    parts = re.split(r"(?<=\.)", visible(name, limit))
    return Safe("<code>" + "<wbr>".join(shown(part) for part in parts) + "</code>")


#: a JSON string, escapes and all; one left open runs to the end of the text, as json reads it.
#: Possessive: nothing a string matched is tried again, so 10 MB of escapes take a tenth of a second.
_JSON_STRING = re.compile(r'"[^"\\]*+(?:\\.[^"\\]*+)*+"?', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_NESTING_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}
#: half of a UTF-16 pair on its own: json.loads makes one of "\ud800", and it is no character
_SURROGATE = re.compile("[\ud800-\udfff]")


def _nesting(text: str) -> int:
    """How deep lists and objects nest in JSON text: the most [ and { open at once outside strings.
    Regular expressions and itertools do the scan in C, in time linear in the text."""
    brackets = _NOT_BRACKET.sub("", _JSON_STRING.sub("", text))
    return max(itertools.accumulate(map(_NESTING_STEP.__getitem__, brackets)), default=0)


def _strings(value):
    """Every str in a parsed JSON value, keys included, without recursion."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            pending += [*item, *item.values()]
        elif isinstance(item, list):
            pending += item


def read_json(text: str | bytes, *, what: str, max_depth: int = 32, max_chars: int | None = None):
    """The value of JSON text that came from outside the lab, or InputError whose message starts with
    `what` (such as "the state"). Refused: text longer than `max_chars` (bytes counted for bytes),
    bytes that are not UTF-8, lists and objects nested deeper than `max_depth` (found by a linear
    scan before json parses anything, so no input reaches the interpreter's recursion limit), text
    that is not JSON, NaN and Infinity (JSON has no such numbers, though Python's json reads them),
    a lone surrogate, escaped ("\\ud800") or not, in a string or a key, and an integer too long for
    Python to read."""
    if max_chars is not None and len(text) > max_chars:
        unit = "bytes" if isinstance(text, bytes) else "characters"
        raise InputError(f"{what} is {len(text):,} {unit} long; at most {max_chars:,} are read")
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            raise InputError(f"{what} is not UTF-8 text") from None
    depth = _nesting(text)
    if depth > max_depth:
        raise InputError(f"{what} nests lists and objects {depth:,} deep; at most {max_depth} levels are read")

    def refuse_constant(name: str):
        raise InputError(f"{what} holds {name}, which is not a number in JSON")

    try:
        value = json.loads(text, parse_constant=refuse_constant)
    except InputError:
        raise
    except json.JSONDecodeError as error:
        raise InputError(f"{what} is not JSON: {error.msg} at character {error.pos + 1:,}") from None
    except ValueError:  # the only other: an integer longer than Python reads (sys.get_int_max_str_digits)
        raise InputError(f"{what} holds a number with more digits than the lab reads") from None
    except RecursionError:  # only where a caller allows more depth than the interpreter has
        raise InputError(f"{what} nests lists and objects deeper than the lab can read") from None
    if any(_SURROGATE.search(string) for string in _strings(value)):
        raise InputError(
            f"{what} holds a lone surrogate (half of a UTF-16 pair, such as \\ud800), which is no character"
        )
    return value
