"""lab.study.imatrix's capture and checks on a tiny Gemma 3 built here, and lab.study.calibration's
texts; on the shipped chat model, one short window. The file forms against llama.cpp's layout are in
tests/oracles/test_imatrix_files.py."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from support import require_shipped_gguf

from lab.errors import InputError
from lab.study import calibration, imatrix
from lab.study.chat import ChatModel, forward
from lab.study.chat.gguf_model import LINEARS, Architecture, Weights
from lab.study.imatrix import ImatrixEntry, ImatrixError, ImatrixModelError

N_EMBD, N_FF, N_HEAD, N_HEAD_KV, HEAD_DIM, N_VOCAB = 32, 48, 2, 1, 16, 40
SHARED_INPUT = (("attn_q", "attn_k", "attn_v"), ("ffn_gate", "ffn_up"))


@pytest.fixture(scope="module")
def tiny() -> ChatModel:
    """Two blocks, the first sliding-window, with outputs [out, in] of every Linear's own width."""
    rng = np.random.default_rng(39)
    arch = Architecture(
        context_length=64,
        n_vocab=N_VOCAB,
        n_embd=N_EMBD,
        n_layer=2,
        n_ff=N_FF,
        n_head=N_HEAD,
        n_head_kv=N_HEAD_KV,
        head_dim_k=HEAD_DIM,
        head_dim_v=HEAD_DIM,
        rms_eps=1e-6,
        rope_base=1e6,
        rope_base_swa=1e4,
        sliding_window=8,
        is_swa=(True, False),
        attention_scale=HEAD_DIM**-0.5,
    )
    shapes = {
        "attn_q": (N_HEAD * HEAD_DIM, N_EMBD),
        "attn_k": (N_HEAD_KV * HEAD_DIM, N_EMBD),
        "attn_v": (N_HEAD_KV * HEAD_DIM, N_EMBD),
        "attn_output": (N_EMBD, N_HEAD * HEAD_DIM),
        "ffn_gate": (N_FF, N_EMBD),
        "ffn_up": (N_FF, N_EMBD),
        "ffn_down": (N_EMBD, N_FF),
    }
    norms = {"attn_norm": N_EMBD, "attn_q_norm": HEAD_DIM, "attn_k_norm": HEAD_DIM}
    norms |= {"post_attention_norm": N_EMBD, "ffn_norm": N_EMBD, "post_ffw_norm": N_EMBD}
    blocks = tuple(
        {name: (rng.normal(0, 1, shape) / math.sqrt(shape[1])).astype(np.float32) for name, shape in shapes.items()}
        | {name: (1 + 0.3 * rng.normal(0, 1, size)).astype(np.float32) for name, size in norms.items()}
        for _ in range(arch.n_layer)
    )
    weights = Weights(
        token_embd=rng.normal(0, 1, (N_VOCAB, N_EMBD)).astype(np.float32),
        output_norm=np.ones(N_EMBD, np.float32),
        blocks=blocks,
    )
    return ChatModel(Path("tiny.gguf"), arch, weights, tokenizer=None)


def windows(count: int, length: int, seed: int = 3) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, N_VOCAB, (count, length))


def test_capture_collects_every_block_linear_with_the_rows_it_read(tiny):
    ids = windows(3, 24)
    entries = imatrix.capture(tiny, ids)
    assert list(entries) == list(imatrix.linear_inputs(tiny))
    for layer in range(2):
        for name in LINEARS:
            entry = entries[f"blk.{layer}.{name}.weight"]
            assert entry.count == ids.size and entry.values.dtype == np.float32
            assert entry.values.size == tiny.weights.blocks[layer][name].shape[1]
        for group in SHARED_INPUT:
            first = entries[f"blk.{layer}.{group[0]}.weight"].values
            for name in group[1:]:
                np.testing.assert_array_equal(entries[f"blk.{layer}.{name}.weight"].values, first)


def test_the_first_block_s_query_input_is_the_normed_embedding_squared_and_summed(tiny):
    ids = windows(2, 20, seed=5)
    entries = imatrix.capture(tiny, ids)
    arch, weights = tiny.arch, tiny.weights
    x = weights.token_embd[ids.ravel()].astype(np.float64) * math.sqrt(N_EMBD)
    normed = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + arch.rms_eps) * weights.blocks[0]["attn_norm"]
    np.testing.assert_allclose(entries["blk.0.attn_q.weight"].values, np.sum(normed**2, axis=0), rtol=2e-6)


def test_every_linear_s_sums_are_those_of_the_inputs_the_forward_pass_gives_it(tiny):
    ids = windows(2, 18, seed=11)
    inputs: dict[str, list[np.ndarray]] = {}

    def recorded(h, layer, name):
        inputs.setdefault(f"blk.{layer}.{name}.weight", []).append(h.astype(np.float64))
        return h @ tiny.weights.blocks[layer][name].T

    for window in ids:
        tiny.logits(window.tolist(), linear=recorded)
    entries = imatrix.capture(tiny, ids)
    for key, seen in inputs.items():
        rows = np.concatenate(seen)
        np.testing.assert_allclose(entries[key].values, np.sum(rows**2, axis=0), rtol=1e-6)
        assert entries[key].count == rows.shape[0]


def test_windows_add_up_and_each_starts_from_an_empty_cache(tiny):
    first, second = windows(1, 20, seed=1), windows(1, 20, seed=2)
    together = imatrix.capture(tiny, np.concatenate([first, second]))
    apart = imatrix.capture(tiny, first), imatrix.capture(tiny, second)
    for key, entry in together.items():
        np.testing.assert_allclose(entry.values, apart[0][key].values + apart[1][key].values, rtol=1e-6)
        assert entry.count == apart[0][key].count + apart[1][key].count == 40


def test_a_product_over_fewer_than_16_rows_is_skipped_as_llama_imatrix_skips_it(tiny, monkeypatch):
    monkeypatch.setattr(forward, "CHUNK", 20)
    whole = imatrix.capture(tiny, windows(1, 36))  # chunks of 20 and 16: both collected
    assert whole["blk.1.ffn_down.weight"].count == 36
    cut = imatrix.capture(tiny, windows(1, 30))  # chunks of 20 and 10: the 10 are not
    assert cut["blk.1.ffn_down.weight"].count == 20


@pytest.mark.parametrize(
    ("bad", "words"),
    [
        (windows(1, 15), "skips products of fewer than 16 rows"),
        (windows(1, 65), "do not fit the model's context of 64"),
        (np.full((1, 20), N_VOCAB), f"0..{N_VOCAB - 1}"),
        (np.full((1, 20), -1), f"0..{N_VOCAB - 1}"),
        (np.zeros((1, 20), np.float32), "whole numbers"),
        (np.zeros((1, 20), bool), "whole numbers"),
        ([[1] * 20, [1] * 19], "the same length"),
        (np.zeros(20, np.int64), "one row per window"),
        (np.zeros((0, 20), np.int64), "one row per window"),
    ],
)
def test_bad_windows_are_refused_in_the_lab_s_words(tiny, bad, words):
    with pytest.raises(InputError, match=words):
        imatrix.capture(tiny, bad)


def test_importance_is_the_mean_square_llama_quantize_divides_out():
    entry = ImatrixEntry(np.array([3.0, 0.0, 7.5], np.float32), 3)
    importance = imatrix.importance(entry)
    assert importance.dtype == np.float32
    np.testing.assert_array_equal(importance, np.float32([3.0, 0.0, 7.5]) / np.float32(3))
    # an entry that collected nothing weighs every column alike, as llama-quantize fills it with ones
    np.testing.assert_array_equal(imatrix.importance(ImatrixEntry(np.zeros(2), 0)), [1.0, 1.0])


@pytest.mark.parametrize(
    ("values", "count", "words"),
    [
        ([1.0, np.nan], 2, "finite"),
        ([1.0, np.inf], 2, "finite"),
        ([1e39, 1.0], 2, "finite"),  # past float32's range
        ([1.0, -0.5], 2, "negative"),
        ([[1.0, 2.0]], 2, "one sum per input column"),
        ([], 2, "one sum per input column"),
        (["a", "b"], 2, "numbers"),
        ([1.0, 2.0], -1, "whole number"),
        ([1.0, 2.0], 2.5, "whole number"),
        ([1.0, 2.0], True, "whole number"),
        ([1.0, 2.0], 0, "count of 0"),
    ],
)
def test_an_entry_is_checked_when_made(values, count, words):
    with pytest.raises(ImatrixError, match=words):
        ImatrixEntry(values, count)


def test_an_entry_s_values_are_its_own_and_read_only():
    source = np.array([1.0, 2.0], np.float32)
    entry = ImatrixEntry(source, 4)
    source[0] = 9.0
    assert entry.values[0] == 1.0 and not entry.values.flags.writeable


def test_an_imatrix_for_another_model_is_refused(tiny, tmp_path):
    entries = imatrix.capture(tiny, windows(1, 16))
    imatrix.check_for_model({"blk.0.ffn_down.weight": entries["blk.0.ffn_down.weight"]}, tiny)  # a part is fine
    with pytest.raises(ImatrixModelError, match=r"'blk\.2\.attn_q\.weight' \(and 1 more\).*another model"):
        imatrix.check_for_model(
            entries
            | {
                "blk.2.attn_q.weight": ImatrixEntry(np.ones(N_EMBD), 16),
                "output.weight": entries["blk.0.attn_q.weight"],
            },
            tiny,
        )
    wider = entries | {"blk.1.ffn_down.weight": ImatrixEntry(np.ones(N_FF + 16), 16)}
    with pytest.raises(ImatrixModelError, match=f"has {N_FF + 16} columns.*takes {N_FF} inputs"):
        imatrix.check_for_model(wider, tiny)
    path = imatrix.write_imatrix_gguf(tmp_path / "wider.imatrix.gguf", wider)
    with pytest.raises(ImatrixModelError, match="another model"):
        imatrix.read_imatrix(path, model=tiny)
    assert imatrix.read_imatrix(path).keys() == wider.keys()  # without a model, nothing to check against


def test_the_calibration_and_evaluation_texts_share_no_topic_and_no_paragraph():
    calibration_topics, evaluation_topics = calibration.calibration_topics(), calibration.evaluation_topics()
    assert calibration_topics and evaluation_topics
    assert not set(calibration_topics) & set(evaluation_topics)
    text = calibration.calibration_text()
    paragraphs = [part for part in calibration.evaluation_text().split("\n\n") if len(part) >= 80]
    assert paragraphs and not [part for part in paragraphs if part in text]
    # whitespace normalised: no tab, no trailing space, never two blank lines in a row
    for body in (text, calibration.evaluation_text()):
        assert "\t" not in body and "\n\n\n" not in body and body.endswith("\n")
        assert all(line == line.rstrip() for line in body.splitlines())


def test_the_texts_are_the_same_on_every_call_and_say_where_they_come_from():
    assert calibration.calibration_text() == calibration.calibration_text()
    facts = calibration.provenance()
    assert facts["source"].startswith("pydoc_data.topics of CPython ") and facts["licence"] == calibration.LICENCE
    assert len(facts["calibration_sha256"]) == 64 and facts["calibration_sha256"] != facts["evaluation_sha256"]


def test_token_windows_cut_as_llama_imatrix_cuts_a_text():
    ids = np.arange(100, 111)  # 11 tokens: two windows of 5, the last token dropped
    cut = calibration.token_windows(ids, 5, bos=2)
    assert cut.dtype == np.int32
    np.testing.assert_array_equal(cut, [[2, 101, 102, 103, 104], [2, 106, 107, 108, 109]])  # replaced, not prepended
    np.testing.assert_array_equal(calibration.token_windows(ids, 5, bos=None)[:, 0], [100, 105])
    for length in (0, -3, 2.5, True):
        with pytest.raises(InputError, match="whole number of tokens"):
            calibration.token_windows(ids, length, bos=2)
    with pytest.raises(InputError, match="11 tokens do not fill one window of 12"):
        calibration.token_windows(ids, 12, bos=2)
    with pytest.raises(InputError, match="flat sequence"):
        calibration.token_windows(ids.reshape(1, -1), 5, bos=2)


def test_the_texts_hold_enough_tokens_of_the_chat_model():
    require_shipped_gguf()
    from lab.study import chat

    tokenizer = chat.load_tokenizer()
    assert len(tokenizer.encode(calibration.calibration_text())) >= 4000
    assert len(tokenizer.encode(calibration.evaluation_text())) >= 2000
    cut = calibration.calibration_windows()
    assert cut.shape[1] == calibration.WINDOW_TOKENS == 512 and cut.shape[0] >= 7  # llama-imatrix wants two or more
    assert (cut[:, 0] == tokenizer.bos).all() and (calibration.evaluation_windows(256)[:, 0] == tokenizer.bos).all()


def test_capture_on_the_chat_model_over_one_short_window():
    require_shipped_gguf()
    from lab.study import chat

    model = chat.load()
    window = calibration.calibration_windows(48)[:1]
    entries = imatrix.capture(model, window)
    assert entries.keys() == imatrix.linear_inputs(model).keys() and len(entries) == 7 * model.arch.n_layer
    imatrix.check_for_model(entries, model)
    for layer in range(model.arch.n_layer):
        for group in SHARED_INPUT:
            first = entries[f"blk.{layer}.{group[0]}.weight"].values
            for name in group[1:]:
                np.testing.assert_array_equal(entries[f"blk.{layer}.{name}.weight"].values, first)
    for entry in entries.values():
        assert entry.count == 48 and (entry.values >= 0).all() and entry.values.any()
