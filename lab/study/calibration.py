"""Calibration and evaluation text, offline and apart: the data-aware methods learn from one, the
study scores on the other, and no topic is in both.

Both texts come from `pydoc_data.topics`, the help texts `help("assert")` shows, which ship with
CPython itself, so every machine that runs the lab has them. They are the Python documentation's
language reference, © Python Software Foundation, under the PSF License Version 2 (the licence
CPython ships under). The texts differ between CPython versions, so `provenance()` names the
version and a digest of each text, for a result or an oracle to pin.

The topics are sorted by name and dealt alternately: the first, third, fifth... go to calibration,
the second, fourth... to evaluation. Each text is its topics in order, whitespace normalised (tabs
expanded, trailing spaces cut, runs of blank lines made one), cut at the first paragraph break at or
after CALIBRATION_CHARS or EVALUATION_CHARS characters: about 4,500 and 2,400 tokens of the chat
model's tokenizer (Gemma 3 270M).

    calibration_text(), evaluation_text()        the texts
    calibration_topics(), evaluation_topics()    the topics each text reads, in order (disjoint)
    calibration_windows(), evaluation_windows()  token ids [windows, 512] as llama-imatrix reads them
    token_windows(ids, length, bos=...)          any token ids cut so
    provenance()                                 where the texts come from, and their digests

A window is what llama-imatrix calls a chunk (tools/imatrix/imatrix.cpp, compute_imatrix): the
text is tokenized once with <bos> and without parsing special tokens, cut into len // length
windows (the tail that fills no window is dropped), and each window's first token is replaced by
<bos>, not preceded by it. The default length, 512, is llama-imatrix's own default context
(`params.n_ctx = 512` in its main); llama-imatrix wants at least two windows of text.
"""

from __future__ import annotations

import functools
import hashlib
import platform
import re

import numpy as np

from lab._arrays import is_integer
from lab.errors import InputError
from lab.study import chat
from lab.study.chat import Tokenizer

SOURCE = "pydoc_data.topics"
LICENCE = "PSF License Version 2"
#: characters each text reaches before it is cut at the next paragraph break
CALIBRATION_CHARS = 18_000
EVALUATION_CHARS = 10_000
#: tokens per window: llama-imatrix's default context (-c 512)
WINDOW_TOKENS = 512
_BLANK_RUNS = re.compile(r"\n{3,}")
_PARAGRAPH_BREAK = "\n\n"


def _normalised(text: str) -> str:
    """Tabs expanded, each line's trailing whitespace cut, runs of blank lines made one, ends stripped."""
    lines = (line.rstrip() for line in text.expandtabs().splitlines())
    return _BLANK_RUNS.sub(_PARAGRAPH_BREAK, "\n".join(lines)).strip()


@functools.cache
def _topics() -> dict[str, str]:
    from pydoc_data.topics import topics

    return {name: _normalised(topics[name]) for name in sorted(topics)}


@functools.cache
def _text_and_topics(part: int, budget: int) -> tuple[str, tuple[str, ...]]:
    """The text of every other topic from `part` (0 or 1), cut at the first paragraph break at or
    after `budget` characters, and the topics that text reads."""
    topics = _topics()
    names = list(topics)[part::2]
    text, used = "", []
    for name in names:
        if len(text) >= budget:
            break
        text = f"{text}{_PARAGRAPH_BREAK}{topics[name]}" if text else topics[name]
        used.append(name)
    cut = text.find(_PARAGRAPH_BREAK, budget)
    return (text if cut < 0 else text[:cut]) + "\n", tuple(used)


def calibration_text() -> str:
    """The text the data-aware methods calibrate on (at least 4,000 tokens)."""
    return _text_and_topics(0, CALIBRATION_CHARS)[0]


def evaluation_text() -> str:
    """The text the study scores on (at least 2,000 tokens); it shares no topic with calibration_text()."""
    return _text_and_topics(1, EVALUATION_CHARS)[0]


def calibration_topics() -> tuple[str, ...]:
    """The pydoc topics calibration_text() reads, in order (the last one perhaps only in part)."""
    return _text_and_topics(0, CALIBRATION_CHARS)[1]


def evaluation_topics() -> tuple[str, ...]:
    """The pydoc topics evaluation_text() reads, in order (the last one perhaps only in part)."""
    return _text_and_topics(1, EVALUATION_CHARS)[1]


def provenance() -> dict[str, str]:
    """Where the texts come from, under which licence, and a sha256 of each (UTF-8)."""
    return {
        "source": f"{SOURCE} of CPython {platform.python_version()}",
        "licence": LICENCE,
        "calibration_sha256": hashlib.sha256(calibration_text().encode("utf-8")).hexdigest(),
        "evaluation_sha256": hashlib.sha256(evaluation_text().encode("utf-8")).hexdigest(),
    }


def token_windows(ids, length: int = WINDOW_TOKENS, *, bos: int | None) -> np.ndarray:
    """Token ids cut as llama-imatrix cuts them: int32 [len(ids) // length, length], the tail that
    fills no window dropped, and each window's first id replaced by `bos` (None keeps it, as
    llama.cpp does for a vocabulary that adds no <bos>)."""
    if not is_integer(length) or length < 1:
        raise InputError(f"a window is a whole number of tokens >= 1, got {length!r}")
    ids = np.asarray(ids, dtype=np.int64)
    if ids.ndim != 1:
        raise InputError(f"token ids are a flat sequence, got shape {ids.shape}")
    count = ids.size // length
    if count == 0:
        raise InputError(f"{ids.size} tokens do not fill one window of {length}")
    windows = ids[: count * length].astype(np.int32).reshape(count, length)
    if bos is not None:
        windows[:, 0] = bos
    return windows


def _windows(text: str, length: int, tokenizer: Tokenizer | None) -> np.ndarray:
    tokenizer = chat.load_tokenizer() if tokenizer is None else tokenizer
    ids = tokenizer.encode(text, add_special=True, parse_special=False)
    return token_windows(ids, length, bos=tokenizer.bos if tokenizer.add_bos else None)


def calibration_windows(length: int = WINDOW_TOKENS, tokenizer: Tokenizer | None = None) -> np.ndarray:
    """calibration_text() as llama-imatrix reads it: int32 [windows, length], each starting with <bos>
    (the tokenizer is the shipped chat model's unless another is given)."""
    return _windows(calibration_text(), length, tokenizer)


def evaluation_windows(length: int = WINDOW_TOKENS, tokenizer: Tokenizer | None = None) -> np.ndarray:
    """evaluation_text() cut the same way: int32 [windows, length], each starting with <bos>."""
    return _windows(evaluation_text(), length, tokenizer)
