"""The file's own SentencePiece tokenizer, as llama.cpp runs it (src/llama-vocab.cpp, llm_tokenizer_spm).

Tokenizing is three steps, each llama.cpp's:

1. Special tokens are cut out of the text first (tokenizer_st_partition). Every control, user-defined
   and unknown token is a candidate, longest first; each splits every piece of raw text that holds it
   at each of its non-overlapping occurrences. Without `parse_special` only the user-defined ones are
   cut (Gemma's runs of spaces, newlines and tabs, and its HTML tags), so "<start_of_turn>" typed by a
   user stays text; with it, control tokens such as <start_of_turn> and <bos> are cut too.
2. In each raw piece, a space becomes "▁" (no space is put in front: the file's add_space_prefix is
   false), and the piece is split into characters. Then the adjacent pair whose concatenation is the
   vocabulary entry of highest score is merged, again and again, ties going to the leftmost pair; no
   digit splitting or other normalisation is done.
3. A piece left that is no token (a character outside the vocabulary) becomes its UTF-8 bytes, as the
   <0xXX> byte tokens.

Token attributes follow the file's token types, with llama.cpp's one correction that matters here: a
token whose text llama.cpp takes for an end of generation (EOG_TEXTS; Gemma's "</s>" is user-defined in
the file) is made a control token, so it is not cut without parse_special and generation stops at it.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

import numpy as np

from lab.errors import InputError
from lab.interop.gguf import GGUFFile
from lab.study.chat.gguf_model import UnsupportedModelError
from lab.text import quoted

# llama.h's token attributes, and the token types of a GGUF file that map onto them
UNKNOWN, UNUSED, NORMAL, CONTROL, USER_DEFINED, BYTE = 1, 2, 4, 8, 16, 32
_ATTRIBUTE_OF_TYPE = {1: NORMAL, 2: UNKNOWN, 3: CONTROL, 4: USER_DEFINED, 5: UNUSED, 6: BYTE}
SPACE_MARK = "\u2581"
#: the token texts llama.cpp's vocabulary loader marks as end of generation (and so as control tokens)
EOG_TEXTS = frozenset(
    {
        "<|eot_id|>",
        "<|im_end|>",
        "<|end|>",
        "<|return|>",
        "<|call|>",
        "<|flush|>",
        "<|calls|>",
        "<end_of_turn>",
        "<|endoftext|>",
        "</s>",
        "<|eom_id|>",
        "<EOT>",
        "_<EOT>",
        "[EOT]",
        "[EOS]",
        "<|end_of_text|>",
        "<end_of_utterance>",
        "<eos>",
        "<turn|>",
        "<|tool_response>",
        "<｜end▁of▁sentence｜>",
        "[e~[",
    }
)
_PREFIX = "tokenizer.ggml."
#: the tokenizer.ggml keys this tokenizer knows (it reads them all but the unknown and padding ids, which
#: change nothing SentencePiece does); a file that sets any other is refused
_KNOWN_KEYS = frozenset(
    {
        "model",
        "pre",
        "tokens",
        "scores",
        "token_type",
        "bos_token_id",
        "eos_token_id",
        "unknown_token_id",
        "padding_token_id",
        "add_bos_token",
        "add_eos_token",
        "add_sep_token",
        "add_space_prefix",
    }
)


class Tokenizer:
    """Text <-> token ids with the file's vocabulary, scores and token types."""

    def __init__(
        self,
        pieces: Sequence[str],
        scores: np.ndarray,
        types: np.ndarray,
        *,
        bos: int,
        eos: int,
        add_bos: bool,
        add_eos: bool,
        add_space_prefix: bool,
    ):
        # llama.cpp names an empty entry "[EMPTY_<id>]", and a later duplicate of a text wins its lookup
        self.pieces = [piece or f"[EMPTY_{index}]" for index, piece in enumerate(pieces)]
        self._ids = {piece: index for index, piece in enumerate(self.pieces)}
        self._scores = [float(score) for score in scores]
        kinds = np.asarray(types, np.int64)
        self.attributes = np.zeros(kinds.shape, np.int32)  # a type the loader does not know stays UNDEFINED
        for kind, attribute in _ATTRIBUTE_OF_TYPE.items():
            self.attributes[kinds == kind] = attribute
        for text in EOG_TEXTS & self._ids.keys():
            self.attributes[self._ids[text]] |= CONTROL
        self.bos, self.eos = bos, eos
        self.add_bos, self.add_eos, self.add_space_prefix = add_bos, add_eos, add_space_prefix
        self.eog_ids = frozenset({eos} | {self._ids[text] for text in EOG_TEXTS & self._ids.keys()})
        special = np.flatnonzero(self.attributes & (CONTROL | USER_DEFINED | UNKNOWN))
        # longest first, as llama.cpp sorts them; among equal lengths, by id
        self._special = sorted(special.tolist(), key=lambda index: -len(self.pieces[index]))

    @classmethod
    def from_gguf(cls, gf: GGUFFile) -> Tokenizer:
        """The tokenizer a llama.cpp SentencePiece file describes; UnsupportedModelError for any other kind."""
        model = gf.metadata("tokenizer.ggml.model")
        if model != "llama":
            raise UnsupportedModelError(
                f"tokenizer.ggml.model is {quoted(str(model))}; this tokenizer runs SentencePiece ('llama') only"
            )
        unknown = [key for key in gf.keys if key.startswith(_PREFIX) and key.removeprefix(_PREFIX) not in _KNOWN_KEYS]
        if unknown:
            raise UnsupportedModelError(
                f"the file sets {', '.join(quoted(key) for key in unknown)}, which this tokenizer does not implement"
            )
        if gf.metadata("tokenizer.ggml.pre", "default") != "default":
            raise UnsupportedModelError("tokenizer.ggml.pre names a pre-tokenizer; SentencePiece files have none")
        if gf.metadata("tokenizer.ggml.add_sep_token", False):
            raise UnsupportedModelError(
                "tokenizer.ggml.add_sep_token asks for a separator, which SentencePiece never adds"
            )
        pieces = gf.metadata("tokenizer.ggml.tokens")
        scores = gf.metadata("tokenizer.ggml.scores")
        types = gf.metadata("tokenizer.ggml.token_type")
        if pieces is None or scores is None or types is None or not len(pieces) == len(scores) == len(types):
            raise UnsupportedModelError("the tokens, scores and token types must be three arrays of one length")
        ids = {"bos": gf.metadata("tokenizer.ggml.bos_token_id"), "eos": gf.metadata("tokenizer.ggml.eos_token_id")}
        for name, value in ids.items():
            if not isinstance(value, int) or not 0 <= value < len(pieces):
                raise UnsupportedModelError(f"tokenizer.ggml.{name}_token_id must name a token, got {value!r}")
        return cls(
            pieces,
            scores,
            types,
            bos=ids["bos"],
            eos=ids["eos"],
            add_bos=bool(gf.metadata("tokenizer.ggml.add_bos_token", True)),
            add_eos=bool(gf.metadata("tokenizer.ggml.add_eos_token", False)),
            add_space_prefix=bool(gf.metadata("tokenizer.ggml.add_space_prefix", True)),
        )

    def encode(self, text: str, *, add_special: bool = True, parse_special: bool = False) -> list[int]:
        """Token ids of `text`, as llama_tokenize(text, add_special, parse_special) gives them."""
        if not isinstance(text, str):
            raise InputError(f"text to tokenize must be a str, got {type(text).__name__}")
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as error:
            raise InputError(f"text to tokenize is not valid Unicode: {error.reason} at {error.start}") from None
        ids = [self.bos] if add_special and self.add_bos else []
        previous_special = True
        for fragment in self._partition(text, parse_special):
            if isinstance(fragment, int):
                ids.append(fragment)
                previous_special = True
                continue
            prefix = " " if self.add_space_prefix and previous_special else ""
            ids += self._spm((prefix + fragment).replace(" ", SPACE_MARK))
            previous_special = False
        if add_special and self.add_eos:
            ids.append(self.eos)
        return ids

    def _partition(self, text: str, parse_special: bool) -> list[str | int]:
        """The text cut at special tokens: raw strings and token ids, in order (tokenizer_st_partition)."""
        fragments: list[str | int] = [text] if text else []
        skipped = 0 if parse_special else CONTROL | UNKNOWN
        for index in self._special:
            piece = self.pieces[index]
            if self.attributes[index] & skipped or piece not in text:
                continue
            cut: list[str | int] = []
            for fragment in fragments:
                if isinstance(fragment, int) or piece not in fragment:
                    cut.append(fragment)
                    continue
                for position, part in enumerate(fragment.split(piece)):
                    if position:
                        cut.append(index)
                    if part:
                        cut.append(part)
            fragments = cut
        return fragments

    def _spm(self, text: str) -> list[int]:
        """llm_tokenizer_spm_session.tokenize: greedy best-score bigram merges over the characters of `text`."""
        symbols = list(text)
        previous = list(range(-1, len(symbols) - 1))
        following = list(range(1, len(symbols))) + [-1]
        queue: list[tuple[float, int, int, int]] = []

        def push(left: int, right: int) -> None:
            if left < 0 or right < 0:
                return
            index = self._ids.get(symbols[left] + symbols[right])
            if index is not None:
                # highest score first, then leftmost; the length tells a stale pair from a live one
                heapq.heappush(queue, (-self._scores[index], left, right, len(symbols[left]) + len(symbols[right])))

        for right in range(1, len(symbols)):
            push(right - 1, right)
        while queue:
            _, left, right, size = heapq.heappop(queue)
            if not symbols[left] or not symbols[right] or len(symbols[left]) + len(symbols[right]) != size:
                continue
            symbols[left] += symbols[right]
            symbols[right] = ""
            following[left] = following[right]
            if following[right] >= 0:
                previous[following[right]] = left
            push(previous[left], left)
            push(left, following[left])
        ids = []
        position = 0 if symbols else -1
        while position >= 0:
            ids += self._piece_ids(symbols[position])
            position = following[position]
        return ids

    def _piece_ids(self, piece: str) -> list[int]:
        """A merged piece is a token; a character outside the vocabulary falls back to its bytes."""
        index = self._ids.get(piece)
        if index is not None:
            return [index]
        try:
            return [self._ids[f"<0x{byte:02X}>"] for byte in piece.encode("utf-8")]
        except KeyError as missing:
            raise UnsupportedModelError(
                f"the vocabulary has no byte token {missing}, so it cannot spell {piece!r}"
            ) from None

    def piece_bytes(self, index: int, special: bool = False) -> bytes:
        """The bytes one token stands for, as llama_token_to_piece gives them: control tokens are empty
        unless `special`; user-defined ones are their text; normal ones have "▁" back as a space."""
        attribute = int(self.attributes[index])
        if attribute & (CONTROL | UNKNOWN) and not special:
            return b""
        piece = self.pieces[index]
        if attribute & (CONTROL | UNKNOWN | USER_DEFINED):
            return piece.encode("utf-8")
        if attribute & NORMAL:
            return piece.replace(SPACE_MARK, " ").encode("utf-8")
        if attribute & BYTE:
            return bytes([int(piece[3:5], 16)])
        return b""

    def decode(self, ids: Sequence[int], *, special: bool = False) -> str:
        """The text of `ids`: their pieces' bytes joined and read as UTF-8, a broken sequence as U+FFFD."""
        count = len(self.pieces)
        bad = [index for index in ids if not isinstance(index, int | np.integer) or not 0 <= index < count]
        if bad:
            raise InputError(f"token ids must lie in 0..{count - 1}; got {bad[0]!r}")
        return b"".join(self.piece_bytes(int(index), special) for index in ids).decode("utf-8", errors="replace")
