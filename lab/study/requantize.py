"""Re-quantizing a model's Linears: every weight matrix through a format's round trip, with its fallbacks.

    result = requantize({"blk.0.attn_q": w, ...}, "q4k")     # a registry name, a Format, or w -> ŵ
    result.weights["blk.0.attn_q"]                           # ŵ, float32, the shape of w
    result.records                                           # one TensorRecord per weight, in order
    result.fallbacks                                         # the records of weights the format did not hold

Every study that runs a model with re-quantized weights (the embedding model of lab.study.model,
the chat model of lab.study.chat, both device panes) goes through `requantize`, so a format's
round trip, its fallbacks and the checks on what a round trip returns are written once.

A named format goes through the registry's `Format.round_trip`. Where its blocks do not divide a
weight's rows (Format.skip_reason says why), a GGUF format stores the weight as llama.cpp does, in
its fallback type where that type's blocks divide the row (lab.interop.gguf.LLAMA_CPP_FALLBACK:
Q5_0 for Q4_K); any other format, and any format with `fallback_types=False`, keeps the weight as
given, as MLX's converter leaves such a layer in float. A callable is used as it is on every weight.

What a round trip returns is checked: numbers, the weight's shape, no NaN or infinity; anything
else raises a typed error naming the weight. A round trip gets a copy of each weight, so one that
writes into its input cannot alter the caller's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from lab.errors import LabError, NonFiniteError, ShapeError
from lab.formats import registry
from lab.formats.registry import Format, QuantizedTensor
from lab.interop.gguf import LLAMA_CPP_FALLBACK

RoundTrip = Callable[[np.ndarray], np.ndarray]
#: what re-quantizes: a registry name, a Format, or a round trip w -> ŵ
Quantize = str | Format | RoundTrip


#: a TensorRecord's stored_as for a weight that went through a callable round trip
ROUND_TRIP = "round trip"


class QuantizeError(LabError):
    """`quantize` is not a round trip the model can use, or the round trip failed."""


@dataclass(frozen=True)
class TensorRecord:
    """What one weight got: the format asked for, a fallback type, or its own weights, and why."""

    layer: str  # the weight's name ("blk.3.attn_q", "encoder.layer.0.attention.self.query")
    reason: str | None  # why the asked format could not hold it (Format.skip_reason); None where it did
    #: the registry name of the format it went through, ROUND_TRIP for a callable, None where it kept its weights
    stored_as: str | None = None


@dataclass(frozen=True)
class Requantized:
    """The weights as the format gives them back, and a record of each."""

    weights: dict[str, np.ndarray]  # every weight given, by name: its round trip, or the very array given
    records: tuple[TensorRecord, ...]
    #: each weight's quantized tensor (kept only when asked, for a named format): the bytes behind ŵ
    tensors: dict[str, QuantizedTensor] = field(default_factory=dict)

    @property
    def fallbacks(self) -> tuple[TensorRecord, ...]:
        """The records of the weights the asked format did not hold: stored in a fallback type, or kept."""
        return tuple(record for record in self.records if record.reason is not None)


def checked_round_trip(round_trip: RoundTrip, name: str, w: np.ndarray) -> np.ndarray:
    """round_trip(a copy of w) as float32, or a typed error naming `name` where it is not w's shape
    of finite numbers."""
    try:
        result = np.asarray(round_trip(w.copy()))
    except Exception as error:
        raise QuantizeError(f"the round trip failed on {name}: {type(error).__name__}: {error}") from error
    if not (np.issubdtype(result.dtype, np.floating) or np.issubdtype(result.dtype, np.integer)):
        raise QuantizeError(f"the round trip of {name} gave {result.dtype} values, not numbers")
    if result.shape != w.shape:
        raise ShapeError(f"the round trip of {name} changed its shape from {w.shape} to {result.shape}")
    bad = np.count_nonzero(~np.isfinite(result))
    if bad:
        raise NonFiniteError(f"the round trip of {name} gave {bad} NaN or infinite weights of {result.size}")
    # a copy even when float32 already, so that no caller shares an array with the round trip
    return np.array(result, dtype=np.float32, order="C")


def fallback_format(fmt: Format) -> Format | None:
    """The format a GGUF converter stores a row in that `fmt` cannot hold (llama.cpp's), or None."""
    fallback_type = LLAMA_CPP_FALLBACK.get(fmt.gguf_type) if fmt.family == "gguf" else None
    return registry.by_gguf_type(fallback_type) if fallback_type else None


def requantize(
    weights: Mapping[str, np.ndarray],
    quantize: Quantize,
    *,
    fallback_types: bool = True,
    keep_tensors: bool = False,
) -> Requantized:
    """Each weight matrix of `weights` (name -> float32 [out, in]) through `quantize`'s round trip.

    quantize: a registry name ("q4k"), a Format, or a callable w -> ŵ applied to every weight.
    fallback_types: a GGUF format stores a weight its blocks cannot hold in llama.cpp's fallback
        type where that type's blocks divide the row; False keeps every such weight as given.
    keep_tensors: keep each weight's QuantizedTensor in `tensors` (a named format only), for a
        caller that needs the bytes behind ŵ as well as ŵ (the device panes hand them to MLX).

    Raises UnknownFormatError for a name the registry lacks, QuantizeError for a `quantize` of
    another kind or a round trip that fails, ShapeError or NonFiniteError for one that returns
    another shape or NaN.
    """
    if isinstance(quantize, str):
        quantize = registry.get(quantize)
    if isinstance(quantize, Format):
        fmt, fallback = quantize, fallback_format(quantize) if fallback_types else None
    elif callable(quantize):
        fmt, fallback = None, None
    else:
        raise QuantizeError(
            f"quantize must be None, a format name or a round trip w -> ŵ, not {type(quantize).__name__}"
        )
    replaced, records, tensors = {}, [], {}
    for name, w in weights.items():
        if fmt is None:
            replaced[name] = checked_round_trip(quantize, name, w)
            records.append(TensorRecord(name, None, ROUND_TRIP))
            continue
        reason = fmt.skip_reason(w.shape[-1])
        held_by = fmt if reason is None else fallback
        if held_by is None or held_by.skip_reason(w.shape[-1]) is not None:
            replaced[name] = w
            records.append(TensorRecord(name, reason))
            continue
        round_trip = held_by.round_trip
        if keep_tensors:
            tensors[name] = held_by.quantize(w)
            round_trip = _decoder_of(tensors[name])
        replaced[name] = checked_round_trip(round_trip, name, w)
        records.append(TensorRecord(name, reason, held_by.name))
    return Requantized(replaced, tuple(records), tensors)


def _decoder_of(tensor: QuantizedTensor) -> RoundTrip:
    """The round trip of a weight already quantized: its tensor's dequantize(), whatever it is given."""
    return lambda _: tensor.dequantize()
