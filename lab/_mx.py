"""The MX block formats (MXFP4, MXFP8): 32 element codes share one E8M0 scale byte.

    weight = element_value(code) * 2^(scale_byte - 127)

The element codec is E2M1 for MXFP4 and E4M3 for MXFP8; everything else is common.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import e2m1, e4m3, e8m0, mlx_bridge
from ._arrays import as_code_array, round_to
from ._blocks import check_group, element_index, float_input, fmt, grouped
from .errors import ShapeError
from .rounding import preset as get_preset

GROUP_SIZE = 32


@dataclass(frozen=True)
class ElementFormat:
    mode: str  # MLX's mode name
    name: str
    bits: int
    max_value: float


E2M1_ELEMENT = ElementFormat(mode="mxfp4", name="E2M1", bits=4, max_value=e2m1.MAX)
E4M3_ELEMENT = ElementFormat(mode="mxfp8", name="E4M3", bits=8, max_value=e4m3.MAX)


def _element_values(element: ElementFormat, codes: np.ndarray) -> np.ndarray:
    return (e2m1.decode(codes) if element.bits == 4 else e4m3.decode(codes)).astype(np.float64)


@dataclass(frozen=True)
class MXTensor:
    """A tensor in an MX format: element codes [..., K] and E8M0 scale bytes [..., K/32]."""

    element: ElementFormat
    codes: np.ndarray
    scale_bytes: np.ndarray
    rule: str = "mlx"
    source_dtype: str = "float32"
    group_size: int = field(default=GROUP_SIZE, init=False)

    def __post_init__(self):
        limit = 16 if self.element.bits == 4 else 256
        codes = as_code_array(self.codes, limit=limit, what=f"{self.element.name} code")
        scale_bytes = as_code_array(self.scale_bytes, limit=256, what="E8M0 scale byte")
        if codes.ndim == 0 or codes.shape[-1] % GROUP_SIZE or scale_bytes.shape != codes.shape[:-1] + (
            codes.shape[-1] // GROUP_SIZE,
        ):
            raise ShapeError(
                f"{self.element.mode} needs codes [..., 32k] and one scale byte per 32 codes, "
                f"got codes {codes.shape} and scale bytes {scale_bytes.shape}"
            )
        object.__setattr__(self, "codes", codes)
        object.__setattr__(self, "scale_bytes", scale_bytes)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.codes.shape

    @property
    def bits_per_weight(self) -> float:
        return (GROUP_SIZE * self.element.bits + e8m0.BITS) / GROUP_SIZE

    @property
    def scales(self) -> np.ndarray:
        """Decoded scales, NaN for a 0xFF byte."""
        return e8m0.decode(self.scale_bytes)

    def dequantize(self) -> np.ndarray:
        """Reconstructed weights in float32; a block whose scale byte is 0xFF is all NaN."""
        values = grouped(_element_values(self.element, self.codes), GROUP_SIZE)
        scales = self.scales.astype(np.float64)[..., None]
        with np.errstate(over="ignore"):  # 6 * 2^127 is beyond float32: inf, as in every float32 decoder
            return (values * scales).reshape(self.shape).astype(np.float32)

    def explain(self, index) -> dict:
        """One weight traced from its code and its block's scale byte to its value."""
        position = element_index(self.shape, index)
        code = int(self.codes[position])
        block = position[:-1] + (position[-1] // GROUP_SIZE,)
        scale_byte = int(self.scale_bytes[block])
        element = e2m1.explain(code) if self.element.bits == 4 else e4m3.explain(code)
        scale = e8m0.explain(scale_byte)
        weight = float(self.dequantize()[position])
        return {
            "format": self.element.mode,
            "index": position,
            "block": block,
            "position_in_block": position[-1] % GROUP_SIZE,
            "code": code,
            "element": element,
            "scale_byte": scale_byte,
            "scale": scale,
            "weight": weight,
            "formula": f"{fmt(element['value'])} \u00d7 {fmt(scale['value'])} = {fmt(weight)}",
        }

    def mlx_layout(self) -> tuple[np.ndarray, np.ndarray]:
        """(packed uint32 codes, uint8 scales) as numpy arrays in MLX's layout."""
        return mlx_bridge.pack(self.codes, self.element.bits), self.scale_bytes.copy()

    def to_mlx(self):
        """The arrays mx.quantize(w, mode=...) returns: (packed uint32, uint8 scales) as MLX arrays."""
        mlx_bridge.require_matrix(self.shape)
        mx = mlx_bridge.mlx_core()
        packed, scales = self.mlx_layout()
        return mx.array(packed), mx.array(scales)


def quantize(w, element: ElementFormat, rule: str = "mlx", group_size: int = GROUP_SIZE) -> MXTensor:
    """Quantize float weights [..., 32k] to an MX format under a named preset (see lab.rounding)."""
    check_group(element.mode, group_size, GROUP_SIZE)
    rules = get_preset(rule)
    weights, dtype = float_input(w, GROUP_SIZE)
    blocks = grouped(weights, GROUP_SIZE).astype(np.float64)
    amax = np.abs(blocks).max(axis=-1)
    scale_dtype = dtype if rules.computes_in_input_dtype else "float32"
    exponent = e8m0.exponent_for(amax, rules.scale_rule, element.max_value, scale_dtype)
    exponent = np.clip(exponent, -e8m0.BIAS, e8m0.BIAS)
    scale_bytes = np.where(amax == 0, rules.zero_block_byte, exponent + e8m0.BIAS).astype(np.uint8)
    # Dividing by a power of two is exact except where the quotient falls into the subnormal
    # range of a narrow input dtype; MLX rounds it there, so the lab does too.
    scaled = blocks / np.ldexp(1.0, scale_bytes.astype(np.int64) - e8m0.BIAS)[..., None]
    if rules.computes_in_input_dtype:
        scaled = round_to(scaled, dtype).astype(np.float64)
    if element.bits == 4:
        codes = e2m1.encode(scaled, rules.element_rounding)
    else:
        codes = e4m3.encode(scaled)
    return MXTensor(
        element=element,
        codes=np.asarray(codes).reshape(weights.shape),
        scale_bytes=scale_bytes,
        rule=rule,
        source_dtype=dtype,
    )


def from_mlx(packed, scales, element: ElementFormat) -> MXTensor:
    """Read MLX's (packed, scales) arrays back into the lab's codes and scale bytes."""
    packed = np.asarray(packed if isinstance(packed, np.ndarray) else mlx_bridge.to_numpy(packed))
    scale_bytes = np.asarray(scales if isinstance(scales, np.ndarray) else mlx_bridge.to_numpy(scales))
    codes = mlx_bridge.unpack(packed.astype(np.uint32), element.bits)
    return MXTensor(element=element, codes=codes, scale_bytes=scale_bytes.astype(np.uint8), rule="mlx")
