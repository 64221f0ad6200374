"""Pins what llama.cpp computes for the shipped Gemma 3 270M file, for tests/oracles/test_chat_oracle.py
to hold lab.study.chat to.

Run outside CI, in a virtual environment of its own that has llama-cpp-python built from source and
gguf-py (nothing of the lab is imported, so the oracle stays independent of it):

    python3.11 -m venv /tmp/llamavenv
    /tmp/llamavenv/bin/pip install --no-binary llama-cpp-python llama-cpp-python==0.3.36
    /tmp/llamavenv/bin/pip install gguf==0.19.0
    /tmp/llamavenv/bin/python tests/data/make_chat_reference.py [path/to/gemma-3-270m-q4_k_m.gguf]

It was run exactly so (Python 3.11.7, llama-cpp-python 0.3.36 built from source, whose system info
reads AVX2, F16C, FMA, LLAMAFILE, OPENMP and REPACK; two threads; nine minutes on a busy two-core
machine), without an argument, on the file whose sha256 is
a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818 (SHIPPED_SHA256; the script refuses
another): the one lab.study.shipped_gguf joins into ~/.cache/four-bit-lab-models (or $LAB_MODEL_DIR),
where the script looks by default. It writes tests/data/chat_reference.json (450 KB):

    battery     per text: llama_tokenize with <bos> and special tokens read as text ("plain") or
                parsed ("special"), and without <bos> ("no_bos"); llama_token_to_piece of the plain
                ids joined ("pieces") and of the special ids with special=true ("pieces_special"),
                as UTF-8 with a broken sequence as U+FFFD
    vocabulary  llama.cpp's attribute of every token whose attribute is not plain NORMAL, and its
                end-of-generation ids
    f32, q4_k_m one run each: on a float32 copy of the file (llama_model_quantize, LLAMA_FTYPE_ALL_F32,
                allow_requantize, into /tmp: every tensor dequantized by ggml), and on the file as
                shipped. Per prompt: the ids, the last position's top-50 logits and the logits of
                SPREAD_IDS, the full vector's max |logit|, and 20 greedy tokens (the argmax of
                llama.cpp's own logits, each fed back through its KV cache), with each step's margin
                between the best and second-best logit
    f32_weights values of every tensor of the float32 copy at fixed positions, so the tests can show
                that llama.cpp ran exactly the weights the lab decodes

Both runs keep keys and values in float32 (type_k = type_v = GGML_TYPE_F32) and use no flash
attention, so what differs from the lab is the kernels' arithmetic alone.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import sys
from pathlib import Path

import gguf
import llama_cpp
import numpy as np

SHIPPED_SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
OUT = Path(__file__).resolve().parent / "chat_reference.json"
F32_COPY = Path("/tmp/gemma-3-270m-f32-copy.gguf")
THREADS = 2
CONTEXT = 1024
GREEDY_TOKENS = 20
TOP = 50
#: vocabulary ids whose logits are pinned too, so agreement is checked away from the top as well
SPREAD_IDS = list(range(7, 262144, 1311))
#: positions per tensor whose float32 copy values are pinned
WEIGHT_SAMPLES = 64
GGML_TYPE_F32 = 0

BATTERY = [
    "Hello world",
    "The quick brown fox jumps over the lazy dog.",
    "",
    " leading space",
    "trailing space ",
    "  two leading spaces",
    "multiple   spaces   inside",
    " " * 40 + "forty spaces",
    "line one\nline two\n\nline four\n",
    "tab\tseparated\t\tvalues",
    "mixed \n\t whitespace \t\n end",
    "\n\n\n",
    "1234567890 and 3.14159 and 1,000,000 and 2024-06-01",
    "Bengali digits ১২৩৪ and Devanagari १८",
    "Emoji: 😀🎉👍🏽 and ❤️ and 🧬",
    "Grüße aus München! Äpfel, Öl und Übermut. Straße",
    "日本語のテキストです。東京は日本の首都です。",
    "Rare: 𓀀 𠀀 𪚥 and a NUL \x00 and \x7f",
    "def add(a, b):\n    return a + b  # sum\n\nprint(add(2, 3))",
    "<start_of_turn>user\nHello!<end_of_turn>\n<start_of_turn>model\n",
    "<bos>text with <eos> inside </s> and <b>bold</b> <unused3> <start_of_image>",
    "Ünïcödé ßpëllïng, naïve café, ﬁ ligature, Ｆｕｌｌｗｉｄｔｈ",
]

LONG_PROMPT = "Counting: " + ", ".join(str(number) for number in range(1, 181)) + ","
PROMPTS = [
    "The capital of France is",
    "<start_of_turn>user\nWhat is the capital of France?<end_of_turn>\n<start_of_turn>model\n",
    "def fibonacci(n):\n    ",
    "Die Hauptstadt von Deutschland ist",
    "日本の首都は",
    "Once upon a time, there was a little robot who",
    LONG_PROMPT,
]


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while block := file.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def default_model() -> Path:
    folder = os.environ.get("LAB_MODEL_DIR") or Path.home() / ".cache" / "four-bit-lab-models"
    return Path(folder) / "gemma-3-270m-q4_k_m.gguf"


def open_model(path: Path, logits_all: bool = False) -> llama_cpp.Llama:
    """The file in llama.cpp with float32 keys and values and no flash attention; `logits_all` keeps
    every position's logits (make_chat_requant_reference.py reads a passage so)."""
    return llama_cpp.Llama(
        model_path=str(path),
        n_ctx=CONTEXT,
        n_batch=512,
        n_ubatch=512,
        n_threads=THREADS,
        n_threads_batch=THREADS,
        logits_all=logits_all,
        flash_attn=False,
        type_k=GGML_TYPE_F32,
        type_v=GGML_TYPE_F32,
        verbose=False,
    )


def piece(vocab, token: int, special: bool) -> bytes:
    buffer = ctypes.create_string_buffer(512)
    size = llama_cpp.llama_token_to_piece(vocab, token, buffer, len(buffer), 0, special)
    assert 0 <= size <= len(buffer), (token, size)
    return buffer.raw[:size]


def tokens_and_pieces(llm: llama_cpp.Llama) -> tuple[list, dict]:
    vocab = llm._model.vocab
    rows = []
    for text in BATTERY:
        data = text.encode("utf-8")
        plain = llm.tokenize(data, add_bos=True, special=False)
        special = llm.tokenize(data, add_bos=True, special=True)
        rows.append(
            {
                "text": text,
                "plain": plain,
                "special": special,
                "no_bos": llm.tokenize(data, add_bos=False, special=False),
                "pieces": b"".join(piece(vocab, t, False) for t in plain).decode("utf-8", errors="replace"),
                "pieces_special": b"".join(piece(vocab, t, True) for t in special).decode("utf-8", errors="replace"),
            }
        )
    attributes: dict[str, list[int]] = {}
    eog = []
    for token in range(llm.n_vocab()):
        attribute = int(llama_cpp.llama_vocab_get_attr(vocab, token))
        if attribute != 4:  # LLAMA_TOKEN_ATTR_NORMAL
            attributes.setdefault(str(attribute), []).append(token)
        if llama_cpp.llama_vocab_is_eog(vocab, token):
            eog.append(token)
    return rows, {"attributes": attributes, "eog": eog}


def last_logits(llm: llama_cpp.Llama) -> np.ndarray:
    pointer = llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1)
    return np.ctypeslib.as_array(pointer, shape=(llm.n_vocab(),)).copy()


def run(path: Path) -> list[dict]:
    llm = open_model(path)
    vocab = llm._model.vocab
    results = []
    for prompt in PROMPTS:
        ids = llm.tokenize(prompt.encode("utf-8"), add_bos=True, special=True)
        llm.reset()
        llm.eval(ids)
        logits = last_logits(llm)
        top = np.argsort(-logits, kind="stable")[:TOP]
        greedy, margins = [], []
        step = logits
        for _ in range(GREEDY_TOKENS):
            ranked = np.argsort(-step, kind="stable")[:2]
            token = int(ranked[0])
            greedy.append(token)
            margins.append(float(step[ranked[0]] - step[ranked[1]]))
            if llama_cpp.llama_vocab_is_eog(vocab, token):
                break
            llm.eval([token])
            step = last_logits(llm)
        results.append(
            {
                "prompt": prompt,
                "ids": ids,
                "top_ids": top.tolist(),
                "top_logits": logits[top].tolist(),
                "spread_logits": logits[SPREAD_IDS].tolist(),
                "max_abs_logit": float(np.abs(logits).max()),
                "greedy": greedy,
                "greedy_margins": margins,
                "greedy_text": b"".join(piece(vocab, t, False) for t in greedy).decode("utf-8", errors="replace"),
            }
        )
    llm.close()
    return results


def make_f32_copy(source: Path) -> None:
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = llama_cpp.LLAMA_FTYPE_ALL_F32
    params.allow_requantize = True
    params.nthread = THREADS
    status = llama_cpp.llama_model_quantize(str(source).encode(), str(F32_COPY).encode(), ctypes.byref(params))
    if status != 0:
        raise SystemExit(f"llama_model_quantize failed with {status}")


def weight_samples(path: Path) -> dict:
    """Every tensor of the float32 copy at WEIGHT_SAMPLES flat positions drawn with a fixed seed."""
    reader = gguf.GGUFReader(path)
    rng = np.random.default_rng(20260101)
    samples = {}
    for tensor in reader.tensors:
        if tensor.tensor_type != gguf.GGMLQuantizationType.F32:
            raise SystemExit(f"{tensor.name} is {tensor.tensor_type.name} in the float32 copy")
        flat = np.asarray(tensor.data, dtype=np.float32).reshape(-1)
        positions = np.sort(rng.choice(flat.size, size=min(WEIGHT_SAMPLES, flat.size), replace=False))
        samples[tensor.name] = {"positions": positions.tolist(), "values": flat[positions].tolist()}
    return samples


def main() -> None:
    source = Path(sys.argv[1]) if len(sys.argv) > 1 else default_model()
    if sha256(source) != SHIPPED_SHA256:
        raise SystemExit(f"{source} is not the shipped file (sha256 {SHIPPED_SHA256})")
    llama_cpp.llama_backend_init()
    make_f32_copy(source)
    tokenizer = open_model(source)
    battery, vocabulary = tokens_and_pieces(tokenizer)
    tokenizer.close()
    reference = {
        "made_by": "tests/data/make_chat_reference.py",
        "llama_cpp_python": llama_cpp.__version__,
        "file_sha256": SHIPPED_SHA256,
        "f32_copy_sha256": sha256(F32_COPY),
        "settings": {"threads": THREADS, "n_ctx": CONTEXT, "kv_cache": "f32", "flash_attn": False},
        "spread_ids": SPREAD_IDS,
        "battery": battery,
        "vocabulary": vocabulary,
        "f32": run(F32_COPY),
        "q4_k_m": run(source),
        "f32_weights": weight_samples(F32_COPY),
    }
    OUT.write_text(json.dumps(reference, ensure_ascii=False, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"wrote {OUT} ({OUT.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
