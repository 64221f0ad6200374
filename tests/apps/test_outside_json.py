"""lab.text.read_json, the one way the lab reads JSON that came from outside: too long, nested too
deep (found by a linear scan before json parses, so no input reaches Python's recursion limit), not
UTF-8, NaN or Infinity, a lone surrogate: each refused with InputError in the lab's words, naming
what was read."""

from __future__ import annotations

import contextlib
import functools
import time

import pytest

from lab.errors import InputError
from lab.text import read_json


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('{"code": 5, "codes": [1, 2.5, true, null]}', {"code": 5, "codes": [1, 2.5, True, None]}),
        (b'{"name": "caf\xc3\xa9"}', {"name": "café"}),
        ('"' + "[" * 40 + '"', "[" * 40),  # brackets in a string are text
        ('{"a\\"' + "[" * 40 + '": 1}', {'a"' + "[" * 40: 1}),  # and after an escaped quote
        ('["\\ud83d\\ude00"]', ["\U0001f600"]),  # a surrogate pair is one character
        ("[" * 32 + "]" * 32, functools.reduce(lambda inner, _: [inner], range(31), [])),
    ],
)
def test_json_within_the_limits_is_read(text, value):
    assert read_json(text, what="the state") == value


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("[" * 33 + "]" * 33, "the state nests lists and objects 33 deep; at most 32 levels are read"),
        ('{"a": ' * 40 + "1" + "}" * 40, "the state nests lists and objects 40 deep"),
        ("[" * 1000 + "]" * 1000, "the state nests lists and objects 1,000 deep"),
        ("NaN", "the state holds NaN, which is not a number in JSON"),
        ('{"scale": -Infinity}', "the state holds -Infinity, which is not a number in JSON"),
        ("[Infinity]", "the state holds Infinity"),
        ('["\\ud800"]', "the state holds a lone surrogate (half of a UTF-16 pair, such as \\ud800), which is no"),
        ('{"\\udfff": 1}', "the state holds a lone surrogate"),
        ('["\\ude00\\ud83d"]', "the state holds a lone surrogate"),  # a pair the wrong way round is two halves
        ('["\ud800"]', "the state holds a lone surrogate"),  # as a command line's undecodable bytes arrive
        (b'{"a": "\xff"}', "the state is not UTF-8 text"),
        (b'"\xed\xa0\x80"', "the state is not UTF-8 text"),  # a surrogate encoded as if UTF-8
        ("not json", "the state is not JSON: Expecting value at character 1"),
        ('{"a": 1', "the state is not JSON: Expecting ',' delimiter at character 8"),
        ("9" * 5000, "the state holds a number with more digits than the lab reads"),
    ],
)
def test_json_the_lab_does_not_read_is_refused_in_its_words(text, says):
    with pytest.raises(InputError) as refused:
        read_json(text, what="the state")
    assert str(refused.value).startswith(says)
    assert "\n" not in str(refused.value)


def test_text_longer_than_the_limit_is_refused_before_it_is_read():
    with pytest.raises(InputError) as refused:
        read_json('"' + "a" * 1_000_000 + '"', what="the post", max_chars=100_000)
    assert str(refused.value) == "the post is 1,000,002 characters long; at most 100,000 are read"
    with pytest.raises(InputError, match="the post is 100,001 bytes long; at most 100,000 are read"):
        read_json(b" " * 100_001, what="the post", max_chars=100_000)
    assert read_json("[" * 5 + "]" * 5, what="the post", max_depth=5, max_chars=10) == [[[[[]]]]]


@pytest.mark.parametrize(
    ("text", "refused"),
    [
        ("[" * 10_000_000, True),
        ("{" + '"a":{' * 2_000_000, True),
        ("[]" * 5_000_000, True),  # not JSON: one list, then more
        ('["' + "\\\\" * 5_000_000 + '"]', False),  # one string of 5 million backslashes
    ],
    ids=["10 MB of [", "10 MB of open objects", "10 MB of empty lists", "a 10 MB string of escapes"],
)
def test_ten_megabytes_are_refused_or_read_in_linear_time(text, refused):
    started = time.perf_counter()
    with pytest.raises(InputError) if refused else contextlib.nullcontext():
        read_json(text, what="the file")
    assert time.perf_counter() - started < 3
