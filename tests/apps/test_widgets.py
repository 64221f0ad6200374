"""Each widget's Python side: construct it, change a trait, check the inputs it refuses.

A widget holds its inputs and derives nothing: the browser computes everything it shows with the
JS codec. What a figure shows is checked here with the `lab` codec, from the widget's inputs, and
in the browser's codec by the golden vectors (tests/js/); that a figure draws nothing for a state
it refuses is checked with the figure's own `check`, run by node. Expected values are the
article's worked numbers, written out here, not read from the lab.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess

import anywidget
import gguf
import numpy as np
import pytest
from gguf import GGMLQuantizationType

from lab import numbers
from lab.codes import e2m1, e8m0, nibble
from lab.errors import CodeRangeError, LabError
from lab.formats import FORMATS, by_gguf_type, iq4_nl, mxfp4, nvfp4, q4_0, q4k
from lab.teach import scale, sizes
from widgets import BlockExplorer, CodeExplorer, Exercises, NibbleDecoder, OwnershipView, Q4KExplorer, ScaleLab
from widgets._bundle import HERE

WIDGET_FILES = {
    NibbleDecoder: "nibble.js",
    ScaleLab: "scale_lab.js",
    OwnershipView: "ownership.js",
    Q4KExplorer: "q4k_explorer.js",
    Exercises: "exercises.js",
    CodeExplorer: "code_explorer.js",
    BlockExplorer: "block_explorer.js",
}


def _node() -> str:
    node = shutil.which("node")
    if node is None:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail("node is not installed; .ci/run installs it, so CI must have it")
        pytest.skip("node is not installed")
    return node


def _figure_refusal(widget) -> str | None:
    """Why the widget's figure draws nothing for its inputs, or None: its ES module's `check`, run
    by node on the state the browser reads (JSON's NaN and Infinity are JavaScript's too)."""
    state = json.dumps({name: getattr(widget, name) for name in widget._inputs})
    # anywidget makes each instance a subclass of its own, so the widget's class is found by isinstance
    figure = (HERE / next(file for cls, file in WIDGET_FILES.items() if isinstance(widget, cls))).as_uri()
    script = f"import figure from {json.dumps(figure)};\nconsole.log(JSON.stringify(figure.check({state})));"
    result = subprocess.run([_node(), "--input-type=module", "-e", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _analysed(widget: ScaleLab) -> scale.ScaleLabRow:
    """The scale lab's row, read from its inputs by the lab codec as the figure reads it."""
    return scale.analyse(
        numbers.parse_number_row(widget.w_text, "weights"),
        numbers.parse_number_row(widget.x_text, "inputs"),
        widget.scale,
    )


def _readings(widget: OwnershipView) -> tuple[mxfp4.MXTensor, nvfp4.NVFP4Tensor]:
    """The ownership view's codes as one MXFP4 block and as two NVFP4 blocks, by the lab codec;
    the tensor scale is the multiplier on decode, MLX's global_scale / 2688."""
    codes = np.array(widget.codes)
    mx_block = mxfp4.from_parts(codes, np.array([widget.mx_scale_byte]))
    nv_block = nvfp4.from_parts(
        codes, np.array(widget.nv_scale_bytes), global_scale=widget.tensor_scale * nvfp4.TENSOR_SCALE_RANGE
    )
    return mx_block, nv_block


def _q4k_weights(widget: Q4KExplorer) -> np.ndarray:
    return q4k.decode(np.array(widget.block))


def _block_weights(widget: BlockExplorer) -> np.ndarray:
    return by_gguf_type(widget.type_name).decode_gguf(np.array(widget.block)).reshape(-1)


@pytest.mark.parametrize("widget_class", WIDGET_FILES)
def test_a_widget_syncs_its_inputs_and_nothing_else(widget_class):
    """Python sets the inputs and the browser computes what it shows: a widget holds no trait it
    does not sync, so no figure can come to rely on Python deriving it."""
    own = set(widget_class.class_traits(sync=True)) - set(anywidget.AnyWidget.class_traits(sync=True))
    assert own == set(widget_class._inputs) | set(widget_class._page_traits)
    assert widget_class._page_traits == ("outcomes",)  # the outcome panels a figure drives (ui.js)
    assert set(widget_class.class_traits()) - set(anywidget.AnyWidget.class_traits()) == own


@pytest.mark.parametrize(("widget_class", "module_file"), WIDGET_FILES.items())
def test_a_widgets_module_reads_only_its_input_traits(widget_class, module_file):
    source = (HERE / module_file).read_text(encoding="utf-8")
    read = set(re.findall(r"""model\.get\(["']([^"']+)["']\)""", source))
    assert read and read <= set(widget_class._inputs)


def test_nibble_decoder_0101_then_7_then_8():
    """The readings are the browser's (the golden nibble, e2m1 and nibble_decoders vectors); the lab
    codec's are their source."""
    widget = NibbleDecoder()
    read = nibble.three_decoders(widget.code)
    assert (widget.code, read["e2m1"], read["uint4"], read["int4"]) == (5, 3.0, 5, 5)
    # what notebook 1 prints: 5 - 8, and IQ4_NL's entry 5
    assert (widget.code - q4_0.CODE_OFFSET, int(iq4_nl.KVALUES[widget.code])) == (-3, -35)
    # The bits, formula and kind are the browser's (the golden e2m1 vectors); e2m1.explain is their source.
    assert e2m1.explain(5)["bits"] == "0101"
    assert e2m1.explain(5)["formula"] == "(+1) \u00d7 2^(2 \u2212 1) \u00d7 (1 + 1/2) = 3"
    widget.code = 7
    assert nibble.three_decoders(widget.code)["e2m1"] == 6.0 and e2m1.explain(7)["kind"] == "normal"
    widget.code = 8
    read = nibble.three_decoders(widget.code)
    assert read["e2m1"] == 0.0 and math.copysign(1, read["e2m1"]) == -1.0
    assert (read["uint4"], read["int4"], e2m1.explain(8)["kind"]) == (8, -8, "zero")


def test_nibble_decoder_rejects_a_code_above_15():
    widget = NibbleDecoder()
    with pytest.raises(CodeRangeError, match="0..15"):
        widget.code = 16
    assert widget.code == 5


def test_scale_lab_article_row_at_half_and_eighth():
    widget = ScaleLab()
    row = _analysed(widget)  # the golden scale_lab vectors hold the browser's row to this one
    assert row.y == pytest.approx(-1.75, abs=1e-15)
    assert row.w_hat.tolist() == [-1.0, 0.25, 1.0, 1.5] and row.y_hat == -2.0
    assert row.delta_y == pytest.approx(-0.25, abs=1e-15)
    widget.scale = 0.125
    row = _analysed(widget)
    assert row.w_hat.tolist() == [-0.75, 0.25, 0.75, 0.75] and row.y_hat == -1.625
    assert row.delta_y == pytest.approx(0.125, abs=1e-15)
    # Which weights clip is the browser's to show (the golden scale_lab vectors); scale.analyse is its source.
    assert scale.analyse(scale.ARTICLE_W, scale.ARTICLE_X, 0.125).clipped.tolist() == [True, False, True, True]


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
    # no row to show: the lab codec refuses the inputs, and the figure draws none
    with pytest.raises(LabError):
        _analysed(widget)
    assert _figure_refusal(widget)


def test_ownership_view_traces_3_times_half_and_3_times_0_3125():
    widget = OwnershipView()
    mx_block, nv_block = _readings(widget)  # the golden e8m0, mxfp4 and nvfp4 vectors hold the browser's
    assert e8m0.decode(widget.mx_scale_byte) == 0.5
    assert mx_block.explain(widget.selected)["formula"] == "3 \u00d7 0.5 = 1.5" and mx_block.dequantize()[0] == 1.5
    assert nv_block.explain(widget.selected)["formula"] == "3 \u00d7 0.3125 \u00d7 1 = 0.9375"
    assert nv_block.dequantize()[0] == 0.9375
    # The NVFP4 block scales and the storage line are the browser's (golden nvfp4 and bits_per_weight
    # vectors); these are the lab values they come from.
    nv_block = nvfp4.from_parts(np.array(widget.codes), np.array(widget.nv_scale_bytes))
    assert nv_block.block_scales.tolist() == [0.3125, 1.0]
    assert mxfp4.BITS_PER_WEIGHT == 4.25 and sizes.FORMAT_BITS_PER_WEIGHT["NVFP4"] == 4.5


def test_ownership_view_nan_scale_byte_makes_the_whole_block_nan():
    widget = OwnershipView()
    widget.mx_scale_byte = 0xFF
    mx_block, nv_block = _readings(widget)
    assert math.isnan(e8m0.decode(widget.mx_scale_byte)) and np.isnan(mx_block.dequantize()).tolist() == [True] * 32
    assert nv_block.dequantize()[0] == 0.9375  # NVFP4's scales are separate bytes: untouched


def test_ownership_view_tensor_scale_multiplies_nvfp4_only():
    widget = OwnershipView(tensor_scale=2.0, selected=16)
    mx_block, nv_block = _readings(widget)
    assert nv_block.dequantize()[0] == 3 * 0.3125 * 2
    assert mx_block.dequantize()[0] == 1.5


def test_q4k_explorer_follows_0xa5_then_byte_zero():
    """The traced byte is the browser's to show (the golden q4k vectors); q4k.explain_byte is its source."""
    widget = Q4KExplorer()
    raw = np.array(widget.block)
    assert q4k.unpack_scale_min(raw[q4k.METADATA_OFFSET : q4k.PAYLOAD_OFFSET])[0][4] == 33
    weights = _q4k_weights(widget)  # the golden q4k_presentation vectors hold the browser's
    assert (weights[0], weights[32]) == (1.0, 3.25)
    traced = q4k.explain_byte(np.array(widget.block), 0)
    assert (traced["byte"], traced["low_lane"], traced["high_lane"]) == (0xA5, 0, 32)
    assert (traced["low"]["weight"], traced["high"]["weight"]) == (1.0, 3.25)
    assert traced["low"]["formula"] == "0.25 \u00d7 5 \u2212 0.25 = 1"
    traced = q4k.explain_byte(np.array(widget.block), 1)  # the fixture's 0x00 byte
    assert (traced["byte"], traced["low"]["weight"], traced["high"]["weight"]) == (0, -0.25, -0.5)
    traced = q4k.explain_byte(np.array(widget.block), 2)  # the fixture's 0xFF byte
    assert (traced["low"]["weight"], traced["high"]["weight"]) == (3.5, 5.125)
    assert (weights[2], weights[34]) == (3.5, 5.125)


def test_q4k_explorer_editing_a_byte_changes_its_weights():
    widget = Q4KExplorer()
    block = list(widget.block)
    block[16] = 0x00
    widget.block = block
    traced = q4k.explain_byte(np.array(widget.block), widget.payload_index)
    assert (traced["low"]["weight"], traced["high"]["weight"]) == (-0.25, -0.5)
    weights = _q4k_weights(widget)
    assert weights[0] == -0.25 and weights[32] == -0.5


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
    from publish import standalone
    from widgets._bundle import bundle

    node = _node()
    slug = next(slug for slug, (_, file, _) in standalone.PAGES.items() if file == module_file)
    script = re.search(r'<script type="module">\n(.*)\n</script>', standalone.page(slug), re.DOTALL).group(1)
    for name, source in (("bundle.mjs", bundle(module_file)), ("page.mjs", script)):
        path = tmp_path / name
        path.write_text(source)
        result = subprocess.run([node, "--check", str(path)], capture_output=True, text=True)
        assert result.returncode == 0, f"{module_file} {name}: {result.stderr}"


def test_a_refused_input_shows_nothing_and_the_last_good_one_shows_again():
    widget = OwnershipView()
    assert _readings(widget)[0].dequantize()[0] == 1.5
    widget.mx_scale_byte = 300
    assert "0..255" in widget.message
    with pytest.raises(LabError, match=r"0\.\.255"):  # no MXFP4 weights nor formula to show
        _readings(widget)
    assert "0..255" in _figure_refusal(widget)
    widget.mx_scale_byte = 0x7E
    assert widget.message == "" and _readings(widget)[0].dequantize()[0] == 1.5
    explorer = Q4KExplorer()
    explorer.payload_index = 128
    assert "0..127" in explorer.message
    with pytest.raises(LabError, match=r"0\.\.127"):  # no byte to trace, so no lanes, scales or weights
        q4k.lanes(explorer.payload_index)
    assert _figure_refusal(explorer)


@pytest.mark.parametrize("tensor_scale", [1e36, float("inf"), 1e-50])
def test_ownership_view_refuses_a_tensor_scale_float32_cannot_hold(tensor_scale):
    widget = OwnershipView(tensor_scale=tensor_scale)
    assert "global_scale" in widget.message or "tensor scale" in widget.message
    with pytest.raises(LabError, match="global_scale"):  # no NVFP4 weights to show
        _readings(widget)
    assert _figure_refusal(widget)


def test_scale_lab_reads_the_same_grammar_as_the_browser():
    widget = ScaleLab(w_text="2^-3, 3/8, \u22121", x_text="1 1 1", scale=0.125)
    assert widget.message == "" and _analysed(widget).w_hat.tolist() == [0.125, 0.375, -0.75]
    widget.w_text = "1e308, 1e308"
    widget.x_text = "1, 1"
    assert "overflows float64" in widget.message
    with pytest.raises(LabError, match="overflows float64"):  # no error to show
        _analysed(widget)


@pytest.mark.parametrize(
    "module_file",
    [
        "ui.js",
        "nibble.js",
        "scale_lab.js",
        "ownership.js",
        "q4k_explorer.js",
        "exercises.js",
        "code_explorer.js",
        "block_explorer.js",
    ],
)
def test_widgets_spell_no_codes_of_their_own(module_file):
    """Hex bytes and binary fields come from the codec (codec/codes/bits.js), as number text does,
    so a figure cannot spell a code differently from the explain() text next to it."""
    source = (HERE / module_file).read_text(encoding="utf-8")
    assert ".toString(16)" not in source and ".toString(2)" not in source


def test_code_explorer_card_for_0x7e_is_the_lab_codecs():
    """The exercises and the code explorer derive nothing in Python: tests/js/widget_checks.test.mjs
    counts the right answers and refuses a bad topic or code with their browser code. The card the
    explorer shows for E8M0 0x7E, from the lab codec (the golden e8m0 vectors check the JS one):"""
    assert e8m0.explain(126)["value"] == 0.5 and e8m0.explain(126)["formula"].startswith("2^(126")


def test_exercises_start_on_the_students_own_seed_and_refuse_one_out_of_range():
    """Seed 0 stands for the student's own numbers: the browser draws one, keeps it and writes it
    back (tests/js/exercise_store.test.mjs). A seed set in Python is used as it is, and one outside
    1..2^32 - 1 is refused as it is set, with the last good seed kept."""
    assert Exercises().seed == 0 and Exercises(topic=3).seed == 0
    widget = Exercises(seed=7)
    assert widget.seed == 7 and Exercises(seed=2**32 - 1).seed == 4294967295
    for bad in (-1, 2**32):
        with pytest.raises(LabError, match=r"seed must be a whole number 1\.\.4294967295, or 0 for the student's own"):
            widget.seed = bad
        assert widget.seed == 7
    # progress stays a synced trait for what the browser writes, but Python's value is no verdict:
    # the count is the answers', checked again in the browser (tests/js/widget_checks.test.mjs)
    assert "progress" in Exercises._inputs and "output only" in Exercises.__doc__


def test_notebook_2s_chart_spans_the_scales_the_scale_lab_offers():
    """The scale lab's buttons (widgets/scale_lab.js POWERS) and notebook 2's chart (SCALE_POWERS)
    cover the same 2^-6..2^2 that the notebook's Try this names; the chart stopped at 2^1 before."""
    from pathlib import Path

    source = (HERE / "scale_lab.js").read_text()
    offered = re.search(r"const POWERS = \[([^\]]*)\]", source).group(1)
    assert tuple(int(power) for power in offered.split(",")) == scale.SCALE_POWERS == (-6, -5, -4, -3, -2, -1, 0, 1, 2)
    assert (
        "scale.SCALE_POWERS"
        in (Path(__file__).resolve().parents[2] / "notebooks" / "02_scale_is_a_ruler.py").read_text()
    )


def test_block_explorer_opens_its_q5_0_block_of_codes_11j_mod_32():
    """The default block: d = 1/16 and the codes 11j mod 32, so weight j is ((11j mod 32) - 16) / 16.
    What the figure draws of it is the browser's (the golden gguf_blocks vectors, tests/js)."""
    widget = BlockExplorer()
    assert (widget.type_name, widget.weight, len(widget.block), widget.message) == ("Q5_0", 1, 22, "")
    assert widget.block[:2] == [0x00, 0x2C]  # d = 0.0625 as a little-endian float16
    weights = _block_weights(widget)  # the golden gguf_blocks vectors hold the browser's
    assert weights[:4].tolist() == [-1.0, -0.3125, 0.375, -0.9375]
    assert sorted(weights.tolist()) == [(code - 16) / 16 for code in range(32)]
    traced = FORMATS["q5_0"].from_gguf(np.array(widget.block, np.uint8)).explain(1)
    assert (traced["code"], traced["code_bits"], traced["qh_byte"], traced["qh_bit_in_byte"]) == (11, "0 1011", 2, 1)


@pytest.mark.parametrize(
    ("traits", "problem"),
    [
        ({"weight": 32}, "0..31"),
        ({"weight": -1}, "0..31"),
        ({"block": [0] * 21}, "22 bytes"),
        ({"block": [0] * 21 + [256]}, "0..255"),
        ({"type_name": "Q4_K", "block": [0] * 144}, "opens Q8_0"),
        ({"type_name": "IQ2_XXS"}, "IQ2_XXS"),
    ],
)
def test_block_explorer_refuses_what_its_block_cannot_show(traits, problem):
    widget = BlockExplorer(**traits)
    assert problem in widget.message
    assert problem in _figure_refusal(widget)  # the browser draws no weights either


def test_block_explorer_follows_a_new_type_and_block():
    block = FORMATS["q3_k"].to_gguf(np.random.default_rng(3).standard_normal(256).astype(np.float32))
    widget = BlockExplorer()
    widget.set_trait("type_name", "Q3_K")
    assert "110 bytes" in widget.message  # the Q5_0 block is no Q3_K block
    widget.block = block.tolist()
    widget.weight = 200
    assert widget.message == "" and _figure_refusal(widget) is None
    assert (widget.type_name, widget.block) == ("Q3_K", block.tolist())
    reference = gguf.quants.dequantize(block.reshape(1, -1), GGMLQuantizationType.Q3_K).reshape(-1)
    assert np.array_equal(_block_weights(widget), reference)


def test_block_explorers_bundle_parses(tmp_path):
    """The block explorer has no standalone page of its own; its bundle alone must parse."""
    from widgets._bundle import bundle

    node = _node()
    path = tmp_path / "bundle.mjs"
    path.write_text(bundle("block_explorer.js"))
    result = subprocess.run([node, "--check", str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
