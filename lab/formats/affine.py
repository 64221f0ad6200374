"""MLX's affine mode: unsigned b-bit codes with a scale and a bias per group.

    weight = scale * q + bias                      q in 0 .. 2^b - 1

Supported: bits 1, 2, 3, 4, 5, 6, 8 and group sizes 32, 64, 128 (MLX 0.32.4).

What MLX 0.32.4 runs is not the formula in its docstring (scale = (max - min)/(2^b - 1), bias =
min). In float32, per group:
    n = 2^b - 1;  s = max((max - min) / n, 1e-7)
    the edge is whichever of min and max has the larger magnitude (max on a tie); s is negated
    when the edge is max, so codes then run from the top down
    q0 = rint(edge / s); if q0 != 0: s = edge / q0 and bias = edge, else bias = 0
    q = clip(rint((w - bias) / s), 0, n)           (rint rounds half to even)
For bits = 1 there is no edge snapping: s = max(max - min, 1e-7) and bias = min, as documented.
Zero therefore lands exactly on a code whenever it can. The price: snapping the scale can pull
the far edge out of reach, e.g. [-41, 39, ...] at 2 bits gets scale 20.5 and bias -41, so 39
decodes as 20.5. Codes use the unrounded float32 scale
and bias; the stored scale and bias are then rounded to the input dtype. The scale can be
negative, and a constant group stores scale -1e-7 and bias equal to the constant.

Storage: bits + 32 / group_size bits per weight with 16-bit scale and bias (bits + 64 / group_size
when they are float32): `bits_per_weight`.
"""

from __future__ import annotations

from functools import partial

import numpy as np
from numpy.typing import ArrayLike

from lab._arrays import as_code_array, is_integer, round_to
from lab.errors import BitsError, GroupSizeError
from lab.formats import mlx_layout
from lab.formats._blocks import float_input
from lab.formats._tensor import Block, BlockTensor, Lane, block_field, block_format
from lab.formats.registry import Format, MLXMode, register
from lab.numbers import format_number

SUPPORTED_BITS = (1, 2, 3, 4, 5, 6, 8)
SUPPORTED_GROUP_SIZES = (32, 64, 128)
SCALE_FLOOR = np.float32(1e-7)


def check_bits_and_group(bits: int, group_size: int) -> None:
    # `in` compares with ==, which would let True stand for 1 bit and 64.0 for a group of 64.
    if not is_integer(bits) or bits not in SUPPORTED_BITS:
        raise BitsError(
            f"[quantize] The requested number of bits {bits} is not supported. "
            "The supported bits are 1, 2, 3, 4, 5, 6 and 8."
        )
    if not is_integer(group_size) or group_size not in SUPPORTED_GROUP_SIZES:
        raise GroupSizeError(
            f"[quantize] The requested group size {group_size} is not supported. "
            "The supported group sizes are 32, 64, and 128."
        )


def _group(bits: int, group_size: int, parameter_bits: int) -> Block:
    """One group: `bits`-bit codes, and a scale and a bias of `parameter_bits` each. Made for any
    settings a caller asks, so not declared in BLOCKS, which holds the formats' own blocks."""
    return Block(f"MLX affine {bits}-bit g{group_size}", group_size, group_size * bits + 2 * parameter_bits)


def bits_per_weight(bits: int, group_size: int, parameter_bits: int = 16) -> float:
    """MLX affine's storage per weight: the code bits, plus a scale and a bias per group of
    `parameter_bits` each (16 for a float16 or bfloat16 checkpoint, 32 for a float32 one)."""
    check_bits_and_group(bits, group_size)
    return _group(bits, group_size, parameter_bits).bits_per_weight


def format_record(bits: int, group_size: int) -> Format:
    """The registry's record of MLX affine at these settings, 16-bit scales and biases counted;
    REGISTERED's pairs are registered, and any other pair can be run through it unregistered."""
    return block_format(
        _group(bits, group_size, 16),
        name=f"affine{bits}_g{group_size}",
        quantize=partial(quantize, bits=bits, group_size=group_size),
        family="mlx",
        summary=f"{bits}-bit codes with a scale and a bias per {group_size} weights",
        mlx=MLXMode(mode="affine", bits=bits, group_size=group_size),
        tensor=AffineTensor,
    )


def _as_float32(values, _) -> np.ndarray:
    return np.asarray(values, dtype=np.float32)


class AffineTensor(BlockTensor):
    """Codes [..., K], per-group scales and biases [..., K/group_size] (values exact in `dtype`)."""

    codes: np.ndarray = block_field(
        convert=lambda codes, tensor: as_code_array(codes, limit=2**tensor.bits, what=f"{tensor.bits}-bit code")
    )
    scales: np.ndarray = block_field(per_block=(), convert=_as_float32)
    biases: np.ndarray = block_field(per_block=(), convert=_as_float32)
    bits: int
    group_size: int
    dtype: str = "float32"

    def __post_init__(self):
        check_bits_and_group(self.bits, self.group_size)
        super().__post_init__()

    @property
    def block(self) -> Block:
        """A group, its scale and bias as wide as the dtype they are exact in (float32: 32 bits, else 16)."""
        return _group(self.bits, self.group_size, 32 if self.dtype == "float32" else 16)

    def dequantize(self) -> np.ndarray:
        """scale * q + bias in float64, rounded once to float32 at the end.

        float64 matters here: scale * q can need 32 bits, so float32 arithmetic would round it
        before the bias is added. The work goes a slice of groups at a time through a small
        float64 scratch array, so no full-size float64 temporary is ever made.
        """
        codes = self.codes.reshape(-1, self.group_size)
        scales = self.scales.reshape(-1, 1).astype(np.float64)
        biases = self.biases.reshape(-1, 1).astype(np.float64)
        weights = np.empty(codes.shape, dtype=np.float32)
        groups_per_pass = max(1, _CODE_CHUNK_WEIGHTS // self.group_size)
        scratch = np.empty((groups_per_pass, self.group_size), dtype=np.float64)
        # An infinite scale (a group whose range overflowed float32) gives inf and 0 * inf = NaN,
        # and a finite result beyond float32 rounds to inf: the values MLX's decode gives too.
        with np.errstate(over="ignore", invalid="ignore"):
            for start in range(0, codes.shape[0], groups_per_pass):
                rows = slice(start, start + groups_per_pass)
                work = scratch[: codes[rows].shape[0]]
                np.multiply(codes[rows], scales[rows], out=work)
                work += biases[rows]
                weights[rows] = work  # the one rounding to float32
        return weights.reshape(self.shape)

    def explain_head(self, at: Lane) -> dict:
        return {"format": "affine", "index": at.position, "group": at.block_position}

    def explain_lane(self, at: Lane) -> dict:
        code = int(self.codes[at.position])
        scale, bias = float(self.scales[at.block_position]), float(self.biases[at.block_position])
        weight = float(self.dequantize()[at.position])
        return {
            "code": code,
            "bits": f"{code:0{self.bits}b}",
            "scale": scale,
            "bias": bias,
            "weight": weight,
            "formula": f"{format_number(scale)} \u00d7 {code} + {format_number(bias)} = {format_number(weight)}",
        }

    def mlx_layout(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(packed uint32, scales, biases) as numpy; scales and biases as float32 values exact in `dtype`."""
        return mlx_layout.pack(self.codes, self.bits), self.scales.copy(), self.biases.copy()

    def to_mlx(self):
        """The three arrays mx.quantize(w, group_size, bits) returns, as MLX arrays of the input dtype."""
        mlx_layout.require_matrix(self.shape)
        mx = mlx_layout.mlx_core()
        packed, scales, biases = self.mlx_layout()
        return mx.array(packed), mlx_layout.to_mx(scales, self.dtype), mlx_layout.to_mx(biases, self.dtype)


def quantize(w: ArrayLike, bits: int = 4, group_size: int = 64) -> AffineTensor:
    """Quantize [..., group_size*k] weights exactly as MLX 0.32.4's affine mode does on the CPU."""
    check_bits_and_group(bits, group_size)
    weights, dtype = float_input(w, group_size)
    groups = weights.reshape(-1, group_size)  # float32, one group per row
    n_levels = np.float32(2**bits - 1)
    # MLX's reduction keeps the first of equal extremes, which decides the sign of a zero bias.
    w_min = np.take_along_axis(groups, groups.argmin(axis=-1)[:, None], axis=-1)[:, 0]
    w_max = np.take_along_axis(groups, groups.argmax(axis=-1)[:, None], axis=-1)[:, 0]
    if bits == 1:
        # MLX 0.32.4's one-bit path keeps the docstring's min/max form.
        scale = np.maximum(w_max - w_min, SCALE_FLOOR).astype(np.float32)
        bias = w_min
    else:
        scale, bias = _edge_snapped_scale_and_bias(w_min, w_max, n_levels)
    codes = _codes(groups, scale, bias, n_levels)
    group_shape = weights.shape[:-1] + (weights.shape[-1] // group_size,)
    scale, bias = scale.reshape(group_shape), bias.reshape(group_shape)
    return AffineTensor(
        codes=codes.reshape(weights.shape),
        scales=round_to(scale, dtype),
        biases=round_to(bias, dtype),
        bits=bits,
        group_size=group_size,
        dtype=dtype,
    )


def from_mlx(
    packed: ArrayLike, scales: ArrayLike, biases: ArrayLike, bits: int = 4, group_size: int = 64
) -> AffineTensor:
    check_bits_and_group(bits, group_size)
    dtype = "float32"
    if not isinstance(scales, np.ndarray):
        dtype = str(scales.dtype).rsplit(".", 1)[-1]
        packed, scales, biases = (mlx_layout.to_numpy(a) for a in (packed, scales, biases))
    codes = mlx_layout.unpack(np.asarray(packed, dtype=np.uint32), bits)
    return AffineTensor(codes=codes, scales=scales, biases=biases, bits=bits, group_size=group_size, dtype=dtype)


#: weights coded per pass: the float32 scratch array (1 MiB) then stays in the CPU's cache
_CODE_CHUNK_WEIGHTS = 1 << 18


def _codes(groups, scale, bias, n_levels) -> np.ndarray:
    """uint8 codes clip(rint((w - bias) / scale), 0, n) for groups [n_groups, group_size].

    Worked a slice of groups at a time in one small float32 scratch array, in place, rather
    than as four passes that each write a full-size temporary to memory.
    """
    codes = np.empty(groups.shape, dtype=np.uint8)
    groups_per_pass = max(1, _CODE_CHUNK_WEIGHTS // groups.shape[-1])
    scratch = np.empty((groups_per_pass, groups.shape[-1]), dtype=np.float32)
    # A constant group beyond about 3.4e31 snaps its scale to -0 (see _edge_snapped_scale_and_bias):
    # its weights all equal the bias, and 0 / -0 is NaN. fmax and fmin, unlike clip, turn that NaN
    # into code 0, which is what MLX stores; the group still decodes to its bias exactly. A group
    # whose range overflows float32 has an infinite scale, and w - bias can overflow too: MLX
    # computes the same infinities, and the codes come out as MLX's do.
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        for start in range(0, groups.shape[0], groups_per_pass):
            rows = slice(start, start + groups_per_pass)
            work = scratch[: groups[rows].shape[0]]
            np.subtract(groups[rows], bias[rows, None], out=work)
            work /= scale[rows, None]
            np.rint(work, out=work)  # half to even
            np.fmax(work, 0, out=work)
            np.fmin(work, n_levels, out=work)
            codes[rows] = work
    return codes


def _edge_snapped_scale_and_bias(w_min, w_max, n_levels):
    """The scale and bias MLX picks so that the larger-magnitude edge of the group is a code exactly.

    Two overflows are left to float32 as MLX leaves them: a range max - min beyond float32 gives an
    infinite scale (which decodes to NaN, as in MLX), and a constant group beyond about 3.4e31 divided by the
    floor scale 1e-7 gives an infinite edge code, so the scale snaps to -0 and the bias carries it.
    """
    with np.errstate(over="ignore"):
        scale = np.maximum((w_max - w_min) / n_levels, SCALE_FLOOR)
    min_is_edge = np.abs(w_min) > np.abs(w_max)
    scale = np.where(min_is_edge, scale, -scale).astype(np.float32)
    edge = np.where(min_is_edge, w_min, w_max).astype(np.float32)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        edge_code = np.rint(edge / scale).astype(np.float32)
        snapped_scale = (edge / edge_code).astype(np.float32)
    scale = np.where(edge_code != 0, snapped_scale, scale).astype(np.float32)
    bias = np.where(edge_code != 0, edge, np.float32(0)).astype(np.float32)
    return scale, bias


#: the (bits, group size) pairs the course and the studies use, each a registry entry
#: "affine{bits}_g{group}": 4 and 8 bits at every group size, 2 and 3 bits at MLX's default 64
REGISTERED = ((2, 64), (3, 64), (4, 32), (4, 64), (4, 128), (8, 32), (8, 64), (8, 128))

FORMATS = tuple(register(format_record(bits, group_size)) for bits, group_size in REGISTERED)
