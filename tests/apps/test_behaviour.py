"""lab.study.behaviour: similarity, retrieval and the layer study, checked against plain numpy.

Tests that need the real model skip where it is missing and fail in CI (CI=true), as in
test_model. The independent checks are written here with plain matmul and argmax.
"""

from __future__ import annotations

import numpy as np
import pytest
from support import require_real_model

from lab.errors import InputError
from lab.formats import FORMATS, UnknownFormatError
from lab.study import behaviour, retrieval_data
from lab.study import model as sentence_model


@pytest.fixture(scope="module")
def fp32_model():
    require_real_model()
    return sentence_model.load()


@pytest.fixture(scope="module")
def retrieval_embeddings(fp32_model):
    return fp32_model.embed(list(retrieval_data.QUERIES)), fp32_model.embed(list(retrieval_data.PASSAGES))


# --------------------------------------------------------------------------------------------
# Without the model
# --------------------------------------------------------------------------------------------


def test_the_retrieval_task_has_sixty_distinct_pairs():
    assert len(retrieval_data.PAIRS) >= 60
    assert len(set(retrieval_data.QUERIES)) == len(set(retrieval_data.PASSAGES)) == len(retrieval_data.PAIRS)


def test_the_study_covers_every_registry_format_and_the_affine_widths():
    names = behaviour.study_formats()
    assert names[0] == "fp32" and set(FORMATS) <= set(names)
    assert {f"affine{bits}_g64" for bits in (2, 3, 4, 8)} <= set(names)


def test_retrieval_scoring_on_a_hand_made_case():
    # query 0 is nearest passage 0; query 1 is nearest passage 0, its right passage comes second
    queries = np.array([[1.0, 0.0], [0.8, 0.6]])
    passages = np.array([[1.0, 0.1], [0.0, 1.0]])
    score = behaviour.score_retrieval(queries, passages)
    assert score.ranks.tolist() == [1, 2]
    assert score.top1 == 0.5 and score.mrr == pytest.approx((1 + 1 / 2) / 2)


def test_margins_and_picks_on_the_hand_made_case():
    # cosines: query 0 -> (1/sqrt(1.01), 0); query 1 -> (0.86/sqrt(1.01), 0.6)
    queries = np.array([[1.0, 0.0], [0.8, 0.6]])
    passages = np.array([[1.0, 0.1], [0.0, 1.0]])
    score = behaviour.score_retrieval(queries, passages)
    np.testing.assert_allclose(score.margins, [1 / np.sqrt(1.01) - 0.0, 0.6 - 0.86 / np.sqrt(1.01)])
    assert score.picks.tolist() == [0, 0]  # query 1 is answered with passage 0, its distractor


def test_a_tie_is_a_right_answer_with_margin_zero():
    queries = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    passages = np.array([[1.0, 0.0], [2.0, 0.0], [0.0, 3.0]])  # queries 0 and 1 tie on passages 0 and 1
    score = behaviour.score_retrieval(queries, passages)
    assert score.ranks.tolist() == [1, 1, 1] and score.top1 == 1.0
    assert score.margins.tolist() == [0.0, 0.0, 1.0] and score.picks.tolist() == [0, 1, 2]


def test_spearman_matches_the_textbook_formula_without_ties():
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=20), rng.normal(size=20)
    d = behaviour.descending_ranks(a) - behaviour.descending_ranks(b)
    assert behaviour.spearman(a, b) == pytest.approx(1 - 6 * np.sum(d * d) / (20 * (20 * 20 - 1)))
    assert behaviour.descending_ranks(np.array([3.0, 1.0, 3.0])).tolist() == [1.5, 3.0, 1.5]


def test_bad_inputs_raise_typed_errors():
    with pytest.raises(InputError):
        behaviour.similarity(None, None, [])
    with pytest.raises(InputError):
        behaviour.similarity(None, None, "one string")
    with pytest.raises(UnknownFormatError):
        behaviour.embeddings("mxfp5")
    with pytest.raises(UnknownFormatError):
        behaviour.retrieval_study(formats=("fp32", "not-a-format"))
    with pytest.raises(UnknownFormatError):
        behaviour.layer_study("fp16")
    with pytest.raises(InputError):
        behaviour.score_retrieval(np.ones((3, 4)), np.ones((2, 4)))
    with pytest.raises(InputError):  # one passage: nothing to be wrong about
        behaviour.score_retrieval(np.ones((1, 4)), np.ones((1, 4)))
    with pytest.raises(UnknownFormatError):
        behaviour.retrieval_answers("q4")


def test_the_top_channels_share_is_their_terms_alone():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(50, 16))
    x[:, 7] *= 40  # one outlier channel
    w = rng.normal(size=(6, 16))
    w_hat = w + rng.normal(scale=0.01, size=w.shape)
    found = behaviour.channel_outliers("toy", w, w_hat, x, top_k=1)
    assert found.top_channels.tolist() == [7]
    delta = w_hat - w
    expected = np.sum((np.outer(x[:, 7], delta[:, 7])) ** 2) / np.sum((x @ delta.T) ** 2)
    assert found.error_share == pytest.approx(expected)


# --------------------------------------------------------------------------------------------
# On the real model
# --------------------------------------------------------------------------------------------


def test_fp32_top1_equals_a_plain_cosine_argmax(retrieval_embeddings):
    queries, passages = retrieval_embeddings
    # Written out here: normalise, score every pair, take each query's best passage.
    q = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    p = passages / np.linalg.norm(passages, axis=1, keepdims=True)
    direct = float(np.mean(np.argmax(q @ p.T, axis=1) == np.arange(len(q))))
    row = behaviour.retrieval_study(formats=("fp32",))[0]
    assert row["top1"] == pytest.approx(direct)
    assert row["mean_cosine_to_fp32"] == pytest.approx(1.0) and row["fallbacks"] == 0
    assert direct > 0.9  # the task is answerable: a float32 model gets nearly all of it


def test_fp32_margins_match_sorted_cosines(retrieval_embeddings):
    queries, passages = retrieval_embeddings
    q = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    p = passages / np.linalg.norm(passages, axis=1, keepdims=True)
    scores = q @ p.T
    order = np.argsort(-scores, axis=1)
    first, second = np.take_along_axis(scores, order[:, :2], axis=1).T
    own = np.arange(len(q))
    # Answered right: the gap down to second place. Answered wrong: below first place.
    expected = np.where(order[:, 0] == own, first - second, scores[own, own] - first)
    score = behaviour.score_retrieval(queries, passages)
    np.testing.assert_allclose(score.margins, expected, atol=1e-6)
    assert np.array_equal(score.margins >= 0, score.ranks == 1)
    assert np.array_equal(score.picks, order[:, 0])
    row = behaviour.retrieval_study(formats=("fp32",))[0]
    assert row["median_margin"] == pytest.approx(np.median(expected), abs=1e-6)


def test_two_bit_answers_account_for_every_change_of_top1():
    require_real_model()
    rows = {row["format"]: row for row in behaviour.retrieval_study(formats=("fp32", "affine2_g64"))}
    answers = behaviour.retrieval_answers("affine2_g64")
    n = len(answers.questions)
    assert (len(answers.gained) - len(answers.lost)) / n == pytest.approx(
        rows["affine2_g64"]["top1"] - rows["fp32"]["top1"]
    )
    assert len(answers.lost) >= 3  # two bits lose answers the float32 model gets right
    records = answers.records()
    for i in answers.lost:
        assert records[i]["outcome"] == "lost: now wrong"
        assert records[i]["picked"] != retrieval_data.PASSAGES[i]
    assert answers.closer > n / 2 and answers.median_shift < 0
    assert rows["affine2_g64"]["median_margin"] < rows["fp32"]["median_margin"]


def test_the_identity_round_trip_gives_fp32_answers(fp32_model, retrieval_embeddings):
    identity = sentence_model.load(quantize=lambda w: w)
    queries, passages = identity.embed(list(retrieval_data.QUERIES)), identity.embed(list(retrieval_data.PASSAGES))
    assert behaviour.score_retrieval(queries, passages).top1 == behaviour.score_retrieval(*retrieval_embeddings).top1
    sentences = list(behaviour.SIMILARITY_SENTENCES)
    same = behaviour.similarity(fp32_model, identity, sentences)
    np.testing.assert_allclose(same.per_sentence, 1.0, atol=1e-6)
    np.testing.assert_allclose(same.quantized, same.fp32, atol=1e-6)


def test_the_identity_round_trip_has_zero_layer_error(fp32_model):
    weights, inputs = behaviour.captured_inputs()
    identity = sentence_model.load(quantize=lambda w: w)
    study = behaviour.layer_errors("identity", weights, identity.linear_weights, inputs)
    assert not study.weight_error.any() and not study.output_error.any()
    assert len(study.layers) == 36 and study.disagreeing == ()


def test_the_output_error_of_one_layer_is_a_plain_matmul():
    require_real_model()
    study = behaviour.layer_study("mxfp4")
    weights, inputs = behaviour.captured_inputs()
    name = "encoder.layer.3.intermediate.dense"
    w = weights[name].astype(np.float64)
    w_hat = sentence_model.load("mxfp4").linear_weights[name].astype(np.float64)
    x = inputs[name].astype(np.float64)
    expected = np.linalg.norm(x @ (w_hat - w).T) / np.linalg.norm(x @ w.T)
    assert study.output_error[study.layers.index(name)] == pytest.approx(expected, rel=1e-9)
    assert x.shape[0] == study.tokens > 1000  # real tokens of real sentences


def test_the_layer_study_names_disagreeing_layers_and_their_outlier_channels():
    require_real_model()
    study = behaviour.layer_study("mxfp4")
    assert len(study.layers) == 36 and study.kept_float == ()
    assert -1 <= study.spearman < 0.9  # weight error alone does not order the layers' output error
    assert len(study.disagreeing) == behaviour.DISAGREEING_LAYERS
    for name in study.disagreeing:
        found = study.outliers[name]
        assert found.top_channels.size == behaviour.TOP_CHANNELS
        assert found.rms[found.top_channels].min() >= np.sort(found.rms)[-behaviour.TOP_CHANNELS]
        assert 0 < found.error_share and 0 < found.signal_share <= 1


def test_q4k_keeps_most_linears_float_and_the_rows_say_so():
    require_real_model()
    study = behaviour.layer_study("q4k")
    assert len(study.kept_float) == 30 and len(study.layers) == 6  # only output.dense rows are 1536 long
    assert behaviour.embeddings("q4k").fallbacks and len(behaviour.embeddings("q4k").fallbacks) == 30


# --------------------------------------------------------------------------------------------
# On the device: MLX's kernels inside the same forward pass
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["mxfp4", "affine4_g64"])
def test_mlx_linears_agree_with_the_lab_within_the_accumulation_bound(mx, fmt):
    require_real_model()
    from lab.device.model import run_model

    report = run_model(fmt, sentences=list(behaviour.SIMILARITY_SENTENCES[:4]))
    cpu = next(run for run in report.runs if run.device == "cpu")
    assert len(cpu.layers) == 36 and not cpu.refusals
    for layer in cpu.layers:
        assert layer.path == "mx.quantized_matmul" and not layer.refused
        # the measured difference, whatever it is, lies inside the bound derived in pane/model.py
        assert layer.max_abs_diff <= layer.bound_at_max and layer.bound_used <= 1.0
    # as measured on MLX 0.32.4's CPU: its kernel sums in another order than numpy's BLAS,
    # so some Linears differ by a few float32 ulps, and that difference reaches the embeddings
    assert max(layer.max_abs_diff for layer in cpu.layers) > 0
    assert 0 < cpu.embedding_max_abs_diff < 1e-5 and cpu.embedding_min_cosine > 1 - 1e-9
    assert report.to_markdown().count("mx.quantized_matmul") == 36


def test_the_accumulation_bound_grows_with_k_and_the_inputs():
    from lab.device.model import accumulation_bound

    x = np.array([[1.0, -2.0, 3.0]])
    m = np.array([[0.5, 0.5, 0.5], [1.0, 0.0, 0.0]])
    n = (3 - 1 + 4) * 2.0**-24
    expected = 2 * n / (1 - n) * np.array([[3.0, 1.0]])
    np.testing.assert_allclose(accumulation_bound(x, m), expected, rtol=1e-12)


def test_without_mlx_the_model_pane_says_so(monkeypatch):
    from lab.device.model import run_model
    from lab.formats import mlx_layout

    def unavailable():
        raise mlx_layout.MLXUnavailableError("MLX is not installed (simulated)")

    monkeypatch.setattr(mlx_layout, "mlx_core", unavailable)
    report = run_model("mxfp4")
    assert not report.available and report.runs == ()
    assert "simulated" in report.message and report.install_hint
    assert "MLX is not available here" in report.to_markdown()


def test_a_format_mlx_cannot_run_is_said_in_words(mx):
    from lab.device.model import run_model

    report = run_model("q8_0")
    assert report.available and report.runs == () and "MLX has no Q8_0 mode" in report.message


def test_only_formats_below_float32s_top1_lose_answers():
    study = [
        {"format": "fp32", "top1": 0.75},
        {"format": "a", "top1": 0.75},
        {"format": "b", "top1": 0.5},
        {"format": "c", "top1": 1.0},  # answers more right by chance: it loses nothing
    ]
    assert [row["format"] for row in behaviour.formats_that_lose_answers(study)] == ["b"]


def test_after_preparing_notebook_10_its_first_visit_computes_nothing(monkeypatch):
    """What labctl.py open runs before it opens the course: afterwards every call notebook 10
    makes on its first visit reads the disk cache; loading a model is an error here."""
    require_real_model()
    from lab.device import model as device_model
    from lab.teach import prepare

    lines = []
    behaviour.clear_caches()  # so every result is computed, and written, by prepare itself
    steps = prepare.prepare_notebook_10(lines.append)
    assert steps == ["retrieval study", "similarity", "answers", "layer study", "MLX pane"]
    assert f"retrieval study: {len(behaviour.study_formats())} of {len(behaviour.study_formats())}" in "\n".join(lines)

    def no_model(*_, **__):
        raise AssertionError("notebook 10 loaded a model after it was prepared")

    behaviour.clear_caches()
    monkeypatch.setattr(sentence_model, "load", no_model)
    monkeypatch.setattr(behaviour, "captured_inputs", no_model)
    study = behaviour.retrieval_study(cache=True)
    assert [row["format"] for row in study] == list(behaviour.study_formats())
    assert prepare.FIRST_FORMAT in prepare.COMPARED_FORMATS
    assert set(prepare.COMPARED_FORMATS) <= set(behaviour.study_formats())
    for name in prepare.COMPARED_FORMATS:  # everything the page's menu offers
        assert behaviour.format_similarity(name, cache=True).quantized.shape[0] == len(behaviour.SIMILARITY_SENTENCES)
        assert len(behaviour.retrieval_answers(name, cache=True).questions) == len(retrieval_data.QUERIES)
        assert behaviour.layer_study(name, cache=True).format == name
        assert device_model.run_model(name, cache=True).format == name
