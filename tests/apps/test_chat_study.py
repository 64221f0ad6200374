"""The chat-model study's measures, on small inputs: KL divergence, same top token and NLL as llama.cpp's
perplexity tool defines them, the first divergence of a greedy answer, the cache, and bad prompts."""

from __future__ import annotations

import numpy as np
import pytest
from support import require_shipped_gguf

from lab.errors import InputError
from lab.study import chat_study

pytestmark = pytest.mark.slow  # every test here runs the 270 M-weight model


@pytest.fixture(scope="module")
def model():
    require_shipped_gguf()
    from lab.study import chat

    return chat.load()


def test_the_measures_are_llama_cpp_perplexity_tools(model):
    # longer than two of _measure's chunks of MEASURE_ROWS positions, so the chunks' sums are checked too
    ids = np.asarray(model.tokenize(chat_study.PASSAGE[:240]), dtype=np.int64)
    assert ids.size > 2 * chat_study.MEASURE_ROWS + 1
    reference = chat_study.log_softmax(model.logits(ids)[:-1])
    kept, kl, same, nll = chat_study._measure(model, ids, "q4_0", reference)
    assert kept is None  # a format's log-probabilities are not kept: only the reference's are
    # by hand, in float64, from the two models' whole logit arrays
    log_p = chat_study.log_softmax(model.logits(ids, quantize="q4_0")[:-1])
    p = np.exp(reference)
    assert kl == pytest.approx(float(np.mean(np.sum(p * (reference - log_p), axis=-1))), rel=1e-12)
    assert same == pytest.approx(float(np.mean(reference.argmax(-1) == log_p.argmax(-1))))
    assert nll == pytest.approx(float(-np.mean(log_p[np.arange(ids.size - 1), ids[1:]])))
    assert kl > 0 and 0 < same <= 1
    _, kl_self, same_self, _ = chat_study._measure(model, ids, None, reference)
    assert kl_self == pytest.approx(0.0, abs=1e-12) and same_self == 1.0
    # measuring the reference itself keeps its log-probabilities, all of them, for the formats after it
    kept_reference, _, _, nll_reference = chat_study._measure(model, ids, None, None)
    np.testing.assert_array_equal(kept_reference, reference)
    assert nll_reference == pytest.approx(float(-np.mean(reference[np.arange(ids.size - 1), ids[1:]])))


def test_a_study_reads_back_from_the_cache_without_the_model(model, monkeypatch, tmp_path):
    monkeypatch.setenv("LAB_CACHE_DIR", str(tmp_path))
    short = {"passage": "Four bits a weight.", "prompts": ("The capital of France is",), "tokens": 6}
    cold = chat_study.run_study(["q8_0"], model=model, cache=True, **short)
    (answer,) = cold.formats[0].continuations
    assert answer.agreeing + answer.departing == answer.text
    assert cold.reference.continuations[0].first_divergence is None
    from lab.study import chat

    monkeypatch.setattr(chat, "load", lambda *a: pytest.fail("the model was loaded for a warm study"))
    warm = chat_study.run_study(["q8_0"], cache=True, **short)
    assert warm.rows() == cold.rows() and warm.formats == cold.formats
    # the token count is the tokenizer's, and a warm study says it as the cold one did
    tokens = len(model.tokenize(short["passage"]))
    assert warm.passage_tokens == cold.passage_tokens == tokens
    assert [result.passage_tokens for result in warm.formats] == [tokens]


@pytest.mark.parametrize(
    ("prompt", "message"),
    [("", "it is empty"), ("   \n", "it is empty"), ("word " * 400, "the study reads at most 256")],
)
def test_a_bad_prompt_is_refused_in_the_labs_words(model, prompt, message):
    with pytest.raises(InputError, match=message):
        chat_study.answers(prompt, ["q4_0"], model=model)
