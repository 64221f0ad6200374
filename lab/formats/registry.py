"""The format registry: every block format once, with what the apps need to know about it.

A format module registers itself with `register(block_format(...))`, whose Format takes its block
size, bits per weight and GGUF type from the block the module declares (`lab.formats._tensor`'s
gguf_block or element_block); `lab.formats` imports every module of the package, those the course
meets in its order first (`lab.formats.COURSE_ORDER`), so `FORMATS` lists them in that order. Apps
(the on-device pane, real weights, the GGUF tools, sizes, the bench, the site build) loop over
`FORMATS` and never name a format: adding one is a module, a JS codec module and rows of test data.

Every quantized tensor follows `QuantizedTensor`; a tensor whose format MLX has also follows
`MLXTensor`, and one whose format GGUF has follows `GGUFTensor`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np
from numpy.typing import ArrayLike

from lab.errors import LabError, RuleError, ShapeError, UnsupportedTypeError

#: whose converter a format follows when a row does not fit its blocks (see Format.family)
FAMILIES = ("mlx", "gguf", "bitsandbytes")

#: the two readings of GGUF's scale codes: the OCP specs', and ggml's
DecoderName = Literal["ocp", "ggml"]
GGUF_DECODERS: tuple[DecoderName, ...] = ("ocp", "ggml")


@runtime_checkable
class QuantizedTensor(Protocol):
    """What every format's `quantize` returns."""

    @property
    def shape(self) -> tuple[int, ...]: ...

    @property
    def bits_per_weight(self) -> float: ...

    def dequantize(self) -> np.ndarray: ...

    def explain(self, index: Any) -> dict: ...


@runtime_checkable
class MLXTensor(QuantizedTensor, Protocol):
    """A tensor MLX can hold: its arrays in MLX's layout, as numpy and as MLX arrays."""

    def mlx_layout(self) -> tuple[np.ndarray, ...]: ...

    def to_mlx(self) -> tuple[Any, ...]: ...


@runtime_checkable
class GGUFTensor(QuantizedTensor, Protocol):
    """A tensor GGUF can hold: its bytes in GGUF's block layout."""

    def to_gguf(self) -> np.ndarray: ...


@dataclass(frozen=True)
class MLXMode:
    """How MLX names this format: the keyword arguments of mx.quantize and mx.dequantize."""

    mode: str
    bits: int
    group_size: int

    def parameters(self) -> dict:
        return {"mode": self.mode, "bits": self.bits, "group_size": self.group_size}


class UnknownFormatError(LabError):
    """A format name that is not in the registry."""


@dataclass(frozen=True)
class Format:
    """One block format: its storage, its quantizer, and where MLX and GGUF have it.

    name             the registry key, short and lowercase ("mxfp4", "affine4_g64")
    title            how pages name it ("MXFP4", "MLX affine 4-bit g64")
    block_size       weights per block: a row must be a multiple of it
    bits_per_weight  element codes plus scales (plus minimums or biases), per weight
    quantize         quantize(w, **options) -> a QuantizedTensor; w is float [..., k * block_size]. An
                     entry that fixes parameters (affine's bits and group size) has them bound here
    presets          the rounding presets `quantize` takes as rule= (lab.formats.rounding), the
                     first being the default; empty when the format has one rounding only
    mlx              MLX's mode and parameters, or None where MLX has no such mode
    mlx_rewrite      where MLX has no mode of its own, the mode the format's blocks rewrite into
                     exactly (Q4_K's 32-weight subblocks are MLX affine groups of 32); else None
    gguf_type        GGUF's tensor type name, or None where GGUF has none
    from_gguf        GGUF bytes [..., blocks * bytes per block] -> the format's tensor
    dequantize_gguf  (raw, decoder) -> float32, for a format whose GGUF bytes two decoders read
                     differently (see GGUF_DECODERS), or whose bytes decode straight from a memory
                     map without the tensor's own copy (Q8_0); None where
                     from_gguf(raw).dequantize() is the one reading
    gguf_preset      the rounding preset a GGUF writer quantizes with (MXFP4: "ggml"), or None
    nan_scale_bytes  scale bytes whose value is NaN (E8M0 0xFF; E4M3 0x7F and 0xFF)
    family           "mlx", "gguf" or "bitsandbytes": whose converter sets the format's policy
                     for a row it cannot take (MLX's converter and bitsandbytes leave the layer in
                     float; a GGUF converter stores the tensor in another type)
    summary          one line for tables and the course
    tensor           the tensor class `quantize` returns, whose class methods say what the format's
                     GGUF bytes hold (gguf_layout, traced_part, owner_words); None for a format
                     made outside the block table (a test's toy)
    """

    name: str
    title: str
    block_size: int
    bits_per_weight: float
    quantize: Callable[..., QuantizedTensor]
    family: str
    summary: str
    presets: tuple[str, ...] = ()
    mlx: MLXMode | None = None
    gguf_type: str | None = None
    from_gguf: Callable[[np.ndarray], QuantizedTensor] | None = None
    dequantize_gguf: Callable[[np.ndarray, str], np.ndarray] | None = None
    gguf_preset: str | None = None
    nan_scale_bytes: tuple[int, ...] = ()
    mlx_rewrite: MLXMode | None = None
    tensor: type | None = None

    def __post_init__(self):
        if self.family not in FAMILIES:
            raise LabError(f"format {self.name!r}: family must be one of {FAMILIES}, got {self.family!r}")
        if (self.gguf_type is None) != (self.from_gguf is None):
            raise LabError(f"format {self.name!r}: a GGUF type and from_gguf go together")

    def round_trip(self, w: ArrayLike, **options) -> np.ndarray:
        """The weights as this format gives them back: dequantize(quantize(w))."""
        return self.quantize(w, **options).dequantize()

    def to_gguf(self, w: ArrayLike) -> np.ndarray:
        """Float weights -> the bytes a GGUF file stores for this format, quantized as its writer does."""
        if self.gguf_type is None:
            raise UnsupportedTypeError(f"GGUF has no {self.title} tensor type")
        options = {} if self.gguf_preset is None else {"rule": self.gguf_preset}
        return self.quantize(w, **options).to_gguf()

    def decode_gguf(self, raw: ArrayLike, decoder: DecoderName = "ocp") -> np.ndarray:
        """GGUF bytes of this format -> float32 weights, read the way `decoder` names.

        "ocp" reads scale codes as the OCP specs define them (E8M0 0xFF and E4M3 0x7F are NaN,
        -0 is kept); "ggml" reads them as ggml does. Formats without such codes (Q4_K, Q8_0) have
        one reading, which both names give.
        """
        if self.gguf_type is None:
            raise UnsupportedTypeError(f"GGUF has no {self.title} tensor type")
        if decoder not in GGUF_DECODERS:
            raise RuleError(f"unknown decoder {decoder!r} for {self.title}; expected one of {GGUF_DECODERS}")
        if self.dequantize_gguf is not None:
            return self.dequantize_gguf(raw, decoder)
        return self.from_gguf(raw).dequantize()

    def skip_reason(self, row_length: int) -> str | None:
        """Why a row of this length cannot be stored in this format, or None when it can."""
        if row_length % self.block_size == 0:
            return None
        if self.family == "gguf":
            return (
                f"skipped: row length {row_length} not a multiple of {self.block_size}; a GGUF converter "
                "stores such a tensor in another type (llama.cpp falls back to one with smaller blocks, "
                f"such as Q5_0 in place of Q4_K)"
            )
        return f"skipped: row length {row_length} not a multiple of group {self.block_size}"

    def check_rows(self, shape: tuple[int, ...]) -> None:
        if not shape or shape[-1] % self.block_size:
            raise ShapeError(f"{self.title} needs rows that are a multiple of {self.block_size}, got shape {shape}")


#: every registered format, in the order the course meets them
FORMATS: dict[str, Format] = {}


def register(fmt: Format) -> Format:
    """Add a format to the registry; a name is registered once."""
    if fmt.name in FORMATS:
        raise LabError(f"format {fmt.name!r} is registered already")
    if fmt.name != fmt.name.lower() or not fmt.name.replace("_", "").isalnum():
        raise LabError(f"format names are short lowercase words, got {fmt.name!r}")
    FORMATS[fmt.name] = fmt
    return fmt


def unregister(name: str) -> Format:
    """Take a format out of the registry (tests register toy formats and take them out again)."""
    return FORMATS.pop(name)


def get(name: str) -> Format:
    """The registered format called `name`, or UnknownFormatError listing the known ones."""
    if not isinstance(name, str):
        raise UnknownFormatError(f"a format is named by a string such as 'mxfp4', got {name!r}")
    try:
        return FORMATS[name]
    except KeyError:
        raise UnknownFormatError(f"unknown format {name!r}; the registry has {', '.join(FORMATS)}") from None


def with_mlx() -> list[Format]:
    return [fmt for fmt in FORMATS.values() if fmt.mlx is not None]


def with_gguf() -> list[Format]:
    return [fmt for fmt in FORMATS.values() if fmt.gguf_type is not None]


def by_gguf_type(type_name: str) -> Format | None:
    """The registered format GGUF calls `type_name` ("Q4_K"), or None."""
    return next((fmt for fmt in FORMATS.values() if fmt.gguf_type == type_name), None)
