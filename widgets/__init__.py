"""The article's figures as anywidgets.

Every widget keeps all of its state in synced traits. The browser side (one ES module per figure,
bundled with the JS codec modules it imports from codec/) computes what it shows from those
traits, so a static HTML export re-renders and stays interactive with no kernel. The Python side
recomputes the same derived traits with the `lab` codec, so notebooks and tests can read them; the
golden-vector tests prove the two codecs agree bit for bit.
"""

from __future__ import annotations

import math

import anywidget
import numpy as np
import traitlets as t

from lab import numbers as text
from lab.codes import e2m1, e4m3, e8m0, nibble
from lab.errors import LabError
from lab.formats import iq4_nl, mxfp4, nf4, nvfp4, q4_0, q4k
from lab.teach import scale, sizes

from ._bundle import bundle, stylesheet

__all__ = ["NibbleDecoder", "ScaleLab", "OwnershipView", "Q4KExplorer", "Exercises", "CodeExplorer"]


def _plain(values) -> list:
    """Floats for JSON: NaN and infinities become None (JSON has no spelling for them)."""
    return [float(v) if math.isfinite(v) else None for v in np.asarray(values, dtype=np.float64).ravel()]


def _finite_or_none(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


class _LabWidget(anywidget.AnyWidget):
    _css = stylesheet()
    message = t.Unicode("").tag(sync=True)
    #: presenter view: everything drawn 1.5 times larger, for a projector (an input, kept in the link)
    presenter = t.Bool(False).tag(sync=True)

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.observe(lambda _change: self._derive(), names=self._inputs)
        self._derive()

    #: traits the widget reads (and the standalone pages keep in the link)
    _inputs: tuple[str, ...] = ()

    def _derive(self) -> None:
        """Recompute every derived trait from the input traits with the `lab` codec."""
        raise NotImplementedError

    def _refuse(self, error: LabError) -> None:
        """Say what is wrong and reset every derived trait, so nothing stale looks current."""
        self.set_trait("message", str(error))
        inherited = anywidget.AnyWidget.class_traits()
        for name, trait in self.traits(sync=True).items():
            if name in self._inputs or name in inherited or name.startswith("_") or name == "message":
                continue
            self.set_trait(name, None if trait.allow_none else trait.default())


class NibbleDecoder(_LabWidget):
    """One nibble under every 4-bit decoder: E2M1, UINT4, INT4, Q4_0, NF4, IQ4_NL. Input trait: `code` (0..15).

    The Q4_0, NF4 and IQ4_NL readings are what the code stands for before the block's scale,
    taken from the format modules' own tables.
    """

    _esm = bundle("nibble.js")
    _inputs = ("code", "presenter")

    code = t.Int(0b0101).tag(sync=True)
    bits = t.Unicode().tag(sync=True)
    e2m1_value = t.Float().tag(sync=True)
    e2m1_formula = t.Unicode().tag(sync=True)
    e2m1_kind = t.Unicode().tag(sync=True)
    uint4 = t.Int().tag(sync=True)
    int4 = t.Int().tag(sync=True)
    q4_0 = t.Int().tag(sync=True)
    nf4 = t.Float().tag(sync=True)
    iq4_nl = t.Int().tag(sync=True)

    @t.validate("code")
    def _check_code(self, proposal):
        nibble.as_uint4(proposal["value"])  # raises CodeRangeError naming 0..15
        return proposal["value"]

    def _derive(self) -> None:
        parts = e2m1.explain(self.code)
        readings = nibble.three_decoders(self.code)
        self.set_trait("bits", readings["bits"])
        self.set_trait("e2m1_value", parts["value"])
        self.set_trait("e2m1_formula", parts["formula"])
        self.set_trait("e2m1_kind", parts["kind"])
        self.set_trait("uint4", readings["uint4"])
        self.set_trait("int4", readings["int4"])
        self.set_trait("q4_0", self.code - q4_0.CODE_OFFSET)
        self.set_trait("nf4", float(nf4.LEVELS[self.code]))
        self.set_trait("iq4_nl", int(iq4_nl.KVALUES[self.code]))


class ScaleLab(_LabWidget):
    """The article's scale lab. Input traits: `w_text`, `x_text` (comma-separated) and `scale`."""

    _esm = bundle("scale_lab.js")
    _inputs = ("w_text", "x_text", "scale", "fine", "presenter")

    w_text = t.Unicode("-1, 0.3, 0.9, 1.7").tag(sync=True)
    x_text = t.Unicode("2, 1, -1, 0.5").tag(sync=True)
    scale = t.Float(0.5).tag(sync=True)
    #: the slider moves in fine steps of 2^(1/20) instead of powers of two
    fine = t.Bool(False).tag(sync=True)
    w_hat = t.List(t.Float()).tag(sync=True)
    weight_error = t.List(t.Float()).tag(sync=True)
    clipped = t.List(t.Bool()).tag(sync=True)
    codes = t.List(t.Int()).tag(sync=True)
    y = t.Float(allow_none=True).tag(sync=True)
    y_hat = t.Float(allow_none=True).tag(sync=True)
    delta_y = t.Float(allow_none=True).tag(sync=True)

    def _derive(self) -> None:
        try:
            row = scale.analyse(
                text.parse_number_row(self.w_text, "weights"), text.parse_number_row(self.x_text, "inputs"), self.scale
            )
        except LabError as error:
            self._refuse(error)
            return
        self.set_trait("message", "")
        self.set_trait("w_hat", row.w_hat.tolist())
        self.set_trait("weight_error", row.weight_error.tolist())
        self.set_trait("clipped", row.clipped.tolist())
        self.set_trait("codes", row.codes.tolist())
        self.set_trait("y", row.y)
        self.set_trait("y_hat", row.y_hat)
        self.set_trait("delta_y", row.delta_y)


# 32 element codes, all different neighbours; element 0 is 0101 (E2M1 3) for the article's trace.
_OWNERSHIP_CODES = [
    5,
    1,
    10,
    7,
    2,
    12,
    0,
    14,
    3,
    9,
    6,
    11,
    4,
    15,
    8,
    13,
    6,
    2,
    9,
    5,
    12,
    1,
    7,
    10,
    3,
    14,
    0,
    11,
    4,
    13,
    2,
    8,
]


class OwnershipView(_LabWidget):
    """Who owns which scale: the same 32 codes as one MXFP4 block and as two NVFP4 blocks.

    Input traits: `codes` (32 nibbles), `mx_scale_byte` (E8M0), `nv_scale_bytes` (two E4M3 bytes),
    `tensor_scale` (the FP32 multiplier applied on decode), `selected` (the traced element).
    """

    _esm = bundle("ownership.js")
    _inputs = ("codes", "mx_scale_byte", "nv_scale_bytes", "tensor_scale", "selected", "presenter")

    codes = t.List(t.Int(), default_value=_OWNERSHIP_CODES, minlen=32, maxlen=32).tag(sync=True)
    mx_scale_byte = t.Int(0x7E).tag(sync=True)
    nv_scale_bytes = t.List(t.Int(), default_value=[(5 << 3) | 2, 0x38], minlen=2, maxlen=2).tag(sync=True)
    tensor_scale = t.Float(1.0).tag(sync=True)
    selected = t.Int(0).tag(sync=True)
    mx_scale = t.Float(allow_none=True).tag(sync=True)
    mx_weights = t.List(t.Float(allow_none=True)).tag(sync=True)
    mx_formula = t.Unicode().tag(sync=True)
    nv_scales = t.List(t.Float(allow_none=True)).tag(sync=True)
    nv_weights = t.List(t.Float(allow_none=True)).tag(sync=True)
    nv_formula = t.Unicode().tag(sync=True)
    mx_bits_per_weight = t.Float(mxfp4.BITS_PER_WEIGHT).tag(sync=True)
    nv_bits_per_weight = t.Float(sizes.FORMAT_BITS_PER_WEIGHT["NVFP4"]).tag(sync=True)

    def _derive(self) -> None:
        try:
            mx_block = mxfp4.from_parts(np.array(self.codes), np.array([self.mx_scale_byte]))
            if not (math.isfinite(self.tensor_scale) and self.tensor_scale > 0):
                raise LabError("the tensor scale must be a positive finite number")
            # The multiplier f the article calls the tensor scale is MLX's global_scale / 2688.
            nv_block = nvfp4.from_parts(
                np.array(self.codes),
                np.array(self.nv_scale_bytes),
                global_scale=self.tensor_scale * nvfp4.TENSOR_SCALE_RANGE,
            )
            if not 0 <= self.selected < 32:
                raise LabError(f"selected must be an element index 0..31, got {self.selected}")
        except LabError as error:
            self._refuse(error)
            return
        self.set_trait("message", "")
        self.set_trait("mx_scale", _finite_or_none(float(e8m0.decode(self.mx_scale_byte))))
        self.set_trait("mx_weights", _plain(mx_block.dequantize()))
        self.set_trait("mx_formula", mx_block.explain(self.selected)["formula"])
        self.set_trait("nv_scales", _plain(nv_block.block_scales))
        self.set_trait("nv_weights", _plain(nv_block.dequantize()))
        self.set_trait("nv_formula", nv_block.explain(self.selected)["formula"])


class Q4KExplorer(_LabWidget):
    """Follow one payload byte of a 144-byte Q4_K block to its two weights.

    Input traits: `block` (144 bytes; default the article's presentation fixture), `payload_index`.
    """

    _esm = bundle("q4k_explorer.js")
    _inputs = ("block", "payload_index", "presenter")

    block = t.List(t.Int(), default_value=q4k.presentation_fixture().tolist(), minlen=144, maxlen=144).tag(sync=True)
    payload_index = t.Int(0).tag(sync=True)
    byte = t.Int().tag(sync=True)
    low_lane = t.Int().tag(sync=True)
    high_lane = t.Int().tag(sync=True)
    low_weight = t.Float(allow_none=True).tag(sync=True)
    high_weight = t.Float(allow_none=True).tag(sync=True)
    low_formula = t.Unicode().tag(sync=True)
    high_formula = t.Unicode().tag(sync=True)
    subblock_scales = t.List(t.Int()).tag(sync=True)
    subblock_mins = t.List(t.Int()).tag(sync=True)
    weights = t.List(t.Float(allow_none=True)).tag(sync=True)

    def _derive(self) -> None:
        try:
            raw = np.array(self.block)
            if raw.shape != (q4k.BLOCK_BYTES,):
                raise LabError(f"a Q4_K block is {q4k.BLOCK_BYTES} bytes, got {raw.size}")
            traced = q4k.explain_byte(raw, self.payload_index)
            with np.errstate(all="ignore"):
                weights = q4k.decode(raw)
        except LabError as error:
            self._refuse(error)
            return
        self.set_trait("message", "")
        scales, mins = q4k.unpack_scale_min(raw[q4k.METADATA_OFFSET : q4k.PAYLOAD_OFFSET])
        self.set_trait("byte", traced["byte"])
        self.set_trait("low_lane", traced["low_lane"])
        self.set_trait("high_lane", traced["high_lane"])
        self.set_trait("low_weight", _finite_or_none(traced["low"]["weight"]))
        self.set_trait("high_weight", _finite_or_none(traced["high"]["weight"]))
        self.set_trait("low_formula", traced["low"]["formula"])
        self.set_trait("high_formula", traced["high"]["formula"])
        self.set_trait("subblock_scales", scales.tolist())
        self.set_trait("subblock_mins", mins.tolist())
        self.set_trait("weights", _plain(weights))


class Exercises(_LabWidget):
    """Exercises that check themselves, for one notebook (`topic` 1..8) or all of them (0).

    The browser draws each instance from `seed` and the kind's round (`rounds`, New instance
    presses) and checks answers with the JS codec; `answers` keeps the text last checked per kind
    and `progress` "correct" or "wrong" per kind. `correct` counts the right ones.
    """

    _esm = bundle("exercises.js")
    _inputs = ("topic", "seed", "rounds", "answers", "progress", "presenter")

    topic = t.Int(0).tag(sync=True)
    seed = t.Int(1).tag(sync=True)
    rounds = t.Dict().tag(sync=True)
    answers = t.Dict().tag(sync=True)
    progress = t.Dict().tag(sync=True)
    correct = t.Int(0).tag(sync=True)

    def _derive(self) -> None:
        if not 0 <= self.topic <= 8:
            self._refuse(LabError(f"topic must be a notebook number 1..8, or 0 for all, got {self.topic}"))
            return
        if not 0 <= self.seed < 2**32:
            self._refuse(LabError(f"seed must be a whole number 0..4294967295, got {self.seed}"))
            return
        self.set_trait("message", "")
        self.set_trait("correct", sum(1 for result in self.progress.values() if result == "correct"))


class CodeExplorer(_LabWidget):
    """One E2M1, E8M0 or E4M3 code as clickable bits, and the codes a typed number rounds to.

    Input traits: `format` ("E2M1", "E8M0" or "E4M3"), `code`, `value_text` (a number to encode).
    Derived: `value` and `formula` of the code, from lab.codes.
    """

    _esm = bundle("code_explorer.js")
    _inputs = ("format", "code", "value_text", "presenter")
    _codes = {"E2M1": (e2m1, 16), "E8M0": (e8m0, 256), "E4M3": (e4m3, 256)}

    format = t.Unicode("E4M3").tag(sync=True)
    code = t.Int(0x2A).tag(sync=True)
    value_text = t.Unicode("0.3").tag(sync=True)
    value = t.Float(allow_none=True).tag(sync=True)
    formula = t.Unicode().tag(sync=True)

    def _derive(self) -> None:
        try:
            if self.format not in self._codes:
                raise LabError(f"format must be E2M1, E8M0 or E4M3, got {self.format!r}")
            module, limit = self._codes[self.format]
            if not 0 <= self.code < limit:
                raise LabError(f"a {self.format} code is a whole number 0..{limit - 1}, got {self.code}")
            text.parse_number(self.value_text)
            parts = module.explain(self.code)
        except LabError as error:
            self._refuse(error)
            return
        self.set_trait("message", "")
        self.set_trait("value", _finite_or_none(float(parts["value"])))
        self.set_trait("formula", parts["formula"])
