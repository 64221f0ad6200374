"""lab.numbers reads a typed number in one pass, with its length bounded first: a megabyte in a
link or a paste is refused in microseconds, where a backtracking pattern took seconds per
30,000 digits. The JS codec's twin is checked in tests/js/codec.test.mjs, and golden.json holds
the two to the same answers, long and near-miss texts included (tests/js/make_golden.py)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lab.errors import InputError
from lab.numbers import MAX_NUMBER_CHARS, MAX_ROW_CHARS, parse_number, parse_number_row

ROOT = Path(__file__).resolve().parents[2]

# Times each huge text in a fresh interpreter: a quadratic reader cannot be interrupted in-process,
# so the test kills the child instead of waiting minutes for it.
TIMER = textwrap.dedent(
    """
    import json, time
    from lab.errors import InputError
    from lab.numbers import parse_number, parse_number_row
    n = 1_000_000
    texts = {"digits": "1" * n, "fraction": "1/" + "1" * n, "slashes": "1" + "/1" * (n // 2)}
    results = {}
    for name, text in texts.items():
        messages = []
        started = time.perf_counter()
        for read in (parse_number, lambda text: parse_number_row(text, "weights")):
            try:
                read(text)
                messages.append(None)
            except InputError as error:
                messages.append(str(error))
        results[name] = [time.perf_counter() - started, *messages]
    print(json.dumps(results))
    """
)


def test_a_megabyte_of_digits_of_a_fraction_or_of_slashes_is_refused_in_well_under_a_second():
    finished = subprocess.run(
        [sys.executable, "-c", TIMER], cwd=ROOT, capture_output=True, text=True, timeout=20, check=True
    )
    for name, (seconds, number, row) in json.loads(finished.stdout).items():
        assert seconds < 0.25, name
        assert number.endswith(f" characters long; a number is at most {MAX_NUMBER_CHARS}."), (name, number[:200])
        assert row.startswith("weights: the row is 100000"), (name, row[:200])
        assert row.endswith(f" characters long; a row is at most {MAX_ROW_CHARS}"), (name, row[:200])


def test_the_limit_counts_characters_and_quotes_only_the_start():
    assert parse_number("1" * MAX_NUMBER_CHARS) == float("1" * MAX_NUMBER_CHARS)
    with pytest.raises(InputError) as refused:
        parse_number("\U0001f600" * (MAX_NUMBER_CHARS + 1))
    emoji = "\U0001f600"
    assert str(refused.value) == (
        f"\u201c{emoji * 19}\u2026\u201d is {MAX_NUMBER_CHARS + 1} characters long; "
        f"a number is at most {MAX_NUMBER_CHARS}."
    )


def test_a_row_is_bounded_before_it_is_split():
    longest = ", ".join(["1" * MAX_NUMBER_CHARS] * 64)
    assert len(longest) <= MAX_ROW_CHARS and len(parse_number_row(longest, "weights")) == 64
    with pytest.raises(
        InputError, match=rf"^weights: the row is 6530 characters long; a row is at most {MAX_ROW_CHARS}$"
    ):
        parse_number_row("1," * 3265, "weights")
