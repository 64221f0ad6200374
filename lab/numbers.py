"""The lab's number grammar: how it reads the numbers a learner types and how it writes numbers back.

The widgets' JS codec mirrors this module (parseNumber, parseNumberRow, formatLabNumber,
formatFloat32) with the same grammar and messages; golden vectors keep the two in step.

Writing, in two forms:
    format_number    a number as a learner writes it: up to ten significant digits, a real minus
                     sign, −0 kept. Every `explain` and every readout uses it.
    format_float32   the shortest text that reads back as the same float32 (the Q4_K explorer's
                     d, dmin and products, where every bit of a float32 matters).
    format_signed    a fixed number of decimals with a real minus sign, for table columns and
                     changes ("−0.018", "+0.004"); Python only, for the notebooks.

Reading:
Accepted: decimals and scientific notation ("0.5", "-1e-3", ".5", "1."), a power of two
("2^-3", "2^(-3)"), a fraction ("3/8"), with the typographic minus "−" allowed anywhere.
Refused, with a message that says why: empty text, words, NaN and infinity, anything beyond
float64's range, division by zero, and text longer than MAX_NUMBER_CHARS (a row: MAX_ROW_CHARS),
checked first. Digits are ASCII only. The text is read in one pass, never by a backtracking
pattern, so no text costs more than its length.
"""

from __future__ import annotations

import math
import re

import numpy as np

from lab.errors import InputError
from lab.text import visible

NUMBER_EXAMPLES = "0.5, -1e-3, 3/8 or 2^-3"
MAX_ROW_LENGTH = 64
#: the longest text read as one number, in characters. The lab writes at most about 25 (ten
#: significant digits, a sign and an exponent) and a learner types fewer; 100 leaves room for a
#: pasted 17-digit float64 with zeros to spare. The limit is checked before anything else, so a
#: link or a paste of a megabyte costs a length, never a parse.
MAX_NUMBER_CHARS = 100
#: the longest row text: MAX_ROW_LENGTH numbers of the longest kind, each with ", " after it
MAX_ROW_CHARS = MAX_ROW_LENGTH * (MAX_NUMBER_CHARS + 2)
#: how much of a text too long to read its message quotes
_QUOTED_CHARS = 20
#: the spaces around a number and inside "3 / 8" or "2 ^ -3": those Python's str.isspace and the
#: browser's \s both call spaces (the C0 separators, U+0085 and U+FEFF, which only one of them
#: counts, are hidden characters the message spells out instead)
SPACES = "\t\n\v\f\r \xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000"
#: what stands between two numbers of a row: one comma or semicolon with spaces around it, or spaces
#: alone; two commas in a row leave an empty item between them, which is refused rather than skipped
_SEPARATOR = re.compile(f"[{SPACES}]*[,;][{SPACES}]*|[{SPACES}]+")
_NOT_FINITE_WORDS = frozenset({"nan", "inf", "infinity"})


def _power_of_two(exponent: int) -> float:
    if exponent > 1023:
        return math.inf
    if exponent < -1074:
        return 0.0
    return math.ldexp(1.0, exponent)


# The reader is one left-to-right pass over at most MAX_NUMBER_CHARS characters: each helper
# takes the position where its part starts and returns where it ends, and never looks back. (A
# backtracking pattern such as (?:[0-9]+\.?[0-9]*|\.[0-9]+)/… took seconds on long digit runs.)


def _sign_end(text: str, at: int) -> int:
    return at + 1 if at < len(text) and text[at] in "+-" else at


def _digits_end(text: str, at: int) -> int:
    """Where the run of ASCII digits from `at` ends (`at` itself when there is none)."""
    while at < len(text) and "0" <= text[at] <= "9":
        at += 1
    return at


def _spaces_end(text: str, at: int) -> int:
    while at < len(text) and text[at] in SPACES:
        at += 1
    return at


def _decimal_end(text: str, at: int) -> int:
    """Where an unsigned decimal from `at` ends ("12", "1.", "1.5", ".5"), or -1 if none starts there."""
    whole_end = _digits_end(text, at)
    if whole_end < len(text) and text[whole_end] == ".":
        fraction_end = _digits_end(text, whole_end + 1)
        return fraction_end if whole_end > at or fraction_end > whole_end + 1 else -1
    return whole_end if whole_end > at else -1


def _power_value(text: str, at: int, negative: bool) -> float | None:
    """The value of 2^exponent whose exponent starts at `at` (just past the "^"): "-3" or "(-3)"."""
    at = _spaces_end(text, at)
    bracketed = at < len(text) and text[at] == "("
    if bracketed:
        at = _spaces_end(text, at + 1)
    digits_start = _sign_end(text, at)
    end = _digits_end(text, digits_start)
    if end == digits_start:
        return None
    exponent = int(text[at:end])
    if bracketed:
        end = _spaces_end(text, end)
        if end == len(text) or text[end] != ")":
            return None
        end += 1
    if end != len(text):
        return None
    magnitude = _power_of_two(exponent)
    return -magnitude if negative else magnitude


def _value(text: str) -> float | None:
    """The number `text` (stripped, with ASCII minus signs) spells, None when it spells none; a
    fraction over zero raises InputError."""
    start = _sign_end(text, 0)
    end = _decimal_end(text, start)
    if end < 0:
        return None
    if end == len(text):
        return float(text)
    if text[end] in "eE":
        exponent_end = _digits_end(text, _sign_end(text, end + 1))
        plain = exponent_end == len(text) and text[exponent_end - 1] in "0123456789"
        return float(text) if plain else None
    operator = _spaces_end(text, end)
    if operator < len(text) and text[operator] == "^" and text[start:end] == "2":
        return _power_value(text, operator + 1, negative=text[:start] == "-")
    if operator < len(text) and text[operator] == "/":
        below = _spaces_end(text, operator + 1)
        if _decimal_end(text, below) != len(text):
            return None
        denominator = float(text[below:])
        if denominator == 0:
            raise InputError(f"{text} divides by zero. Use a non-zero number below the line.")
        return float(text[:end]) / denominator
    return None


def _start_of(text: str) -> str:
    """The first characters of a text too long to read, visible and cut with "…"."""
    return visible(text[: _QUOTED_CHARS + 1], _QUOTED_CHARS)


def parse_number(text: str) -> float:
    """The number `text` spells, or InputError with a message a learner can act on."""
    if not isinstance(text, str):
        raise InputError(f"Expected text to read a number from, got {text!r}.")
    if len(text) > MAX_NUMBER_CHARS:
        raise InputError(
            f"\u201c{_start_of(text)}\u201d is {len(text)} characters long; a number is at most {MAX_NUMBER_CHARS}."
        )
    stripped = text.strip(SPACES)
    cleaned = stripped.replace("\u2212", "-")
    if cleaned == "":
        raise InputError(f"Type a number, for example {NUMBER_EXAMPLES}.")
    unsigned = cleaned[_sign_end(cleaned, 0) :]
    if unsigned.isascii() and unsigned.lower() in _NOT_FINITE_WORDS:
        raise InputError(f"{cleaned} is not a finite number, and the lab needs one here. Try {NUMBER_EXAMPLES}.")
    value = _value(cleaned)
    if value is None:
        raise InputError(
            f"\u201c{visible(stripped)}\u201d is not a number the lab can read. Type something like {NUMBER_EXAMPLES}."
        )
    if not math.isfinite(value):
        raise InputError(f"{cleaned} is too large: it is beyond the largest float64 (about 1.8e308).")
    return value


def parse_number_row(text: str, label: str) -> list[float]:
    """A row of numbers separated by commas, semicolons or spaces (at most 64); "1,,2" is refused, not
    read as two numbers."""
    text = str(text)
    if len(text) > MAX_ROW_CHARS:
        raise InputError(f"{label}: the row is {len(text)} characters long; a row is at most {MAX_ROW_CHARS}")
    stripped = text.strip(SPACES)
    items = _SEPARATOR.split(stripped) if stripped else []
    if not any(items):
        raise InputError(f"{label}: enter at least one number, separated by commas")
    if "" in items:
        raise InputError(
            f"{label}, item {items.index('') + 1} is empty: write one number between two commas, or remove a comma"
        )
    if len(items) > MAX_ROW_LENGTH:
        raise InputError(f"{label}: at most {MAX_ROW_LENGTH} numbers, got {len(items)}")
    values = []
    for position, item in enumerate(items, start=1):
        try:
            values.append(parse_number(item))
        except InputError as error:
            # an item too long to read is quoted by its start (its own message says how long it is)
            shown = visible(item) if len(item) <= MAX_NUMBER_CHARS else _start_of(item)
            raise InputError(f'{label}, item {position} ("{shown}"): {error}') from None
    return values


def format_signed(value: float, decimals: int, *, plus: bool = False) -> str:
    """`value` with `decimals` decimals and a real minus sign; with `plus`, a + on a positive value
    (a change). A value that rounds to zero is written without a sign: "−0.000" says nothing."""
    if math.isnan(value):
        return "NaN"
    text = f"{value:+.{decimals}f}"
    if float(text) == 0:
        return text[1:]
    if text.startswith("+") and not plus:
        text = text[1:]
    return text.replace("-", "\u2212")


def format_number(value: float, digits: int = 10) -> str:
    """A number as a learner writes it: shortest form, a real minus sign, −0 kept. `digits`
    significant digits at most: ten, the lab's own (formatLabNumber's too); fewer where a table
    column or a chart's description has less room."""
    if value == 0:
        return "\u22120" if np.signbit(value) else "0"
    if np.isnan(value):
        return "NaN"
    return f"{value:.{digits}g}".replace("-", "\u2212")


def format_float32(value: float) -> str:
    """Shortest text that reads back as the same float32, with a typographic minus."""
    value32 = np.float32(value)
    if value32 == 0:
        text = "0"
    elif not np.isfinite(value32):
        text = str(float(value32))
    elif 1e-4 <= abs(value32) < 1e7:
        text = np.format_float_positional(value32, unique=True, trim="-")
    else:
        text = np.format_float_scientific(value32, unique=True, trim="-")
    return text.replace("-", "\u2212")


#: names of the leading axes of a position, innermost first
_AXIS_NAMES = ("row", "matrix")


def position_text(index: tuple[int, ...], last: str = "element") -> str:
    """(5,) -> 'element 5'; (0, 5) -> 'row 0, element 5'; (0, 1) with last='scale group' -> 'row 0, scale group 1'."""
    *leading, innermost = (int(i) for i in index)
    names = [_AXIS_NAMES[k] if k < len(_AXIS_NAMES) else f"axis {len(leading) - 1 - k}" for k in range(len(leading))]
    parts = [f"{name} {i}" for name, i in zip(reversed(names), leading, strict=True)]
    return ", ".join([*parts, f"{last} {innermost}"])
