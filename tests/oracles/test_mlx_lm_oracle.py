"""lab.device.verify against mlx-lm's own run on independently converted weights.

tests/data/mlx_lm_reference.json (tests/data/make_mlx_lm_reference.py) holds mlx-lm 0.32.2's greedy ids
and last-position logits on notebook 12's three prompts, for the unquantized model and five modes,
with the file read by gguf-py and renamed by that script, never by the lab. Here the lab's bridge
(lab.study.chat's decoders, its config and names) must give mlx-lm the same model: the same ids and the
same logits. The suite runs a few tokens per format (mlx-lm decodes about a token a second on a
shared two-core CPU); the bench runs the full twenty on every prompt.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import require_mlx_lm
from support import require_shipped_gguf

from lab.device import verify
from lab.errors import LabError
from lab.study.chat_study import first_divergence

PINNED = Path(__file__).resolve().parent.parent / "data"
DATA = json.loads((PINNED / "mlx_lm_reference.json").read_text())
LLAMA_CPP = json.loads((PINNED / "chat_requant_reference.json").read_text())
#: the formats the check outside the repo compares, and the tokens the suite decodes for each
CHECKED = ("reference", "mxfp4", "nvfp4", "affine4_g64")
SUITE_TOKENS = 6


def test_mlx_lms_unquantized_model_answers_as_llama_cpp_does():
    """Two independent implementations on the same float32 weights: mlx-lm's gemma3_text and
    llama.cpp, every greedy id of the three prompts."""
    llama = {answer["prompt"]: answer for answer in LLAMA_CPP["f32"]["answers"]}
    for prompt, answer in zip(DATA["prompts"], DATA["formats"]["reference"], strict=True):
        assert prompt["ids"] == llama[prompt["prompt"]]["ids"]
        assert answer["greedy"] == llama[prompt["prompt"]]["greedy"]


def test_the_pinned_formats_depart_where_quantization_would_have_them_depart():
    """The pins are not copies of one another: 8-bit modes keep the reference's first answer whole,
    and each 4-bit mode departs from it somewhere in the three prompts."""
    reference = [answer["greedy"] for answer in DATA["formats"]["reference"]]
    assert [answer["greedy"] for answer in DATA["formats"]["affine8_g64"]][0] == reference[0]
    for name in ("mxfp4", "nvfp4", "affine4_g64"):
        assert [answer["greedy"] for answer in DATA["formats"][name]] != reference, name


@pytest.fixture(scope="module")
def shipped():
    require_mlx_lm()
    return require_shipped_gguf()


def test_check_2_measures_at_least_the_difference_the_pins_show(shipped):
    """The logit check over every position of a prompt, mxfp4 against the reference: its max
    |difference| is at least the largest the pins show at the last position, and its argmax agreement
    there is the pins' own."""
    prompt = DATA["prompts"][1]
    check = verify.logit_check("mxfp4", prompt["ids"])
    reference, mxfp4 = DATA["formats"]["reference"][1], DATA["formats"]["mxfp4"][1]
    pinned_gap = np.max(np.abs(np.subtract(reference["spread_logits"], mxfp4["spread_logits"])))
    assert check.positions == len(prompt["ids"]) and check.max_difference >= pinned_gap - 2e-3
    assert 0 < check.mean_difference < check.max_difference
    assert check.argmax_agreement <= check.positions
    same_last = reference["top_ids"][0] == mxfp4["top_ids"][0]
    assert check.argmax_agreement >= int(same_last)
    itself = verify.logit_check("reference", prompt["ids"])
    assert (itself.max_difference, itself.argmax_agreement) == (0.0, itself.positions)


def test_check_3_one_shot_and_chunked_prefill_agree_on_a_correct_kernel(shipped):
    """On the CPU, where no kernel is known to skip rows, prefill in chunks of 4 ends where one pass does."""
    ids = DATA["prompts"][2]["ids"]
    check = verify.prefill_check("mxfp4", ids, 4)
    assert check.tokens == len(ids) and check.argmax_one_shot == check.argmax_chunked
    assert check.argmax_one_shot == DATA["formats"]["mxfp4"][2]["top_ids"][0]
    assert check.max_difference < 0.05


@pytest.mark.parametrize(
    ("prompt_ids", "tokens", "kv_bits", "kv_group_size", "words"),
    [
        ([2] * 500, 13, 8, 64, "pass the model's sliding window of 512"),
        ([2, 818], 2, 7, 64, "number of bits 7 is not supported"),
        ([2, 818], 2, 4, 48, "group size 48 is not supported"),
        ([2, 818], 2, None, 64, "kv_bits must be a width"),
    ],
)
def test_a_quantized_kv_cache_the_stand_ins_cannot_run_is_refused_in_the_labs_words(
    shipped, prompt_ids, tokens, kv_bits, kv_group_size, words
):
    """mlx-lm's quantized KV cache runs on Gemma 3 through plain caches standing in for its rotating
    ones (tests/oracles/test_kv_cache.py), which hold the same keys only inside the sliding window."""
    with pytest.raises(LabError, match=words):
        verify.kv_quantized_greedy_ids("reference", prompt_ids, tokens, kv_bits, kv_group_size)


@pytest.mark.parametrize("fmt", CHECKED)
def test_the_bridge_gives_mlx_lm_the_model_it_ran_on_independently_converted_weights(shipped, fmt):
    """greedy_ids as pinned (the suite's first tokens of the first prompt), and the last position's
    top 20 and a spread of 100 ids across the vocabulary on every prompt, to float32 noise."""
    import mlx.core as mx

    prompt = DATA["prompts"][0]
    pinned = DATA["formats"][fmt][0]["greedy"]
    assert verify.greedy_ids(fmt, prompt["ids"], SUITE_TOKENS) == pinned[:SUITE_TOKENS]
    model, _config = verify.mlx_lm_model(fmt)
    for prompt, pinned in zip(DATA["prompts"], DATA["formats"][fmt], strict=True):
        logits = np.array(model(mx.array(prompt["ids"])[None])[0, -1].astype(mx.float32))
        assert int(np.argmax(logits)) == pinned["top_ids"][0]
        np.testing.assert_allclose(logits[pinned["top_ids"]], pinned["top_logits"], atol=2e-3, rtol=0)
        np.testing.assert_allclose(logits[DATA["spread_ids"]], pinned["spread_logits"], atol=2e-3, rtol=0)


@pytest.mark.parametrize(
    ("fmt", "prompt_ids", "tokens", "words"),
    [
        ("q4k", [2, 818], 2, "not a format mlx-lm quantizes to"),
        ("MXFP4", [2, 818], 2, "not a format mlx-lm quantizes to"),
        ("mxfp4", [], 2, "no token ids"),
        ("mxfp4", [2, 262144], 2, "prompt id 1 is 262144"),
        ("mxfp4", [2, -1], 2, "prompt id 1 is -1"),
        ("mxfp4", [2, True], 2, "prompt id 1 is True"),
        ("mxfp4", [2, 818], -1, "count of tokens"),
        ("mxfp4", [2, 818], 2.0, "count of tokens"),
        ("mxfp4", [2] * 30000, 10000, "pass the model's context"),
    ],
)
def test_requests_the_recipe_cannot_run_are_refused_in_the_labs_words(shipped, fmt, prompt_ids, tokens, words):
    with pytest.raises(LabError, match=words):
        verify.greedy_ids(fmt, prompt_ids, tokens)


def test_every_mlx_mode_of_the_registry_is_one_greedy_ids_takes():
    modes = verify.mlx_modes()
    assert set(CHECKED[1:]) <= set(modes) and "q4k" not in modes
    assert {mode.mode for mode in modes.values()} == {"affine", "mxfp4", "mxfp8", "nvfp4"}


@pytest.mark.parametrize("operation", ["quantized_matmul", "gather_qmm"])
@pytest.mark.parametrize("name", ["affine4_g64", "mxfp4", "nvfp4"])
def test_check_4_finds_every_row_written_on_the_cpu(mx, operation, name):
    check = verify.sentinel_check(operation, verify.mlx_modes()[name], verify.CPU_SHAPE)
    assert (check.rows, check.unwritten_rows, check.max_difference) == (verify.CPU_SHAPE["n"], 0, 0.0)
    assert check.rows > 4096 and check.rows % 64 != 0  # past a tile boundary, off the 64-row grid


@pytest.mark.parametrize(
    ("reference", "candidate", "index", "words"),
    [
        ([5, 6, 7], [5, 6, 7], None, "exact match on all 3 tokens"),
        ([5, 6, 7], [5, 9, 7], 1, "red flag"),
        (list(range(20)), list(range(12)) + [99] * 8, 12, "diverged at token 12 of 20: a near-tie"),
        ([5, 6, 7], [5, 6], 2, "red flag"),
    ],
)
def test_check_1_reads_a_divergence_as_the_guide_does(reference, candidate, index, words):
    assert first_divergence(reference, candidate) == index
    assert words in verify.divergence_reading(index, len(reference))


@pytest.mark.parametrize(
    ("max_difference", "words"),
    [(0.31, "noise band"), (1.3, "noise band"), (2.0, "between the guide's bands"), (3.3, "corruption band")],
)
def test_check_2_places_a_difference_on_the_guides_bands(max_difference, words):
    assert words in verify.LogitCheck(4, max_difference, max_difference / 2, 4).band


@pytest.mark.parametrize("name", ["affine4_g64", "mxfp4", "nvfp4", "mxfp8"])
def test_the_embedding_quantized_a_slice_at_a_time_is_mlxs_own_layer_byte_for_byte(mx, name):
    """What quantize_model's default predicate does to the embedding (from_embedding), in slices
    that end mid-table, so the bridge's quantized model is mlx-lm's."""
    import mlx.nn as nn

    require_mlx_lm()
    mode = verify.mlx_modes()[name]
    mx.random.seed(7)
    table = nn.Embedding(1000, 256)
    table.weight = mx.random.normal((1000, 256)) * mx.linspace(0.01, 3.0, 1000)[:, None]
    whole = nn.QuantizedEmbedding.from_embedding(table, mode.group_size, mode.bits, mode=mode.mode)
    sliced = verify.quantized_embedding(table, mode, rows_at_once=384)
    for part in ("weight", "scales", "biases"):
        expected, got = getattr(whole, part, None), getattr(sliced, part, None)
        assert (expected is None) == (got is None), part
        if expected is not None:
            assert mx.array_equal(expected, got).item(), part
    assert (sliced.group_size, sliced.bits, sliced.mode) == (mode.group_size, mode.bits, mode.mode)
