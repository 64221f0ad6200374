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
float64's range, and division by zero. Digits are ASCII only.
"""

from __future__ import annotations

import math
import re

import numpy as np

from lab.errors import InputError
from lab.text import visible

NUMBER_EXAMPLES = "0.5, -1e-3, 3/8 or 2^-3"
MAX_ROW_LENGTH = 64
_DECIMAL = r"(?:[0-9]+\.?[0-9]*|\.[0-9]+)"
_DECIMAL_NUMBER = re.compile(rf"^[+-]?{_DECIMAL}(?:[eE][+-]?[0-9]+)?$")
_FRACTION = re.compile(rf"^([+-]?{_DECIMAL})\s*/\s*({_DECIMAL})$")
_POWER_OF_TWO = re.compile(r"^([+-]?)2\s*\^\s*(?:\(\s*([+-]?[0-9]+)\s*\)|([+-]?[0-9]+))$")
_NOT_FINITE_WORD = re.compile(r"^[+-]?(?:nan|inf|infinity)$", re.IGNORECASE)
_SEPARATORS = re.compile(r"[,;\s]+")


def _power_of_two(exponent: int) -> float:
    if exponent > 1023:
        return math.inf
    if exponent < -1074:
        return 0.0
    return math.ldexp(1.0, exponent)


def parse_number(text: str) -> float:
    """The number `text` spells, or InputError with a message a learner can act on."""
    if not isinstance(text, str):
        raise InputError(f"Expected text to read a number from, got {text!r}.")
    cleaned = text.strip().replace("\u2212", "-")
    if cleaned == "":
        raise InputError(f"Type a number, for example {NUMBER_EXAMPLES}.")
    if _NOT_FINITE_WORD.match(cleaned):
        raise InputError(f"{cleaned} is not a finite number, and the lab needs one here. Try {NUMBER_EXAMPLES}.")
    power = _POWER_OF_TWO.match(cleaned)
    fraction = _FRACTION.match(cleaned)
    if _DECIMAL_NUMBER.match(cleaned):
        value = float(cleaned)
    elif power:
        magnitude = _power_of_two(int(power.group(2) or power.group(3)))
        value = -magnitude if power.group(1) == "-" else magnitude
    elif fraction:
        denominator = float(fraction.group(2))
        if denominator == 0:
            raise InputError(f"{cleaned} divides by zero. Use a non-zero number below the line.")
        value = float(fraction.group(1)) / denominator
    else:
        raise InputError(
            f"\u201c{visible(text.strip())}\u201d is not a number the lab can read. Type something like {NUMBER_EXAMPLES}."
        )
    if not math.isfinite(value):
        raise InputError(f"{cleaned} is too large: it is beyond the largest float64 (about 1.8e308).")
    return value


def parse_number_row(text: str, label: str) -> list[float]:
    """A row of numbers separated by commas, semicolons or spaces (at most 64)."""
    items = [item for item in _SEPARATORS.split(str(text)) if item]
    if not items:
        raise InputError(f"{label}: enter at least one number, separated by commas")
    if len(items) > MAX_ROW_LENGTH:
        raise InputError(f"{label}: at most {MAX_ROW_LENGTH} numbers, got {len(items)}")
    values = []
    for position, item in enumerate(items, start=1):
        try:
            values.append(parse_number(item))
        except InputError as error:
            raise InputError(f'{label}, item {position} ("{visible(item)}"): {error}') from None
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
