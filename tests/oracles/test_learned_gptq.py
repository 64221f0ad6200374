"""lab.study.learned.gptq against mlx-lm 0.32.2's own gptq_quantize, on two Linears the lab never saw.

tests/data/learned_reference.npz (tests/data/make_learned_reference.py) pins what mlx-lm made of
them; the Linears themselves are remade here from the script's seed and checked by digest. A weight
"agrees" when the lab gives it mlx-lm's code and decodes it to within a twentieth of a code step:
the lab works in float64 and mlx-lm in float32, so a group's scale can differ in its last bits, and
at 8 bits by a fraction of a percent where MLX's snapping of the group's edge to a code lands one
code apart. Output
errors are ‖x (W - Q)ᵀ‖ / ‖x Wᵀ‖ on evaluation rows drawn like the calibration rows but not them,
and on the calibration rows themselves where the difference teaches something.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from conftest import require_mlx_lm

from lab.errors import BitsError, GroupSizeError, LabError, NonFiniteError, ShapeError
from lab.formats import affine
from lab.study.learned import CalibrationError, gptq, gptq_tensor

DATA = Path(__file__).resolve().parent.parent / "data"
_spec = importlib.util.spec_from_file_location("make_learned_reference", DATA / "make_learned_reference.py")
reference = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(reference)
PINNED = np.load(DATA / "learned_reference.npz")
LINEARS = reference.linears()
SETTINGS = [(name, bits, group) for name in LINEARS for bits, group in reference.GPTQ_SETTINGS]


@pytest.fixture(scope="module")
def runs():
    """{(name, bits, group): (the lab's AffineTensor, mlx-lm's decoded weights, mlx-lm's code steps)}."""
    made = {}
    for name, bits, group in SETTINGS:
        weight, calibration, _, _ = LINEARS[name]
        ours = gptq_tensor(weight, calibration, bits=bits, group_size=group)
        made[name, bits, group] = (ours, *reference.pinned_decode(PINNED, f"gptq/{name}/{bits}_g{group}", bits, group))
    return made


def _errors(name, decoded, rows="evaluation"):
    weight, calibration, evaluation, _ = LINEARS[name]
    return reference.relative_output_error(weight, decoded, evaluation if rows == "evaluation" else calibration)


def test_the_linears_are_the_ones_mlx_lm_quantized():
    for name, (weight, calibration, evaluation, _) in LINEARS.items():
        assert reference.digest(weight, calibration, evaluation) == str(PINNED[f"{name}/sha256"]), name


@pytest.mark.parametrize(("name", "bits", "group"), SETTINGS, ids=lambda v: str(v))
def test_gptq_agrees_with_mlx_lm_on_99_percent_of_weights_and_on_the_output_error(runs, name, bits, group):
    ours, theirs, step = runs[name, bits, group]
    decoded = ours.dequantize()
    theirs_codes = reference.codes(PINNED[f"gptq/{name}/{bits}_g{group}/packed"], bits)
    agrees = (ours.codes == theirs_codes) & (np.abs(decoded - theirs) <= 0.05 * step)
    assert agrees.mean() >= 0.99
    assert np.array_equal(ours.codes, theirs_codes) or (ours.codes != theirs_codes).mean() < 0.002
    for rows in ("evaluation", "calibration"):
        assert _errors(name, decoded, rows) == pytest.approx(_errors(name, theirs, rows), rel=0.01)


def test_gptq_agrees_with_mlx_lms_gptq_run_here_on_a_slice():
    """The pins' check, live: mlx-lm's gptq_quantize run now, on a 32 x 128 slice of the correlated
    Linear with 512 calibration rows, at 4 bits in groups of 32."""
    require_mlx_lm()
    weight, calibration, _, _ = LINEARS["correlated"]
    weight, calibration = np.ascontiguousarray(weight[:32, :128]), np.ascontiguousarray(calibration[:512, :128])
    pinned = {f"gptq/live/{key}": value for key, value in reference.mlx_gptq(weight, calibration, 4, 32).items()}
    theirs, step = reference.pinned_decode(pinned, "gptq/live", 4, 32)
    ours = gptq(weight, calibration, bits=4, group_size=32)
    assert (np.abs(ours - theirs) <= 0.05 * step).mean() >= 0.99


def test_gptq_returns_the_decoded_float32_weights(runs):
    weight, calibration, _, _ = LINEARS["correlated"]
    decoded = gptq(weight, calibration, bits=4, group_size=64)
    assert decoded.dtype == np.float32 and decoded.shape == weight.shape
    np.testing.assert_array_equal(decoded, runs["correlated", 4, 64][0].dequantize())


# (bits, group): GPTQ's and round-to-nearest's output error on the evaluation rows, measured
CORRELATED_ERRORS = {
    (4, 64): (0.0390, 0.0927),
    (4, 32): (0.0352, 0.0813),
    (2, 64): (0.2382, 0.4212),
    (8, 64): (0.0024, 0.0057),
}


@pytest.mark.parametrize(("bits", "group"), list(CORRELATED_ERRORS))
def test_gptq_beats_round_to_nearest_where_the_inputs_share_directions(runs, bits, group):
    """Correlated inputs give the error feedback somewhere to go: a column's rounding error is
    cancelled through the columns its inputs move with. GPTQ's error on new rows is less than half
    of round-to-nearest's at every width, 2 bits included."""
    weight = LINEARS["correlated"][0]
    gptq_error = _errors("correlated", runs["correlated", bits, group][0].dequantize())
    rtn_error = _errors("correlated", affine.quantize(weight, bits=bits, group_size=group).dequantize())
    assert (gptq_error, rtn_error) == pytest.approx(CORRELATED_ERRORS[bits, group], abs=1e-4)
    assert gptq_error < 0.6 * rtn_error


def test_gptq_loses_to_round_to_nearest_where_the_input_channels_are_independent(runs):
    """On the Linear whose input channels are independent, the Hessian's off-diagonal is sampling
    noise: the error feedback fits the calibration rows' chance correlations. GPTQ then beats
    round-to-nearest on those rows at 4 bits (0.0842 against 0.0897) and loses on new rows (0.0988
    against 0.0900). At 2 bits it loses even on its own calibration rows (0.3953 against 0.3932).
    GPTQ is greedy, and its group scales are fixed from min and max before the feedback moves the
    group's later columns: at 2 bits the feedback pushes 2.5 % of this Linear's weights past their
    group's edges, where they clip (0.6 % at 4 bits). mlx-lm's own GPTQ measures the same numbers,
    so the loss is the method's, not the port's."""
    weight = LINEARS["independent"][0]
    measured = {}
    for bits in (4, 2):
        rtn = affine.quantize(weight, bits=bits, group_size=64).dequantize()
        ours, theirs, _ = runs["independent", bits, 64]
        for rows in ("calibration", "evaluation"):
            measured[bits, rows] = tuple(
                round(_errors("independent", decoded, rows), 4) for decoded in (ours.dequantize(), theirs, rtn)
            )
    assert measured == {
        (4, "calibration"): (0.0842, 0.0842, 0.0897),
        (4, "evaluation"): (0.0988, 0.0988, 0.0900),
        (2, "calibration"): (0.3953, 0.3953, 0.3932),
        (2, "evaluation"): (0.4568, 0.4568, 0.3920),
    }


SMALL_WEIGHT = np.linspace(-1, 1, 8 * 64, dtype=np.float32).reshape(8, 64)
SMALL_INPUTS = np.cos(np.arange(32 * 64, dtype=np.float32)).reshape(32, 64)


@pytest.mark.parametrize("bits", [1, 3, 5, 6, 7, 16, True, 4.0, "4"])
def test_gptq_refuses_a_width_mlx_lms_gptq_does_not_take(bits):
    with pytest.raises(BitsError, match=r"GPTQ quantizes to 2, 4, 8 bits"):
        gptq(SMALL_WEIGHT, SMALL_INPUTS, bits=bits, group_size=64)


@pytest.mark.parametrize(
    ("weight", "inputs", "group", "error", "words"),
    [
        (SMALL_WEIGHT, SMALL_INPUTS, 48, GroupSizeError, "group size 48 is not supported"),
        (SMALL_WEIGHT, SMALL_INPUTS, 128, ShapeError, "64 input columns do not split into groups of 128"),
        (SMALL_WEIGHT[0], SMALL_INPUTS, 64, ShapeError, r"weight must be a non-empty matrix \[out, in\]"),
        (SMALL_WEIGHT, SMALL_INPUTS[:, :32], 64, ShapeError, "inputs have 32 columns but the weight takes 64"),
        (SMALL_WEIGHT, SMALL_INPUTS[:0], 64, ShapeError, r"inputs must be a non-empty matrix \[n, in\]"),
        (SMALL_WEIGHT, SMALL_INPUTS[0], 64, ShapeError, r"inputs must be a non-empty matrix \[n, in\]"),
        (np.where(SMALL_WEIGHT > 0.9, np.nan, SMALL_WEIGHT), SMALL_INPUTS, 64, NonFiniteError, "weight contains NaN"),
        (SMALL_WEIGHT, np.where(SMALL_INPUTS > 0.99, np.inf, SMALL_INPUTS), 64, NonFiniteError, "inputs contains"),
        (SMALL_WEIGHT, SMALL_INPUTS.astype(np.float64) * 1e39, 64, NonFiniteError, "beyond float32"),
        (SMALL_WEIGHT, np.zeros_like(SMALL_INPUTS), 64, CalibrationError, "inputs are all zero"),
    ],
    ids=["group 48", "group over in", "1-D weight", "columns", "no rows", "1-D inputs", "NaN", "inf", "1e39", "zeros"],
)
def test_gptq_refuses_bad_input_in_the_labs_words(weight, inputs, group, error, words):
    with pytest.raises(error, match=words) as refused:
        gptq(weight, inputs, bits=4, group_size=group)
    assert isinstance(refused.value, LabError)


def test_gptq_rounds_a_silent_channel_to_nearest_with_its_groups_scale():
    """A channel whose inputs are all zero has a zero row and column in the Hessian; the damping keeps
    it invertible, and the inverse's factor then has nothing off the diagonal for that channel: no
    error flows into its weights or out of them, so they round to nearest with their group's scale."""
    inputs = SMALL_INPUTS.copy()
    inputs[:, 5] = 0
    tensor = gptq_tensor(SMALL_WEIGHT, inputs, bits=4, group_size=64)
    scale, bias = tensor.scales[:, 0].astype(np.float64), tensor.biases[:, 0].astype(np.float64)
    nearest = np.clip(np.rint((SMALL_WEIGHT[:, 5] - bias) / scale), 0, 15)
    np.testing.assert_array_equal(tensor.codes[:, 5], nearest)
    assert np.all(np.isfinite(tensor.dequantize()))
