"""The MX block formats (MXFP4, MXFP8): 32 element codes share one E8M0 scale byte.

    weight = element_value(code) * 2^(scale_byte - 127)

The element codec is E2M1 for MXFP4 and E4M3 for MXFP8; everything else is common.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from lab._arrays import as_code_array, as_float_array, round_to
from lab.codes import e2m1, e4m3, e8m0
from lab.formats import mlx_layout
from lab.formats._blocks import block_amax, check_group, float_input, grouped
from lab.formats._ggml import nibble_halves
from lab.formats._tensor import Block, GGUFBlockTensor, Lane, Part, block_field, element_block, gguf_value, stored
from lab.formats.rounding import RuleName
from lab.formats.rounding import preset as get_preset
from lab.numbers import format_number


@dataclass(frozen=True)
class ElementFormat:
    mode: str  # MLX's mode name
    name: str
    bits: int
    max_value: float
    block: Block  # the MX format's block, titled by MLX's mode name


E2M1_ELEMENT = ElementFormat(
    mode="mxfp4",
    name="E2M1",
    bits=4,
    max_value=e2m1.MAX,
    block=element_block("MXFP4", 32, element_bits=4, scale_bits=8, gguf=(32, 17)),  # an E8M0 scale
)
E4M3_ELEMENT = ElementFormat(
    mode="mxfp8",
    name="E4M3",
    bits=8,
    max_value=e4m3.MAX,
    block=element_block("MXFP8", 32, element_bits=8, scale_bits=8),  # an E8M0 scale
)
GROUP_SIZE = E2M1_ELEMENT.block.weights  # 32, as MXFP8's


def _element_values(element: ElementFormat, codes: np.ndarray) -> np.ndarray:
    """float32 value of each element code."""
    return e2m1.decode(codes) if element.bits == 4 else e4m3.decode(codes)


class MXTensor(GGUFBlockTensor, gguf_block=E2M1_ELEMENT.block):
    """A tensor in an MX format: element codes [..., K] and E8M0 scale bytes [..., K/32].

    GGUF (ggml's block_mxfp4) has MXFP4 only: the E8M0 byte, then the 32 codes by halves.
    """

    element: ElementFormat = gguf_value(E2M1_ELEMENT)
    codes: np.ndarray = block_field(
        convert=lambda codes, tensor: as_code_array(
            codes, limit=2**tensor.element.bits, what=f"{tensor.element.name} code"
        ),
        gguf=nibble_halves(at=1),
    )
    scale_bytes: np.ndarray = block_field(
        "scale bytes",
        per_block=(),
        convert=lambda scale_bytes, _: as_code_array(scale_bytes, limit=256, what="E8M0 scale byte"),
        gguf=stored(
            Part("e", 1, "E8M0 scale", at=0),
            write=lambda scale_bytes: scale_bytes[..., None],
            read=lambda e: e[..., 0],
        ),
    )
    # the preset it was quantized under, or where it came from ("gguf", "given")
    rule: str = gguf_value("gguf", default="mlx")
    source_dtype: str = "float32"
    group_size: int = field(default=GROUP_SIZE, init=False)

    @property
    def block(self) -> Block:
        """MXFP4's or MXFP8's block, by the element."""
        return self.element.block

    @property
    def scales(self) -> np.ndarray:
        """Decoded scales, NaN for a 0xFF byte."""
        return e8m0.decode(self.scale_bytes)

    def dequantize(self) -> np.ndarray:
        """Reconstructed weights in float32; a block whose scale byte is 0xFF is all NaN."""
        values = grouped(_element_values(self.element, self.codes), GROUP_SIZE)
        # float32 is enough: an element (at most 4 significant bits) times a power of two is
        # exact wherever the product is a normal float32, and elsewhere the one float32 multiply
        # rounds the exact product, just as computing in float64 and rounding at the end would.
        with np.errstate(over="ignore"):  # 6 * 2^127 is beyond float32: inf, as in every float32 decoder
            values *= self.scales[..., None]
        return values.reshape(self.shape)

    def explain_head(self, at: Lane) -> dict:
        return {
            "format": self.element.mode,
            "index": at.position,
            "block": at.block_position,
            "position_in_block": at.lane,
        }

    def explain_lane(self, at: Lane) -> dict:
        """One weight traced from its code and its block's scale byte to its value."""
        code = int(self.codes[at.position])
        scale_byte = int(self.scale_bytes[at.block_position])
        element = e2m1.explain(code) if self.element.bits == 4 else e4m3.explain(code)
        scale = e8m0.explain(scale_byte)
        weight = float(self.dequantize()[at.position])
        return {
            "code": code,
            "element": element,
            "scale_byte": scale_byte,
            "scale": scale,
            "weight": weight,
            "formula": f"{format_number(element['value'])} \u00d7 {format_number(scale['value'])} = {format_number(weight)}",
        }

    def owner_words(self, explained: dict) -> str:
        scale = explained["scale"]
        return f"the block's E8M0 scale byte {self.gguf_part('e').at} = {scale['hex']} = {format_number(scale['value'], 6)}"

    def mlx_layout(self) -> tuple[np.ndarray, np.ndarray]:
        """(packed uint32 codes, uint8 scales) as numpy arrays in MLX's layout."""
        return mlx_layout.pack(self.codes, self.element.bits), self.scale_bytes.copy()

    def to_mlx(self):
        """The arrays mx.quantize(w, mode=...) returns: (packed uint32, uint8 scales) as MLX arrays."""
        mlx_layout.require_matrix(self.shape)
        mx = mlx_layout.mlx_core()
        packed, scales = self.mlx_layout()
        return mx.array(packed), mx.array(scales)


def quantize(w: ArrayLike, element: ElementFormat, rule: RuleName = "mlx", group_size: int = GROUP_SIZE) -> MXTensor:
    """Quantize float weights [..., 32k] to an MX format under a named preset (see lab.formats.rounding)."""
    check_group(element.mode, group_size, GROUP_SIZE)
    rules = get_preset(rule)
    weights, dtype = float_input(w, GROUP_SIZE)
    blocks = grouped(weights, GROUP_SIZE)
    # The scale is a positive power of two, so it never changes a sign: the elements are worked
    # out from the magnitudes, and the signs are read off the weights.
    magnitude = np.abs(blocks)
    amax = block_amax(magnitude)
    scale_dtype = dtype if rules.computes_in_input_dtype else "float32"
    exponent = e8m0.exponent_for(amax, rules.scale_rule, element.max_value, scale_dtype)
    exponent = np.clip(exponent, -e8m0.BIAS, e8m0.BIAS)
    scale_bytes = np.where(amax == 0, rules.zero_block_byte, exponent + e8m0.BIAS).astype(np.uint8)
    codes = element_codes(magnitude, np.signbit(blocks), scale_bytes, element, rules, dtype)
    return MXTensor(
        element=element,
        codes=np.asarray(codes).reshape(weights.shape),
        scale_bytes=scale_bytes,
        rule=rule,
        source_dtype=dtype,
    )


def element_codes(
    magnitude: ArrayLike, negative: ArrayLike, scale_bytes: ArrayLike, element: ElementFormat, rules, dtype: str
) -> np.ndarray:
    """Element codes for blocks given as magnitudes [..., n, 32] and signs, under E8M0 scale bytes
    [..., n] (0..254); `rules` is a lab.formats.rounding preset, `dtype` the input dtype. The magnitudes
    are left as they are.

    Dividing by 2^e and multiplying by 2^-e both round the same exact quotient once, and in
    float32 that quotient is exact unless it falls below the normal range (2^-126), far under
    the smallest element, where both roundings keep the code 0 and the sign. So float32 gives
    the codes float64 would. The quotient can also fall into the subnormal range of a narrow
    input dtype; MLX rounds it there, so the lab does too.
    """
    scaled = magnitude * np.ldexp(np.float32(1), e8m0.BIAS - np.asarray(scale_bytes, dtype=np.int32))[..., None]
    if rules.computes_in_input_dtype:
        # Under the rule's own scale the quotient stays within the element's range, but a
        # hand-picked scale far too small for its block overflows the input dtype; the encoder
        # refuses that infinity.
        what = f"value to encode as {element.name}"
        scaled = as_float_array(round_to(scaled, dtype), what=what, keep_float32=True)
    if element.bits == 4:
        return e2m1.encode_magnitude(scaled, negative, rules.element_rounding)
    return e4m3.encode_magnitude(scaled, negative)


def from_mlx(packed: ArrayLike, scales: ArrayLike, element: ElementFormat) -> MXTensor:
    """Read MLX's (packed, scales) arrays back into the lab's codes and scale bytes."""
    packed = np.asarray(packed if isinstance(packed, np.ndarray) else mlx_layout.to_numpy(packed))
    scale_bytes = np.asarray(scales if isinstance(scales, np.ndarray) else mlx_layout.to_numpy(scales))
    codes = mlx_layout.unpack(packed.astype(np.uint32), element.bits)
    return MXTensor(element=element, codes=codes, scale_bytes=scale_bytes.astype(np.uint8), rule="mlx")
