"""Each widget's Python side: construct it, change a trait, read the derived traits.

Expected values are the article's worked numbers, written out here, not read from the lab.
"""

from __future__ import annotations

import math
import os

import pytest

from lab.errors import CodeRangeError
from widgets import NibbleDecoder, OwnershipView, Q4KExplorer, ScaleLab


def test_nibble_decoder_0101_then_7_then_8():
    widget = NibbleDecoder()
    assert (widget.code, widget.bits, widget.e2m1_value, widget.uint4, widget.int4) == (5, "0101", 3.0, 5, 5)
    assert widget.e2m1_formula == "(+1) \u00d7 2^(2 \u2212 1) \u00d7 (1 + 1/2) = 3"
    widget.code = 7
    assert widget.e2m1_value == 6.0 and widget.e2m1_kind == "normal"
    widget.code = 8
    assert widget.e2m1_value == 0.0 and math.copysign(1, widget.e2m1_value) == -1.0
    assert (widget.uint4, widget.int4, widget.e2m1_kind) == (8, -8, "zero")


def test_nibble_decoder_rejects_a_code_above_15():
    widget = NibbleDecoder()
    with pytest.raises(CodeRangeError, match="0..15"):
        widget.code = 16
    assert widget.code == 5


def test_scale_lab_article_row_at_half_and_eighth():
    widget = ScaleLab()
    assert widget.y == pytest.approx(-1.75, abs=1e-15)
    assert widget.w_hat == [-1.0, 0.25, 1.0, 1.5] and widget.y_hat == -2.0
    assert widget.delta_y == pytest.approx(-0.25, abs=1e-15)
    widget.scale = 0.125
    assert widget.w_hat == [-0.75, 0.25, 0.75, 0.75] and widget.y_hat == -1.625
    assert widget.delta_y == pytest.approx(0.125, abs=1e-15)
    assert widget.clipped == [True, False, True, True]


@pytest.mark.parametrize(
    ("w_text", "x_text", "scale", "problem"),
    [
        ("", "1", 0.5, "at least one number"),
        ("1, abc", "1, 2", 0.5, '"abc"'),
        ("1, 2", "1", 0.5, "same length"),
        ("1, inf", "1, 2", 0.5, "finite"),
        ("1", "1", float("nan"), "positive finite"),
        ("1", "1", -2.0, "positive finite"),
    ],
)
def test_scale_lab_bad_input_gives_a_message_not_an_exception(w_text, x_text, scale, problem):
    widget = ScaleLab(w_text=w_text, x_text=x_text, scale=scale)
    assert problem in widget.message
    assert widget.w_hat == [] and widget.delta_y is None


def test_ownership_view_traces_3_times_half_and_3_times_0_3125():
    widget = OwnershipView()
    assert widget.mx_scale == 0.5
    assert widget.mx_formula == "3 \u00d7 0.5 = 1.5" and widget.mx_weights[0] == 1.5
    assert widget.nv_formula == "3 \u00d7 0.3125 \u00d7 1 = 0.9375" and widget.nv_weights[0] == 0.9375
    assert widget.nv_scales == [0.3125, 1.0]
    assert widget.mx_bits_per_weight == 4.25 and widget.nv_bits_per_weight == 4.5


def test_ownership_view_nan_scale_byte_makes_the_whole_block_nan():
    widget = OwnershipView()
    widget.mx_scale_byte = 0xFF
    assert widget.mx_scale is None and widget.mx_weights == [None] * 32
    assert widget.nv_weights[0] == 0.9375  # NVFP4's scales are separate bytes: untouched


def test_ownership_view_tensor_scale_multiplies_nvfp4_only():
    widget = OwnershipView(tensor_scale=2.0, selected=16)
    assert widget.nv_weights[0] == 3 * 0.3125 * 2
    assert widget.mx_weights[0] == 1.5


def test_q4k_explorer_follows_0xa5_then_byte_zero():
    widget = Q4KExplorer()
    assert (widget.byte, widget.low_lane, widget.high_lane) == (0xA5, 0, 32)
    assert (widget.low_weight, widget.high_weight) == (1.0, 3.25)
    assert widget.low_formula == "0.25 \u00d7 5 \u2212 0.25 = 1"
    assert widget.subblock_scales[4] == 33
    widget.payload_index = 1  # the fixture's 0x00 byte
    assert (widget.byte, widget.low_weight, widget.high_weight) == (0, -0.25, -0.5)
    widget.payload_index = 2  # the fixture's 0xFF byte
    assert (widget.low_weight, widget.high_weight) == (3.5, 5.125)


def test_q4k_explorer_editing_a_byte_changes_its_weights():
    widget = Q4KExplorer()
    block = list(widget.block)
    block[16] = 0x00
    widget.block = block
    assert (widget.low_weight, widget.high_weight) == (-0.25, -0.5)
    assert widget.weights[0] == -0.25 and widget.weights[32] == -0.5


def test_q4k_explorer_bad_index_gives_a_message():
    widget = Q4KExplorer()
    widget.payload_index = 200
    assert "0..127" in widget.message


@pytest.mark.parametrize(
    "module_file", ["nibble.js", "scale_lab.js", "ownership.js", "q4k_explorer.js", "exercises.js", "code_explorer.js"]
)
def test_each_bundle_and_standalone_script_parses(module_file, tmp_path):
    """The bundler joins a widget, ui.js and the codec modules it imports into one module (and a
    standalone page adds its host), so a name declared twice would break the widget; node's parser
    catches that."""
    import re
    import shutil
    import subprocess

    from widgets._bundle import bundle
    from widgets.build import standalone

    node = shutil.which("node")
    if node is None:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail("node is not installed; .ci/run installs it, so CI must have it")
        pytest.skip("node is not installed")
    slug = next(slug for slug, (_, file, _) in standalone.PAGES.items() if file == module_file)
    script = re.search(r'<script type="module">\n(.*)\n</script>', standalone.page(slug), re.DOTALL).group(1)
    for name, source in (("bundle.mjs", bundle(module_file)), ("page.mjs", script)):
        path = tmp_path / name
        path.write_text(source)
        result = subprocess.run([node, "--check", str(path)], capture_output=True, text=True)
        assert result.returncode == 0, f"{module_file} {name}: {result.stderr}"


def test_a_refused_input_clears_what_was_derived_from_the_last_good_one():
    widget = OwnershipView()
    assert widget.mx_weights[0] == 1.5
    widget.mx_scale_byte = 300
    assert "0..255" in widget.message and widget.mx_weights == [] and widget.mx_formula == ""
    widget.mx_scale_byte = 0x7E
    assert widget.message == "" and widget.mx_weights[0] == 1.5
    explorer = Q4KExplorer()
    explorer.payload_index = 128
    assert explorer.low_formula == "" and explorer.weights == []


@pytest.mark.parametrize("tensor_scale", [1e36, float("inf"), 1e-50])
def test_ownership_view_refuses_a_tensor_scale_float32_cannot_hold(tensor_scale):
    widget = OwnershipView(tensor_scale=tensor_scale)
    assert "global_scale" in widget.message or "tensor scale" in widget.message
    assert widget.nv_weights == []


def test_scale_lab_reads_the_same_grammar_as_the_browser():
    widget = ScaleLab(w_text="2^-3, 3/8, \u22121", x_text="1 1 1", scale=0.125)
    assert widget.message == "" and widget.w_hat == [0.125, 0.375, -0.75]
    widget.w_text = "1e308, 1e308"
    widget.x_text = "1, 1"
    assert "overflows float64" in widget.message and widget.delta_y is None


@pytest.mark.parametrize(
    "module_file",
    ["ui.js", "nibble.js", "scale_lab.js", "ownership.js", "q4k_explorer.js", "exercises.js", "code_explorer.js"],
)
def test_widgets_spell_no_codes_of_their_own(module_file):
    """Hex bytes and binary fields come from the codec (codec/codes/bits.js), as number text does,
    so a figure cannot spell a code differently from the explain() text next to it."""
    from widgets._bundle import HERE

    source = (HERE / module_file).read_text(encoding="utf-8")
    assert ".toString(16)" not in source and ".toString(2)" not in source


def test_exercises_count_the_right_answers_and_refuse_a_bad_topic():
    from widgets import Exercises

    widget = Exercises(topic=2, progress={"scale-nearest": "correct", "scale-delta-y": "wrong"})
    assert widget.message == "" and widget.correct == 1
    widget.topic = 9
    assert "1..8" in widget.message


def test_code_explorer_decodes_with_the_python_codec():
    from widgets import CodeExplorer

    widget = CodeExplorer(format="E8M0", code=126)
    assert widget.value == 0.5 and widget.formula.startswith("2^(126")
    widget.code = 300
    assert "0..255" in widget.message and widget.value is None


def test_notebook_2s_chart_spans_the_scales_the_scale_lab_offers():
    """The scale lab's buttons (widgets/scale_lab.js POWERS) and notebook 2's chart (SCALE_POWERS)
    cover the same 2^-6..2^2 that the notebook's Try this names; the chart stopped at 2^1 before."""
    import re
    from pathlib import Path

    from lab.teach import scale

    source = (Path(__file__).resolve().parents[2] / "widgets" / "scale_lab.js").read_text()
    offered = re.search(r"const POWERS = \[([^\]]*)\]", source).group(1)
    assert tuple(int(power) for power in offered.split(",")) == scale.SCALE_POWERS == (-6, -5, -4, -3, -2, -1, 0, 1, 2)
    assert (
        "scale.SCALE_POWERS"
        in (Path(__file__).resolve().parents[2] / "notebooks" / "02_scale_is_a_ruler.py").read_text()
    )
