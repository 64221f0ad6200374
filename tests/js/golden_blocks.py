"""golden.json's Q4_K and GGUF block sections: asymmetric blocks of every registry format with
some byte of every part planted, decoded by lab/ (tests/js/make_golden.py)."""

from __future__ import annotations

import numpy as np
from golden_values import log_spread, outcome

from lab.formats import by_gguf_type, q4k
from lab.teach import gguf_browser


def random_fp16_bits(rng, finite: bool) -> int:
    while True:
        bits = int(rng.integers(0, 1 << 16))
        if not finite or (bits >> 10) & 31 != 31:
            return bits


def q4k_blocks() -> list:
    """~100 blocks: random bytes, quantized weights, and parts with planted metadata."""
    rng = np.random.default_rng(4404)
    blocks = []
    for i in range(40):  # random bytes; a few d/dmin patterns are inf or NaN
        block = rng.integers(0, 256, q4k.BLOCK_BYTES).astype(np.uint8)
        for offset in (0, 2):
            bits = random_fp16_bits(rng, finite=i >= 5)
            block[offset], block[offset + 1] = bits & 0xFF, bits >> 8
        blocks.append(block)
    for _ in range(40):  # what llama.cpp's reference quantizer would store for real-looking weights
        w = rng.normal(float(rng.uniform(-1, 1)), float(log_spread(rng, -8, 4, 1)[0]), q4k.BLOCK_WEIGHTS)
        blocks.append(q4k.quantize(w.astype(np.float32)).raw)
    for i in range(20):  # logical parts with every metadata field different and extreme corners
        scales = rng.permutation(64)[:8] if i % 4 else np.full(8, 63 if i % 8 else 0)
        mins = rng.permutation(64)[:8]
        d = float(rng.choice([0.125, 1.0, 2.0**-14, 2.0**-24, 65504.0, -0.5, float(rng.uniform(-2, 2))]))
        dmin = float(rng.choice([0.0625, 0.0, -0.0, 2.0**-20, float(rng.uniform(0, 1))]))
        codes = rng.integers(0, 16, q4k.BLOCK_WEIGHTS)
        blocks.append(q4k.from_parts(d, dmin, scales, mins, codes).raw)
    return blocks


def q4k_cases() -> list:
    rng = np.random.default_rng(1441)
    cases = []
    for n, block in enumerate(q4k_blocks()):
        scales, mins = q4k.unpack_scale_min(block[q4k.METADATA_OFFSET : q4k.PAYLOAD_OFFSET])
        case = {"block": bytes(block).hex(), "weights": q4k.decode(block), "scales": scales, "mins": mins}
        if n % 5 == 0:
            case["explain_bytes"] = [q4k.explain_byte(block, int(p)) for p in rng.integers(0, 128, 2)]
        cases.append(case)
    return cases


def q4k_presentation() -> dict:
    block = q4k.presentation_fixture()
    return {
        "block": bytes(block).hex(),
        "weights": q4k.decode(block),
        "explain_bytes": [q4k.explain_byte(block, p) for p in (0, 1, 2, 31, 32, 63, 64, 95, 96, 127)],
    }


def q4k_pack_cases() -> list:
    rng = np.random.default_rng(1212)
    pairs = [(np.zeros(8, int), np.zeros(8, int)), (np.full(8, 63), np.full(8, 63))]
    pairs += [(q4k.PRESENTATION_SCALES, q4k.PRESENTATION_MINS)]
    pairs += [(rng.integers(0, 64, 8), rng.integers(0, 64, 8)) for _ in range(20)]
    return [{"scales": s, "mins": m, "bytes": q4k.pack_scale_min(s, m)} for s, m in pairs]


def q4k_placement_cases() -> list:
    return [{"payload_index": p, "lanes": q4k.lanes(p), "subblocks": q4k.subblocks(p)} for p in range(128)]


def q4k_metadata_source_cases() -> list:
    return [{"subblock": j, "sources": q4k.metadata_sources(j)} for j in range(8)]


#: the weights the first case of a 256-weight format explains: one in every 16-weight subblock,
#: each at another position, so every scale's placement and every quarter's; the other cases
#: explain a few random weights, and every case the last weight by the index -1
SUPER_BLOCK_SPREAD = [16 * j + (5 * j) % 16 for j in range(16)]


def _block_tensor_class(fmt):
    return fmt.from_gguf.__self__  # from_gguf is the tensor class's own classmethod


def _planted_block(rng, tensor_class, halves) -> np.ndarray:
    """One block's bytes made from chosen fields: float16 scales from `halves`, random codes, and
    sub-block scales and minimums all different from one another within the block."""
    fields = {}
    for field in tensor_class.fields:
        if field.dtype == np.float16:
            fields[field.name] = np.array([halves[field.name]], np.float16)
            continue
        limits = np.iinfo(field.dtype)
        low = limits.min if field.low is None else field.low
        high = limits.max if field.high is None else field.high
        if field.per_block is None:
            values = rng.integers(low, high + 1, tensor_class.block.weights)
        else:
            values = rng.choice(np.arange(low, high + 1), field.per_block[0], replace=False)[None, :]
        fields[field.name] = values.astype(field.dtype)
    return tensor_class(**fields).to_gguf()


def _random_block(rng, tensor_class) -> np.ndarray:
    """Random bytes with every float16 part a random finite float16 (explain has no reading of inf)."""
    block = rng.integers(0, 256, tensor_class.block.gguf.bytes).astype(np.uint8)
    start = 0
    for part in tensor_class.gguf_layout:
        if part.half:
            block[start : start + 2] = np.array([random_fp16_bits(rng, finite=True)], "<u2").view(np.uint8)
        start += part.size
    return block


def _asymmetric_weights(rng, n: int) -> np.ndarray:
    """N(mean, spread) weights whose mean and spread change every 16 weights, so a super-block's
    sub-block scales and minimums all differ."""
    spread = np.exp(rng.uniform(-4, 1, n // 16)).repeat(16)
    mean = rng.uniform(-1, 1, n // 16).repeat(16) * spread
    return (mean + spread * rng.standard_normal(n)).astype(np.float32)


def _explained(tensor, index: int) -> dict:
    """explain(index) of a one-block tensor, without the keys that place the block in a tensor."""
    explained = tensor.explain(index)
    return {"index": index, **{key: value for key, value in explained.items() if key not in ("position", "block")}}


def _format_blocks(rng, fmt) -> list:
    """One format's blocks: quantized from weights whose scale changes from sub-block to sub-block,
    planted with chosen fields (float16 scales of moderate size, random ones, -0; sub-scales all
    different), and random bytes."""
    tensor_class = _block_tensor_class(fmt)
    halves = [part.name for part in tensor_class.gguf_layout if part.half]
    picks = (
        lambda: np.float16(rng.choice([-1, 1]) * log_spread(rng, -12, 2, 1)[0]),
        lambda: np.uint16(random_fp16_bits(rng, finite=True)).view(np.float16),
        lambda: np.float16(-0.0),
    )
    return [
        fmt.to_gguf(_asymmetric_weights(rng, tensor_class.block.weights)),
        *(_planted_block(rng, tensor_class, {name: pick() for name in halves}) for pick in picks),
        _random_block(rng, tensor_class),
    ]


def gguf_block_cases() -> tuple[list, list]:
    """Every block format the block explorer opens: (formats, cases). A format is its layout and
    the errors a short block and a bad index raise; a case is one block's bytes, its weights and
    the explanation of a spread of its weights."""
    rng = np.random.default_rng(2205)
    formats, cases = [], []
    for type_name in gguf_browser.block_explorer_types():
        fmt = by_gguf_type(type_name)
        tensor_class = _block_tensor_class(fmt)
        weights = tensor_class.block.weights
        blocks = _format_blocks(rng, fmt)
        for n, block in enumerate(blocks):
            tensor = fmt.from_gguf(block)
            if n > 0:
                indices = sorted(int(i) for i in rng.choice(weights, 4, replace=False))
            else:
                indices = list(range(weights)) if weights == 32 else SUPER_BLOCK_SPREAD
            cases.append(
                {
                    "type_name": type_name,
                    "block": bytes(block).hex(),
                    "weights": tensor.dequantize(),
                    "explain": [_explained(tensor, i) for i in [*indices, -1]],
                }
            )
        first = fmt.from_gguf(blocks[0])
        formats.append(
            {
                "type_name": type_name,
                "weights": weights,
                "subblock_weights": tensor_class.subblock_weights,
                "bytes": tensor_class.block.gguf.bytes,
                "layout": [[part.name, part.size, part.words] for part in tensor_class.gguf_layout],
                "short_block": outcome(fmt.from_gguf, blocks[0][:-1])["error"],
                "index_past_the_end": outcome(first.explain, weights)["error"],
                "index_before_the_start": outcome(first.explain, -weights - 1)["error"],
            }
        )
    return formats, cases
