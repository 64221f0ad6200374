"""lab.study.requantize: one pipeline re-quantizes a model's Linears, with fallbacks and records."""

from __future__ import annotations

import numpy as np
import pytest

from lab.formats import FORMATS
from lab.study.requantize import ROUND_TRIP, QuantizeError, TensorRecord, requantize


def _weights() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(5)
    return {
        name: rng.standard_normal((4, cols)).astype(np.float32)
        for name, cols in (("wide", 256), ("q5", 96), ("odd", 48))
    }


def test_a_gguf_format_falls_back_to_llama_cpps_type_and_keeps_what_that_cannot_hold():
    weights = _weights()
    result = requantize(weights, "q4k")
    assert result.records == (
        TensorRecord("wide", None, "q4k"),
        TensorRecord("q5", FORMATS["q4k"].skip_reason(96), "q5_0"),
        TensorRecord("odd", FORMATS["q4k"].skip_reason(48)),
    )
    assert result.fallbacks == result.records[1:]
    assert np.array_equal(result.weights["wide"], FORMATS["q4k"].round_trip(weights["wide"]))
    assert np.array_equal(result.weights["q5"], FORMATS["q5_0"].round_trip(weights["q5"]))
    assert result.weights["odd"] is weights["odd"]


def test_without_fallback_types_every_weight_a_format_cannot_hold_is_kept():
    weights = _weights()
    result = requantize(weights, "q4k", fallback_types=False)
    assert [record.stored_as for record in result.records] == ["q4k", None, None]
    assert result.weights["q5"] is weights["q5"]


def test_kept_tensors_are_the_bytes_behind_the_weights():
    weights = _weights()
    result = requantize(weights, "q4k", keep_tensors=True)
    assert set(result.tensors) == {"wide", "q5"}
    for name, tensor in result.tensors.items():
        assert np.array_equal(tensor.dequantize(), result.weights[name])


def test_a_callable_goes_through_every_weight_and_is_checked():
    result = requantize(_weights(), lambda w: np.round(w, 1))
    assert all(record == TensorRecord(record.layer, None, ROUND_TRIP) for record in result.records)
    assert all(w.dtype == np.float32 and w.flags.c_contiguous for w in result.weights.values())
    with pytest.raises(QuantizeError, match="round trip failed on wide"):
        requantize(_weights(), lambda w: 1 // 0)
