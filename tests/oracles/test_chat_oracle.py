"""lab.study.chat against llama.cpp, pinned in tests/data/chat_reference.json by
tests/data/make_chat_reference.py (llama-cpp-python 0.3.36, CPU).

The arithmetic truth is one: the shipped file's weights decoded to float32, run through Gemma 3.
llama.cpp ran it on a float32 copy of the file (every tensor dequantized by ggml; the pinned weight
samples show the copy holds exactly what the lab decodes), so there the only differences are the
kernels' own roundings: ggml looks GELU up in a float16 table, and sums in another order. The lab
must give the same token ids on the battery, logits within F32_TOLERANCE of llama.cpp's with the same
top token, and the same greedy continuation, on every pinned prompt.

On the file as shipped, llama.cpp's quantized kernels also round each activation vector to 8 bits
before the integer dot product (Q8_0 blocks of 32 against the Q5_0 and Q8_0 weights, Q8_K blocks of
256 against Q4_K and Q6_K: each type's vec_dot_type); the lab multiplies the decoded weights by
float32 activations. That is other arithmetic, not an error, and a touchy one: Gemma's activations
have outliers, which make one 8-bit step large, so in an emulation of that rounding a relative change
of 1e-6 in the inputs moves the logits by about 1, where the float32 path moves by 1e-4. So the
difference is reported (printed, with -s) and held only to the loose Q4_K_M_BOUND, and the top token
must agree only where llama.cpp's own margin between its best two tokens is wider than the difference.

Greedy continuations are checked by teacher forcing: one pass over the prompt and llama.cpp's greedy
tokens, whose argmax at each position must be llama.cpp's next token, which by induction is the same
greedy continuation. One prompt also runs the lab's own generate(), with its KV cache.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import numpy as np
import pytest
from support import require_shipped_gguf

from lab.interop.gguf import decode_raw, open_gguf
from lab.study import chat, shipped_gguf

REFERENCE = Path(__file__).resolve().parents[1] / "data" / "chat_reference.json"
F32_TOLERANCE = 0.02
#: the loose bound on |lab - llama.cpp| for the shipped Q4_K_M run (8-bit activations on llama.cpp's side)
Q4_K_M_BOUND = 2.0


@pytest.fixture(scope="module")
def reference():
    return json.loads(REFERENCE.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def gemma():
    return chat.load(require_shipped_gguf())


@pytest.fixture(scope="module")
def forced(gemma, reference):
    """Per prompt, the lab's logits over the prompt followed by llama.cpp's greedy tokens on the float32 copy."""
    runs = {}
    for run in reference["f32"]:
        runs[run["prompt"]] = gemma.logits(run["ids"] + run["greedy"][:-1], last=len(run["greedy"]))
    return runs


def test_the_reference_was_made_from_the_shipped_file(reference):
    path = require_shipped_gguf()
    package = importlib.import_module(shipped_gguf.MODULE)
    assert reference["file_sha256"] == package.EXPECTED_SHA256
    assert path.name == package.MODEL_NAME
    assert reference["llama_cpp_python"] == "0.3.36"


def test_llama_cpp_ran_exactly_the_weights_the_lab_decodes(reference):
    with open_gguf(require_shipped_gguf()) as gf:
        assert set(reference["f32_weights"]) == {info.name for info in gf.tensors}
        for name, sample in reference["f32_weights"].items():
            if name == "token_embd.weight":
                # row by row: the whole embedding would be another 671 MB next to the model's
                rows, cols = np.divmod(np.array(sample["positions"]), gf.tensor(name).shape[1])
                raw = gf.raw(name)
                got = np.array(
                    [decode_raw(raw[row : row + 1], "Q8_0")[0, col] for row, col in zip(rows, cols, strict=True)]
                )
            else:
                got = gf.decode(name).reshape(-1)[sample["positions"]]
            np.testing.assert_array_equal(got, np.array(sample["values"], np.float32), err_msg=name)


def test_the_tokenizer_gives_llama_cpps_ids_on_the_battery(gemma, reference):
    require_shipped_gguf()
    for row in reference["battery"]:
        text = row["text"]
        assert gemma.tokenize(text, special=False) == row["plain"], repr(text)
        assert gemma.tokenize(text, special=True) == row["special"], repr(text)
        assert gemma.tokenize(text, add_bos=False, special=False) == row["no_bos"], repr(text)
        assert gemma.detokenize(row["plain"]) == row["pieces"], repr(text)
        assert gemma.detokenize(row["special"], special=True) == row["pieces_special"], repr(text)


def test_token_attributes_and_end_of_generation_ids_are_llama_cpps(gemma, reference):
    require_shipped_gguf()
    attributes = gemma.tokenizer.attributes
    pinned = np.full(attributes.shape, 4, np.int32)  # LLAMA_TOKEN_ATTR_NORMAL
    for attribute, ids in reference["vocabulary"]["attributes"].items():
        pinned[ids] = int(attribute)
    # llama.cpp also marks control tokens named "unused" as UNUSED, which only its sampler reads
    unused = 2
    np.testing.assert_array_equal(attributes, pinned & ~unused)
    assert gemma.tokenizer.eog_ids == set(reference["vocabulary"]["eog"])


def _first_step(run: dict, logits: np.ndarray, spread_ids: list[int]) -> tuple[float, np.ndarray, np.ndarray]:
    """The largest |lab - llama.cpp| over the pinned top-50 and spread ids, and the two top-50 vectors."""
    top = np.array(run["top_ids"])
    pinned = np.concatenate([run["top_logits"], run["spread_logits"]]).astype(np.float32)
    ours = np.concatenate([logits[top], logits[spread_ids]])
    return float(np.abs(ours - pinned).max()), ours[: top.size], pinned[: top.size]


def test_on_the_float32_copy_logits_agree_within_the_tolerance_with_the_same_top_token(forced, reference):
    require_shipped_gguf()
    worst = 0.0
    for run in reference["f32"]:
        logits = forced[run["prompt"]][0]
        difference, _, _ = _first_step(run, logits, reference["spread_ids"])
        worst = max(worst, difference)
        assert difference <= F32_TOLERANCE, (run["prompt"][:40], difference)
        assert int(np.argmax(logits)) == run["top_ids"][0], run["prompt"][:40]
        assert abs(float(np.abs(logits).max()) - run["max_abs_logit"]) <= F32_TOLERANCE
    print(f"\nfloat32 copy: largest |lab - llama.cpp| over top-50 and spread logits, all prompts: {worst:.5f}")


def test_on_the_float32_copy_the_greedy_continuations_are_llama_cpps(forced, reference):
    require_shipped_gguf()
    for run in reference["f32"]:
        chosen = np.argmax(forced[run["prompt"]], axis=1).tolist()
        assert chosen == run["greedy"], (run["prompt"][:40], chosen, run["greedy"])


def test_generate_with_its_kv_cache_continues_as_llama_cpp_does(gemma, reference):
    require_shipped_gguf()
    run = reference["f32"][0]
    generation = gemma.generate(run["prompt"], len(run["greedy"]))
    assert list(generation.prompt_ids) == run["ids"]
    assert list(generation.ids) == run["greedy"]
    assert generation.text == run["greedy_text"]


def test_against_the_shipped_q4_k_m_run_the_difference_is_reported_and_loosely_bounded(forced, reference):
    require_shipped_gguf()
    rows = []
    for run, f32_run in zip(reference["q4_k_m"], reference["f32"], strict=True):
        assert run["ids"] == f32_run["ids"]
        logits = forced[run["prompt"]][0]
        difference, _, pinned = _first_step(run, logits, reference["spread_ids"])
        margin = float(pinned[0] - pinned[1])
        rows.append((run["prompt"], difference, margin, run["greedy_text"]))
        assert difference <= Q4_K_M_BOUND, (run["prompt"][:40], difference)
        if margin > difference:
            assert int(np.argmax(logits)) == run["top_ids"][0], run["prompt"][:40]
    print("\nshipped Q4_K_M: |lab - llama.cpp| (top-50 and spread logits), llama.cpp's top-2 margin, its greedy text")
    for prompt, difference, margin, text in rows:
        print(f"  {difference:7.4f}  {margin:7.4f}  {prompt[:32]!r:36} -> {text[:40]!r}")


def test_a_format_re_quantizes_the_shipped_linears_and_names_what_it_cannot_hold(gemma, reference):
    require_shipped_gguf()
    run = reference["f32"][0]
    generation = gemma.generate(run["ids"], 3, quantize="q4k")
    fallen = {fallback.layer.split(".", 2)[2] for fallback in generation.fallbacks}
    # Q4_K's 256-weight blocks do not divide the 640-long rows of the Linears that read the residual
    assert fallen == {"attn_q", "attn_k", "attn_v", "ffn_gate", "ffn_up"}
    assert len(generation.fallbacks) == 5 * 18
    assert all("640" in fallback.reason for fallback in generation.fallbacks)
    logits = gemma.logits(run["ids"], quantize="q4k", last=1)[0]
    difference, _, _ = _first_step(run, logits, reference["spread_ids"])
    print(
        f"\nq4k on attn_output and ffn_down: |lab - llama.cpp float32| {difference:.4f}, continues {generation.text!r}"
    )
