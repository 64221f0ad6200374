"""MXFP8: 32 E4M3 element codes share one E8M0 scale byte; 8.25 bits per weight.

    weight = E4M3(code) * 2^(scale_byte - 127)

Rounding presets (lab.rounding): "mlx" (MLX 0.32.4: ceil scale rule) and "ocp" (floor rule).
Elements round half to even and saturate at 448 under both. GGUF has no MXFP8 tensor type.
"""

from __future__ import annotations

from . import _mx
from ._mx import MXTensor

GROUP_SIZE = _mx.GROUP_SIZE
BITS_PER_WEIGHT = 8.25


def quantize(w, rule: str = "mlx", group_size: int = GROUP_SIZE) -> MXTensor:
    return _mx.quantize(w, _mx.E4M3_ELEMENT, rule, group_size)


def from_mlx(packed, scales) -> MXTensor:
    return _mx.from_mlx(packed, scales, _mx.E4M3_ELEMENT)


def from_parts(codes, scale_bytes) -> MXTensor:
    return MXTensor(element=_mx.E4M3_ELEMENT, codes=codes, scale_bytes=scale_bytes, rule="given")
