"""Notebook 13's checks (lab.device.guide_checks) against mlx-lm's pinned run and llama.cpp's.

tests/data/mlx_lm_reference.json holds mlx-lm 0.32.2's twenty greedy ids per prompt on weights that
gguf-py read and its own script renamed, never the lab; chat_requant_reference.json holds
llama.cpp's on a float32 copy of the file. The suite runs one mode (MLX affine 4-bit g64, the
mode notebook 13 runs under the test suite's $LAB_GUIDE_MODES), whose results the notebook then
reads back from the same result cache.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import require_mlx_lm
from support import require_shipped_gguf

from lab.device import guide_checks, predicates, verify
from lab.study import accounting, chat_study
from lab.study.chat_study import first_divergence

PINNED = Path(__file__).resolve().parent.parent / "data"
MLX_LM = json.loads((PINNED / "mlx_lm_reference.json").read_text())
LLAMA_CPP = json.loads((PINNED / "chat_requant_reference.json").read_text())
MODE = "affine4_g64"


@pytest.fixture(scope="module")
def checked():
    require_mlx_lm()
    require_shipped_gguf()
    return guide_checks.reference_run(), guide_checks.mode_checks(MODE)


def test_check_1_gives_mlx_lms_pinned_ids_and_llama_cpps_unquantized(checked):
    reference, mode = checked
    assert [list(ids) for ids in reference.ids] == [answer["greedy"] for answer in MLX_LM["formats"]["reference"]]
    assert [list(ids) for ids in reference.ids] == [answer["greedy"] for answer in LLAMA_CPP["f32"]["answers"]]
    pinned = [answer["greedy"] for answer in MLX_LM["formats"][MODE]]
    assert [list(run.ids) for run in mode.prompts] == pinned
    for run, theirs, ours in zip(mode.prompts, pinned, reference.ids, strict=True):
        assert run.first_divergence == first_divergence(list(ours), theirs)
        assert run.reading == verify.divergence_reading(run.first_divergence, len(ours))


def test_the_bits_read_off_mlx_lms_arrays_are_the_labs_accounting_over_every_module_it_quantized(checked):
    _, mode = checked
    assert mode.bits_per_weight == accounting.bits_per_weight(MODE, "float32") == 5.0  # 4 + 2 × 32 / 64
    layers = predicates.linear_layers()  # the 126 Linears and the embedding, read from the GGUF's shapes
    assert mode.quantized_weights == sum(out * inner for out, inner in layers.values())


def test_check_2_puts_the_largest_difference_on_the_guides_bands(checked):
    _, mode = checked
    worst = max(run.max_difference for run in mode.prompts)
    assert mode.max_difference == worst > verify.CORRUPTION_BAND[0]
    assert mode.band.startswith("corruption band")
    for run in mode.prompts:
        assert 0 < run.mean_difference < run.max_difference
        assert 0 <= run.argmax_agreement <= run.positions
        assert run.kl_divergence > 0 and 0 <= run.same_top <= 1


def test_checks_3_and_4_find_no_kernel_fault_on_the_cpu(checked):
    _, mode = checked
    assert mode.prefill_max_difference == 0.0 and mode.prefill_same_argmax
    assert mode.prefill_tokens == 16 and mode.prefill_chunk == guide_checks.PREFILL_CHUNK
    assert [(run.operation, run.rows, run.unwritten_rows) for run in mode.sentinels] == [
        ("quantized_matmul", verify.CPU_SHAPE["n"], 0),
        ("gather_qmm", verify.CPU_SHAPE["n"], 0),
    ]


def test_three_implementations_agree_unquantized_and_part_where_the_table_says(checked):
    reference, mode = checked
    study = chat_study.run_study([MODE], cache=True)
    rows = guide_checks.three_implementations(study, reference, {MODE: mode}, chat_study.llama_cpp_pinned())
    assert rows[0]["lab_against_mlx_lm"] == (None, None, None)
    assert rows[0]["llama_cpp_against_mlx_lm"] == (None, None, None)
    ours = study.formats[0]
    assert rows[1]["lab_against_mlx_lm"] == tuple(
        first_divergence(list(c.ids), list(run.ids)) for c, run in zip(ours.continuations, mode.prompts, strict=True)
    )
    assert rows[1]["llama_cpp_against_mlx_lm"] is None  # llama.cpp's pinned run has no MLX mode


def test_an_unknown_mode_is_refused_in_the_labs_words():
    with pytest.raises(guide_checks.InputError, match="not an MLX mode"):
        guide_checks.mode_checks("q4k")
