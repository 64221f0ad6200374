"""MXFP4: 32 E2M1 element codes share one E8M0 scale byte; 4.25 bits per weight.

    weight = E2M1(code) * 2^(scale_byte - 127)

Two byte layouts carry the same logical block:

MLX (and the lab's logical order): codes packed eight to a uint32, element k of a word in bits
[4k, 4k+4); the scale bytes live in a separate array.

GGUF (ggml's block_mxfp4, 17 bytes per 32 weights):
    byte 0       E8M0 scale
    byte 1 + j   low nibble = element j, high nibble = element j + 16     (j = 0..15)
so byte 1 pairs elements 0 and 16, not 0 and 1.

ggml's decoder also reads two encodings differently from the OCP spec: it multiplies by a table
of integers, so code 1000 gives +0 rather than -0, and it treats scale byte 0xFF as 2^128
rather than NaN. `dequantize_gguf(raw, decoder="ggml")` reproduces that; the default "ocp"
decoder keeps -0 and NaN, and the difference is part of the lesson.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from lab.codes import e2m1, e8m0
from lab.errors import RuleError
from lab.formats import _mx
from lab.formats._mx import MXTensor
from lab.formats._tensor import block_format
from lab.formats.registry import MLXMode, register
from lab.formats.rounding import RuleName

BLOCK = _mx.E2M1_ELEMENT.block
GROUP_SIZE = BLOCK.weights  # 32
BITS_PER_WEIGHT = BLOCK.bits_per_weight  # 4.25
GGUF_BLOCK_BYTES = BLOCK.gguf.bytes  # 17
DECODERS = ("ocp", "ggml")


def quantize(w: ArrayLike, rule: RuleName = "mlx", group_size: int = GROUP_SIZE) -> MXTensor:
    """Quantize [..., 32k] weights; `rule` is a preset from lab.formats.rounding ("mlx", "ggml", "ocp")."""
    return _mx.quantize(w, _mx.E2M1_ELEMENT, rule, group_size)


def from_mlx(packed: ArrayLike, scales: ArrayLike) -> MXTensor:
    return _mx.from_mlx(packed, scales, _mx.E2M1_ELEMENT)


def from_parts(codes: ArrayLike, scale_bytes: ArrayLike) -> MXTensor:
    return MXTensor(element=_mx.E2M1_ELEMENT, codes=codes, scale_bytes=scale_bytes, rule="given")


#: GGUF MXFP4 bytes [..., 17k] -> logical codes and scale bytes
from_gguf = MXTensor.from_gguf


def dequantize_gguf(raw: ArrayLike, decoder: str = "ocp") -> np.ndarray:
    """Decode GGUF MXFP4 bytes to float32 weights under a named decoder ("ocp" or "ggml")."""
    # The decoder is checked first, so a bad name is reported whatever the bytes are.
    if not isinstance(decoder, str) or decoder not in DECODERS:
        raise RuleError(f"unknown MXFP4 decoder {decoder!r}; expected one of {DECODERS}")
    tensor = from_gguf(raw)
    if decoder == "ocp":
        return tensor.dequantize()
    # ggml: integer table (so -0 collapses to +0) times 2^(byte-127), with byte 255 as 2^128.
    magnitude_sign = e2m1.decode(tensor.codes).astype(np.float64) + 0.0
    exponents = tensor.scale_bytes.astype(np.int64) - 127
    weights = np.ldexp(_mx.grouped(magnitude_sign, GROUP_SIZE), exponents[..., None])
    with np.errstate(over="ignore"):  # 6 * 2^127 overflows float32 to inf, as it does in ggml
        return weights.reshape(tensor.shape).astype(np.float32)


FORMAT = register(
    block_format(
        BLOCK,
        name="mxfp4",
        quantize=quantize,
        family="mlx",
        summary="OCP MX: 32 E2M1 codes share one E8M0 power-of-two scale",
        presets=("mlx", "ggml", "ocp"),
        mlx=MLXMode(mode="mxfp4", bits=4, group_size=GROUP_SIZE),
        tensor=MXTensor,
        dequantize_gguf=dequantize_gguf,
        gguf_preset="ggml",
        nan_scale_bytes=(e8m0.NAN_BYTE,),
    )
)
