"""NF4: the published levels, how they are derived, midpoint rounding, bitsandbytes' packing, double quantization."""

from __future__ import annotations

from statistics import NormalDist

import numpy as np
import pytest

from lab.formats import FORMATS, nf4


def test_nf4_is_registered_without_gguf_or_mlx():
    fmt = FORMATS["nf4"]
    assert (fmt.block_size, fmt.bits_per_weight, fmt.gguf_type, fmt.mlx) == (64, 4.5, None, None)


def test_the_levels_are_normal_quantiles_normalised_to_plus_minus_one():
    ppf, offset = NormalDist().inv_cdf, nf4.QUANTILE_OFFSET
    positive = [ppf(offset - (offset - 0.5) * i / 8) for i in range(8)]
    negative = [-ppf(offset - (offset - 0.5) * i / 7) for i in range(7)]
    derived = np.sort(np.array(positive + negative + [0.0]))
    derived /= derived.max()
    # bitsandbytes worked them in float32: within one float32 step of the float64 derivation
    assert np.allclose(nf4.LEVELS, derived, rtol=0, atol=2.0**-22)
    assert nf4.LEVELS[0] == -1 and nf4.LEVELS[nf4.ZERO_CODE] == 0 and nf4.LEVELS[-1] == 1


def test_nf4_decodes_its_sixteen_levels_exactly():
    absmax = np.array([1.0, 0.37, 2.5e-3, 812.0], np.float32)
    codes = np.tile(np.arange(16, dtype=np.uint8), (4, 4))  # every level in every block
    tensor = nf4.NF4Tensor(codes=codes, absmax=absmax[:, None])
    expected = nf4.LEVELS[codes] * absmax[:, None]
    assert np.array_equal(tensor.dequantize().view(np.uint32), expected.astype(np.float32).view(np.uint32))
    published = np.array([float(v) for v in nf4.LEVELS], np.float64)
    assert np.array_equal(tensor.dequantize()[0, :16], published.astype(np.float32))


def test_a_weight_on_a_midpoint_takes_the_lower_level_and_one_above_it_the_upper():
    w = np.zeros((3, 64), np.float32)
    w[:, 0] = 1.0  # absmax 1: the weights are their own normalised values
    w[0, 1:16] = nf4.MIDPOINTS
    w[1, 1:16] = np.nextafter(nf4.MIDPOINTS, np.float32(2))
    w[2, 1:17] = nf4.LEVELS
    codes = nf4.quantize(w).codes
    assert codes[0, 1:16].tolist() == list(range(15))
    assert codes[1, 1:16].tolist() == list(range(1, 16))
    assert codes[2, 1:17].tolist() == list(range(16))


def test_codes_pack_first_weight_high_as_bitsandbytes():
    tensor = nf4.quantize(np.linspace(-1, 1, 64, dtype=np.float32)[None])
    packed = tensor.packed()
    assert packed.shape == (1, 32)
    assert (packed >> 4).tolist() == tensor.codes[:, 0::2].tolist()
    assert (packed & 15).tolist() == tensor.codes[:, 1::2].tolist()
    info = tensor.explain(1)
    assert (info["byte"], info["nibble"]) == (0, "low")


def test_double_quantization_stores_the_absmax_in_eight_bits():
    w = np.random.default_rng(4).normal(0, 1, (64, 4096)).astype(np.float32)
    plain, double = nf4.quantize(w), nf4.quantize(w, double_quant=True)
    assert plain.bits_per_weight == 4.5 and not plain.double_quantized
    n_absmax = w.size // 64
    assert double.bits_per_weight == 4 + (8 * n_absmax + 32 * (n_absmax // 256) + 32) / w.size
    assert double.bits_per_weight == pytest.approx(4.127, abs=1e-3)
    assert np.array_equal(double.codes, plain.codes)  # the codes are worked against the exact absmax
    scales = np.repeat(double.absmax_scales, 256)[:n_absmax].reshape(double.absmax.shape)
    rebuilt = double.absmax_codes.astype(np.float32) * scales + double.absmax_offset
    assert np.array_equal(rebuilt, double.absmax)
    assert np.all(np.abs(double.absmax - plain.absmax) <= scales / 2 * (1 + 2.0**-20))
    error = {t: np.sqrt(np.mean((t.dequantize() - w) ** 2)) for t in (plain, double)}
    assert error[double] < 1.01 * error[plain]


def test_nf4_beats_evenly_spaced_levels_on_normal_weights():
    """The point of quantile levels: for N(0, 1) weights they beat 16 evenly spaced levels on the same absmax."""
    w = np.random.default_rng(6).normal(0, 1, (64, 4096)).astype(np.float32)
    blocks = w.reshape(-1, 64)
    absmax = np.abs(blocks).max(axis=-1, keepdims=True)
    even = np.linspace(-1, 1, 16)
    nearest = even[np.abs(blocks[..., None] / absmax[..., None] - even).argmin(axis=-1)] * absmax

    def relative_rmse(decoded: np.ndarray) -> float:
        return float(np.sqrt(np.mean((decoded.reshape(w.shape) - w) ** 2) / np.mean(w**2)))

    # measured: NF4 0.0922, evenly spaced levels 0.1003 (and Q4_0, 32 weights per fp16 d: 0.0858)
    assert relative_rmse(FORMATS["nf4"].round_trip(w)) < relative_rmse(nearest)
