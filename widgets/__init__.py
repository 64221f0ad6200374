"""The article's figures as anywidgets.

Python sets a widget's input traits, its only synced state; the browser side (one ES module per
figure, bundled with the JS codec modules it imports from codec/) computes everything it shows
from them, so a static HTML export re-renders and stays interactive with no kernel.

Python derives nothing that a figure shows: the tests compute it with the `lab` codec from a
widget's inputs, and the golden-vector tests (tests/js/) prove the JS codec agrees bit for bit.
What Python does keep is each figure's check of its inputs (`message`), so a state the figure
would refuse is refused in Python too, before a page is written with it.
"""

from __future__ import annotations

import math

import anywidget
import numpy as np
import traitlets as t

from lab import numbers as text
from lab.codes import nibble
from lab.errors import LabError, ShapeError, UnsupportedTypeError
from lab.formats import by_gguf_type, mxfp4, nvfp4, q4k, with_gguf
from lab.teach import scale
from lab.text import visible

from ._bundle import bundle, stylesheet

__all__ = ["NibbleDecoder", "ScaleLab", "OwnershipView", "Q4KExplorer", "Exercises", "CodeExplorer", "BlockExplorer"]


class _LabWidget(anywidget.AnyWidget):
    _css = stylesheet()
    #: presenter view: everything drawn 1.5 times larger, for a projector (an input, kept in the link)
    presenter = t.Bool(False).tag(sync=True)
    #: the group of outcome panels (widgets.choice.outcome_panels) this figure shows, keyed by its
    #: input traits' values, so prose computed for each value follows the figure; "" for none
    outcomes = t.Unicode("").tag(sync=True)

    #: the synced traits: all the browser draws from (and the standalone pages keep in the link)
    _inputs: tuple[str, ...] = ()
    #: synced traits that tie a figure to its page, not to its state (a link never carries them)
    _page_traits: tuple[str, ...] = ("outcomes",)

    def _show(self, inputs: dict) -> None:
        """Every input as a new widget has it, then `inputs`, sent to the browser at once.

        One widget serves a page's life (a new one would ship its whole script again), so an input
        the last state set (a weight picked in a block of another type) must not carry over. The
        presenter view is the reader's choice and stays.
        """
        defaults = {name: self.trait_defaults(name) for name in self._inputs if name != "presenter"}
        with self.hold_sync():
            for name, value in (defaults | inputs).items():
                self.set_trait(name, value)


class _CheckedWidget(_LabWidget):
    """A figure whose inputs can hold a state it refuses to draw, as the browser's figure refuses it."""

    @property
    def message(self) -> str:
        """Why the figure refuses its inputs, in the lab's words, or "" (the browser words its own)."""
        try:
            self._check()
        except LabError as error:
            return str(error)
        return ""

    def _check(self) -> None:
        """Raise LabError when the figure cannot draw its inputs."""
        raise NotImplementedError


class NibbleDecoder(_LabWidget):
    """One nibble under every 4-bit decoder: E2M1, UINT4, INT4, Q4_0, NF4, IQ4_NL. Input trait: `code` (0..15).

    A code outside 0..15 is refused as it is set.
    """

    _esm = bundle("nibble.js")
    _inputs = ("code", "presenter")

    code = t.Int(0b0101).tag(sync=True)

    @t.validate("code")
    def _check_code(self, proposal):
        nibble.as_uint4(proposal["value"])  # raises CodeRangeError naming 0..15
        return proposal["value"]


class ScaleLab(_CheckedWidget):
    """The article's scale lab. Input traits: `w_text`, `x_text` (comma-separated) and `scale`."""

    _esm = bundle("scale_lab.js")
    _inputs = ("w_text", "x_text", "scale", "fine", "presenter")

    w_text = t.Unicode("-1, 0.3, 0.9, 1.7").tag(sync=True)
    x_text = t.Unicode("2, 1, -1, 0.5").tag(sync=True)
    scale = t.Float(0.5).tag(sync=True)
    #: the slider moves in fine steps of 2^(1/20) instead of powers of two
    fine = t.Bool(False).tag(sync=True)

    def _check(self) -> None:
        # rows that parse can still overflow in the products: only the analysis says so
        scale.analyse(
            text.parse_number_row(self.w_text, "weights"), text.parse_number_row(self.x_text, "inputs"), self.scale
        )


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


class OwnershipView(_CheckedWidget):
    """Who owns which scale: the same 32 codes as one MXFP4 block and as two NVFP4 blocks.

    Input traits: `codes` (32 nibbles), `mx_scale_byte` (E8M0), `nv_scale_bytes` (two E4M3 bytes),
    `tensor_scale` (the FP32 multiplier applied on decode), `selected` (the traced element).
    """

    _esm = bundle("ownership.js")
    _inputs = ("codes", "mx_scale_byte", "nv_scale_bytes", "tensor_scale", "selected", "presenter")

    #: the element codes the view holds: one MXFP4 block, or half of a 64-weight GGUF NVFP4 block
    ELEMENTS = 32

    codes = t.List(t.Int(), default_value=_OWNERSHIP_CODES, minlen=ELEMENTS, maxlen=ELEMENTS).tag(sync=True)
    mx_scale_byte = t.Int(0x7E).tag(sync=True)
    nv_scale_bytes = t.List(t.Int(), default_value=[(5 << 3) | 2, 0x38], minlen=2, maxlen=2).tag(sync=True)
    tensor_scale = t.Float(1.0).tag(sync=True)
    selected = t.Int(0).tag(sync=True)

    def _check(self) -> None:
        mxfp4.from_parts(np.array(self.codes), np.array([self.mx_scale_byte]))
        if not (math.isfinite(self.tensor_scale) and self.tensor_scale > 0):
            raise LabError("the tensor scale must be a positive finite number")
        # The multiplier f the article calls the tensor scale is MLX's global_scale / 2688.
        nvfp4.from_parts(
            np.array(self.codes),
            np.array(self.nv_scale_bytes),
            global_scale=self.tensor_scale * nvfp4.TENSOR_SCALE_RANGE,
        )
        if not 0 <= self.selected < self.ELEMENTS:
            raise LabError(f"selected must be an element index 0..{self.ELEMENTS - 1}, got {self.selected}")

    def show_block(self, type_name: str, raw: np.ndarray, half: int = 0) -> None:
        """Show one GGUF MXFP4 block's codes and scale byte, or the 32 weights `half` (0 or 1) of
        an NVFP4 block of 64 with their two scale bytes; the other reading keeps its default scales."""
        if type_name == "MXFP4":
            tensor = mxfp4.from_gguf(raw.reshape(1, -1))
            self._show(
                {"codes": tensor.codes.reshape(-1).tolist(), "mx_scale_byte": int(tensor.scale_bytes.reshape(-1)[0])}
            )
        elif type_name == "NVFP4":
            if half not in (0, 1):
                raise LabError(f"an NVFP4 block has two halves of {self.ELEMENTS} weights, 0 and 1; got {half!r}")
            tensor = nvfp4.from_gguf(raw.reshape(1, -1))
            groups = self.ELEMENTS // nvfp4.GROUP_SIZE
            codes = tensor.codes.reshape(-1)[half * self.ELEMENTS : (half + 1) * self.ELEMENTS]
            scale_bytes = tensor.scale_bytes.reshape(-1)[half * groups : (half + 1) * groups]
            # GGUF's NVFP4 has no tensor scale: the block's weights are codes times their E4M3 scales
            self._show({"codes": codes.tolist(), "nv_scale_bytes": [int(b) for b in scale_bytes], "tensor_scale": 1.0})
        else:
            raise UnsupportedTypeError(f"the ownership view shows MXFP4 and NVFP4 blocks; got {visible(type_name, 40)}")


class Q4KExplorer(_CheckedWidget):
    """Follow one payload byte of a 144-byte Q4_K block to its two weights.

    Input traits: `block` (144 bytes; default the article's presentation fixture), `payload_index`.
    """

    _esm = bundle("q4k_explorer.js")
    _inputs = ("block", "payload_index", "presenter")

    block = t.List(t.Int(), default_value=q4k.presentation_fixture().tolist(), minlen=144, maxlen=144).tag(sync=True)
    payload_index = t.Int(0).tag(sync=True)

    def _check(self) -> None:
        raw = np.array(self.block)
        if raw.shape != (q4k.BLOCK_BYTES,):
            raise LabError(f"a Q4_K block is {q4k.BLOCK_BYTES} bytes, got {raw.size}")
        # The figure traces this byte; one that does not exist refuses the figure, as the browser does.
        q4k.lanes(self.payload_index)
        with np.errstate(all="ignore"):
            q4k.decode(raw)  # refuses bytes outside 0..255

    def show_block(self, type_name: str, raw: np.ndarray) -> None:
        """Show one GGUF Q4_K block's 144 bytes, traced from its first payload byte."""
        if type_name != "Q4_K":
            raise UnsupportedTypeError(f"the Q4_K explorer shows Q4_K blocks; got {visible(type_name, 40)}")
        self._show({"block": raw.tolist()})


class Exercises(_LabWidget):
    """Exercises that check themselves, for one notebook (`topic` 1..12) or all of them (0).

    The browser draws each instance from `seed` and the kind's round (`rounds`, New instance
    presses), checks answers with the JS codec and counts the right ones; `answers` keeps the text
    last checked per kind. A first wrong answer gets a hint and a second try; the worked answer
    comes after a second wrong answer, or when the learner asks for it. `attempts` keeps, per kind,
    the first answer checked to the instance on show, how many different answers were checked
    (`tries`) and whether the working was asked for (`shown`); the teacher's view gets them with
    each answer. Python derives nothing.

    `seed` 0 (the default) stands for the student's own numbers: the browser takes the seed it
    keeps in localStorage (drawing one at random the first time), with the rounds and answers it
    kept for this topic and seed, and writes that seed here, so neighbours get different numbers
    and a reload keeps them. Any other seed, 1..4294967295, set here or by a page's link, is used
    as it is. The seed field and New numbers in the widget set a seed too (and make it the
    browser's own).

    `progress` is output only: the browser writes each answered kind's verdict ("correct" or
    "wrong") after checking its answer again against the instance of `seed` and its round, and
    never reads it back as the truth, so a value set here or by a link counts nothing.
    """

    _esm = bundle("exercises.js")
    _inputs = ("topic", "seed", "rounds", "answers", "attempts", "progress", "presenter")

    #: the largest seed; 0 is the student's own
    LARGEST_SEED = 2**32 - 1

    topic = t.Int(0).tag(sync=True)
    seed = t.Int(0).tag(sync=True)
    rounds = t.Dict().tag(sync=True)
    answers = t.Dict().tag(sync=True)
    attempts = t.Dict().tag(sync=True)
    progress = t.Dict().tag(sync=True)

    @t.validate("seed")
    def _check_seed(self, proposal):
        seed = proposal["value"]
        if not 0 <= seed <= self.LARGEST_SEED:
            raise LabError(
                f"seed must be a whole number 1..{self.LARGEST_SEED}, or 0 for the student's own, got {seed}"
            )
        return seed


class CodeExplorer(_LabWidget):
    """One E2M1, E8M0 or E4M3 code as clickable bits, and the codes a typed number rounds to.

    Input traits: `format` ("E2M1", "E8M0" or "E4M3"), `code`, `value_text` (a number to encode).
    Python derives nothing: the browser decodes and encodes with the JS codec.
    """

    _esm = bundle("code_explorer.js")
    _inputs = ("format", "code", "value_text", "presenter")

    format = t.Unicode("E4M3").tag(sync=True)
    code = t.Int(0x2A).tag(sync=True)
    value_text = t.Unicode("0.3").tag(sync=True)


#: the GGUF types with a widget of their own: Q4_K's explorer, and the ownership view's MXFP4 and NVFP4
_OWN_WIDGETS = ("Q4_K", "MXFP4", "NVFP4")
#: the default block: 32 Q5_0 codes 11j mod 32, all different, half of them with the fifth bit
#: set, under d = 1/16 (the weight of code 0 is -1, the block's largest magnitude)
_BLOCK_EXPLORER_WEIGHTS = ((np.arange(32) * 11 % 32 - 16) / 16).astype(np.float32)


class BlockExplorer(_CheckedWidget):
    """One block of a GGUF block format as a map of its bytes, one weight traced to its bits.

    Input traits: `type_name` (a GGUF type in `types`: every registry format GGUF has but Q4_K,
    MXFP4 and NVFP4, which have widgets of their own), `block` (that type's bytes, one block;
    default a Q5_0 block) and `weight` (the traced weight, 0..n-1). The browser draws everything
    with the format's JS codec module.
    """

    _esm = bundle("block_explorer.js")
    _inputs = ("type_name", "block", "weight", "presenter")
    types = tuple(fmt.gguf_type for fmt in with_gguf() if fmt.gguf_type not in _OWN_WIDGETS)

    type_name = t.Unicode("Q5_0").tag(sync=True)
    block = t.List(t.Int(), default_value=by_gguf_type("Q5_0").to_gguf(_BLOCK_EXPLORER_WEIGHTS).tolist()).tag(sync=True)
    weight = t.Int(1).tag(sync=True)

    def _check(self) -> None:
        if self.type_name not in self.types:
            raise UnsupportedTypeError(
                f"the block explorer opens {', '.join(self.types)}; got {visible(self.type_name, 40)}"
            )
        fmt = by_gguf_type(self.type_name)
        n_bytes = int(fmt.block_size * fmt.bits_per_weight) // 8  # a GGUF block stores whole bytes
        if len(self.block) != n_bytes:
            raise ShapeError(f"a {fmt.title} block is {n_bytes} bytes, got {len(self.block)}")
        fmt.decode_gguf(np.array(self.block))  # refuses bytes outside 0..255
        if not 0 <= self.weight < fmt.block_size:
            raise LabError(f"this block has weights 0..{fmt.block_size - 1}, got {self.weight}")

    def show_block(self, type_name: str, raw: np.ndarray) -> None:
        """Show one block of a GGUF type, its weight traced as in a new explorer (a type the
        explorer does not open is taken, and refused in `message` as the browser refuses it)."""
        self._show({"type_name": type_name, "block": raw.tolist()})
