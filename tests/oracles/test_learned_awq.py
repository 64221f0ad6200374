"""lab.study.learned.awq against mlx-lm 0.32.2's own AWQ search, on two Linears the lab never saw.

tests/data/learned_reference.npz (tests/data/make_learned_reference.py) pins what mlx-lm's
search_best_scale and search_best_clip chose for them and the weights they led to; the Linears are
remade here from the script's seed and checked by digest. Output errors are ‖x (W - Q)ᵀ‖ / ‖x Wᵀ‖ on
evaluation rows drawn like the calibration rows but not them. The salient channels are the 8 input
channels 20 times larger than the rest; their share of the output error is ‖x_S (W_S - Q_S)ᵀ‖ / ‖x_S W_Sᵀ‖.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from conftest import require_mlx_lm

from lab.errors import BitsError, GroupSizeError, LabError, NonFiniteError, ShapeError
from lab.formats import affine
from lab.study.learned import awq, awq_search

DATA = Path(__file__).resolve().parent.parent / "data"
_spec = importlib.util.spec_from_file_location("make_learned_reference", DATA / "make_learned_reference.py")
reference = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(reference)
PINNED = np.load(DATA / "learned_reference.npz")
LINEARS = reference.linears()
SETTINGS = [(name, bits, group) for name in LINEARS for bits, group in reference.AWQ_SETTINGS]


@pytest.fixture(scope="module")
def runs():
    """{(name, bits, group): (the lab's AWQResult, mlx-lm's decoded weights, mlx-lm's code steps)}."""
    made = {}
    for name, bits, group in SETTINGS:
        weight, calibration, _, _ = LINEARS[name]
        ours = awq_search(weight, calibration, bits=bits, group_size=group)
        made[name, bits, group] = (ours, *reference.pinned_decode(PINNED, f"awq/{name}/{bits}_g{group}", bits, group))
    return made


def _salient_error(name, decoded):
    weight, _, evaluation, salient = LINEARS[name]
    return reference.relative_output_error(weight[:, salient], decoded[:, salient], evaluation[:, salient])


def _rtn(name, bits, group):
    return affine.quantize(LINEARS[name][0], bits=bits, group_size=group).dequantize()


def test_the_linears_are_the_ones_mlx_lm_quantized():
    for name, (weight, calibration, evaluation, _) in LINEARS.items():
        assert reference.digest(weight, calibration, evaluation) == str(PINNED[f"{name}/sha256"]), name


@pytest.mark.parametrize(("name", "bits", "group"), SETTINGS, ids=lambda v: str(v))
def test_awq_chooses_mlx_lms_ratio_and_scales(runs, name, bits, group):
    ours, _, _ = runs[name, bits, group]
    key = f"awq/{name}/{bits}_g{group}"
    assert ours.ratio == float(PINNED[f"{key}/ratio"])
    np.testing.assert_allclose(ours.scales, PINNED[f"{key}/scales"], rtol=1e-6)
    assert ours.fell_back is bool(PINNED[f"{key}/fell_back"]) is False


@pytest.mark.parametrize(("name", "bits", "group"), SETTINGS, ids=lambda v: str(v))
def test_awq_decodes_as_mlx_lm_does_on_most_weights_and_on_the_output_error(runs, name, bits, group):
    """A weight agrees when it decodes to within a twentieth of a code step of mlx-lm's. The lab's
    scales can differ from MLX's in their last bit (numpy and MLX sum the mean in different orders),
    and a clipped group's edge sits exactly halfway between two codes in MLX's snapping, so that bit
    can give the group the other grid: 0.3 % of the correlated Linear's weights at 3 bits."""
    ours, theirs, step = runs[name, bits, group]
    assert (np.abs(ours.weights - theirs) <= 0.05 * step).mean() >= 0.99
    weight, _, evaluation, _ = LINEARS[name]
    assert reference.relative_output_error(weight, ours.weights, evaluation) == pytest.approx(
        reference.relative_output_error(weight, theirs, evaluation), rel=0.01
    )


# (name, bits): AWQ's and round-to-nearest's error through the salient channels, then over the whole
# Linear, on the evaluation rows, measured (group 64)
MEASURED = {
    ("independent", 4): (0.0248, 0.0901, 0.0463, 0.0900),
    ("independent", 3): (0.0511, 0.1884, 0.0957, 0.1885),
    ("correlated", 4): (0.0345, 0.0913, 0.0478, 0.0927),
    ("correlated", 3): (0.0736, 0.1994, 0.0967, 0.2011),
}


@pytest.mark.parametrize(("name", "bits", "group"), SETTINGS, ids=lambda v: str(v))
def test_awq_at_most_nine_tenths_of_round_to_nearests_error_on_the_salient_channels(runs, name, bits, group):
    """Scaling the salient channels up gives them finer codes: their share of the output error falls
    to about a quarter to a third of round-to-nearest's, and the whole Linear's to about half."""
    ours, _, _ = runs[name, bits, group]
    weight, _, evaluation, _ = LINEARS[name]
    rtn = _rtn(name, bits, group)
    salient = (_salient_error(name, ours.weights), _salient_error(name, rtn))
    whole = tuple(reference.relative_output_error(weight, decoded, evaluation) for decoded in (ours.weights, rtn))
    assert (*salient, *whole) == pytest.approx(MEASURED[name, bits], abs=5e-4)
    assert salient[0] <= 0.9 * salient[1]
    assert whole[0] <= 0.9 * whole[1]


def test_awq_agrees_with_mlx_lms_search_run_here_on_a_slice():
    """The pins' check, live: mlx-lm's scale and clip searches run now, on a 32 x 128 slice of the
    independent Linear with 1024 calibration rows (the clip search then sees every other row), at 3 bits."""
    require_mlx_lm()
    weight, calibration, _, _ = LINEARS["independent"]
    weight, calibration = np.ascontiguousarray(weight[:32, :128]), np.ascontiguousarray(calibration[:1024, :128])
    pinned = {f"awq/live/{key}": value for key, value in reference.mlx_awq(weight, calibration, 3, 64).items()}
    theirs, step = reference.pinned_decode(pinned, "awq/live", 3, 64)
    ours = awq_search(weight, calibration, bits=3, group_size=64)
    assert ours.ratio == pinned["awq/live/ratio"] and ours.fell_back is bool(pinned["awq/live/fell_back"]) is False
    assert (np.abs(ours.weights - theirs) <= 0.05 * step).mean() >= 0.99


def test_the_first_ratio_is_round_to_nearest(runs):
    """Ratio 0 makes every scale 1, so the search's first error is round-to-nearest's."""
    for ours, _, _ in runs.values():
        assert ours.ratios[0] == 0 and ours.ratio_errors[0] == pytest.approx(ours.rtn_error, rel=1e-12)
        assert ours.awq_error <= ours.rtn_error


def test_awq_returns_the_decoded_float32_weights(runs):
    weight, calibration, _, _ = LINEARS["correlated"]
    decoded = awq(weight, calibration, bits=4, group_size=64)
    assert decoded.dtype == np.float32 and decoded.shape == weight.shape
    np.testing.assert_array_equal(decoded, runs["correlated", 4, 64][0].weights)


def test_awq_falls_back_to_round_to_nearest_where_its_clip_does_not_help():
    """The clip search looks at every other row of 1024; here those rows have input channel 0 at
    zero and the others have it at 30. Clipping column 0's large weights looks free on the rows the
    search sees and costs dearly on the rest, so AWQ's result is worse than round-to-nearest's on
    the calibration rows, and AWQ keeps round-to-nearest's weights."""
    rng = np.random.default_rng(1)
    weight = (rng.standard_normal((16, 64)) * 0.1).astype(np.float32)
    weight[:, 0] = rng.choice([-1.0, 1.0], 16)
    inputs = rng.standard_normal((1024, 64)).astype(np.float32)
    inputs[0::2, 0], inputs[1::2, 0] = 0, 30
    for bits in (4, 3):
        result = awq_search(weight, inputs, bits=bits, group_size=64)
        assert result.fell_back and result.awq_error > 100 * result.rtn_error
        np.testing.assert_array_equal(result.weights, affine.quantize(weight, bits=bits, group_size=64).dequantize())


SMALL_WEIGHT = np.linspace(-1, 1, 8 * 64, dtype=np.float32).reshape(8, 64)
SMALL_INPUTS = np.cos(np.arange(32 * 64, dtype=np.float32)).reshape(32, 64)


@pytest.mark.parametrize("bits", affine.SUPPORTED_BITS)
def test_awq_takes_every_width_mlx_affine_takes(bits):
    decoded = awq(SMALL_WEIGHT, SMALL_INPUTS, bits=bits, group_size=32)
    assert decoded.dtype == np.float32 and np.all(np.isfinite(decoded))


@pytest.mark.parametrize("bits", [0, 7, 16, True, 4.0])
def test_awq_refuses_a_width_mlx_affine_does_not_take(bits):
    with pytest.raises(BitsError, match=r"AWQ quantizes to 1, 2, 3, 4, 5, 6, 8 bits"):
        awq(SMALL_WEIGHT, SMALL_INPUTS, bits=bits, group_size=64)


@pytest.mark.parametrize(
    ("weight", "inputs", "group", "error", "words"),
    [
        (SMALL_WEIGHT, SMALL_INPUTS, 16, GroupSizeError, "group size 16 is not supported"),
        (SMALL_WEIGHT, SMALL_INPUTS, 128, ShapeError, "64 input columns do not split into groups of 128"),
        (SMALL_WEIGHT[None], SMALL_INPUTS, 64, ShapeError, r"weight must be a non-empty matrix \[out, in\]"),
        (SMALL_WEIGHT, SMALL_INPUTS.T, 64, ShapeError, "inputs have 32 columns but the weight takes 64"),
        (SMALL_WEIGHT, SMALL_INPUTS[:0], 64, ShapeError, r"inputs must be a non-empty matrix \[n, in\]"),
        (SMALL_WEIGHT, np.where(SMALL_INPUTS > 0.99, np.nan, SMALL_INPUTS), 64, NonFiniteError, "inputs contains"),
        (SMALL_WEIGHT * np.float32(np.inf), SMALL_INPUTS, 64, NonFiniteError, "weight contains"),
        (SMALL_WEIGHT.astype(str), SMALL_INPUTS, 64, LabError, "weight must be a float array"),
    ],
    ids=["group 16", "group over in", "3-D weight", "columns", "no rows", "NaN", "inf", "text"],
)
def test_awq_refuses_bad_input_in_the_labs_words(weight, inputs, group, error, words):
    with pytest.raises(error, match=words):
        awq(weight, inputs, bits=4, group_size=group)


@pytest.mark.parametrize("size", [1e30, 3e38])
def test_awq_skips_the_ratios_whose_scales_overflow_float32(size):
    """mean|x|^r and max·min overflow float32 for inputs this large, as they do in MLX, where the
    ratio's loss is NaN and never kept. Ratio 0 (every scale 1) always survives."""
    result = awq_search(SMALL_WEIGHT, SMALL_INPUTS * np.float32(size), bits=4, group_size=64)
    assert np.isfinite(result.ratio_errors[0]) and np.isinf(result.ratio_errors[1:]).any()
    assert np.isfinite(result.ratio_errors[result.ratios == result.ratio]).all()
    assert np.all(np.isfinite(result.weights))


def test_awq_on_all_zero_inputs_is_round_to_nearest():
    """Zero inputs see no error anywhere: the first ratio (scales 1) and the first clip (none) are kept."""
    result = awq_search(SMALL_WEIGHT, np.zeros_like(SMALL_INPUTS), bits=4, group_size=64)
    assert result.ratio == 0 and not result.fell_back
    np.testing.assert_array_equal(result.weights, affine.quantize(SMALL_WEIGHT, bits=4, group_size=64).dequantize())
