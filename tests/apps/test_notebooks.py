"""Every notebook runs headless with no error, and the values it defines are the article's numbers.

A widget holds only its inputs: what its figure shows of them is read here with the `lab` codec
(the golden vectors of tests/js/ hold the browser's JS codec to it). The expected numbers are
written out here (from the article), not read from the lab.
"""

from __future__ import annotations

import html
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from support import RENDERED, rendered_texts, require_real_model, require_shipped_gguf

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


def run_notebook_with_outputs(name: str, defs: dict | None = None) -> tuple[list, dict]:
    """What each cell shows, and what the cells define; `defs` stands in for the cells that define those names."""
    spec = importlib.util.spec_from_file_location(f"notebook_{name}", NOTEBOOKS / name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    outputs, defined = module.app.run(defs=defs)
    if defs is None:
        RENDERED[name] = rendered_texts(outputs)
    return list(outputs), defined


def run_notebook(name: str, defs: dict | None = None) -> dict:
    return run_notebook_with_outputs(name, defs)[1]


def test_every_course_notebook_exists_and_is_listed():
    from lab.teach import course

    listed = {file for file, _, _ in course.NOTEBOOKS}
    on_disk = {path.name for path in NOTEBOOKS.glob("[0-9][0-9]_*.py")} - {"00_index.py"}
    assert listed == on_disk


def test_00_index_links_every_notebook():
    from lab.teach import course

    defs = run_notebook("00_index.py")
    assert defs["course"] is course


def test_01_one_nibble():
    from lab.codes import nibble

    decoder = run_notebook("01_one_nibble.py")["decoder"].widget
    read = nibble.three_decoders(decoder.code)
    assert (decoder.code, read["e2m1"], read["uint4"], read["int4"]) == (5, 3.0, 5, 5)
    decoder.code = 8
    read = nibble.three_decoders(decoder.code)
    assert read["e2m1"] == 0 and read["int4"] == -8


def test_02_scale_is_a_ruler():
    from lab import numbers
    from lab.teach import scale

    widget = run_notebook("02_scale_is_a_ruler.py")["lab_row"].widget
    w = numbers.parse_number_row(widget.w_text, "weights")
    x = numbers.parse_number_row(widget.x_text, "inputs")
    row = scale.analyse(w, x, widget.scale)
    assert row.y == pytest.approx(-1.75) and row.delta_y == pytest.approx(-0.25)
    widget.scale = 0.125
    row = scale.analyse(w, x, widget.scale)
    assert row.w_hat.tolist() == [-0.75, 0.25, 0.75, 0.75] and row.delta_y == pytest.approx(0.125)


def test_03_mxfp4():
    from lab.codes import e8m0
    from lab.formats import mxfp4

    defs = run_notebook("03_mxfp4.py")
    ownership = defs["ownership"].widget
    mx_block = mxfp4.from_parts(np.array(ownership.codes), np.array([ownership.mx_scale_byte]))
    assert e8m0.decode(ownership.mx_scale_byte) == 0.5
    assert mx_block.explain(ownership.selected)["formula"] == "3 \u00d7 0.5 = 1.5"
    assert defs["mxfp4"].BITS_PER_WEIGHT == 4.25
    assert defs["block"].shape == (32,)


def test_04_nvfp4():
    from lab.formats import nvfp4

    defs = run_notebook("04_nvfp4.py")
    ownership = defs["ownership"].widget
    # the view's tensor scale is the multiplier on decode, MLX's global_scale / 2688
    nv_block = nvfp4.from_parts(
        np.array(ownership.codes),
        np.array(ownership.nv_scale_bytes),
        global_scale=ownership.tensor_scale * nvfp4.TENSOR_SCALE_RANGE,
    )
    assert nv_block.explain(ownership.selected)["formula"] == "3 \u00d7 0.3125 \u00d7 1 = 0.9375"
    assert defs["tensor"].bits_per_weight == 4.5 + 32 / 32
    assert defs["global_scale"] == pytest.approx(float(abs(defs["weights"]).max()))


def test_05_q4k():
    from lab.formats import q4k

    defs = run_notebook("05_q4k.py")
    traced = defs["traced"]
    assert (traced["low"]["lane"], traced["high"]["lane"]) == (0, 32)
    assert (traced["low"]["weight"], traced["high"]["weight"]) == (1.0, 3.25)
    raw = np.array(defs["explorer"].widget.block)
    assert q4k.unpack_scale_min(raw[q4k.METADATA_OFFSET : q4k.PAYLOAD_OFFSET])[0][4] == 33


def test_07_capacity_and_cost():
    defs = run_notebook("07_capacity_and_cost.py")
    table = defs["sizes"].seven_billion_table()
    assert (table["BF16"], table["ideal 4-bit"], table["Q4_K"]) == (14.0, 3.5, 3.9375)
    assert defs["weights_in_billions"].values == {"billions": "7"}
    steps = defs["billions_by_step"]
    assert (len(steps), steps["0.5"], steps["7"], steps["70"]) == (140, 0.5, 7.0, 70.0)


def test_marimo_check_is_clean():
    result = subprocess.run(
        [sys.executable, "-m", "marimo", "check", "--strict", *sorted(str(p) for p in NOTEBOOKS.glob("*.py"))],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_06_files_and_recipes():
    defs = run_notebook("06_files_and_recipes.py")
    assert defs["plan"]["blk.0.attn_q.weight"] == "Q4_K" and defs["plan"]["blk.1.ffn_odd.weight"] != "Q4_K"
    assert defs["recipe"]["label"] == "Q4_K_M"
    assert defs["decoder_check"].passed and defs["decoder_check"].cases == 256 * 256
    assert defs["rejection"].startswith("UnsupportedTypeError") and "IQ2_XXS" in defs["rejection"]


def test_08_the_checks():
    defs = run_notebook("08_the_checks.py")
    assert all(result.passed for result in defs["battery"].values())
    assert len(defs["battery"]) == 7
    assert all(row.caught and row.correct_passes for row in defs["zoo_table"].rows)


def test_09_real_weights():

    require_real_model()  # a skip on a laptop without the model, a failure in CI
    defs = run_notebook("09_real_weights.py")
    summaries = {row["format"]: row for row in defs["report"].summary_records()}
    assert (
        summaries["MXFP8 (mlx)"]["relative_rmse"]
        < summaries["NVFP4"]["relative_rmse"]
        < summaries["MXFP4 (mlx)"]["relative_rmse"]
    )
    assert summaries["Q4_K"]["coverage"] < 0.5  # most rows of this model are 384 long, not a multiple of 256


def test_06_opens_the_real_file_where_it_is_installed():
    require_shipped_gguf()  # a skip on a laptop without the package, a failure in CI
    defs = run_notebook("06_files_and_recipes.py")
    assert defs["browse_error"] is None and defs["browsing"] == "real" and not defs["browsing_toy"]
    assert len(defs["own_tensors"]) == 236 and defs["real_recipe"]["label"] == "Q4_K_M"
    assert {row["type"] for row in defs["real_reasons"]} == {"F32", "Q5_0", "Q4_K", "Q8_0", "Q6_K"}
    pick = defs["pick"]
    assert defs["pick_error"] is None
    assert (pick.tensor, pick.type_name, pick.block) == ("blk.0.attn_output.weight", "Q4_K", 0)
    assert pick.explorer == "q4k" and pick.check.matches and pick.check.max_abs_diff == 0.0


def test_06_without_the_real_file_opens_the_toy_file():
    missing = {"real_path": None, "real_missing": "RealFileUnavailableError: not installed here"}
    defs = run_notebook("06_files_and_recipes.py", missing)
    assert defs["browse_error"] is None and defs["browsed"].source == "the lab's toy file" and defs["browsing_toy"]
    assert {row.name for row in defs["own_tensors"]} == set(defs["tensors"])
    pick = defs["pick"]
    assert defs["pick_error"] is None
    assert (pick.tensor, pick.type_name, pick.block) == ("blk.0.attn_q.weight", "Q4_K", 0)
    assert pick.explorer == "q4k" and pick.check.matches and pick.check.max_abs_diff == 0.0


def test_10_what_four_bits_do_to_answers():

    require_real_model()  # a skip on a laptop without the model, a failure in CI
    outputs, defs = run_notebook_with_outputs("10_what_four_bits_do_to_answers.py")
    rows = {row["format"]: row for row in defs["study"]}
    assert {"fp32", "mxfp4", "affine2_g64", "affine3_g64", "affine4_g64", "affine8_g64", "q4k"} <= set(rows)
    assert rows["fp32"]["mean_cosine_to_fp32"] == pytest.approx(1.0)
    assert rows["affine8_g64"]["top1"] >= rows["affine2_g64"]["top1"]  # eight bits answer at least as well as two
    assert defs["chosen"] == "mxfp4" and defs["similarity"].fp32.shape == (10, 10)
    assert len(defs["layers"].layers) == 36 and defs["outliers"].layer == defs["layers"].disagreeing[0]
    assert defs["device"].format == "mxfp4"
    answers = defs["answers"]  # the margins behind top-1, for the chosen format
    assert answers.format_title == "MXFP4" and len(answers.questions) == len(answers.margins) == 64
    assert np.mean(answers.margins >= 0) == pytest.approx(rows["mxfp4"]["top1"])
    assert np.mean(answers.fp32_margins >= 0) == pytest.approx(rows["fp32"]["top1"])
    # What the inputs section says of its layer agrees with that layer's own numbers: it once said
    # the output error "rises" above the weight error for MXFP4, whose layer showed 0.0454 < 0.1245.
    outliers = defs["outliers"]
    layer = next(row for row in defs["layers"].records() if row["layer"] == outliers.layer)
    shown = next(
        output.text for output in outputs if output is not None and "The inputs of" in getattr(output, "text", "")
    )
    side = "below" if layer["output_error"] < layer["weight_error"] else "above"
    assert f"{layer['output_error']:.4f}, is {side} its weight error, {layer['weight_error']:.4f}" in shown
    carry = "error than of its signal" if outliers.error_share > outliers.signal_share else "signal than of its error"
    assert f"carry more of this layer’s {carry}" in shown or f"carry more of this layer's {carry}" in shown
    # The plain verdict holds for these numbers: every format of 4 to 5 bits answers as many right
    # as float32, and the count and the names of those that lose answers are the study's.
    verdict = next(
        output.text
        for output in outputs
        if output is not None and "cannot tell the 4-bit" in getattr(output, "text", "")
    )
    assert all(row["top1"] == rows["fp32"]["top1"] for row in rows.values() if 4 <= row["bits_per_weight"] < 5)
    losing = [row for name, row in rows.items() if name != "fp32" and row["top1"] < rows["fp32"]["top1"]]
    assert f"{len(rows) - 1 - len(losing)} of the {len(rows) - 1} formats answer as many" in verdict
    assert all(
        f"{row['title']} ({row['bits_per_weight']:g} bits, top-1 {row['top1']:.3f})" in verdict for row in losing
    )


def test_11_formats_side_by_side():
    defs = run_notebook("11_formats_side_by_side.py")
    from lab.formats import FORMATS

    sources = {row["source"] for row in defs["error_rows"]}
    assert {"N(0, 1)", "Student t, 3 d.o.f."} <= sources
    assert len(defs["error_rows"]) == len(sources) * len(FORMATS)
    assert {row["format"] for row in defs["outliers"]} == set(FORMATS)
    assert {row["title"] for row in defs["trace"]} == {
        *("Q4_0", "Q4_1", "IQ4_NL", "IQ4_XS", "Q4_K", "Q6_K", "MXFP4"),
        *("Q5_0", "Q5_1", "Q5_K"),
    }
    # Try this 1 and 2: six formats at 4.5 bits, one of them on the front, and which one moves
    for source, on_front in [("N(0, 1)", {"Q4_K"}), ("Student t, 3 d.o.f.", {"NVFP4"})]:
        at_4_5 = [row for row in defs["error_rows"] if row["source"] == source and row["bits_per_weight"] == 4.5]
        assert len(at_4_5) == 6 and {row["title"] for row in at_4_5 if row["on_front"]} == on_front, source
    assert [row["format"] for row in defs["support"]] == list(FORMATS)


def test_12_a_chat_models_answers():
    require_shipped_gguf()  # a skip on a laptop without the package, a failure in CI
    # two formats stand in for the registry: the full study is the bench's (bench/run.py)
    outputs, defs = run_notebook_with_outputs(
        "12_a_chat_models_answers.py", {"chat_missing": None, "study_formats": ["q8_0", "q4_0"]}
    )
    study = defs["study"]
    # the chat prompt's heading keeps its lines, as the answers do: no literal \n (issue 37)
    page = " ".join(rendered_texts(outputs))
    heading = re.search(r"Prompt 3: (.*?)</h3>", page).group(1)
    assert heading.startswith("&lt;start&#95;of&#95;turn&gt;user<br>Name three colours") and "&#92;n" not in heading
    rows = {row["format"]: row for row in study.rows()}
    assert set(rows) == {"reference", "q8_0", "q4_0"}
    assert rows["reference"]["kl_divergence"] == 0.0 and rows["reference"]["same_top"] == 1.0
    # eight bits move the next-token distributions far less than four
    assert rows["q8_0"]["kl_divergence"] < rows["q4_0"]["kl_divergence"]
    assert rows["q8_0"]["same_top"] > rows["q4_0"]["same_top"]
    assert {row["format"] for row in study.format_rows()} == {"q8_0", "q4_0"}
    # Try this 3, on the static page: Q4_0 finishes prompts 1 and 2 as the reference does for a few
    # tokens, then departs. Its answer to prompt 2 is llama.cpp's own Q4_0 answer, token for token,
    # with its untrue "(140 degrees F)"; llama.cpp's Q4_0 leaves its float32 answer at the same token.
    from lab.study import chat_study

    q4_0 = next(result for result in study.formats if result.name == "q4_0")
    pinned = chat_study.llama_cpp_pinned()
    assert 0 < q4_0.continuations[0].first_divergence < 6
    water = q4_0.continuations[1]
    assert list(water.ids) == pinned["Q4_0"]["answers"][1]["greedy"] and "(140 degrees F)" in water.text
    theirs = zip(pinned["f32"]["answers"][1]["greedy"], pinned["Q4_0"]["answers"][1]["greedy"], strict=True)
    assert water.first_divergence == next(i for i, (a, b) in enumerate(theirs) if a != b) == 6


def test_13_the_guides_checks():
    require_shipped_gguf()
    from conftest import require_mlx_lm

    require_mlx_lm()
    # one mode stands in for the page's three ($LAB_GUIDE_MODES, tests/conftest.py); its checks are
    # shared with tests/oracles/test_guide_checks.py through the session's result cache
    outputs, defs = run_notebook_with_outputs("13_the_guides_checks.py")
    page = re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", " ".join(rendered_texts(outputs)))))
    pinned = json.loads((Path(__file__).resolve().parents[1] / "data" / "mlx_lm_reference.json").read_text())
    reference = [answer["greedy"] for answer in pinned["formats"]["reference"]]
    mode = [answer["greedy"] for answer in pinned["formats"]["affine4_g64"]]
    departures = [
        next((i for i, (a, b) in enumerate(zip(r, m, strict=True)) if a != b), None)
        for r, m in zip(reference, mode, strict=True)
    ]
    assert [run.first_divergence for run in defs["checks"][0].prompts] == departures
    # what mlx-lm stores, read off its arrays: 4 bits and a float32 scale and bias per 64 weights
    assert "MLX affine 4-bit g64 5 5 268.0 M 100.3 M 167.8 M" in page
    assert page.count("0 of 4130") == 2  # check 4: no unwritten row in either product
    assert "Unquantized, the lab's answers are mlx-lm's, token for token, and so are llama.cpp's." in page
    # the KV cache: mlx-lm's 8-bit cache keeps the float answers on every prompt, as its pinned run does
    kv = json.loads((Path(__file__).resolve().parents[1] / "data" / "kv_cache_reference.json").read_text())
    assert "float32 8-bit g64 KV only" in page
    eight = next(row for row in defs["kv_rows"] if row["weights"] == "reference" and row["kv_cache"] == "8-bit g64")
    assert eight["mlx_departures"] == eight["lab_departures"] == (None, None, None)
    from lab.study import kv_study

    for float_ids, kv8_ids in zip(reference, kv["formats"]["reference"]["8"], strict=True):
        assert float_ids[: kv_study.TOKENS] == kv8_ids[: kv_study.TOKENS]  # mlx-lm's pinned 8-bit-cache answers
    # the builder's starting rows: read, planned and counted before any weight is touched
    assert "7.6357 bits per weight" in page and "def class_predicate ( path , module ):" in page
