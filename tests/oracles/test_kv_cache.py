"""The quantized KV cache (the MLX guide's §11), in mlx-lm and in the lab's numpy model.

mlx-lm 0.32.2 cannot quantize Gemma 3's own prompt cache (RotatingKVCache.to_quantized raises), so
lab.device.verify gives it plain KVCaches, which its generate_step quantizes itself. Here: that the
stand-ins change nothing in a float run (ids and log-probabilities bit for bit), that mlx-lm's
quantized runs give the ids tests/data/make_kv_cache_reference.py pinned with mlx-lm alone, that the
lab's KV quantizer is mx.quantize's rule, and that the lab's numpy cache and mlx-lm's decode alike.
mlx-lm decodes about three tokens a second on a shared two-core CPU, so the suite runs a few.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from conftest import require_mlx_lm
from support import require_shipped_gguf

from lab.device import verify
from lab.formats import affine, mlx_layout
from lab.study import kv_study
from lab.study.chat import forward

PINNED = Path(__file__).resolve().parent.parent / "data"
KV = json.loads((PINNED / "kv_cache_reference.json").read_text())
FLOAT = json.loads((PINNED / "mlx_lm_reference.json").read_text())
SUITE_TOKENS = 6
#: the lab's numpy decodes a token in about 0.05 s on two quiet cores, but far slower beside other work
LAB_TOKENS = 10


def _departure(ids, reference):
    return next((step for step, (a, b) in enumerate(zip(ids, reference, strict=True)) if a != b), None)


def test_the_pins_are_mlx_lms_float_run_where_8_bits_keep_it_and_4_bits_leave_it():
    """The pinned runs read the same prompts as the float pins; 8 bits keep every float answer, 4 bits
    leave each somewhere, and the substitution check behind them found no difference at all."""
    assert KV["prompts"] == FLOAT["prompts"] and KV["substitution_max_difference"] == [0.0, 0.0, 0.0]
    reference = [answer["greedy"] for answer in FLOAT["formats"]["reference"]]
    assert KV["formats"]["reference"]["8"] == reference
    assert [_departure(ids, ref) for ids, ref in zip(KV["formats"]["reference"]["4"], reference, strict=True)] == [
        4,
        9,
        0,
    ]


@pytest.fixture(scope="module")
def shipped():
    require_mlx_lm()
    return require_shipped_gguf()


@pytest.fixture(scope="module")
def lab_model(shipped):
    from lab.study import chat

    return chat.load(shipped)


def test_plain_caches_give_mlx_lms_own_run_exactly(shipped):
    """The substitution: with no kv_bits, one plain KVCache per layer gives the prefill's logits at
    every position and each step's log-probabilities bit for bit as mlx-lm's own prompt cache does."""
    import mlx.core as mx
    from mlx_lm.models.cache import make_prompt_cache

    model, _config = verify.mlx_lm_model("reference")
    ids = KV["prompts"][0]["ids"]
    own = verify.decode_steps(model, ids, 4)
    plain = verify.decode_steps(model, ids, 4, prompt_cache=verify.plain_prompt_cache(model, len(ids) + 4))
    assert own[0] == plain[0] == FLOAT["formats"]["reference"][0]["greedy"][:4]
    assert np.array_equal(own[1], plain[1])
    prefill = [
        np.array(model(mx.array(ids)[None], cache=cache).astype(mx.float32))
        for cache in (make_prompt_cache(model), verify.plain_prompt_cache(model, len(ids)))
    ]
    assert np.array_equal(*prefill)


@pytest.mark.parametrize("kv_bits", [8, 4])
def test_mlx_lms_quantized_kv_cache_gives_the_pinned_ids(shipped, kv_bits):
    """The pinned greedy ids, which mlx-lm made alone; 4 bits leave the float answer at step 4."""
    prompt = KV["prompts"][0]
    got = verify.kv_quantized_greedy_ids("reference", prompt["ids"], SUITE_TOKENS, kv_bits)
    assert got == KV["formats"]["reference"][str(kv_bits)][0][:SUITE_TOKENS]


def _asymmetric(rng, shape, centre, spread):
    """[kv heads, positions, head_dim] with every group of 64 lanes off centre by its own amount."""
    groups = shape[:-1] + (shape[-1] // 64, 1)
    offsets = rng.normal(centre, spread, groups)
    widths = rng.uniform(0.01, spread, groups)
    return (offsets + widths * rng.normal(size=groups[:-1] + (64,))).reshape(shape).astype(np.float32)


@pytest.mark.parametrize("bits", [8, 4])
def test_the_labs_kv_quantizer_is_mx_quantizes_rule(mx, bits):
    """Codes, scales and biases of every group equal mx.quantize's bit for bit, for keys and for values.
    Read back, MLX's mx.dequantize rounds twice (float32 s·q, then + b); the lab rounds once, so the
    two differ by at most one float32 step of the larger of |s·q| and the value, on some lanes."""
    rng = np.random.default_rng(bits)
    keys = _asymmetric(rng, (1, 37, 256), 0.0, 8.0)
    values = _asymmetric(rng, (1, 37, 256), 3.0, 1.0)
    for tensor in (keys, values):
        ours = affine.quantize(tensor, bits, 64)
        theirs = mx.quantize(mx.array(tensor), group_size=64, bits=bits)
        packed, scales, biases = (np.array(part).reshape(-1, part.shape[-1]) for part in theirs)
        assert np.array_equal(packed, mlx_layout.pack(ours.codes.reshape(-1, 256), bits))
        assert np.array_equal(scales, ours.scales.reshape(-1, 4)) and np.array_equal(biases, ours.biases.reshape(-1, 4))
        read_back = np.array(mx.dequantize(*theirs, group_size=64, bits=bits)).reshape(-1, 64)
        codes = ours.codes.reshape(-1, 64).astype(np.float32)
        scale, bias = ours.scales.reshape(-1, 1), ours.biases.reshape(-1, 1)
        assert np.array_equal(read_back, codes * scale + bias)  # float32 throughout: two roundings
        lab = forward.kv_round_trip(tensor, bits, 64).reshape(-1, 64)
        assert np.array_equal(lab, (codes.astype(np.float64) * scale + bias).astype(np.float32))
        step = np.spacing(np.maximum(np.abs(codes * scale), np.abs(lab)))
        assert np.all(np.abs(lab - read_back) <= step)


def test_the_labs_cache_quantizes_what_it_holds_and_then_each_chunk_before_it_is_read():
    """KVCache.quantize is mlx-lm's to_quantized: what was stored is replaced by its round trip, and a
    later chunk is returned (so read by attention) already round-tripped."""
    arch = SimpleNamespace(n_layer=1, n_head_kv=1, head_dim_k=256, head_dim_v=256)
    cache = forward.KVCache(arch)
    cache.reserve(5)
    rng = np.random.default_rng(5)
    first, later = _asymmetric(rng, (1, 3, 256), 1.0, 4.0), _asymmetric(rng, (1, 2, 256), -1.0, 4.0)
    keys, _ = cache.store(0, 0, first, first + 1)
    assert np.array_equal(keys, first)
    cache.length = 3
    cache.quantize(4, 64)
    keys, values = cache.store(0, 3, later, later + 1)
    both = np.concatenate([first, later], axis=1)
    assert np.array_equal(keys, forward.kv_round_trip(both, 4, 64))
    assert np.array_equal(values, forward.kv_round_trip(both + 1, 4, 64))


def test_the_labs_numpy_cache_decodes_as_mlx_lms_does(lab_model):
    """8 bits: the lab's numpy model gives mlx-lm's pinned ids on every prompt (the first
    LAB_TOKENS). 4 bits: both leave the float answer at the same step of every prompt (4, 9 and 0);
    after that each follows its own near-ties (mlx-lm's quantized matmul sums in another order than
    numpy's float matmul), so only the ids up to that step are compared."""
    reference = [answer["greedy"] for answer in FLOAT["formats"]["reference"]]
    for index, prompt in enumerate(KV["prompts"]):
        eight = lab_model.generate(prompt["ids"], LAB_TOKENS, kv_bits=8).ids
        assert list(eight) == KV["formats"]["reference"]["8"][index][:LAB_TOKENS]
        theirs = KV["formats"]["reference"]["4"][index]
        departure = _departure(theirs, reference[index])
        four = lab_model.generate(prompt["ids"], departure + 1, kv_bits=4).ids
        assert list(four) == theirs[: departure + 1]


def test_both_tables_find_the_greedy_departure_by_teacher_forcing(shipped, lab_model):
    """The study feeds the float path and reads where each step's argmax leaves it: on the first
    prompt at 4 bits that is step 4, where both greedy runs leave it, in the lab and in mlx-lm; 8 bits
    costs a small fraction of 4 bits' KL divergence."""
    prompts = kv_study.PROMPTS[:1]
    lab = kv_study.run_study(model=lab_model, weights=["reference"], prompts=prompts, tokens=SUITE_TOKENS, cache=True)
    mlx = verify.kv_study(weights=["reference"], kv_bits=[None, 4], prompts=prompts, tokens=SUITE_TOKENS)
    rows = {row["kv_cache"]: row for row in kv_study.side_by_side(lab, mlx)}
    assert set(rows) == {"float", "4-bit g64"}
    assert rows["float"]["lab_kl"] == rows["float"]["mlx_kl"] == 0.0
    assert rows["4-bit g64"]["lab_departures"] == rows["4-bit g64"]["mlx_departures"] == (4,)
    assert rows["4-bit g64"]["changed"] == "KV only"
    eight, four = (result for result in lab.results if result.kv_bits is not None)
    assert 0 < eight.kl_divergence < four.kl_divergence / 20 and eight.departures == (None,)


def test_a_cached_table_is_read_back_without_running_a_step(lab_model):
    """The study keeps each row on disk (lab.study.cache): asked again, it decodes nothing."""

    def refuse(*_args, **_kwargs):
        raise AssertionError("a cached row was decoded again")

    asked = {"weights": ["reference"], "kv_bits": [None, 8], "prompts": kv_study.PROMPTS[:1], "tokens": 2}
    first = kv_study.run_study(model=lab_model, cache=True, **asked)
    again = kv_study.run_study(model=SimpleNamespace(path=lab_model.path, decode=refuse), cache=True, **asked)
    assert again == first and first.results[1].departures == (None,)


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"kv_bits": 7}, "number of bits 7 is not supported"),
        ({"kv_bits": 4, "kv_group_size": 48}, "group size 48 is not supported"),
        ({"forced": [2]}, "forced holds 1 token ids for 2 steps"),
    ],
)
def test_the_labs_decoding_refuses_what_it_cannot_run_in_the_labs_words(lab_model, options, words):
    from lab.errors import LabError

    with pytest.raises(LabError, match=words):
        lab_model.decode([2, 818], 2, **options)
