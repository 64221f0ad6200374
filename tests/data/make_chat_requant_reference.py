"""Pins what llama.cpp's own re-quantizations of Gemma 3 270M do to its answers, for notebook 12 to
show beside the lab's study and for tests/oracles/test_chat_requant_oracle.py to hold the lab to.

Run outside CI, in the virtual environment make_chat_reference.py describes (llama-cpp-python 0.3.36
built from source, gguf 0.19.0; nothing of the lab is imported):

    /tmp/llamavenv/bin/python tests/data/make_chat_requant_reference.py [path/to/gemma-3-270m-q4_k_m.gguf]

From the shipped file (SHIPPED_SHA256) it makes the float32 copy make_chat_reference.py makes, then
re-quantizes that copy with llama_model_quantize, as `llama-quantize` does without an importance
matrix, to each of TYPES, `pure`: every Linear in the one type, as the lab's study stores them.
token_embd stays float32 (token_embedding_type F32), because the study re-quantizes the block
Linears only. The fallbacks for rows a type's blocks do not divide are llama.cpp's own, and each
tensor's resulting type is recorded.

Each file, and the float32 copy, then reads PASSAGE with every position's logits kept, and answers
each of PROMPTS greedily for GREEDY_TOKENS tokens. Written to tests/data/chat_requant_reference.json:

    passage, prompts    the texts, which must equal lab.study.chat_study's PASSAGE and PROMPTS
    f32                 the float32 copy: passage ids, NLL of the passage's next tokens, greedy ids
    <type>              per re-quantization: tensor types by count, KL(p_f32 || p_type) per position
                        averaged, same-top-token share, NLL, and the greedy ids and text per prompt

KL divergence and same top token are computed here in float64 from llama.cpp's full logit vectors,
as llama-perplexity --kl-divergence computes them. llama.cpp's quantized kernels also round each
activation row to 8 bits before the dot product (Q8_0 or Q8_K), which the lab's float32 path does
not: the two studies' numbers differ by that as well as by any difference in the stored weights.
"""

from __future__ import annotations

import ctypes
import json
import sys
from collections import Counter
from pathlib import Path

import gguf
import llama_cpp
import numpy as np
from make_chat_reference import (
    F32_COPY,
    GGML_TYPE_F32,
    SHIPPED_SHA256,
    THREADS,
    default_model,
    make_f32_copy,
    open_model,
    piece,
    sha256,
)

OUT = Path(__file__).resolve().parent / "chat_requant_reference.json"
GREEDY_TOKENS = 20
#: llama.cpp's file types, by the name of the GGML type they store the Linears in
TYPES = {
    "Q8_0": llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0,
    "Q6_K": llama_cpp.LLAMA_FTYPE_MOSTLY_Q6_K,
    "Q4_0": llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_0,
    "IQ4_NL": llama_cpp.LLAMA_FTYPE_MOSTLY_IQ4_NL,
}
PASSAGE = (
    "A weight in a language model is a number that the model learned during training. A model with "
    "a billion weights needs four gigabytes to store them as 32-bit floats, so people store them in "
    "fewer bits. A 4-bit format keeps sixteen values for each weight and a scale for each block of "
    "weights. The scale stretches the sixteen values to fit the block, and the error that remains "
    "changes the answers the model gives. Some formats keep a minimum as well as a scale, and some "
    "keep a second, finer scale for every small group inside the block."
)
PROMPTS = (
    "The capital of France is",
    "Water boils at a temperature of",
    "<start_of_turn>user\nName three colours of the rainbow.<end_of_turn>\n<start_of_turn>model\n",
)


def quantize(ftype: int, out: Path) -> None:
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = ftype
    params.nthread = THREADS
    params.token_embedding_type = GGML_TYPE_F32
    # one type in every Linear, as the study stores them: without `pure`, llama.cpp's IQ4_NL file type
    # keeps attn_v (rows of 640) in Q5_1 and two more Linears in Q5_K, its mixture for that file type
    params.pure = True
    status = llama_cpp.llama_model_quantize(str(F32_COPY).encode(), str(out).encode(), ctypes.byref(params))
    if status != 0:
        raise SystemExit(f"llama_model_quantize to {out.name} failed with {status}")


def tensor_types(path: Path) -> dict[str, int]:
    counts = Counter(tensor.tensor_type.name for tensor in gguf.GGUFReader(path).tensors)
    return dict(sorted(counts.items()))


def log_softmax(logits: np.ndarray) -> np.ndarray:
    logits = logits.astype(np.float64)
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def passage_log_p(path: Path) -> tuple[list[int], np.ndarray]:
    """The passage's ids and log-probabilities [positions - 1, vocab] of each next token."""
    llm = open_model(path, logits_all=True)
    ids = llm.tokenize(PASSAGE.encode("utf-8"), add_bos=True, special=True)
    llm.reset()
    llm.eval(ids)
    logits = np.asarray(llm.scores[: len(ids)], dtype=np.float32)
    llm.close()
    return ids, log_softmax(logits[:-1])


def greedy(path: Path) -> list[dict]:
    llm = open_model(path, logits_all=False)
    vocab = llm._model.vocab
    answers = []
    for prompt in PROMPTS:
        ids = llm.tokenize(prompt.encode("utf-8"), add_bos=True, special=True)
        llm.reset()
        llm.eval(ids)
        tokens = []
        for _ in range(GREEDY_TOKENS):
            pointer = llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1)
            logits = np.ctypeslib.as_array(pointer, shape=(llm.n_vocab(),))
            token = int(np.argmax(logits))
            tokens.append(token)
            if llama_cpp.llama_vocab_is_eog(vocab, token):
                break
            llm.eval([token])
        text = b"".join(piece(vocab, t, False) for t in tokens).decode("utf-8", errors="replace")
        answers.append({"prompt": prompt, "ids": ids, "greedy": tokens, "text": text})
    llm.close()
    return answers


def nll(ids: list[int], log_p: np.ndarray) -> float:
    return float(-log_p[np.arange(len(ids) - 1), ids[1:]].mean())


def main() -> None:
    source = Path(sys.argv[1]) if len(sys.argv) > 1 else default_model()
    if sha256(source) != SHIPPED_SHA256:
        raise SystemExit(f"{source} is not the shipped file (sha256 {SHIPPED_SHA256})")
    llama_cpp.llama_backend_init()
    make_f32_copy(source)
    ids, reference = passage_log_p(F32_COPY)
    pinned = {
        "made_by": "tests/data/make_chat_requant_reference.py",
        "llama_cpp_python": llama_cpp.__version__,
        "file_sha256": SHIPPED_SHA256,
        "f32_copy_sha256": sha256(F32_COPY),
        "passage": PASSAGE,
        "prompts": list(PROMPTS),
        "f32": {"passage_ids": ids, "nll": nll(ids, reference), "answers": greedy(F32_COPY)},
    }
    for name, ftype in TYPES.items():
        out = F32_COPY.with_name(f"gemma-3-270m-requant-{name.lower()}.gguf")
        quantize(ftype, out)
        quantized_ids, log_p = passage_log_p(out)
        assert quantized_ids == ids, name
        kl = (np.exp(reference) * (reference - log_p)).sum(axis=-1)
        pinned[name] = {
            "file_sha256": sha256(out),
            "tensor_types": tensor_types(out),
            "kl_divergence": float(kl.mean()),
            "same_top": float((reference.argmax(axis=-1) == log_p.argmax(axis=-1)).mean()),
            "nll": nll(ids, log_p),
            "answers": greedy(out),
        }
        out.unlink()
        print(name, pinned[name]["tensor_types"], pinned[name]["kl_divergence"], flush=True)
    OUT.write_text(json.dumps(pinned, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT} ({OUT.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
