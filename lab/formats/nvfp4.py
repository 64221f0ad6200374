"""NVFP4: 16 E2M1 element codes share one E4M3 block scale, and an optional FP32 tensor scale.

    weight = E2M1(code) * E4M3(scale_byte) * tensor_factor

Storage: (16 * 4 + 8) / 16 = 4.5 bits per weight, plus 32 / N for the FP32 tensor scale of an
N-weight tensor when there is one.

Tensor scale convention (MLX 0.32.4's `global_scale`): the number stored is the tensor's
absolute maximum `g`, and the factor applied on decode is g / 2688, where 2688 = 6 * 448 is the
largest E2M1 value times the largest E4M3 value. Quantizing divides by that factor, so block
scales use the whole E4M3 range. torchao and Transformer Engine store the reciprocal-style
number amax / 2688 instead; the same name can hold either, so always check which one is meant.

Block scale rule (MLX 0.32.4): E4M3(amax_block / 6 * 2688 / g), rounded half to even and
saturated at 448; elements are then the nearest E2M1 entry of x / (E4M3 value * g / 2688), ties
toward zero (lab.codes.e2m1 rule "mlx"). MLX forms amax/6 and x / scale in the input's dtype.

Two byte layouts carry the block:
MLX: codes packed eight per uint32 (element k in bits [4k, 4k+4)); E4M3 scale bytes separately.
GGUF (ggml's block_nvfp4, 36 bytes per 64 weights):
    bytes 0..3    four unsigned-E4M3 scales, one per 16 weights
    bytes 4..35   four groups of 8 bytes; byte j of group g holds element 16g + j (low nibble)
                  and element 16g + j + 8 (high nibble)
ggml reads the scale bytes as *unsigned* E4M3 (lab.codes.e4m3.decode_ggml_unsigned: bit 7 ignored,
0x7F is zero, not NaN) and collapses code 1000 to +0. GGUF blocks carry no tensor scale.
"""

from __future__ import annotations

from dataclasses import field

import numpy as np
from numpy.typing import ArrayLike

from lab._arrays import as_code_array, as_float_array, as_float_scalar, round_to
from lab.codes import e2m1, e4m3
from lab.errors import LabError, NonFiniteError, RuleError
from lab.formats import mlx_layout
from lab.formats._blocks import block_amax, check_group, float_input, grouped
from lab.formats._tensor import GGUFBlockTensor, Lane, Part, block_field, block_format, element_block, rows, stored
from lab.formats.registry import MLXMode, register
from lab.numbers import format_number

BLOCK = element_block("NVFP4", 16, element_bits=4, scale_bits=8, gguf=(64, 36))  # an E4M3 scale
GROUP_SIZE = BLOCK.weights  # 16
TENSOR_SCALE_RANGE = e2m1.MAX * e4m3.MAX  # 2688
GGUF_BLOCK_BYTES = BLOCK.gguf.bytes  # 36
GGUF_BLOCK_WEIGHTS = BLOCK.gguf.weights  # 64: four blocks of 16
DECODERS = ("ocp", "ggml")


def _gguf_payload(codes: np.ndarray) -> np.ndarray:
    """E2M1 codes [..., 64k] -> GGUF's nibbles [..., k, 32]: byte j of group g holds elements 16g + j and 16g + j + 8."""
    by_half = codes.reshape(*codes.shape[:-1], -1, 4, 2, 8)  # [..., block, group, half, j]
    return (by_half[..., 0, :] | (by_half[..., 1, :] << 4)).reshape(*codes.shape[:-1], -1, 32)


def _gguf_codes(qs: np.ndarray) -> np.ndarray:
    """GGUF's nibbles [..., k, 32] -> the E2M1 codes [..., 64k] they hold; the inverse of _gguf_payload."""
    payload = qs.reshape(*qs.shape[:-1], 4, 8)
    codes = np.stack([payload & 0x0F, payload >> 4], axis=-2)  # [..., block, group, half, j]
    return rows(codes.reshape(*payload.shape[:-2], -1))


def _gguf_scales(scale_bytes: np.ndarray) -> np.ndarray:
    """E4M3 scale bytes [..., 4k] -> GGUF's [..., k, 4], which holds them unsigned."""
    if np.any(scale_bytes & 0x80):
        raise LabError("GGUF NVFP4 stores unsigned E4M3 scales; a negative block scale cannot be exported")
    return scale_bytes.reshape(*scale_bytes.shape[:-1], -1, 4)


class NVFP4Tensor(GGUFBlockTensor, block=BLOCK):
    """E2M1 codes [..., K], E4M3 block-scale bytes [..., K/16], and the tensor amax `global_scale` or None."""

    codes: np.ndarray = block_field(
        convert=lambda codes, _: as_code_array(codes, limit=16, what="E2M1 code"),
        gguf=stored(Part("qs", 32, "nibbles", at=4), write=_gguf_payload, read=_gguf_codes),
    )
    scale_bytes: np.ndarray = block_field(
        "scale bytes",
        per_block=(),
        convert=lambda scale_bytes, _: as_code_array(scale_bytes, limit=256, what="E4M3 scale byte"),
        gguf=stored(Part("scales", 4, "unsigned E4M3 scales", at=0), write=_gguf_scales, read=rows),
    )
    global_scale: float | None = None
    source_dtype: str = "float32"
    group_size: int = field(default=GROUP_SIZE, init=False)

    def __post_init__(self):
        super().__post_init__()
        if self.global_scale is not None:
            object.__setattr__(self, "global_scale", _check_global_scale(self.global_scale))

    @property
    def tensor_factor(self) -> float:
        """What decoding multiplies by on top of the block scale: g / 2688, or 1 without a tensor scale."""
        if self.global_scale is None:
            return 1.0
        return float(np.float32(self.global_scale) / np.float32(TENSOR_SCALE_RANGE))

    @property
    def bits_per_weight(self) -> float:
        """The block's 4.5, plus 32 / N for the FP32 tensor scale of N weights where there is one."""
        if self.global_scale is None:
            return self.block.bits_per_weight
        return self.block.bits_per_weight + 32 / self.codes.size

    @property
    def block_scales(self) -> np.ndarray:
        return e4m3.decode(self.scale_bytes)

    def dequantize(self) -> np.ndarray:
        values = grouped(e2m1.decode(self.codes), GROUP_SIZE)
        # float32 is enough. An element times its block scale has at most 2 + 4 significant bits
        # and lies between 2^-10 and 2688, so that product is exact; the tensor factor is then
        # the one rounding, the same one a float64 product rounded to float32 at the end gets.
        values *= self.block_scales[..., None]
        if self.global_scale is not None:
            values *= np.float32(self.tensor_factor)
        return values.reshape(self.shape)

    def explain_head(self, at: Lane) -> dict:
        return {"format": "nvfp4", "index": at.position, "block": at.block_position, "position_in_block": at.lane}

    def explain_lane(self, at: Lane) -> dict:
        code = int(self.codes[at.position])
        scale_byte = int(self.scale_bytes[at.block_position])
        element = e2m1.explain(code)
        scale = e4m3.explain(scale_byte)
        weight = float(self.dequantize()[at.position])
        formula = f"{format_number(element['value'])} \u00d7 {format_number(scale['value'])} \u00d7 {format_number(self.tensor_factor)} = {format_number(weight)}"
        return {
            "code": code,
            "element": element,
            "scale_byte": scale_byte,
            "scale": scale,
            "tensor_factor": self.tensor_factor,
            "global_scale": self.global_scale,
            "weight": weight,
            "formula": formula,
        }

    def mlx_layout(self) -> tuple[np.ndarray, np.ndarray]:
        return mlx_layout.pack(self.codes, 4), self.scale_bytes.copy()

    def to_mlx(self):
        """The arrays mx.quantize(w, mode="nvfp4"[, global_scale=...]) returns, as MLX arrays."""
        mlx_layout.require_matrix(self.shape)
        mx = mlx_layout.mlx_core()
        packed, scales = self.mlx_layout()
        return mx.array(packed), mx.array(scales)

    def to_gguf(self) -> np.ndarray:
        """The blocks in GGUF's 36-byte layout, uint8 [..., K/64 * 36]."""
        if self.global_scale is not None:
            raise LabError(
                "a GGUF NVFP4 block has no place for the FP32 tensor scale; quantize without "
                "global_scale to export, or store the tensor scale separately"
            )
        return super().to_gguf()


def _check_global_scale(global_scale) -> float:
    """The tensor scale as the float32 it is stored as; it must stay positive and finite there."""
    value = as_float_scalar(global_scale, what="global_scale")
    with np.errstate(over="ignore"):
        stored = float(np.float32(value))
    if not np.isfinite(stored) or stored <= 0:
        raise NonFiniteError(
            f"global_scale must be a positive finite float32 (the tensor amax), got {value!r}"
            + (f", which is {stored!r} as a float32" if np.isfinite(value) and value > 0 else "")
        )
    return stored


def tensor_amax(w: ArrayLike) -> float:
    """The number MLX's convention stores as global_scale: the tensor's absolute maximum."""
    weights, _ = float_input(w, GROUP_SIZE)
    return float(np.abs(weights).max())


def quantize(w: ArrayLike, global_scale: ArrayLike = None, group_size: int = GROUP_SIZE) -> NVFP4Tensor:
    """Quantize [..., 16k] weights with MLX 0.32.4's rule (see the module docstring).

    `global_scale` is the FP32 tensor scale in MLX's convention (the tensor amax, e.g.
    `tensor_amax(w)`); None quantizes without one.
    """
    check_group("nvfp4", group_size, GROUP_SIZE)
    weights, dtype = float_input(w, GROUP_SIZE)
    blocks = grouped(weights, GROUP_SIZE)
    # Block scales are never negative, so dividing by one never changes a sign: the elements are
    # worked out from the magnitudes, and the signs are read off the weights.
    magnitude = np.abs(blocks)
    amax = block_amax(magnitude).astype(np.float64)
    block_scale = round_to(amax / e2m1.MAX, dtype).astype(np.float64)
    scale_encode = None  # 2688 / global_scale, with a tensor scale
    if global_scale is not None:
        global_scale = _check_global_scale(global_scale)
        with np.errstate(over="ignore"):
            scale_encode = float(np.float32(TENSOR_SCALE_RANGE) / np.float32(global_scale))
        if not np.isfinite(scale_encode):
            raise NonFiniteError(f"global_scale {global_scale!r} is too small: 2688 / global_scale overflows float32")
        block_scale = round_to(block_scale * scale_encode, "float32").astype(np.float64)
    scale_bytes = np.asarray(e4m3.encode(block_scale), dtype=np.uint8)
    scale_values = e4m3.decode(scale_bytes)
    codes = element_codes(magnitude, np.signbit(blocks), scale_values, dtype, scale_encode)
    return NVFP4Tensor(
        codes=np.asarray(codes).reshape(weights.shape),
        scale_bytes=scale_bytes,
        global_scale=global_scale,
        source_dtype=dtype,
    )


def element_codes(
    magnitude: ArrayLike, negative: ArrayLike, scale_values: ArrayLike, dtype: str, scale_encode: float | None = None
) -> np.ndarray:
    """E2M1 codes (rule "mlx") for blocks given as magnitudes [..., n, 16] and signs, under decoded
    block scales [..., n] (float32, never negative) and, with a tensor scale, the factor
    2688 / global_scale; `dtype` is the input dtype. The magnitudes are left as they are.

    The arithmetic runs in float32, as MLX's does for float32 input. Rounding a float64 quotient
    or product of two float32 numbers to float32 gives the float32 result itself (float64 carries
    more than twice float32's 24 bits), so this matches computing in float64.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        scaled = round_to(magnitude / scale_values[..., None], dtype)
        if scale_encode is not None:
            scaled *= np.float32(scale_encode)
    # A block whose scale rounds to zero holds only values too small to keep: store +0 codes.
    scaled[scale_values == 0] = 0
    # Under the rule's own scale the quotient stays near +-6, but a hand-picked scale far too
    # small for its block overflows float32; the encoder refuses that infinity.
    scaled = as_float_array(scaled, what="value to encode as E2M1", keep_float32=True)
    return e2m1.encode_magnitude(scaled, negative, "mlx")


def from_parts(codes: ArrayLike, scale_bytes: ArrayLike, global_scale: ArrayLike = None) -> NVFP4Tensor:
    return NVFP4Tensor(codes=codes, scale_bytes=scale_bytes, global_scale=global_scale)


def from_mlx(packed: ArrayLike, scales: ArrayLike, global_scale: ArrayLike = None) -> NVFP4Tensor:
    packed = np.asarray(packed if isinstance(packed, np.ndarray) else mlx_layout.to_numpy(packed))
    scale_bytes = np.asarray(scales if isinstance(scales, np.ndarray) else mlx_layout.to_numpy(scales))
    codes = mlx_layout.unpack(packed.astype(np.uint32), 4)
    return NVFP4Tensor(codes=codes, scale_bytes=scale_bytes.astype(np.uint8), global_scale=global_scale)


#: GGUF NVFP4 bytes [..., 36k] -> logical codes and scale bytes (no tensor scale)
from_gguf = NVFP4Tensor.from_gguf


def dequantize_gguf(raw: ArrayLike, decoder: str = "ocp") -> np.ndarray:
    """Decode GGUF NVFP4 bytes to float32 under a named decoder.

    "ocp" reads the scale bytes as E4M3fn (0x7F/0xFF are NaN, bit 7 is a sign) and keeps -0;
    "ggml" reads them as ggml does (unsigned, 0x7F is zero) and collapses -0 to +0.
    """
    # The decoder is checked first, so a bad name is reported whatever the bytes are.
    if not isinstance(decoder, str) or decoder not in DECODERS:
        raise RuleError(f"unknown NVFP4 decoder {decoder!r}; expected one of {DECODERS}")
    tensor = from_gguf(raw)
    if decoder == "ocp":
        return tensor.dequantize()
    values = grouped(e2m1.decode(tensor.codes).astype(np.float64) + 0.0, GROUP_SIZE)
    scales = e4m3.decode_ggml_unsigned(tensor.scale_bytes).astype(np.float64)[..., None]
    return (values * scales).reshape(tensor.shape).astype(np.float32)


FORMAT = register(
    block_format(
        BLOCK,  # 4.5 bits per weight, plus 32/N with a tensor scale
        name="nvfp4",
        quantize=quantize,
        family="mlx",
        summary="16 E2M1 codes share one E4M3 scale, with an optional FP32 tensor scale",
        mlx=MLXMode(mode="nvfp4", bits=4, group_size=GROUP_SIZE),
        tensor=NVFP4Tensor,
        dequantize_gguf=dequantize_gguf,
        nan_scale_bytes=e4m3.NAN_BYTES,
    )
)
