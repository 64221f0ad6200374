"""The chat study against llama.cpp's own re-quantizations of the same weights, pinned in
tests/data/chat_requant_reference.json by tests/data/make_chat_requant_reference.py.

llama.cpp quantized a float32 copy of the shipped file with llama_model_quantize (no importance
matrix, token_embd left in float32) to Q8_0, Q6_K, Q4_0 and IQ4_NL, and ran each on the study's
passage and prompts. Its KL divergence also carries the rounding of every activation to 8 bits,
which the lab's float32 path does not do, so the lab's KL divergence is never the larger by more
than LAB_ABOVE; where weight error dominates (the 4-bit types) the two agree within AGREE_4BIT, and
where the weights are nearly exact (Q8_0, Q6_K) llama.cpp's is HIGH_BITS_RATIO times the lab's or more.
llama.cpp's fallbacks (a Q6_K row of 640 stored as Q8_0) are the study's too, and on the float32
copy its greedy answers are the study's reference answers, token for token.
"""

from __future__ import annotations

import pytest
from support import require_shipped_gguf

from lab.formats import FORMATS
from lab.study import chat, chat_study

TYPES = {"Q8_0": "q8_0", "Q6_K": "q6_k", "Q4_0": "q4_0", "IQ4_NL": "iq4_nl"}
TYPES_BY_TITLE = {FORMATS[name].title: name for name in TYPES.values()}
#: the lab's KL may exceed llama.cpp's by at most this factor (llama.cpp's adds activation rounding)
LAB_ABOVE = 1.1
#: |lab - llama.cpp| / llama.cpp for the 4-bit types, whose weight error is most of the divergence
AGREE_4BIT = 0.15
#: at 6 and 8 bits llama.cpp's KL divergence is at least this many times the lab's (notebook 12 says so)
HIGH_BITS_RATIO = 2.0


@pytest.fixture(scope="module")
def pinned():
    return chat_study.llama_cpp_pinned()


@pytest.fixture(scope="module")
def gemma():
    return chat.load(require_shipped_gguf())


@pytest.fixture(scope="module")
def study(gemma):
    return chat_study.run_study(list(TYPES.values()), model=gemma, cache=True)


def test_the_pin_is_for_the_studys_passage_prompts_and_types(pinned):
    assert pinned is not None and pinned["made_by"] == "tests/data/make_chat_requant_reference.py"
    assert pinned["passage"] == chat_study.PASSAGE and tuple(pinned["prompts"]) == chat_study.PROMPTS
    assert {FORMATS[name].gguf_type for name in TYPES.values()} == set(TYPES) <= set(pinned)


def test_llama_cpp_read_the_same_tokens(pinned, gemma):
    assert gemma.tokenize(chat_study.PASSAGE) == pinned["f32"]["passage_ids"]
    for answer in pinned["f32"]["answers"]:
        assert gemma.tokenize(answer["prompt"]) == answer["ids"]


def test_on_the_float32_copy_llama_cpp_answers_as_the_reference_does(pinned, study):
    for mine, theirs in zip(study.reference.continuations, pinned["f32"]["answers"], strict=True):
        assert list(mine.ids) == theirs["greedy"], mine.prompt


def test_llama_cpp_falls_back_where_the_study_does(pinned, study):
    """Every Linear llama.cpp stored in another type is one the study refitted, in that type."""
    by_name = {result.name: result for result in study.formats}
    for gguf_type, name in TYPES.items():
        types = dict(pinned[gguf_type]["tensor_types"])
        # 110 float32 tensors: the norms and token_embd, which both leave alone
        assert types.pop("F32") == 110
        fallen_back = sum(count for kind, count in types.items() if kind != gguf_type)
        assert fallen_back == len(by_name[name].fallbacks), gguf_type
        for fallback in by_name[name].fallbacks:
            assert f"stored as {next(iter(set(types) - {gguf_type}))}" in fallback
    for row in chat_study.llama_cpp_rows(study, pinned):
        assert sum(row.linear_types.values()) == 18 * 7  # seven Linears in each of 18 blocks
        assert sum(
            n for kind, n in row.linear_types.items() if kind != FORMATS[TYPES_BY_TITLE[row.title]].gguf_type
        ) == (row.lab_refitted)


def test_the_lab_and_llama_cpp_measure_the_same_damage(pinned, study):
    rows = {row.title: row for row in chat_study.llama_cpp_rows(study, pinned)}
    assert set(rows) == {FORMATS[name].title for name in TYPES.values()}
    for gguf_type, name in TYPES.items():
        row = rows[FORMATS[name].title]
        assert row.lab_kl <= LAB_ABOVE * row.llama_kl, (gguf_type, row)
        assert 0 < row.llama_same_top <= 1 and 0 < row.lab_same_top <= 1
        if FORMATS[name].bits_per_weight < 5:
            assert abs(row.lab_kl - row.llama_kl) <= AGREE_4BIT * row.llama_kl, (gguf_type, row)
        else:
            # nearly exact weights: llama.cpp's 8-bit activations are most of what it measures
            assert row.llama_kl >= HIGH_BITS_RATIO * row.lab_kl, (gguf_type, row)
    # the order of damage is the same: more bits, less divergence, in both
    by_bits = sorted(TYPES.values(), key=lambda name: FORMATS[name].bits_per_weight)
    for measure in ("lab_kl", "llama_kl"):
        kls = [getattr(rows[FORMATS[name].title], measure) for name in by_bits]
        assert kls[-1] < kls[-2] < min(kls[:2]), (measure, kls)
