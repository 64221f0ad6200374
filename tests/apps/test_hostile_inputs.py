"""A hostile battery over the registry: every format's quantize, every tensor's explain and every
element code's encode, decode and explain either answer or raise a LabError. Never another
exception, and never a numpy warning that would reach the learner."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from lab.codes import e2m1, e4m3, e8m0, nibble
from lab.errors import LabError
from lab.formats import FORMATS

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

HOSTILE_FLOATS = st.sampled_from(
    [np.nan, np.inf, -np.inf, 1e39, -1e39, 5e-324, -5e-324, 1e-310, -0.0, 0.0, 3.4028235e38, -3.4028235e38, 1.0]
)


def _row_lengths(fmt) -> st.SearchStrategy[int]:
    return st.sampled_from([0, 1, fmt.block_size - 1, fmt.block_size, 2 * fmt.block_size])


def hostile_weights(fmt) -> st.SearchStrategy:
    length = _row_lengths(fmt)
    return st.one_of(
        # float64 rows mixing NaN, infinities, 1e39, subnormals, -0.0 and float32's extremes
        length.flatmap(lambda n: hnp.arrays(np.float64, (2, n), elements=HOSTILE_FLOATS)),
        # float32 rows at float32's top and bottom (subnormals included)
        length.flatmap(
            lambda n: hnp.arrays(
                np.float32, (1, n), elements=st.sampled_from([3.4028235e38, -3.4028235e38, 1e-45, -1e-45, -0.0])
            )
        ),
        length.map(lambda n: np.full((1, n), 1 + 1j)),
        length.map(lambda n: np.ones(n, dtype=bool)),
        length.map(lambda n: np.array([1.0] * n, dtype=object)),
        length.map(lambda n: [[1.0] * n, [1.0] * (n + 1)]),  # ragged
        st.sampled_from(
            ["weights", None, 3.0, np.float32(1.0), np.zeros((0,), np.float32), np.zeros((3, 0), np.float32), {}]
        ),
        length.map(lambda n: np.ones((2, 2, n), np.float32)),
        length.map(lambda n: np.full(n, 2**64 - 1, np.uint64)),
    )


def _answers_or_lab_error(call) -> object | None:
    """The call's result, or None when it raised a LabError; any warning fails the test."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            return call()
        except LabError:
            return None


@pytest.mark.parametrize("name", list(FORMATS))
def test_quantize_answers_or_raises_a_lab_error(name):
    fmt = FORMATS[name]

    @SETTINGS
    @given(hostile_weights(fmt))
    def check(w):
        tensor = _answers_or_lab_error(lambda: fmt.quantize(w))
        if tensor is not None:
            decoded = _answers_or_lab_error(tensor.dequantize)
            assert decoded is not None and decoded.shape == np.shape(w)

    check()


HOSTILE_INDICES = [2.0, 1.5, -(10**9), 10**9, (0,), (0, 0, 0), (0, 1.0), True, None, "0", [0, -1], np.float64(3)]


@pytest.mark.parametrize("name", list(FORMATS))
@pytest.mark.parametrize("index", HOSTILE_INDICES, ids=repr)
def test_explain_answers_or_raises_a_lab_error(name, index):
    fmt = FORMATS[name]
    w = np.linspace(-1, 1, 2 * fmt.block_size, dtype=np.float32).reshape(2, fmt.block_size)
    tensor = fmt.quantize(w)
    explained = _answers_or_lab_error(lambda: tensor.explain(index))
    assert explained is None or isinstance(explained, dict)


@pytest.mark.parametrize("name", list(FORMATS))
def test_explain_refuses_what_is_not_an_integer_index(name):
    fmt = FORMATS[name]
    tensor = fmt.quantize(np.ones((1, fmt.block_size), np.float32))
    for index in (2.0, True, None, (0, 1.5)):
        with pytest.raises(LabError):
            tensor.explain(index)


HOSTILE_CODES = st.one_of(
    st.sampled_from([-1, 16, 256, 2.0, 1.5, True, None, "a", 1j, [1, [2]], [], [[1], [2, 3]], np.nan]),
    hnp.arrays(np.float64, st.integers(0, 4), elements=HOSTILE_FLOATS),
    hnp.arrays(np.int64, st.integers(0, 4), elements=st.integers(-300, 300)),
)


@SETTINGS
@given(HOSTILE_CODES)
def test_element_codes_answer_or_raise_lab_errors(value):
    calls = [
        lambda: e2m1.decode(value),
        lambda: e2m1.encode(value),
        lambda: e2m1.encode(value, "mlx"),
        lambda: e2m1.explain(value),
        lambda: e4m3.decode(value),
        lambda: e4m3.encode(value),
        lambda: e4m3.explain(value),
        lambda: e8m0.decode(value),
        lambda: e8m0.encode(value),
        lambda: e8m0.explain(value),
        lambda: nibble.three_decoders(value),
        lambda: nibble.as_int4(value),
    ]
    for call in calls:
        _answers_or_lab_error(call)


@pytest.mark.parametrize("explain", [e2m1.explain, e4m3.explain, e8m0.explain, nibble.three_decoders])
def test_explaining_a_row_of_codes_is_a_lab_error(explain):
    with pytest.raises(LabError, match="single code"):
        explain([1, 2])
