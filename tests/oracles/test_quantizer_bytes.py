"""The quantizers' exact output on varied inputs, pinned as SHA-256 digests of their bytes.

The digests were computed by the quantizers as they stood before their speed work (the commit that
added this file), so a faster quantizer must give the very same bytes: every code, every scale,
ties included. They guard against regressions; they are not an external oracle (gguf-py and
bitsandbytes' published levels are, in test_formats_gguf4.py and test_formats_nf4.py).
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from lab.formats import iq4_nl, iq4_xs, nf4, q4_0, q4_1, q6_k, q8_0

COLS = 1024  # four 256-weight super-blocks, 32 blocks of 32, 16 of 64 per row


def _row_kinds(rng: np.random.Generator) -> list[np.ndarray]:
    """Rows of COLS weights, one kind of trouble each."""

    def normal() -> np.ndarray:
        return rng.normal(0, 1, COLS)

    def per_block(low: float, high: float) -> np.ndarray:
        return np.repeat(10.0 ** rng.uniform(low, high, COLS // 32), 32)

    rows = [normal() for _ in range(4)]
    rows += [rng.standard_t(2, COLS), rng.standard_t(3, COLS) * 0.02]  # heavy tails
    rows += [normal() * 1e4 * rng.uniform(0.5, 1), normal() * 1e-30, normal() * 1e-12, normal() * 1e-3]
    rows += [normal() * per_block(-30, 4) for _ in range(3)]  # 34 decades inside one super-block
    rows += [normal() * per_block(-2, 1) for _ in range(2)]
    rows += [np.full(COLS, 0.0), np.full(COLS, -0.75), np.full(COLS, 3e-20)]  # zero and constant rows
    rows.append(np.repeat(rng.normal(0, 2, COLS // 32), 32))  # a different constant per 32-block
    rows.append(np.repeat(rng.normal(0, 2, COLS // 16), 16))  # ... per 16-block (Q6_K's subblocks)
    mixed = normal()
    mixed[np.repeat(rng.random(COLS // 32) < 0.5, 32)] = 0.0  # zero blocks between normal ones
    rows.append(mixed)
    rows += [np.abs(normal()), -np.abs(normal()), normal() + 6.0, normal() * 0.1 - 3.0]  # one-signed
    spikes = rng.normal(0, 0.01, COLS)
    spikes[rng.integers(0, COLS, 12)] = rng.choice([-1.0, 1.0], 12) * rng.uniform(5, 50, 12)
    rows.append(spikes)  # outliers stretching a block's scale
    rows.append(normal() * 1e-40)  # float32 subnormals: reciprocals overflow, 0/0 in the fits
    # ties: half-integers on IQ4's codebook midpoints, integers for Q6_K and Q8_0's grids, and NF4's
    # midpoints, each block pinned by its largest value
    half = rng.integers(-254, 227, COLS) / 2.0
    half[::32] = -127.0
    rows.append(half)
    integers = rng.integers(-32, 32, COLS).astype(np.float64)
    integers[::16] = -32.0
    rows.append(integers)
    integers = rng.integers(-127, 128, COLS).astype(np.float64)
    integers[::32] = 127.0
    rows.append(integers)
    midpoints = rng.choice(nf4.MIDPOINTS.astype(np.float64), COLS)
    midpoints[::64] = 1.0
    rows.append(midpoints)
    rows.append(-midpoints * 0.37)
    return rows


def varied_weights() -> np.ndarray:
    """float32 [rows, 1024]: the kinds above in a shuffled order, so super-blocks meet each other."""
    rng = np.random.default_rng(20240613)
    rows = np.stack(_row_kinds(rng)).astype(np.float32)
    return rows[rng.permutation(len(rows))]


def larger_weights() -> np.ndarray:
    """float32 [4, 65536]: more blocks than a quantizer handles in one chunk, with loud and quiet stretches."""
    rng = np.random.default_rng(7)
    w = rng.standard_t(4, (4, 65536)) * np.repeat(10.0 ** rng.uniform(-3, 1, (4, 256)), 256, axis=-1)
    return w.astype(np.float32)


def _gguf_parts(module):
    return lambda w: [module.quantize(w).to_gguf()]


def _nf4_parts(double_quant: bool):
    def stored(w: np.ndarray) -> list[np.ndarray]:
        tensor = nf4.quantize(w, double_quant=double_quant)
        parts = [tensor.codes, tensor.absmax]
        if double_quant:
            parts += [tensor.absmax_codes, tensor.absmax_scales, np.float32(tensor.absmax_offset)]
        return [np.asarray(part) for part in parts]

    return stored


QUANTIZERS = {
    "iq4_nl": _gguf_parts(iq4_nl),
    "iq4_xs": _gguf_parts(iq4_xs),
    "q6_k": _gguf_parts(q6_k),
    "q4_0": _gguf_parts(q4_0),
    "q4_1": _gguf_parts(q4_1),
    "q8_0": _gguf_parts(q8_0),
    "nf4": _nf4_parts(False),
    "nf4 double": _nf4_parts(True),
}

#: SHA-256 of the stored bytes: (varied_weights(), larger_weights()). They pin regressions; the
#: external oracle is ggml's C reference in test_formats_cref.py (IQ4_NL and IQ4_XS were re-pinned
#: when it showed their candidate grids t = -7..-2 had wrapped in int8)
PINNED = {
    "iq4_nl": (
        "01960612e08e8941f9f1cbbfc043b6059704ec3d9c8290f7102b4aec97c69850",
        "c0428b6cc8b5b14f5c1da742897d8b6b38647cf5d2be952a13aa5b6fea084385",
    ),
    "iq4_xs": (
        "10df0e14feeada643dcfbb0a4bf24052473379e7bb3b1c3654a55db652f75efe",
        "7d99e093059f3c14b5344450c45b556f2b267d090ac738e5cb3693800c0c222d",
    ),
    "q6_k": (
        "448df0fb44f60b21d9bfb183f19c0d6398046b887a4afd17e39784454ff4e8de",
        "e9e30f8f1b1b681a4d8ce142d59c565bc58a5751345e2e2621b7b813e3b71a64",
    ),
    "q4_0": (
        "c5967b142358f042d25aa8aa4c561e0e0fd8ef1f60cbf69442c72519de362880",
        "6890ed23bd29100d3f4481fc81a9c02cd2c7a40f16bc241ade86518beff7e725",
    ),
    "q4_1": (
        "c02a02bf0317a6a9f93f0e030feb026b2fb1e2c18c273037a47b9af2d89cce38",
        "e25f4492652ce599166530e1e88b21329fdc5c723944fc685cadfa1702767984",
    ),
    "q8_0": (
        "bc4cdad73691da740c4b41ed216b004226aaa3714575fbc3b7e18786ae08980d",
        "0eb570bafbadd20763199b6de49860e86dd1742ed5ba2f9908d234489dc7cff8",
    ),
    "nf4": (
        "c02c23a70fb77ca76a30e92e63bc47a2c920475f8cedab9b3debfaebd232c4b0",
        "39075b8523c02c23b31160522ee7fa9c03559b389b35340ee8dae5b07177dc0f",
    ),
    "nf4 double": (
        "5cd2aadf5d03b596aedcffd5427183078053b3869555c88a371eb10e2f3bcf40",
        "3190b3070bee4f8cc6ef2d9e2221117d56864537124eb21a55830319312b7291",
    ),
}


def digest(parts: list[np.ndarray]) -> str:
    """SHA-256 of what a quantizer stores, its arrays' bytes one after another."""
    return hashlib.sha256(b"".join(part.tobytes() for part in parts)).hexdigest()


@pytest.mark.parametrize("name", list(QUANTIZERS))
def test_the_quantizer_writes_the_pinned_bytes(name):
    stored = QUANTIZERS[name]
    assert (digest(stored(varied_weights())), digest(stored(larger_weights()))) == PINNED[name]


#: NF4's double quantization shares one offset across the whole tensor, so its blocks are not alone
BLOCKWISE = [name for name in QUANTIZERS if name != "nf4 double"]


@pytest.mark.parametrize("name", BLOCKWISE)
def test_blocks_are_quantized_alone_whatever_the_shape(name):
    """A block's bytes do not depend on its neighbours or on the array's leading shape."""
    stored, w = QUANTIZERS[name], varied_weights()
    whole = digest(stored(w))
    assert digest(stored(w.reshape(2, -1, COLS))) == whole
    assert digest(stored(w.reshape(-1))) == whole
    by_row = [stored(row[None]) for row in w[:6]]
    for part, rows in zip(stored(w[:6]), zip(*by_row, strict=True), strict=True):
        assert np.array_equal(part, np.concatenate(rows))


def _around(points: np.ndarray, reach: int = 64) -> np.ndarray:
    """float32 values within `reach` steps of each point (both ways), with the specials."""
    bits = np.asarray(points, np.float32).view(np.int32)[:, None] + np.arange(-reach, reach + 1)
    values = bits.astype(np.int32).view(np.float32).ravel()
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 3e38, -3e38], np.float32)
    return np.concatenate([values, -values, specials])


def test_iq4_nearest_entry_is_ggml_s_best_index_int8():
    """The half-step lookup against ggml's search written out: (x - lower) < (upper - x) in float32."""
    table = iq4_nl.KVALUES_F32
    x = np.concatenate([_around((table[:-1] + table[1:]) / 2), _around(table), _around(np.arange(-140, 130) / 2)])
    above = np.clip(np.searchsorted(table, x, side="right"), 1, len(table) - 1)  # NaN sorts last
    with np.errstate(invalid="ignore"):
        ggml = np.where(x - table[above - 1] < table[above] - x, above - 1, above)
    ggml = np.where(x <= table[0], 0, np.where(x >= table[-1], len(table) - 1, ggml))
    assert np.array_equal(iq4_nl.nearest_codes(x), ggml)


def test_nf4_nearest_level_is_a_binary_search_over_the_midpoints():
    x = np.concatenate([_around(nf4.MIDPOINTS, 256), _around(nf4.LEVELS), _around(np.arange(-33, 34) / 32)])
    assert np.array_equal(nf4.nearest_codes(x), np.searchsorted(nf4.MIDPOINTS, x, side="left"))
