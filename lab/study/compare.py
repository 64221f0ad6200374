"""Every registry format side by side (notebook 11): error against cost, one outlier, one byte.

    error_rows(sources)          relative error of every format on every source, with bits per weight
                                 (cache=True: kept on disk, keyed by each source's bytes and the code)
    pareto_front(rows)           the same rows, each marked on or off its source's Pareto front
    outlier_rows()               a block of N(0, 1) with one weight of 20: what it costs the others
    byte_trace(byte, payload)    one payload byte of each GGUF layout: the weights its nibbles land on

Plain functions returning lists of dicts; the charts are in lab.teach.charts, the words in the
notebook.
"""

from __future__ import annotations

import numpy as np

from lab.formats import FORMATS
from lab.study import cache as result_cache
from lab.study import real_weights
from lab.study.metrics import relative_error
from lab.study.results import CachedResults

#: the real tensors of all-MiniLM-L6-v2 the comparison uses: two feed-forward down projections
#: (rows of 1536, a multiple of every block size) and an attention query (rows of 384, which
#: the 256-weight super-blocks of Q4_K, Q6_K and IQ4_XS cannot take)
REAL_TENSORS = (
    "encoder.layer.0.output.dense.weight",
    "encoder.layer.5.output.dense.weight",
    "encoder.layer.0.attention.self.query.weight",
)
#: synthetic sources are this shape, the width of the feed-forward rows
SYNTHETIC_SHAPE = (64, 1536)
#: Student's t with 3 degrees of freedom: finite variance, and tails far heavier than N(0, 1)'s
HEAVY_TAIL_DF = 3


def sources(rows: int = 64, seed: int = 0) -> dict[str, np.ndarray]:
    """The weights every format is run on: real tensors (first `rows` rows) and two synthetic sets."""
    rng = np.random.default_rng(seed)
    found = real_weights.load_weights(names=REAL_TENSORS, rows=rows) if real_weights.real_model_available() else {}
    synthetic = {
        "N(0, 1)": rng.standard_normal(SYNTHETIC_SHAPE),
        f"Student t, {HEAVY_TAIL_DF} d.o.f.": rng.standard_t(HEAVY_TAIL_DF, SYNTHETIC_SHAPE),
    }
    return {**{name.removeprefix("encoder."): w for name, w in found.items()}, **synthetic}


#: the code behind error_rows' numbers, relative to the lab package: a change to any of it misses
ERROR_SOURCES = (
    "codes",
    "formats",
    "_arrays.py",
    "errors.py",
    "study/metrics.py",
    "study/compare.py",
    "study/results.py",
)
CACHE_NAMESPACE = "compare"
#: each source's relative error per format, on disk only: a notebook asks for a source once
SOURCE_ERRORS = CachedResults(CACHE_NAMESPACE, dict[str, float], remember=False)


def _source_key(w32: np.ndarray) -> str:
    """The cache file of one source: its bytes, the lab's version and code, and numpy's version."""
    return result_cache.digest(
        result_cache.lab_version(),
        np.__version__,
        result_cache.lab_source_digest(ERROR_SOURCES),
        result_cache.array_digest(w32),
    )


def error_rows(weights: dict[str, np.ndarray], cache: bool = False) -> list[dict]:
    """One row per (source, format): relative error and the registry's bits per weight.

    A format whose blocks do not fit the source's rows gets relative_error None and the reason
    its converter would give. Bits per weight are the registry's: what the format stores per
    weight (MLX's affine scales and biases in float16, as MLX keeps them beside float16 weights).

    `cache=True` keeps each source's errors on disk (lab.study.cache), one file per source
    holding an entry per format, and reads them back while the source's bytes, the lab's code
    and version and numpy's version are unchanged; the rows are the same either way.
    """
    rows = []
    for source, w in weights.items():
        w32 = np.asarray(w, np.float32)
        key = _source_key(w32) if cache else None
        entries = (SOURCE_ERRORS.load(key) or {}) if cache else {}
        new_entries = False
        for fmt in FORMATS.values():
            skipped = fmt.skip_reason(w32.shape[-1])
            if skipped:
                error = None
            elif isinstance(entries.get(fmt.name), float):
                error = entries[fmt.name]
            else:
                error = relative_error(w32, fmt.round_trip(w32))
                entries[fmt.name], new_entries = error, True
            rows.append(
                {
                    "source": source,
                    "format": fmt.name,
                    "title": fmt.title,
                    "family": fmt.family,
                    "bits_per_weight": fmt.bits_per_weight,
                    "relative_error": error,
                    "skipped": skipped or "",
                }
            )
        if cache and new_entries:
            SOURCE_ERRORS.store(key, entries)
    return rows


def pareto_front(rows: list[dict], error: str = "relative_error") -> list[dict]:
    """The rows with `on_front` added: no other format of the same source is at most as costly
    and at most as wrong (by `error`), and strictly better in one of the two. Rows without a
    measure are never on it."""
    marked = []
    for row in rows:
        rivals = [other for other in rows if other["source"] == row["source"] and other[error] is not None]
        rivals = [other for other in rivals if other is not row]
        dominated = row[error] is None or any(
            other["bits_per_weight"] <= row["bits_per_weight"]
            and other[error] <= row[error]
            and (other["bits_per_weight"], other[error]) != (row["bits_per_weight"], row[error])
            for other in rivals
        )
        marked.append({**row, "on_front": not dominated})
    return marked


#: the outlier experiment: one row of 256 weights (a whole block of every format), weight 5 set to 20
OUTLIER_ROW = 256
OUTLIER_POSITION = 5
OUTLIER_VALUE = 20.0


def outlier_rows(seed: int = 0) -> list[dict]:
    """What one outlier does to the rest of its block, per format.

    The same N(0, 1) row is quantized twice, as it is and with weight OUTLIER_POSITION set to
    OUTLIER_VALUE. For the block holding the outlier (its first block_size weights), the rows
    give the RMS error of the other weights both times, and the outlier's own error.
    """
    clean = np.random.default_rng(seed).standard_normal(OUTLIER_ROW).astype(np.float32)
    spiked = clean.copy()
    spiked[OUTLIER_POSITION] = OUTLIER_VALUE
    rows = []
    for fmt in FORMATS.values():
        others = np.arange(fmt.block_size) != OUTLIER_POSITION
        error_clean = (fmt.round_trip(clean) - clean)[: fmt.block_size].astype(np.float64)
        error_spiked = (fmt.round_trip(spiked) - spiked)[: fmt.block_size].astype(np.float64)
        rows.append(
            {
                "format": fmt.name,
                "title": fmt.title,
                "block_size": fmt.block_size,
                "others_rms_error": float(np.sqrt(np.mean(error_spiked[others] ** 2))),
                "others_rms_error_without_outlier": float(np.sqrt(np.mean(error_clean[others] ** 2))),
                "outlier_error": float(abs(error_spiked[OUTLIER_POSITION])),
            }
        )
    return rows


#: GGUF layouts with a part of 4-bit nibbles, and the byte of the block where that payload starts:
#: the byte trace's subjects, in the registry's order, each as its tensor's `traced_part` says
#: (each module's docstring draws the block). Q6_K's payload is ql, the low four bits of its 6-bit
#: codes, and Q5_0's, Q5_1's and Q5_K's is qs, the low four bits of their 5-bit codes; the fifth
#: bit sits apart in qh, which the owner names. Q3_K and Q2_K have no such part: their bytes hold
#: four 2-bit codes each, not two nibbles.
TRACED_TYPES = {
    fmt.name: part.at
    for fmt in FORMATS.values()
    if fmt.gguf_type is not None and (part := fmt.tensor.traced_part()) is not None
}
#: the payload bytes every traced layout has (Q4_0's 16 are the fewest)
TRACE_PAYLOAD_BYTES = 16


def trace_block(name: str, seed: int = 0) -> np.ndarray:
    """One GGUF block of `name`, quantized from N(0, 1) weights (so every scale is non-zero): uint8 [bytes]."""
    fmt = FORMATS[name]
    w = np.random.default_rng(seed).standard_normal(fmt.block_size).astype(np.float32)
    return fmt.to_gguf(w)


def byte_trace(byte: int = 0xA5, payload_index: int = 0, seed: int = 0) -> list[dict]:
    """Payload byte `payload_index` of one block of every traced GGUF layout, set to `byte`.

    Where its nibbles land is read from the lab's own decoder: the block decoded with the low
    nibble alone set, and with the high nibble alone set, against the block with that byte
    zeroed; the weights that move are the nibble's. One row per (format, nibble, weight) with
    the code there, the scale that owns it and the weight's formula, from the format's explain.
    """
    if not 0 <= byte <= 0xFF or not 0 <= payload_index < TRACE_PAYLOAD_BYTES:
        raise ValueError(f"a byte is 0..255 and a payload index 0..{TRACE_PAYLOAD_BYTES - 1}")
    rows = []
    for name, payload_start in TRACED_TYPES.items():
        fmt = FORMATS[name]
        offset = payload_start + payload_index
        block = trace_block(name, seed)

        def decoded(value: int, block=block, offset=offset, fmt=fmt) -> np.ndarray:
            raw = block.copy()
            raw[offset] = value
            return fmt.decode_gguf(raw)

        zeroed = decoded(0)
        tensor = fmt.from_gguf(np.concatenate([block[:offset], [byte], block[offset + 1 :]]).astype(np.uint8))
        for nibble, part in (("low", byte & 0x0F), ("high", byte & 0xF0)):
            for lane in np.flatnonzero(decoded(part) != zeroed).tolist():
                parts = tensor.explain(lane)
                rows.append(
                    {
                        "format": name,
                        "title": fmt.title,
                        "block_byte": offset,
                        "nibble": nibble,
                        "nibble_value": part >> 4 if nibble == "high" else part,
                        "weight": lane,
                        "code": parts["code"],
                        "owner": tensor.owner_words(parts),
                        "value": float(parts["weight"]),
                    }
                )
    return rows
