"""Gemma 3 270M with every block Linear through the installed MLX (lab.device.chat), against the
lab's numpy: the MLX guide's check, greedy token ids against the unquantized path's, here the lab's
own float32 path of the same bytes.

Properties, not snapshots: every Linear's MLX product lies within the float32 accumulation bound of
the lab's on the same input, and a greedy answer may part from the lab's only at a step where the
lab's margin between its best two tokens is within the logit difference MLX made. One prompt and
six tokens keep the test short; notebook 12 runs all three prompts.
"""

from __future__ import annotations

import pytest
from support import require_shipped_gguf

from lab.device import chat as device_chat
from lab.study import chat, chat_study

TOKENS = 6


@pytest.fixture(scope="module")
def gemma():
    return chat.load(require_shipped_gguf())


@pytest.mark.parametrize(("fmt", "quantized"), [("mxfp4", 126), ("q4k", 36)])
def test_every_linear_through_mlx_agrees_with_the_lab_within_the_bound(mx, gemma, fmt, quantized):
    report = device_chat.run_chat(fmt, chat_study.PROMPTS[:1], TOKENS, model=gemma)
    assert report.available and report.runs and report.runs[0].device == "cpu"
    # a Q4_K row of 640 is refitted in Q5_0, which MLX has no mode for: those run as mx.matmul on ŵ
    assert report.fallbacks == 126 - quantized
    for run in report.runs:
        assert len(run.layers) == 126 and run.quantized == quantized and run.refusals == ()
        assert 0 < run.worst_layer.bound_used <= 1.0, run
        largest = max(layer.max_abs_diff for layer in run.layers)
        assert run.worst_layer.layer.startswith("blk.") and 0 < largest < 1e-2
        for answer in run.answers:
            assert len(answer.lab_ids) == TOKENS and answer.max_logit_diff > 0
            if answer.first_divergence is not None:
                assert answer.lab_margin is not None and answer.lab_margin <= 2 * answer.max_logit_diff, answer
    text = report.to_markdown()
    assert "mx.quantized_matmul" in text and "within" in text and "beyond" not in text


def test_a_format_mlx_has_no_mode_for_says_so_and_runs_nothing(mx):
    report = device_chat.run_chat("q4_0")
    assert report.available and report.runs == ()
    assert "MLX has no Q4_0 mode" in report.message


def test_the_device_check_offers_every_format_mlx_can_run():
    from lab.formats import FORMATS

    offered = device_chat.device_formats()
    # MLX 0.32's quantization modes are affine, mxfp4, mxfp8 and nvfp4; Q4_K runs through its affine repack
    mlx_modes = {"mxfp4", "mxfp8", "nvfp4"} | {name for name in FORMATS if name.startswith("affine")}
    assert set(offered) == mlx_modes | {"q4k"} and offered == [name for name in FORMATS if name in offered]
    assert {"mxfp4", "nvfp4", "affine4_g64", "q4k"} <= set(offered) and "q4_0" not in offered
