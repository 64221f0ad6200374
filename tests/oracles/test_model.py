"""lab.study.model against sentence-transformers' own embeddings of all-MiniLM-L6-v2.

The oracle is tests/data/model_reference.npz, which tests/data/make_model_reference.py writes
outside CI with PyTorch and sentence-transformers (README: "Regenerating the model reference").
Tests that need the model package skip where it is missing and fail in CI (CI=true), as in
test_real_weights; erf, GELU, the round-trip checks and the format fallbacks run anywhere.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
from support import require_real_model

from lab.errors import InputError, LabError, NonFiniteError, ShapeError
from lab.formats import FORMATS, mxfp4, nvfp4, q4k
from lab.formats.registry import UnknownFormatError
from lab.study import model, real_weights
from lab.study.model import ModelConfigError
from lab.study.requantize import QuantizeError, TensorRecord, requantize

REFERENCE = Path(__file__).resolve().parents[1] / "data" / "model_reference.npz"
#: the largest |lab − sentence-transformers| allowed in any embedding component
TOLERANCE = 1e-5
#: the lab round trips the reference applied to the same 36 weights, by variant name
ROUND_TRIPS = {
    "fp32": None,
    "mxfp4_mlx": lambda w: mxfp4.quantize(w, rule="mlx").dequantize(),
    "nvfp4": lambda w: nvfp4.quantize(w).dequantize(),
}
CONFIG_FILES = ("modules.json", "sentence_bert_config.json", "config.json", "tokenizer.json", "1_Pooling/config.json")


@pytest.fixture(scope="module")
def reference() -> dict:
    with np.load(REFERENCE) as data:
        return {key: data[key] for key in data.files}


@pytest.fixture(scope="module")
def fp32_model():
    require_real_model()
    return model.load()


# --------------------------------------------------------------------------------------------
# Against sentence-transformers
# --------------------------------------------------------------------------------------------


def test_the_reference_holds_the_sentences_it_promises(reference):
    sentences = reference["sentences"].tolist()
    assert len(sentences) >= 30
    assert "" in sentences
    assert any(any("\u3040" <= c <= "\u30ff" for c in s) for s in sentences)  # Japanese kana
    assert any("ß" in s or "ö" in s for s in sentences)  # German
    assert any(any(ord(c) > 0xFFFF for c in s) for s in sentences)  # emoji, outside the BMP
    assert reference["untruncated_token_counts"].max() > 256
    assert sorted(reference["variants"].tolist()) == sorted(ROUND_TRIPS)
    versions = json.loads(str(reference["versions"]))
    assert {"sentence-transformers", "torch", "tokenizers"} <= set(versions)


def test_token_ids_are_sentence_transformers_token_ids(fp32_model, reference):
    ours = fp32_model.token_ids(reference["sentences"].tolist())
    for theirs, mine in zip(reference["token_ids"], ours, strict=True):
        assert mine == theirs[theirs >= 0].tolist()


def test_a_long_sentence_is_cut_at_the_configured_max_seq_length(fp32_model, reference):
    longest = int(reference["untruncated_token_counts"].argmax())
    ids = fp32_model.token_ids([reference["sentences"][longest].item()])[0]
    assert fp32_model.config.max_seq_length == 256  # sentence_bert_config.json, not tokenizer.json's 128
    assert len(ids) == 256 and ids[0] == 101 and ids[-1] == 102  # [CLS] … [SEP]


@pytest.mark.parametrize("variant", sorted(ROUND_TRIPS))
def test_embeddings_match_sentence_transformers(reference, variant):
    require_real_model()
    embeddings = model.load(quantize=ROUND_TRIPS[variant]).embed(reference["sentences"].tolist())
    expected = reference[f"embeddings_{variant}"]
    assert embeddings.dtype == np.float32 and embeddings.shape == expected.shape == (expected.shape[0], 384)
    assert np.abs(embeddings - expected).max() <= TOLERANCE


def test_quantized_references_differ_from_fp32_by_far_more_than_the_tolerance(reference):
    # Otherwise the quantized comparisons would not show that the round trips were applied.
    for variant in ("mxfp4_mlx", "nvfp4"):
        assert np.abs(reference[f"embeddings_{variant}"] - reference["embeddings_fp32"]).max() > 100 * TOLERANCE


def test_batching_and_order_do_not_change_a_sentence_embedding(fp32_model, reference):
    sentences = reference["sentences"].tolist()
    together = fp32_model.embed(sentences)
    one_by_one = fp32_model.embed(sentences[::-1], batch_size=1)[::-1]
    np.testing.assert_allclose(one_by_one, together, rtol=0, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(together, axis=1), 1.0, rtol=0, atol=1e-6)


# --------------------------------------------------------------------------------------------
# The shipped configuration drives the pipeline
# --------------------------------------------------------------------------------------------


def test_the_configuration_is_read_from_the_shipped_files(fp32_model):
    config = fp32_model.config
    assert (config.max_seq_length, config.hidden_size, config.num_layers, config.num_heads) == (256, 384, 6, 12)
    assert config.intermediate_size == 1536 and config.layer_norm_eps == 1e-12 and config.normalize


@pytest.fixture
def config_copy(tmp_path):
    """The packaged model's configuration files (not its weights) in a folder of their own."""
    require_real_model()
    source = model.model_folder()
    for name in CONFIG_FILES:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source / name, tmp_path / name)
    return tmp_path


def edit_json(path: Path, change) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data), encoding="utf-8")


UNSUPPORTED = {
    "tanh GELU": ("config.json", lambda c: c.update(hidden_act="gelu_new"), "hidden_act 'gelu_new'"),
    "not BERT": ("config.json", lambda c: c.update(model_type="roberta"), "model_type 'roberta'"),
    "relative positions": (
        "config.json",
        lambda c: c.update(position_embedding_type="relative_key"),
        "position_embedding_type 'relative_key'",
    ),
    "heads that do not divide": ("config.json", lambda c: c.update(num_attention_heads=5), "not a multiple of"),
    "missing eps": ("config.json", lambda c: c.pop("layer_norm_eps"), "no usable layer_norm_eps"),
    "too long": ("sentence_bert_config.json", lambda c: c.update(max_seq_length=1000), "max_seq_length 1000"),
    "CLS pooling": (
        "1_Pooling/config.json",
        lambda c: c.update(pooling_mode_cls_token=True, pooling_mode_mean_tokens=False),
        r"pooling modes \['cls_token'\]",
    ),
    "no pooling": ("modules.json", lambda c: c.pop(1), r"pipeline \['Transformer', 'Normalize'\]"),
    "lowercasing the tokenizer does not do": (
        "sentence_bert_config.json",
        lambda c: c.update(do_lower_case=True),
        None,  # set up below: the tokenizer's normalizer must not lowercase for this to be refused
    ),
}


@pytest.mark.parametrize("case", sorted(UNSUPPORTED))
def test_configurations_the_forward_pass_does_not_implement_are_refused(config_copy, case):
    file, change, message = UNSUPPORTED[case]
    edit_json(config_copy / file, change)
    if message is None:
        edit_json(config_copy / "tokenizer.json", lambda t: t["normalizer"].update(lowercase=False))
        message = "do_lower_case"
    with pytest.raises(ModelConfigError, match=message):
        model.read_config(config_copy)


def test_do_lower_case_is_accepted_when_the_tokenizer_lowercases_already(config_copy):
    edit_json(config_copy / "sentence_bert_config.json", lambda c: c.update(do_lower_case=True))
    assert model.read_config(config_copy).max_seq_length == 256


def test_a_pipeline_without_normalize_is_read_as_such(config_copy):
    edit_json(config_copy / "modules.json", lambda c: c.pop(2))
    assert not model.read_config(config_copy).normalize


@pytest.mark.parametrize(
    ("contents", "message"),
    [
        (b"[" * 5000 + b"]" * 5000, "nests lists and objects 5,000 deep"),
        (b'{"model_type": "\xff"}', "is not UTF-8 text"),
        (b'{"hidden_size": NaN}', "holds NaN"),
    ],
    ids=["5000 deep", "not UTF-8", "NaN"],
)
def test_a_config_file_that_is_not_plain_json_is_refused_in_one_line(config_copy, contents, message):
    """A model folder is outside text: its config.json is read by lab.text.read_json, so nesting that would
    reach Python's recursion limit, bytes that are not UTF-8 and NaN are a ModelConfigError, not a crash."""
    (config_copy / "config.json").write_bytes(contents)
    with pytest.raises(ModelConfigError, match=message):
        model.read_config(config_copy)


def test_a_folder_without_modules_json_is_refused(tmp_path):
    with pytest.raises(ModelConfigError, match="no modules.json"):
        model.read_config(tmp_path)


# --------------------------------------------------------------------------------------------
# Which weights the model uses, and its Linears' inputs
# --------------------------------------------------------------------------------------------


def test_linear_weights_are_the_36_encoder_linears(fp32_model):
    names = list(fp32_model.linear_weights)
    assert len(names) == 36 and names[0] == "encoder.layer.0.attention.self.query"
    assert names[-1] == "encoder.layer.5.output.dense"
    originals = real_weights.load_weights(names=[f"{name}.weight" for name in names])
    for name in names:
        assert np.array_equal(fp32_model.linear_weights[name], originals[f"{name}.weight"])
    assert fp32_model.fallbacks == ()
    with pytest.raises(ValueError, match="read-only"):
        fp32_model.linear_weights[names[0]][0, 0] = 1.0


def test_a_round_trip_replaces_exactly_the_linear_weights():
    require_real_model()
    round_trip = ROUND_TRIPS["nvfp4"]
    quantized = model.load(quantize=round_trip)
    originals = real_weights.load_weights(names=[f"{name}.weight" for name in quantized.linear_weights])
    for name, w in quantized.linear_weights.items():
        assert w.dtype == np.float32
        assert np.array_equal(w, round_trip(originals[f"{name}.weight"]))
    assert quantized.fallbacks == ()


def test_captured_inputs_are_each_linear_s_inputs_over_real_tokens(fp32_model):
    sentences = ["A man is eating food.", "", "重みは4ビットで保存されます。", "A monkey is playing drums."]
    embeddings, inputs = fp32_model.embed_with_inputs(sentences, batch_size=3)
    np.testing.assert_array_equal(embeddings, fp32_model.embed(sentences, batch_size=3))
    tokens = sum(len(ids) for ids in fp32_model.token_ids(sentences))
    assert list(inputs) == list(fp32_model.linear_weights)
    for name, rows in inputs.items():
        assert rows.dtype == np.float32 and rows.shape == (tokens, fp32_model.linear_weights[name].shape[1])
    # The output Linear reads GELU of the intermediate Linear's output, token for token.
    name = "encoder.layer.2.intermediate.dense"
    bias = real_weights.load_weights(names=[f"{name}.bias"])[f"{name}.bias"]
    expected = model.gelu(inputs[name] @ fp32_model.linear_weights[name].T + bias)
    np.testing.assert_allclose(inputs["encoder.layer.2.output.dense"], expected, rtol=1e-5, atol=1e-6)
    # Rows follow the sentences in the order given, whatever the batching.
    _, one_by_one = fp32_model.embed_with_inputs(sentences, batch_size=1)
    for name in inputs:
        np.testing.assert_allclose(one_by_one[name], inputs[name], rtol=0, atol=1e-5)


# --------------------------------------------------------------------------------------------
# Bad input
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sentences", "message"),
    [
        ([], "the list is empty"),
        ("one sentence", "not one string"),
        (("a", "b"), "not tuple"),
        (None, "not NoneType"),
        (["fine", 3], "sentence 1 is int"),
        (["fine", None], "sentence 1 is NoneType"),
    ],
)
@pytest.mark.parametrize("method", ["embed", "embed_with_inputs", "token_ids"])
def test_sentences_that_are_not_a_list_of_strings_are_refused(fp32_model, method, sentences, message):
    with pytest.raises(InputError, match=message):
        getattr(fp32_model, method)(sentences)


def test_a_batch_size_below_one_is_refused(fp32_model):
    with pytest.raises(InputError, match="batch_size"):
        fp32_model.embed(["a"], batch_size=0)


def synthetic(rows: int, cols: int) -> np.ndarray:
    return (np.random.default_rng(7).standard_normal((rows, cols)) * 0.02).astype(np.float32)


BAD_ROUND_TRIPS = {
    "drops a column": (lambda w: w[:, :-1], ShapeError, r"changed its shape from \(4, 64\) to \(4, 63\)"),
    "transposes": (lambda w: w.T, ShapeError, "changed its shape"),
    "NaN": (lambda w: np.where(w > 0, np.nan, w), NonFiniteError, "NaN or infinite weights"),
    "infinity": (lambda w: np.where(w > 0, -np.inf, w), NonFiniteError, "NaN or infinite weights"),
    "raises": (lambda w: 1 // 0, QuantizeError, "round trip failed on layer.q: ZeroDivisionError"),
    "raises a lab error": (
        lambda w: mxfp4.quantize(w[:, :5]),
        QuantizeError,
        "round trip failed on layer.q: ShapeError",
    ),
    "returns words": (lambda w: np.full(w.shape, "x"), QuantizeError, "not numbers"),
    "returns None": (lambda w: None, QuantizeError, "not numbers"),
}


@pytest.mark.parametrize("case", sorted(BAD_ROUND_TRIPS))
def test_a_round_trip_that_misbehaves_is_named_in_a_typed_error(case):
    round_trip, error, message = BAD_ROUND_TRIPS[case]
    with pytest.raises(error, match=message):
        requantize({"layer.q": synthetic(4, 64)}, round_trip)


def test_load_reports_a_misbehaving_round_trip_with_the_linear_s_name():
    require_real_model()
    with pytest.raises(ShapeError, match=r"encoder\.layer\.0\.attention\.self\.query changed its shape"):
        model.load(quantize=lambda w: w[:-1])


def test_a_round_trip_cannot_alter_the_original_weights():
    w = synthetic(4, 64)
    kept = w.copy()

    def in_place(weights):
        weights *= 2
        return weights

    linears = requantize({"layer.q": w}, in_place).weights
    assert np.array_equal(w, kept) and np.array_equal(linears["layer.q"], kept * 2)


@pytest.mark.parametrize("quantize", [42, 3.5, b"mxfp4", ["mxfp4"]])
def test_quantize_of_the_wrong_kind_is_refused(quantize):
    with pytest.raises(QuantizeError, match="quantize must be None, a format name or a round trip"):
        requantize({"layer.q": synthetic(4, 64)}, quantize)


# --------------------------------------------------------------------------------------------
# Format names, through the registry (lab.study.requantize)
# --------------------------------------------------------------------------------------------


def test_a_format_name_resolves_to_its_round_trip_and_block_size():
    w = synthetic(2, 256)
    requantized = requantize({"w": w}, "q4k", fallback_types=False)
    assert FORMATS["q4k"].block_size == 256
    assert np.array_equal(requantized.weights["w"], q4k.quantize(w).dequantize())


def test_tensors_a_format_s_block_cannot_hold_stay_float32_and_are_reported():
    narrow, wide = synthetic(4, 384), synthetic(4, 1536)
    requantized = requantize({"layer.q": narrow, "layer.out": wide}, "q4k", fallback_types=False)
    assert requantized.fallbacks == (TensorRecord("layer.q", FORMATS["q4k"].skip_reason(384)),)
    assert requantized.weights["layer.q"] is narrow
    assert np.array_equal(requantized.weights["layer.out"], q4k.quantize(wide).dequantize())


def test_the_model_reports_q4k_fallbacks_for_its_384_wide_rows():
    require_real_model()
    quantized = model.load(quantize="q4k")
    fell_back = [name for name, _ in quantized.fallbacks]
    held = sorted(set(quantized.linear_weights) - set(fell_back))
    assert len(fell_back) == 30 and held == [f"encoder.layer.{i}.output.dense" for i in range(6)]  # rows of 1536
    originals = real_weights.load_weights(names=[f"{name}.weight" for name in fell_back])
    for name in fell_back:
        assert np.array_equal(quantized.linear_weights[name], originals[f"{name}.weight"])
    embeddings = quantized.embed(["A man is eating food."])
    assert embeddings.shape == (1, 384) and np.all(np.isfinite(embeddings))


def test_an_unknown_format_name_is_refused_with_the_known_ones():
    with pytest.raises(UnknownFormatError, match=r"unknown format 'mxfp5'; the registry has mxfp4, "):
        requantize({"layer.q": synthetic(4, 64)}, "mxfp5")


def test_a_format_is_taken_as_its_name_is():
    w = synthetic(4, 64)
    by_format = requantize({"layer.q": w}, FORMATS["mxfp4"]).weights["layer.q"]
    assert np.array_equal(by_format, requantize({"layer.q": w}, "mxfp4").weights["layer.q"])


def test_every_model_error_is_a_lab_error():
    assert issubclass(ModelConfigError, LabError) and issubclass(QuantizeError, LabError)


# --------------------------------------------------------------------------------------------
# erf and GELU
# --------------------------------------------------------------------------------------------


def test_erf_matches_math_erf_on_a_fine_grid():
    grid = np.concatenate([np.linspace(-7, 7, 140_001), [0.0, 1e-300, -1e-8, 5.9, 6.0, 26.0, -40.0, 1e300]])
    expected = np.array([math.erf(x) for x in grid])
    assert np.abs(model.erf(grid) - expected).max() <= 1e-15


def test_erf_is_odd_keeps_shape_and_handles_infinities():
    x = np.linspace(0, 5, 24).reshape(2, 3, 4)
    values = model.erf(x)
    assert values.shape == (2, 3, 4) and values.dtype == np.float64
    np.testing.assert_array_equal(model.erf(-x), -values)
    np.testing.assert_array_equal(model.erf([np.inf, -np.inf]), [1.0, -1.0])
    assert np.isnan(model.erf(np.nan))
    assert model.erf(0.5).shape == () and model.erf(np.empty((0, 3))).shape == (0, 3)


def test_erf_spans_its_internal_chunks_without_seams():
    x = np.linspace(-4, 4, 3 * model._ERF_CHUNK + 17)
    whole = model.erf(x)
    assert np.array_equal(whole, np.concatenate([model.erf(part) for part in np.array_split(x, 7)]))


def test_gelu_is_the_exact_erf_form_rounded_once_to_float32():
    x = np.linspace(-10, 10, 4001, dtype=np.float32)
    expected = np.array([v * 0.5 * (1 + math.erf(v / math.sqrt(2))) for v in x.astype(np.float64)]).astype(np.float32)
    ours = model.gelu(x)
    assert ours.dtype == np.float32
    assert np.all(np.abs(ours - expected) <= np.spacing(np.abs(expected)))  # at most one float32 ulp apart
