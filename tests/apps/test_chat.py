"""lab.study.chat on its own terms: a tiny Gemma 3 written with gguf-py's writer, run against a naive
per-position forward pass written here from the formulas; what the loader refuses; the tokenizer's
rules on a toy vocabulary; re-quantizing the Linears; and the shipped file's architecture. The pinned
llama.cpp comparisons, and the shipped model's weights, are in tests/oracles/test_chat_oracle.py."""

from __future__ import annotations

import math

import gguf
import numpy as np
import pytest
from support import require_shipped_gguf

from lab.errors import InputError, LabError, NonFiniteError, ShapeError
from lab.interop.gguf import open_gguf
from lab.study import chat
from lab.study.chat import forward
from lab.study.chat.gguf_model import read_architecture
from lab.study.chat.tokenizer import CONTROL, Tokenizer
from lab.study.requantize import QuantizeError

VT = gguf.GGUFValueType
#: sizes of the tiny model: 48 is no multiple of 32, so Q8_0 cannot take the Linears that read x
TINY = {"n_embd": 48, "n_layer": 3, "n_ff": 64, "n_head": 2, "n_head_kv": 1, "head_dim": 16, "window": 4}
SPECIALS = ["<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>"]
WORDS = ["▁", "a", "b", "c", "h", "e", "l", "o", "aa", "ab", "abc", "he", "ll", "llo", "hello", "▁hello", "</s>", "\n"]


def tiny_vocabulary() -> tuple[list[str], np.ndarray, np.ndarray]:
    bytes_ = [f"<0x{value:02X}>" for value in range(256)]
    pieces = SPECIALS + bytes_ + WORDS
    scores = [-1000.0] * len(SPECIALS) + [0.0] * 256 + [-float(rank) for rank in range(len(WORDS))]
    types = [3] * len(SPECIALS) + [6] * 256 + [1] * (len(WORDS) - 2) + [4, 4]  # "</s>" and "\n" user-defined
    return pieces, np.array(scores, np.float32), np.array(types, np.int32)


def tiny_tensors(seed: int = 7) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    n_embd, n_ff, hd = TINY["n_embd"], TINY["n_ff"], TINY["head_dim"]
    n_vocab = len(tiny_vocabulary()[0])

    def linear(rows: int, cols: int) -> np.ndarray:
        return (rng.normal(0, 1, (rows, cols)) / math.sqrt(cols)).astype(np.float32)

    def norm(size: int) -> np.ndarray:
        return (1 + 0.2 * rng.normal(0, 1, size)).astype(np.float32)

    tensors = {
        "token_embd.weight": rng.normal(0, 1, (n_vocab, n_embd)).astype(np.float32),
        "output_norm.weight": norm(n_embd),
    }
    for layer in range(TINY["n_layer"]):
        shapes = {
            "attn_q": (TINY["n_head"] * hd, n_embd),
            "attn_k": (TINY["n_head_kv"] * hd, n_embd),
            "attn_v": (TINY["n_head_kv"] * hd, n_embd),
            "attn_output": (n_embd, TINY["n_head"] * hd),
            "ffn_gate": (n_ff, n_embd),
            "ffn_up": (n_ff, n_embd),
            "ffn_down": (n_embd, n_ff),
        }
        tensors |= {f"blk.{layer}.{name}.weight": linear(*shape) for name, shape in shapes.items()}
        sizes = {"attn_norm": n_embd, "attn_q_norm": hd, "attn_k_norm": hd}
        sizes |= {"post_attention_norm": n_embd, "ffn_norm": n_embd, "post_ffw_norm": n_embd}
        tensors |= {f"blk.{layer}.{name}.weight": norm(size) for name, size in sizes.items()}
    return tensors


def tiny_keys(arch: str = "gemma3") -> dict[str, tuple]:
    pieces, scores, types = tiny_vocabulary()
    keys = {
        f"{arch}.context_length": (64, VT.UINT32),
        f"{arch}.embedding_length": (TINY["n_embd"], VT.UINT32),
        f"{arch}.block_count": (TINY["n_layer"], VT.UINT32),
        f"{arch}.feed_forward_length": (TINY["n_ff"], VT.UINT32),
        f"{arch}.attention.head_count": (TINY["n_head"], VT.UINT32),
        f"{arch}.attention.head_count_kv": (TINY["n_head_kv"], VT.UINT32),
        f"{arch}.attention.key_length": (TINY["head_dim"], VT.UINT32),
        f"{arch}.attention.value_length": (TINY["head_dim"], VT.UINT32),
        f"{arch}.attention.layer_norm_rms_epsilon": (1e-6, VT.FLOAT32),
        f"{arch}.rope.freq_base": (1e6, VT.FLOAT32),
        f"{arch}.attention.sliding_window": (TINY["window"], VT.UINT32),
        f"{arch}.attention.sliding_window_pattern": (3, VT.UINT32),
        "tokenizer.ggml.model": ("llama", VT.STRING),
        "tokenizer.ggml.tokens": (pieces, VT.ARRAY, VT.STRING),
        "tokenizer.ggml.scores": (scores.tolist(), VT.ARRAY, VT.FLOAT32),
        "tokenizer.ggml.token_type": (types.tolist(), VT.ARRAY, VT.INT32),
        "tokenizer.ggml.bos_token_id": (2, VT.UINT32),
        "tokenizer.ggml.eos_token_id": (1, VT.UINT32),
        "tokenizer.ggml.add_bos_token": (True, VT.BOOL),
        "tokenizer.ggml.add_space_prefix": (False, VT.BOOL),
    }
    return keys


def write_tiny(path, *, arch="gemma3", keys=None, drop_tensors=(), tensors=None):
    """A tiny Gemma 3 file; `keys` adds or replaces metadata (None as a value drops the key)."""
    values = tiny_keys(arch) | (keys or {})
    writer = gguf.GGUFWriter(path, arch)
    for key, value in values.items():
        if value is not None:
            writer.add_key_value(key, value[0], value[1], sub_type=value[2] if len(value) > 2 else None)
    for name, array in (tensors or tiny_tensors()).items():
        if name not in drop_tensors:
            writer.add_tensor(name, array)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return chat.load(write_tiny(tmp_path_factory.mktemp("tiny") / "tiny.gguf"))


def naive_logits(tensors: dict[str, np.ndarray], ids: list[int]) -> np.ndarray:
    """Gemma 3 position by position in float64, straight from the formulas (see lab.study.chat.forward)."""
    n_embd, hd, n_head, window = TINY["n_embd"], TINY["head_dim"], TINY["n_head"], TINY["window"]
    w = {name: array.astype(np.float64) for name, array in tensors.items()}

    def norm(x, weight):
        return x / np.sqrt(np.mean(x * x) + 1e-6) * weight

    def rope(v, position, base):
        out = v.copy()
        for i in range(hd // 2):
            angle = position * base ** (-2 * i / hd)
            out[i] = v[i] * math.cos(angle) - v[i + hd // 2] * math.sin(angle)
            out[i + hd // 2] = v[i] * math.sin(angle) + v[i + hd // 2] * math.cos(angle)
        return out

    xs = [w["token_embd.weight"][token] * math.sqrt(n_embd) for token in ids]
    for layer in range(TINY["n_layer"]):
        p = f"blk.{layer}."
        sliding = layer % 3 < 2
        base = 10000.0 if sliding else 1e6
        hs = [norm(x, w[p + "attn_norm.weight"]) for x in xs]
        qs = [(w[p + "attn_q.weight"] @ h).reshape(n_head, hd) for h in hs]
        ks = [rope(norm(w[p + "attn_k.weight"] @ h, w[p + "attn_k_norm.weight"]), i, base) for i, h in enumerate(hs)]
        vs = [w[p + "attn_v.weight"] @ h for h in hs]
        out = []
        for i, x in enumerate(xs):
            heads = []
            for head in range(n_head):
                q = rope(norm(qs[i][head], w[p + "attn_q_norm.weight"]), i, base) / math.sqrt(hd)
                visible = [j for j in range(i + 1) if not sliding or i - j < window]
                scores = np.array([q @ ks[j] for j in visible])
                weights = np.exp(scores - scores.max())
                heads.append(sum(wj * vs[j] for wj, j in zip(weights / weights.sum(), visible, strict=True)))
            a = w[p + "attn_output.weight"] @ np.concatenate(heads)
            x = x + norm(a, w[p + "post_attention_norm.weight"])
            h = norm(x, w[p + "ffn_norm.weight"])
            g = w[p + "ffn_gate.weight"] @ h
            gelu = 0.5 * g * (1 + np.tanh(math.sqrt(2 / math.pi) * (g + 0.044715 * g**3)))
            f = w[p + "ffn_down.weight"] @ (gelu * (w[p + "ffn_up.weight"] @ h))
            out.append(x + norm(f, w[p + "post_ffw_norm.weight"]))
        xs = out
    return np.array([w["token_embd.weight"] @ norm(x, w["output_norm.weight"]) for x in xs])


IDS = [2, 270, 271, 272, 262, 263, 270, 276, 277, 279, 265, 266, 262]


def test_the_tiny_model_matches_a_naive_forward_pass_past_its_sliding_window(tiny):
    assert tiny.arch.is_swa == (True, True, False)
    got = tiny.logits(IDS)
    want = naive_logits(tiny_tensors(), IDS)
    assert got.dtype == np.float32 and got.shape == (len(IDS), len(tiny.tokenizer.pieces))
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-4 * np.abs(want).max())


def test_chunks_and_the_kv_cache_give_the_logits_of_one_pass(tiny, monkeypatch):
    whole = tiny.logits(IDS)
    monkeypatch.setattr(forward, "CHUNK", 5)
    np.testing.assert_allclose(tiny.logits(IDS), whole, rtol=0, atol=1e-4)
    np.testing.assert_allclose(tiny.logits(IDS, last=2), whole[-2:], rtol=0, atol=1e-4)


def test_greedy_generation_with_the_cache_follows_the_argmax_of_full_passes(tiny):
    generation = tiny.generate(IDS[:4], 8)
    ids = list(IDS[:4])
    for token in generation.ids:
        assert token == int(np.argmax(tiny.logits(ids)[-1]))
        ids.append(token)
    assert generation.prompt_ids == tuple(IDS[:4])
    assert generation.stop in (chat.STOP_END, chat.STOP_LENGTH)
    assert len(generation.ids) == 8 or generation.ids[-1] in tiny.tokenizer.eog_ids


@pytest.mark.parametrize(
    ("keys", "drop", "match"),
    [
        ({"gemma3.rope.scaling.type": ("yarn", VT.STRING)}, (), "rope.scaling.type"),
        ({"gemma3.rope.scaling.factor": (8.0, VT.FLOAT32)}, (), "scaled rope"),
        ({"gemma3.final_logit_softcapping": (30.0, VT.FLOAT32)}, (), "softcapping"),
        ({"gemma3.attn_logit_softcapping": (50.0, VT.FLOAT32)}, (), "softcapping"),
        ({"gemma3.rope.dimension_count": (8, VT.UINT32)}, (), "part of each head"),
        ({"gemma3.expert_count": (4, VT.UINT32)}, (), "expert_count"),
        ({"gemma3.attention.head_count": ([2, 2, 2], VT.ARRAY, VT.INT32)}, (), "per layer"),
        ({"gemma3.feed_forward_length": None}, (), "lacks"),
        ({}, ("blk.1.ffn_up.weight",), "lacks"),
        ({"tokenizer.ggml.model": ("gpt2", VT.STRING)}, (), "SentencePiece"),
        ({"tokenizer.ggml.merges": (["a b"], VT.ARRAY, VT.STRING)}, (), "merges"),
    ],
)
def test_what_the_forward_pass_does_not_implement_is_refused(tmp_path, keys, drop, match):
    path = write_tiny(tmp_path / "refused.gguf", keys=keys, drop_tensors=drop)
    with pytest.raises(chat.UnsupportedModelError, match=match):
        chat.load(path)


def test_another_architecture_is_refused(tmp_path):
    with pytest.raises(chat.UnsupportedModelError, match="'llama'; this forward pass runs gemma3"):
        chat.load(write_tiny(tmp_path / "llama.gguf", arch="llama"))


def test_an_untied_output_or_a_wrong_shape_is_refused(tmp_path):
    tensors = tiny_tensors() | {"output.weight": np.zeros((len(tiny_vocabulary()[0]), 48), np.float32)}
    with pytest.raises(chat.UnsupportedModelError, match="output.weight"):
        chat.load(write_tiny(tmp_path / "untied.gguf", tensors=tensors))
    tensors = tiny_tensors() | {"blk.0.attn_q.weight": np.zeros((16, 48), np.float32)}
    with pytest.raises(chat.UnsupportedModelError, match="shape"):
        chat.load(write_tiny(tmp_path / "shape.gguf", tensors=tensors))


def test_a_named_format_falls_back_where_its_blocks_do_not_divide_a_row_and_is_kept(tiny):
    blocks, fallbacks = tiny.blocks("q8_0")
    assert tiny.blocks("q8_0")[0] is blocks
    narrow = {"attn_q", "attn_k", "attn_v", "ffn_gate", "ffn_up"}  # the Linears whose rows are 48 long
    assert {fallback.layer for fallback in fallbacks} == {f"blk.{i}.{name}" for i in range(3) for name in narrow}
    assert all("48" in fallback.reason for fallback in fallbacks)
    for layer, block in enumerate(blocks):
        for name in narrow:
            assert block[name] is tiny.weights.blocks[layer][name]
        assert not np.array_equal(block["ffn_down"], tiny.weights.blocks[layer]["ffn_down"])
        assert block["attn_norm"] is tiny.weights.blocks[layer]["attn_norm"]
    generation = tiny.generate(IDS[:3], 2, quantize="q8_0")
    assert generation.quantize == "q8_0" and generation.fallbacks == fallbacks


def test_a_k_quant_stores_rows_it_cannot_hold_in_llama_cpps_fallback_type(tiny):
    from lab.formats import FORMATS

    blocks, fallbacks = tiny.blocks("q4k")  # no row of the tiny model is a multiple of 256
    stored = {fallback.layer: fallback.stored_as for fallback in fallbacks}
    narrow = {"attn_q", "attn_k", "attn_v", "ffn_gate", "ffn_up"}  # rows of 48: not even Q5_0's 32 divide them
    for layer, block in enumerate(blocks):
        for name in narrow:
            assert stored[f"blk.{layer}.{name}"] is None and block[name] is tiny.weights.blocks[layer][name]
        for name in ("attn_output", "ffn_down"):  # rows of 32 and 64: Q5_0, as llama.cpp stores them
            assert stored[f"blk.{layer}.{name}"] == "q5_0"
            expected = FORMATS["q5_0"].round_trip(tiny.weights.blocks[layer][name])
            assert np.array_equal(block[name], expected)


def test_at_most_two_formats_are_kept(tiny):
    first = tiny.blocks("q8_0")[0]
    tiny.blocks("q4_0")
    tiny.blocks("nf4")
    assert tiny.blocks("q8_0")[0] is not first


def test_a_round_trip_callable_replaces_every_linear_and_bad_ones_are_refused(tiny):
    np.testing.assert_array_equal(tiny.logits(IDS, quantize=lambda w: w), tiny.logits(IDS))
    assert not np.allclose(tiny.logits(IDS, quantize=lambda w: np.round(w, 1)), tiny.logits(IDS))
    assert tiny.generate(IDS[:3], 1, quantize=lambda w: w).quantize == "round trip"
    with pytest.raises(ShapeError):
        tiny.logits(IDS, quantize=lambda w: w[:1])
    with pytest.raises(NonFiniteError):
        tiny.logits(IDS, quantize=lambda w: w * np.nan)
    with pytest.raises(QuantizeError):
        tiny.logits(IDS, quantize=42)
    with pytest.raises(LabError, match="unknown format"):
        tiny.logits(IDS, quantize="q9_9")


@pytest.mark.parametrize("ids", [[], [10_000], "abc", [1.5], [True]])
def test_bad_token_ids_are_refused(tiny, ids):
    with pytest.raises(InputError):
        tiny.logits(ids)


def test_bad_lengths_are_refused(tiny):
    with pytest.raises(InputError, match="last"):
        tiny.logits(IDS, last=len(IDS) + 1)
    with pytest.raises(InputError, match="max_tokens"):
        tiny.generate(IDS, 0)
    with pytest.raises(InputError, match="context"):
        tiny.generate(IDS, 60)


def toy_tokenizer(add_space_prefix: bool = False) -> Tokenizer:
    pieces, scores, types = tiny_vocabulary()
    return Tokenizer(
        pieces, scores, types, bos=2, eos=1, add_bos=True, add_eos=False, add_space_prefix=add_space_prefix
    )


def _pieces(tokenizer: Tokenizer, ids: list[int]) -> list[str]:
    return [tokenizer.pieces[index] for index in ids]


def test_merges_go_by_score_then_leftmost():
    tokenizer = toy_tokenizer()
    assert _pieces(tokenizer, tokenizer.encode("hello", add_special=False)) == ["hello"]
    assert _pieces(tokenizer, tokenizer.encode(" hello", add_special=False)) == ["▁hello"]
    # "aa" outranks "ab": in "aab" the leftmost pair merges; in "aaa" the leftmost of two equal pairs
    assert _pieces(tokenizer, tokenizer.encode("aab", add_special=False)) == ["aa", "b"]
    assert _pieces(tokenizer, tokenizer.encode("aaa", add_special=False)) == ["aa", "a"]
    assert _pieces(tokenizer, tokenizer.encode("abc")) == ["<bos>", "abc"]


def test_unknown_characters_fall_back_to_bytes_and_decode_back():
    tokenizer = toy_tokenizer()
    ids = tokenizer.encode("hé", add_special=False)
    assert _pieces(tokenizer, ids) == ["h", "<0xC3>", "<0xA9>"]
    assert tokenizer.decode(ids) == "hé"
    assert tokenizer.decode(ids[:2]) == "h\ufffd"


def test_special_tokens_are_cut_only_when_asked_but_user_defined_ones_always():
    tokenizer = toy_tokenizer()
    text = "<start_of_turn>hello\n</s>"
    plain = tokenizer.encode(text, add_special=False)
    assert "\n" in _pieces(tokenizer, plain) and not {"<start_of_turn>", "</s>"} & set(_pieces(tokenizer, plain))
    assert tokenizer.decode(plain) == text
    special = _pieces(tokenizer, tokenizer.encode(text, add_special=False, parse_special=True))
    assert special == ["<start_of_turn>", "hello", "\n", "</s>"]
    # "</s>" is user-defined in the file; llama.cpp makes it a control token that ends generation
    index = tokenizer.pieces.index("</s>")
    assert tokenizer.attributes[index] & CONTROL and index in tokenizer.eog_ids
    ids = tokenizer.encode(text, add_special=False, parse_special=True)
    assert tokenizer.decode(ids) == "hello\n"
    assert tokenizer.decode(ids, special=True) == text


def test_a_space_prefix_goes_first_and_after_each_special_token_when_the_file_asks():
    tokenizer = toy_tokenizer(add_space_prefix=True)
    ids = tokenizer.encode("hello<end_of_turn>hello", add_special=False, parse_special=True)
    assert _pieces(tokenizer, ids) == ["▁hello", "<end_of_turn>", "▁hello"]


# --------------------------------------------------------------------------------------------
# The shipped file
# --------------------------------------------------------------------------------------------


def test_the_shipped_file_is_gemma_3_270m_as_llama_cpp_reads_it():
    """Metadata and tokenizer only: the weights are decoded in tests/oracles/test_chat_oracle.py."""
    with open_gguf(require_shipped_gguf()) as gf:
        arch = read_architecture(gf)
        tokenizer = Tokenizer.from_gguf(gf)
        attn_norm = gf.decode("blk.0.attn_norm.weight")
    sizes = (arch.n_layer, arch.n_embd, arch.n_ff, arch.n_head, arch.n_head_kv, arch.head_dim_k, arch.head_dim_v)
    assert sizes == (18, 640, 2048, 4, 1, 256, 256)
    assert (arch.n_vocab, arch.context_length) == (262144, 32768)
    # llama.cpp's default pattern for Gemma 3: five sliding-window layers, then one global
    assert [layer for layer, swa in enumerate(arch.is_swa) if not swa] == [5, 11, 17]
    assert (arch.rope_base, arch.rope_base_swa, arch.sliding_window) == (1e6, 1e4, 512)
    assert arch.attention_scale == 1 / 16 and arch.embedding_scale == pytest.approx(math.sqrt(640))
    assert tokenizer.eog_ids == {1, 106, 212}  # <eos>, <end_of_turn>, </s>
    assert (tokenizer.bos, tokenizer.add_bos, tokenizer.add_space_prefix) == (2, True, False)
    # the converter stored Gemma's 1 + w, so the weights are used as read
    assert float(np.mean(attn_norm)) > 1
