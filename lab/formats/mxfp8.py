"""MXFP8: 32 E4M3 element codes share one E8M0 scale byte; 8.25 bits per weight.

    weight = E4M3(code) * 2^(scale_byte - 127)

Rounding presets (lab.formats.rounding): "mlx" (MLX 0.32.4: ceil scale rule) and "ocp" (floor rule).
Elements round half to even and saturate at 448 under both. GGUF has no MXFP8 tensor type.
"""

from __future__ import annotations

from numpy.typing import ArrayLike

from lab.codes import e8m0
from lab.formats import _mx
from lab.formats._mx import MXTensor
from lab.formats._tensor import block_format
from lab.formats.registry import MLXMode, register
from lab.formats.rounding import RuleName

BLOCK = _mx.E4M3_ELEMENT.block
GROUP_SIZE = BLOCK.weights  # 32
BITS_PER_WEIGHT = BLOCK.bits_per_weight  # 8.25


def quantize(w: ArrayLike, rule: RuleName = "mlx", group_size: int = GROUP_SIZE) -> MXTensor:
    return _mx.quantize(w, _mx.E4M3_ELEMENT, rule, group_size)


def from_mlx(packed: ArrayLike, scales: ArrayLike) -> MXTensor:
    return _mx.from_mlx(packed, scales, _mx.E4M3_ELEMENT)


def from_parts(codes: ArrayLike, scale_bytes: ArrayLike) -> MXTensor:
    return MXTensor(element=_mx.E4M3_ELEMENT, codes=codes, scale_bytes=scale_bytes, rule="given")


FORMAT = register(
    block_format(
        BLOCK,
        name="mxfp8",
        quantize=quantize,
        family="mlx",
        summary="OCP MX: 32 E4M3 codes share one E8M0 power-of-two scale",
        presets=("mlx", "ocp"),
        mlx=MLXMode(mode="mxfp8", bits=8, group_size=GROUP_SIZE),
        tensor=MXTensor,
        nan_scale_bytes=(e8m0.NAN_BYTE,),
    )
)
