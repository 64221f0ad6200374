"""One battery over the format registry: every format through the same calls, against its oracles.

In the style of ml_dtypes' tests: one parametrized set of properties for every registered format,
with each format's quirks as rows of data (`STEP`: the largest error a weight may have, in units
the format stores). Oracles: MLX's own mx.quantize/mx.dequantize for every format MLX has, and
gguf-py's quants for every format GGUF has. A toy format registered here shows up in the apps
(real weights, the bench) with no edit to them.
"""

from __future__ import annotations

import dataclasses

import gguf
import numpy as np
import pytest

from lab.errors import LabError, ShapeError
from lab.formats import (
    FORMATS,
    QuantizedTensor,
    UnknownFormatError,
    affine,
    get,
    mxfp4,
    nf4,
    q4_0,
    register,
    unregister,
)
from lab.formats._ggml import HalvesTensor
from lab.formats._tensor import BLOCKS, Part, block_field, element_block, gguf_block, stored
from lab.formats.registry import GGUFTensor, MLXTensor
from lab.study import real_weights

EXPECTED = [
    "mxfp4",
    "mxfp8",
    "nvfp4",
    "affine2_g64",
    "affine3_g64",
    "affine4_g32",
    "affine4_g64",
    "affine4_g128",
    "affine8_g32",
    "affine8_g64",
    "affine8_g128",
    "q4k",
    "q8_0",
    "q4_0",
    "q4_1",
    "q6_k",
    "iq4_nl",
    "iq4_xs",
    "nf4",
    "q5_0",
    "q5_1",
    "q5_k",
    "q3_k",
    "q2_k",
    "tq1_0",
    "tq2_0",
]

#: float16's rounding of a scale: at most 2^-11 of the stored value (normal float16)
FP16 = 2.0**-11
#: half the widest gap of IQ4's codebook (89 to 113), in scales
IQ4_HALF_GAP = 12


def _per_weight(per_group: np.ndarray, group: int) -> np.ndarray:
    return np.repeat(per_group.astype(np.float64), group, axis=-1)


#: the largest error a weight may have under each format's default settings, per weight
STEP = {
    # ceil scale rule: no clipping, and E2M1's widest gap (4 to 6) is 2 scales, so half of it
    "mxfp4": lambda t: _per_weight(t.scales, 32),
    # E4M3's widest gap below 448 is 32 (416 to 448): half of it, in scales
    "mxfp8": lambda t: 16 * _per_weight(t.scales, 32),
    # E2M1's widest gap is 2 block scales; the E4M3 scale rounds to nearest, so a clipped weight
    # misses by at most amax - 6 * scale, which is smaller than one scale
    "nvfp4": lambda t: _per_weight(t.block_scales, 16) * t.tensor_factor,
    # MLX's property: the error of every weight is at most its group's |scale|
    **{name: (lambda t: _per_weight(np.abs(t.scales), t.group_size)) for name in EXPECTED if name.startswith("affine")},
    # half a subblock's gain d * s, for the weights its 16 codes reach (see REACH)
    "q4k": lambda t: 0.5 * _gains_and_offsets(t)[0],
    # half a step, plus float16's rounding of d (2^-11 relative) over 127 steps
    "q8_0": lambda t: _per_weight(t.d.astype(np.float64), 32) * (0.5 + 127 * 2.0**-11),
    # half a step, or a whole one for code 15 (+7): the far side of the block reaches +8 steps and
    # is clamped; plus float16's rounding of d over at most 8 steps and of the step itself
    "q4_0": lambda t: _per_weight(np.abs(t.d), 32).reshape(t.shape) * (np.where(t.codes == 15, 1.0, 0.5) + 9 * FP16),
    # half a step, float16's rounding of d over 15 steps and of the step, and of the minimum m
    "q4_1": lambda t: _per_weight(t.d, 32) * (0.5 + 16 * FP16) + _per_weight(np.abs(t.m), 32) * FP16,
    # half a subblock's stored gain d * s_j: the codes aim at that very gain (see REACH)
    "q6_k": lambda t: 0.5 * np.abs(_per_weight(t.gains(), 16)).reshape(t.shape),
    # half the codebook's widest gap in gains, which the codes aim at in float32 before d is
    # rounded to float16: 12 float32 gains plus 127 times float16's rounding (see REACH)
    "iq4_nl": lambda t: _per_weight(np.abs(t.d), 32) * (IQ4_HALF_GAP + 140 * FP16),
    "iq4_xs": lambda t: np.abs(_per_weight(t.gains(), 32)).reshape(t.shape) * (IQ4_HALF_GAP + 140 * FP16),
    # half NF4's widest gap between adjacent levels (0.7230 to 1), in absmax; nothing is clipped
    "nf4": lambda t: _per_weight(t.absmax, 64) * (np.diff(nf4.LEVELS.astype(np.float64)).max() / 2),
    # as Q4_0 and Q4_1 with 32 codes: the far side of Q5_0's block reaches +16 steps and code 31
    # (+15) is clamped, and float16's rounding of d spans 16 steps (31 for Q5_1), plus the step's own
    "q5_0": lambda t: _per_weight(np.abs(t.d), 32).reshape(t.shape) * (np.where(t.codes == 31, 1.0, 0.5) + 17 * FP16),
    "q5_1": lambda t: _per_weight(t.d, 32) * (0.5 + 32 * FP16) + _per_weight(np.abs(t.m), 32) * FP16,
    # half a subblock's gain d * s_j, as Q4_K, for the weights its 32 codes reach (see REACH)
    "q5_k": lambda t: 0.5 * _per_weight(t.gains_and_offsets()[0], 32).reshape(t.shape),
    # half a subblock's stored gain, which the codes aim at, as Q6_K and Q4_K (see REACH)
    "q3_k": lambda t: 0.5 * np.abs(_per_weight(t.gains(), 16)).reshape(t.shape),
    "q2_k": lambda t: 0.5 * _per_weight(t.gains_and_offsets()[0], 16).reshape(t.shape),
    # d is the block's largest magnitude, so nothing is clipped: half of d, plus float16's rounding of d
    "tq1_0": lambda t: _per_weight(t.d, 256) * (0.5 + 2 * FP16),
    "tq2_0": lambda t: _per_weight(t.d, 256) * (0.5 + 2 * FP16),
}


def _gains_and_offsets(t) -> tuple[np.ndarray, np.ndarray]:
    """Q4_K's per-weight gain d * s and offset dmin * m, from the decoded fields."""
    d, dmin = t.d[..., None].astype(np.float64), t.dmin[..., None].astype(np.float64)
    gain = _per_weight(d * t.subblock_scales, 32).reshape(t.shape)
    offset = _per_weight(dmin * t.subblock_mins, 32).reshape(t.shape)
    return gain, offset


def _within(w: np.ndarray, gain: np.ndarray, low: float, high: float) -> np.ndarray:
    """Whether each weight lies between gain * low and gain * high, for gains of either sign."""
    ends = np.stack([gain * low, gain * high])
    return (w >= ends.min(axis=0)) & (w <= ends.max(axis=0))


#: formats whose fitted range may leave a weight out of reach, and which weights it reaches: Q4_K
#: fits gain and offset to minimise the weighted error of the subblock, and may clip an outlier;
#: Q6_K and IQ4 fit a scale by weighted least squares (which may pull it inside the largest
#: weight), and store subblock scales relative to the largest, so a small subblock's gain can
#: round to less than it needs, or to zero
#: the share of weights inside their subblock's range, where it is below 0.9: Q3_K's 6-bit signed and
#: Q2_K's 4-bit subblock scales are relative to the loudest subblock, so on asymmetric weights 8 %
#: (Q3_K) and 30 % (Q2_K) of subblocks store a gain of 0 (measured 0.82 and 0.60; 0.99 on decoded input)
REACHED_SHARE = {"q3_k": 0.8, "q2_k": 0.55}
REACH = {
    "q4k": lambda t, w: (
        (w >= -_gains_and_offsets(t)[1]) & (w <= 15 * _gains_and_offsets(t)[0] - _gains_and_offsets(t)[1])
    ),
    "q6_k": lambda t, w: _within(w, _per_weight(t.gains(), 16).reshape(t.shape), -32, 31),
    "iq4_nl": lambda t, w: _within(w, _per_weight(t.d, 32), -127, 113),
    "iq4_xs": lambda t, w: _within(w, _per_weight(t.gains(), 32).reshape(t.shape), -127, 113),
    "q5_k": lambda t, w: (
        (w >= -_per_weight(t.gains_and_offsets()[1], 32).reshape(t.shape))
        & (w <= _per_weight(31 * t.gains_and_offsets()[0] - t.gains_and_offsets()[1], 32).reshape(t.shape))
    ),
    "q3_k": lambda t, w: _within(w, _per_weight(t.gains(), 16).reshape(t.shape), -4, 3),
    "q2_k": lambda t, w: (
        (w >= -_per_weight(t.gains_and_offsets()[1], 16).reshape(t.shape))
        & (w <= _per_weight(3 * t.gains_and_offsets()[0] - t.gains_and_offsets()[1], 16).reshape(t.shape))
    ),
}

#: formats where quantizing the decoded weights again gives them back exactly. MLX affine recomputes
#: its scale from the decoded extremes, which rounds differently in float32; Q4_K, Q6_K and IQ4 refit
#: their scales. Q4_1 and Q5_1 recompute d from decoded extremes too, but float16 d absorbs the float32
#: rounding unless the block's minimum is tens of thousands of steps from zero
IDEMPOTENT = {"mxfp4", "mxfp8", "nvfp4", "q8_0", "q4_0", "q4_1", "nf4", "q5_0", "q5_1", "tq1_0", "tq2_0"}


def asymmetric_weights(fmt, rows: int = 3, blocks: int = 4, seed: int = 5) -> np.ndarray:
    """Rows of whole blocks whose groups differ in spread, offset and sign, with an outlier each."""
    rng = np.random.default_rng(seed)
    k = blocks * max(fmt.block_size, 256)
    spread = np.exp(rng.uniform(-4, 2, (rows, k // 16)))
    offset = rng.normal(0, 0.5, (rows, k // 16))
    w = rng.normal(0, 1, (rows, k)) * np.repeat(spread, 16, axis=-1) + np.repeat(offset, 16, axis=-1)
    w[np.arange(rows), rng.integers(0, k, rows)] *= 9
    return w.astype(np.float32)


@pytest.fixture(params=EXPECTED)
def fmt(request):
    return FORMATS[request.param]


def test_the_registry_lists_every_block_format_in_course_order():
    assert list(FORMATS) == EXPECTED
    assert get("q4k").gguf_type == "Q4_K"
    with pytest.raises(UnknownFormatError, match="unknown format 'q5_9'; the registry has mxfp4, mxfp8"):
        get("q5_9")
    with pytest.raises(LabError, match="registered already"):
        register(FORMATS["mxfp4"])


def test_each_format_quantizes_through_the_same_calls(fmt):
    w = asymmetric_weights(fmt)
    tensor = fmt.quantize(w)
    assert isinstance(tensor, QuantizedTensor)
    assert tuple(tensor.shape) == w.shape
    decoded = tensor.dequantize()
    assert decoded.dtype == np.float32 and decoded.shape == w.shape and np.isfinite(decoded).all()
    assert isinstance(tensor.explain(0), dict)
    assert isinstance(tensor, MLXTensor) == (fmt.mlx is not None)
    assert np.array_equal(fmt.round_trip(w), decoded)


@pytest.mark.parametrize("decoded_first", [False, True], ids=["weights", "decoded weights"])
def test_every_weight_lands_within_its_group_step(fmt, decoded_first):
    w = asymmetric_weights(fmt)
    if decoded_first:  # the property holds for any input, its own decoded weights included
        w = fmt.round_trip(w)
    tensor = fmt.quantize(w)
    error = np.abs(tensor.dequantize().astype(np.float64) - w)
    allowed = STEP[fmt.name](tensor)
    assert allowed.shape == w.shape
    if fmt.name in REACH:
        reached = REACH[fmt.name](tensor, w)
        assert reached.mean() > REACHED_SHARE.get(fmt.name, 0.9)  # outliers, and subblocks whose range the fit narrowed
        error, allowed = error[reached], allowed[reached]
    assert (error <= allowed * (1 + 2.0**-20)).all(), float((error - allowed).max())


@pytest.mark.parametrize("name", sorted(IDEMPOTENT))
def test_exact_values_round_trip(name):
    fmt = FORMATS[name]
    once = fmt.round_trip(asymmetric_weights(fmt))
    assert np.array_equal(fmt.round_trip(once), once)


def test_zeros_stay_zero(fmt):
    w = np.zeros((2, max(fmt.block_size, 256)), np.float32)
    assert np.array_equal(fmt.round_trip(w), w)


def test_bits_per_weight_of_a_half_precision_tensor_is_the_registered_one(fmt):
    # float16 input: MLX's affine scale and bias are 16-bit, as the registry assumes
    tensor = fmt.quantize(asymmetric_weights(fmt).astype(np.float16))
    assert tensor.bits_per_weight == pytest.approx(fmt.bits_per_weight)


def test_each_format_is_one_row_of_the_block_table(fmt):
    # the registry's record and the tensor read the same block; float16 input, so that MLX
    # affine's scale and bias are the 16 bits its records count
    w = asymmetric_weights(fmt)
    tensor = fmt.quantize(w.astype(np.float16))
    block = tensor.block
    assert (fmt.title, fmt.block_size, fmt.bits_per_weight) == (block.title, block.weights, block.bits_per_weight)
    assert (tensor.title, tensor.block_size, tensor.bits_per_weight) == (fmt.title, fmt.block_size, fmt.bits_per_weight)
    if fmt.mlx is not None and fmt.mlx.mode == "affine":
        assert fmt.bits_per_weight == affine.bits_per_weight(fmt.mlx.bits, fmt.mlx.group_size)
    else:
        assert BLOCKS[fmt.title] is block
    assert (fmt.gguf_type is None) == (block.gguf is None) == (fmt.from_gguf is None)
    if fmt.gguf_type is None:
        return
    # GGUF's block is gguf-py's, and costs what the record says
    weights, n_bytes = gguf.constants.GGML_QUANT_SIZES[gguf.GGMLQuantizationType[fmt.gguf_type]]
    assert (block.gguf.weights, block.gguf.bytes) == (weights, n_bytes)
    assert 8 * n_bytes / weights == fmt.bits_per_weight
    raw = fmt.to_gguf(w)
    assert raw.dtype == np.uint8 and raw.shape == (*w.shape[:-1], w.shape[-1] // weights * n_bytes)
    assert np.array_equal(fmt.from_gguf(raw).to_gguf(), raw)
    assert np.array_equal(fmt.from_gguf(raw).dequantize(), fmt.quantize(w, **_gguf_options(fmt)).dequantize())


def _gguf_options(fmt) -> dict:
    return {} if fmt.gguf_preset is None else {"rule": fmt.gguf_preset}


def test_a_block_or_a_layout_that_disagrees_with_the_table_is_refused():
    with pytest.raises(LabError, match="GGUF's 35 bytes per 64 weights are not 72 bits per 16"):
        element_block("NVFP4", 16, element_bits=4, scale_bits=8, gguf=(64, 35))
    # a block is declared once: a second declaration of a title with other sizes would shadow it
    with pytest.raises(LabError, match="a block titled Q4_0 is declared already"):
        gguf_block("Q4_0", 32, 20)
    assert BLOCKS["Q4_0"] is q4_0.BLOCK and gguf_block("Q4_0", 32, 18) is q4_0.BLOCK
    with pytest.raises(LabError, match="GGUF parts are 17 bytes, but a Q4_0 block is 18"):

        class ShortQ4_0(HalvesTensor, block=q4_0.BLOCK):
            codes: np.ndarray = block_field(
                dtype=np.uint8, gguf=stored(Part("qs", 15, "nibbles", at=2), write=np.asarray, read=np.asarray)
            )

    # parts of the right total that overlap, or leave a gap, misread every block after the first too
    with pytest.raises(LabError, match="GGUF part qs starts at byte 3, not 2"):

        class GappedQ4_0(HalvesTensor, block=q4_0.BLOCK):
            codes: np.ndarray = block_field(
                dtype=np.uint8, gguf=stored(Part("qs", 16, "nibbles", at=3), write=np.asarray, read=np.asarray)
            )


@pytest.mark.parametrize("bad_shape", [(2, 7), (5,), (3, 0)])
def test_rows_that_do_not_split_into_blocks_are_refused(fmt, bad_shape):
    with pytest.raises(ShapeError):
        fmt.quantize(np.ones(bad_shape, np.float32))
    assert fmt.skip_reason(fmt.block_size + 1) is not None and fmt.skip_reason(4 * fmt.block_size) is None


@pytest.mark.parametrize("name", [name for name in EXPECTED if FORMATS[name].mlx is not None])
def test_mlx_gives_the_same_bytes_and_values(name, mx):
    fmt = FORMATS[name]
    w = asymmetric_weights(fmt)
    tensor = fmt.quantize(w)
    theirs = [np.asarray(part) for part in mx.quantize(mx.array(w), **fmt.mlx.parameters())]
    for ours, reference in zip(tensor.mlx_layout(), theirs, strict=True):
        assert np.array_equal(ours.view(np.uint8), reference.view(np.uint8))
    parts = mx.quantize(mx.array(w), **fmt.mlx.parameters())
    decoded = np.asarray(mx.dequantize(*parts, **fmt.mlx.parameters(), dtype=mx.float32))
    # MLX's affine dequantize rounds scale * q before adding the bias; the lab rounds once (README)
    ulps = 0 if fmt.mlx.mode != "affine" else 1
    assert np.allclose(tensor.dequantize(), decoded, rtol=ulps * 2.0**-23, atol=ulps * np.abs(w).max() * 2.0**-23)


@pytest.mark.parametrize("name", [name for name in EXPECTED if FORMATS[name].gguf_type is not None])
def test_gguf_py_reads_the_bytes_as_the_lab_does(name):
    fmt = FORMATS[name]
    w = asymmetric_weights(fmt)
    tensor = fmt.quantize(w)
    assert isinstance(tensor, GGUFTensor)
    raw = fmt.to_gguf(w)
    reference = gguf.quants.dequantize(raw, gguf.GGMLQuantizationType[fmt.gguf_type])
    ours = fmt.decode_gguf(raw, decoder="ggml")
    assert np.array_equal(ours.view(np.uint32), reference.astype(np.float32).view(np.uint32))
    assert np.array_equal(fmt.from_gguf(raw).dequantize(), fmt.decode_gguf(raw, decoder="ocp"))
    with pytest.raises(LabError, match="unknown decoder 'fast'"):
        fmt.decode_gguf(raw, decoder="fast")


def test_q8_0_writes_the_bytes_gguf_py_writes():
    w = asymmetric_weights(FORMATS["q8_0"], rows=8, blocks=16)
    # planted ties: weights at exactly half a step, where roundf and round-half-even differ
    d = np.abs(w[:, :32]).max(axis=-1, keepdims=True) / np.float32(127)
    w[:, 1:6] = d * np.array([0.5, 1.5, 2.5, -0.5, -2.5], np.float32)
    w[7, 32:64] = 0.0
    reference = gguf.quants.quantize(w, gguf.GGMLQuantizationType.Q8_0)
    assert np.array_equal(FORMATS["q8_0"].to_gguf(w), reference)


def _bits(array: np.ndarray) -> np.ndarray:
    return np.asarray(array, np.float32).view(np.uint32)


@dataclasses.dataclass(frozen=True)
class RandomBlocks:
    """Random GGUF blocks for the decoder's bit-for-bit check, and what their bytes must hold.

    seed          the generator's seed
    low_exponent  each float16 part is a finite float16 of either sign, N(0, 1) times 2^e for e
                  from low_exponent to 7: many binades, subnormals included
    codes         random bytes hold every code 0..codes - 1
    scales        and every subblock scale in this range (and minimum, with `mins`), where checked
    non_finite    a share of the blocks has a float16 part of +inf, -inf or NaN instead
    """

    seed: int
    low_exponent: int
    codes: int
    scales: tuple[int, int] | None = None
    mins: bool = False
    non_finite: bool = False


#: the formats whose every byte pattern gguf-py decodes with the lab's one reading; MXFP4 and NVFP4
#: (two readings: test_gguf_layouts), Q8_0 (test_q8_0_decode), Q4_K (test_q4k) and Q5_K
#: (test_formats_q5_k) have their own random-block checks
RANDOM_BLOCKS = {
    "q4_0": RandomBlocks(31, -20, 16),
    "q4_1": RandomBlocks(31, -20, 16),
    "iq4_nl": RandomBlocks(31, -20, 16),
    "iq4_xs": RandomBlocks(31, -20, 16),
    "q6_k": RandomBlocks(31, -20, 64),
    "q5_0": RandomBlocks(32, -24, 32),
    "q5_1": RandomBlocks(32, -24, 32),
    "q3_k": RandomBlocks(41, -20, 8, scales=(-32, 32)),
    "q2_k": RandomBlocks(41, -20, 4, scales=(0, 16), mins=True),
    # TQ1_0's base-3 bytes read as trits 0..2 whatever they hold; TQ2_0's code 3 reads as +2
    "tq1_0": RandomBlocks(43, -24, 3, non_finite=True),
    "tq2_0": RandomBlocks(43, -24, 4, non_finite=True),
}


@pytest.mark.parametrize("name", list(RANDOM_BLOCKS))
def test_the_decoder_is_gguf_py_bit_for_bit_on_random_blocks(name):
    fmt, row = FORMATS[name], RANDOM_BLOCKS[name]
    rng = np.random.default_rng(row.seed)
    n_blocks = 10_240
    raw = rng.integers(0, 256, (n_blocks, fmt.tensor.block.gguf.bytes), dtype=np.uint8)  # every code, every bit
    halves = (rng.normal(0, 1, (n_blocks, 2)) * np.exp2(rng.integers(row.low_exponent, 8, (n_blocks, 2)))).astype(
        np.float16
    )
    if row.non_finite:
        picked = rng.integers(0, n_blocks, n_blocks // 64)
        halves[picked] = rng.choice(np.array([np.inf, -np.inf, np.nan], np.float16), (len(picked), 2))
    # the float16 parts (d, and m or dmin) where the format's layout puts them
    for column, part in enumerate(part for part in fmt.tensor.gguf_layout if part.half):
        raw[:, part.at : part.at + 2] = halves[:, column : column + 1].view(np.uint8)
    tensor = fmt.from_gguf(raw)
    assert np.array_equal(np.unique(tensor.codes), np.arange(row.codes))
    if row.scales is not None:
        assert np.array_equal(np.unique(tensor.scales), np.arange(*row.scales))
    if row.mins:
        assert np.array_equal(np.unique(tensor.mins), np.arange(*row.scales))
    with np.errstate(invalid="ignore"):  # gguf-py's inf d times a zero code is NaN, as the lab's
        theirs = gguf.quants.dequantize(raw, gguf.GGMLQuantizationType[fmt.gguf_type])
    assert np.array_equal(_bits(tensor.dequantize()), _bits(theirs))
    assert np.array_equal(tensor.to_gguf(), raw)  # the layout reads and writes back byte for byte


@dataclasses.dataclass(frozen=True)
class PlantedTies:
    """Weights for a quantizer gguf-py's quants.quantize has: rows of N(0, 1) at varied scales and
    offsets, with ties planted exactly half a step from a code boundary, where truncation after
    + offset + 0.5 (or + 0.5) and round-half-even differ; and a constant block and a zero block.

    seed        the generator's seed
    offset      the symmetric format's code offset (Q4_0's 8): its d is the signed max / -offset
    symmetric   multiples of that d planted from weight 1 of the first block
    span        the asymmetric format's largest code (Q4_1's 15): its step is (max - min) / span
    asymmetric  multiples of that step above the minimum, planted from weight 65 of the third block
    block       the weights that share the symmetric format's d (the ternary types': 256); the
                constant block and the zero block are the fifth and sixth such blocks
    exact_max   the first block's largest magnitude raised to a power of two, so that 1/d is exact
                and a planted half of d is an exact tie of w * (1/d) (the ternary types, whose
                offset -1 makes d the largest weight itself)
    """

    seed: int
    offset: int
    symmetric: tuple[float, ...]
    span: int
    asymmetric: tuple[float, ...]
    block: int = 32
    exact_max: bool = False

    def weights(self) -> np.ndarray:
        rng = np.random.default_rng(self.seed)
        width = max(512, 6 * self.block)
        w = rng.normal(0, 1, (8, width)) * np.exp(rng.uniform(-4, 2, (8, 1))) + rng.normal(0, 0.5, (8, 1))
        w = w.astype(np.float32)
        largest = np.abs(w[:, : self.block]).argmax(axis=-1)
        if self.exact_max:
            picked = w[np.arange(8), largest]
            w[np.arange(8), largest] = np.sign(picked) * np.exp2(np.ceil(np.log2(np.abs(picked))))
        signed_max = w[np.arange(8), largest][:, None]
        d0 = signed_max / np.float32(-self.offset)
        w[:, 1 : 1 + len(self.symmetric)] = d0 * np.array(self.symmetric, np.float32)
        low, high = w[:, 64:96].min(axis=-1, keepdims=True), w[:, 64:96].max(axis=-1, keepdims=True)
        step = (high - low) / np.float32(self.span)
        w[:, 65 : 65 + len(self.asymmetric)] = low + step * np.array(self.asymmetric, np.float32)
        w[6, 4 * self.block : 5 * self.block] = 0.25
        w[7, 5 * self.block : 6 * self.block] = 0.0
        return w


FOUR_BIT_TIES = PlantedTies(7, 8, (-7.5, -0.5, 0.5, 2.5, 6.5), 15, (0.5, 3.5, 7.5, 14.5))
FIVE_BIT_TIES = PlantedTies(8, 16, (-15.5, -0.5, 0.5, 2.5, 14.5, 15.5), 31, (0.5, 3.5, 15.5, 16.5, 30.5))
TERNARY_TIES = PlantedTies(9, -1, (-0.5, 0.5, -0.25, 0.75, -1.0, 0.0), 1, (), block=256, exact_max=True)
#: the formats whose quantizer gguf-py has, with the weights that test it; Q8_0's and MXFP4's own
#: ties are test_q8_0_writes_the_bytes_gguf_py_writes and test_gguf_layouts'
GGUF_PY_QUANTIZES = {
    "q4_0": FOUR_BIT_TIES,
    "q4_1": FOUR_BIT_TIES,
    "q5_0": FIVE_BIT_TIES,
    "q5_1": FIVE_BIT_TIES,
    "tq1_0": TERNARY_TIES,
    "tq2_0": TERNARY_TIES,
}


@pytest.mark.parametrize("name", list(GGUF_PY_QUANTIZES))
def test_the_quantizer_writes_the_bytes_gguf_py_writes(name):
    fmt, w = FORMATS[name], GGUF_PY_QUANTIZES[name].weights()
    assert np.array_equal(fmt.to_gguf(w), gguf.quants.quantize(w, gguf.GGMLQuantizationType[fmt.gguf_type])), name


@pytest.fixture
def toy_format():
    """MXFP4 under another name: a format the apps have never heard of."""
    toy = register(dataclasses.replace(mxfp4.FORMAT, name="toy_mxfp4", title="Toy MXFP4"))
    yield toy
    unregister(toy.name)


def test_a_toy_format_joins_the_real_weights_study_without_an_edit(toy_format):
    rows = real_weights.study_rows()
    assert {"Toy MXFP4 (mlx)", "Toy MXFP4 (ggml)", "Toy MXFP4 (ocp)"} <= set(rows)
    w = asymmetric_weights(toy_format)
    report = real_weights.evaluate_model({"w": w}, formats=["Toy MXFP4 (ocp)", "MXFP4 (ocp)"])
    assert report.summaries["Toy MXFP4 (ocp)"].relative_rmse == report.summaries["MXFP4 (ocp)"].relative_rmse > 0


def test_a_toy_format_joins_the_bench_without_an_edit(toy_format):
    from bench.run import format_rows

    tasks = {row.task for row in format_rows(asymmetric_weights(toy_format, rows=2, blocks=1), repeat=1)}
    assert {"Toy MXFP4 quantize", "Toy MXFP4 decode"} <= tasks
