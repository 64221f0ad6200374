#!/usr/bin/env python3
"""Golden vectors for the JS codec (widgets/codec/), computed by the Python codec (lab/).

    .venv/bin/python tests/js/make_golden.py        rewrites tests/js/golden.json

node --test tests/js/ then checks widgets/codec/ against every vector bit for bit, and
tests/js/test_golden.py fails when this file's output no longer matches the committed golden.json.

Encoding, chosen so that every float survives JSON with its exact bits:
    "f64:<16 hex digits>"   a Python float / float64, by its IEEE bit pattern
    "f32:<8 hex digits>"    a float32 result, by its IEEE bit pattern (so -0 stays -0)
    "f64:NaN", "f32:NaN"    NaN; its payload bits are not part of the contract
Integers, booleans, strings and None are stored as they are, tuples as lists, Q4_K blocks as
hex strings. Keys are the Python codec's names (snake_case); the JS codec returns the same keys
in camelCase, and the node test converts. A case whose Python call raises stores the exception
class name under "error"; the JS codec must throw an Error with that name.

The sections live here and in golden_values.py (the encoding), golden_blocks.py (Q4_K and the
GGUF block types) and golden_teach.py (number text, visible text, the exercises and the zoo).

Every random section has its own fixed seed, keys are sorted, and each case is one line, so the
output is byte-for-byte reproducible and a diff shows which cases changed.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
from golden_blocks import (
    gguf_block_cases,
    q4k_cases,
    q4k_metadata_source_cases,
    q4k_pack_cases,
    q4k_placement_cases,
    q4k_presentation,
)
from golden_teach import (
    exercise_cases,
    format_float32_cases,
    format_lab_number_cases,
    prng_cases,
    visible_text_cases,
    zoo_cases,
)
from golden_values import encode, log_spread, outcome

from lab.codes import e2m1, e4m3, e8m0, nibble
from lab.errors import InputError
from lab.formats import FORMATS, affine, iq4_nl, mxfp4, nf4, nvfp4, q4_0, q4k
from lab.numbers import parse_number, parse_number_row
from lab.teach import scale, sizes

GOLDEN_PATH = Path(__file__).with_name("golden.json")
REGENERATE = ".venv/bin/python tests/js/make_golden.py"


# ---------------------------------------------------------------------------------------------
# Element and scale codes
# ---------------------------------------------------------------------------------------------


def e2m1_cases() -> list:
    return [{"code": c, "value": e2m1.decode(c), "explain": e2m1.explain(c)} for c in range(16)]


def e2m1_encode_cases() -> list:
    """lab.codes.e2m1.encode under both rules: zeros of both signs, every midpoint and its
    neighbours, saturation, the float64 extremes and NaN (an error)."""
    rng = np.random.default_rng(2101)
    values = [0.0, -0.0, 1e-9, -1e-9, 5e-324, -5e-324, 6.0, -6.0, 7.0, -7.0, 1e300, -sys.float_info.max, math.nan]
    for midpoint in e2m1.MIDPOINTS.astype(np.float64):
        values += [midpoint, -midpoint, np.nextafter(midpoint, 0.0), np.nextafter(midpoint, np.inf)]
    values += rng.uniform(-7, 7, 60).tolist()
    return [
        {"x": float(x), "rounding": rule, **outcome(e2m1.encode, float(x), rule)}
        for x in values
        for rule in e2m1.ROUNDING_RULES
    ]


def e2m1_encode_ml_dtypes_cases() -> list:
    """ml_dtypes' float4_e2m1fn cast of float32 values: round half to even with the sign kept
    (-0 and -1e-9 give 1000), saturating at +-6; the code e2m1Encode(x, "rne") must give."""
    rng = np.random.default_rng(2102)
    midpoints = e2m1.MIDPOINTS.astype(np.float64)
    values = [0.0, -0.0, 1e-9, -1e-9, 6.0, -6.0, 7.0, -7.0, 1e30, -1e30]
    values += midpoints.tolist() + (-midpoints).tolist() + e2m1.VALUES.astype(np.float64).tolist()
    values += rng.uniform(-7, 7, 60).tolist()
    as32 = np.array(values, dtype=np.float32)
    cast = as32.astype(ml_dtypes.float4_e2m1fn).view(np.uint8)
    return [{"x": float(x), "code": int(c)} for x, c in zip(as32, cast, strict=True)]


def nibble_cases() -> list:
    return [{"code": c, "uint4": nibble.as_uint4(c), "int4": nibble.as_int4(c)} for c in range(16)]


def nibble_decoder_cases() -> dict:
    """Every code through the lab's own Q4_0, NF4 and IQ4_NL decoders, with a unit scale, so each
    value is the level the code stands for; and the level tables the modules keep."""
    codes = np.arange(16, dtype=np.uint8)
    q4_0_values = q4_0.Q4_0Tensor(codes=np.tile(codes, 2), d=np.ones(1, np.float16)).dequantize()[:16]
    nf4_values = nf4.NF4Tensor(codes=np.tile(codes, 4), absmax=np.ones(1, np.float32)).dequantize()[:16]
    iq4_nl_values = iq4_nl.IQ4NLTensor(codes=np.tile(codes, 2), d=np.ones(1, np.float16)).dequantize()[:16]
    return {
        "nf4_levels": nf4.LEVELS,
        "iq4_nl_kvalues": iq4_nl.KVALUES,
        "q4_0_code_offset": q4_0.CODE_OFFSET,
        "codes": [
            {"code": c, "q4_0": q4_0_values[c], "nf4": nf4_values[c], "iq4_nl": iq4_nl_values[c]} for c in range(16)
        ],
        "bad_codes": [{"code": c, **outcome(nibble.as_uint4, c)} for c in (-1, 16, 255)],
    }


def e8m0_cases() -> list:
    return [{"byte": b, "value": e8m0.decode(b), "explain": e8m0.explain(b)} for b in range(256)]


def e4m3_cases() -> list:
    return [{"byte": b, "value": e4m3.decode(b), "explain": e4m3.explain(b)} for b in range(256)]


def e4m3_encode_cases() -> list:
    rng = np.random.default_rng(4301)
    finite = np.array([e4m3.decode(b) for b in range(0x7F)], dtype=np.float64)  # 0 .. 448, ascending
    midpoints = (finite[:-1] + finite[1:]) / 2  # exact in float64
    values = [0.0, -0.0, 448.0, -448.0, 449.0, 464.0, 480.0, 1e10, -1e300, sys.float_info.max, 5e-324, -5e-324]
    values += [2.0**-10, 2.0**-10 * (1 + 2**-52), 2.0**-6, 2.0**-7, 3 * 2.0**-10]
    for midpoint in midpoints:
        values += [midpoint, -midpoint, np.nextafter(midpoint, 0.0), np.nextafter(midpoint, np.inf)]
    magnitudes = log_spread(rng, -12, 10, 300)
    values += (magnitudes * rng.choice([-1.0, 1.0], 300)).tolist()
    return [{"x": float(x), "byte": e4m3.encode(float(x))} for x in values]


def fp16_cases() -> list:
    rng = np.random.default_rng(1601)
    patterns = {
        sign | (exponent << 10) | fraction
        for sign in (0, 0x8000)
        for exponent in range(32)
        for fraction in (0, 1, 0x200, 0x3FF)
    }
    patterns |= set(rng.integers(0, 1 << 16, 200).tolist())
    bits = np.array(sorted(patterns), dtype=np.uint16)
    values = bits.view(np.float16).astype(np.float32)  # what lab.q4k does with d and dmin
    return [{"bits": int(b), "value": v} for b, v in zip(bits, values, strict=True)]


def fp16_encode_cases() -> list:
    """What lab.q4k.from_parts stores for d and dmin: numpy's float64 -> float16, ties to even."""
    rng = np.random.default_rng(1602)
    finite = np.arange(0x7C00, dtype=np.uint16).view(np.float16).astype(np.float64)  # 0 .. 65504
    midpoints = (finite[:-1] + finite[1:]) / 2
    picked = midpoints[rng.integers(0, midpoints.size, 150)]
    values = [0.0, -0.0, 65504.0, 65519.99, 65520.0, -65520.0, 1e6, math.inf, math.nan, 2.0**-24, 2.0**-25]
    values += [3 * 2.0**-26, 2.0**-25 * (1 + 2**-40), 2.0**-14 - 2.0**-25, 0.125, 0.0625, 0.1, 1 / 3]
    # 1 + 2^-11 + 2^-40 rounds up from float64 but to 1.0 through float32 (a double-rounding trap)
    values += [1 + 2.0**-11 + 2.0**-40, 1 + 2.0**-11, 1 + 3 * 2.0**-11, 5e-324, -1e-300]
    for midpoint in picked:
        values += [midpoint, -midpoint, np.nextafter(midpoint, 0.0), np.nextafter(midpoint, np.inf)]
    values += (rng.uniform(-1, 1, 100) * np.exp2(rng.integers(-30, 17, 100))).tolist()
    cases = []
    for x in values:
        try:
            half = q4k._to_fp16(float(x), "d")
        except Exception as error:  # noqa: BLE001
            cases.append({"x": float(x), "error": type(error).__name__})
            continue
        cases.append({"x": float(x), "bits": int(np.asarray(half).view(np.uint16))})
    return cases


# ---------------------------------------------------------------------------------------------
# fsum and the scale lab
# ---------------------------------------------------------------------------------------------


def fsum_cases() -> list:
    rng = np.random.default_rng(5501)
    lists = [
        [],
        [-0.0],
        [-0.0, -0.0],
        [1e-16, 1.0, 1e16],  # the half-way correction rounds up
        [1.0, 1e100, 1.0, -1e100],
        [0.1] * 10,
        [1e308, 1e308],  # intermediate overflow
        [1e308, 1e308, -1e308],
        [math.inf, 1.0],
        [math.inf, -math.inf],
        [math.nan, 1.0],
        [-math.inf, 5.0, -math.inf],
        [2.0**53, 1.0, 2.0**-60],
        [2.0**53, -1.0, -(2.0**-60)],
        [5e-324, 5e-324, -1e-320],
    ]
    for _ in range(150):
        n = int(rng.integers(1, 24))
        values = rng.uniform(0.5, 1.0, n) * np.exp2(rng.integers(-70, 70, n)) * rng.choice([-1.0, 1.0], n)
        if rng.random() < 0.4:  # near-cancellation: the exact answer is tiny next to the terms
            values = np.concatenate([values, -values[: n // 2] * (1 + 2.0**-50)])
            rng.shuffle(values)
        lists.append(values.tolist())
    return [{"values": values, **outcome(math.fsum, values)} for values in lists]


def scale_row(w, x, s) -> dict:
    case = {"w": [float(v) for v in w], "x": [float(v) for v in x], "scale": float(s)}
    try:
        row = scale.analyse(w, x, s)
    except Exception as error:  # noqa: BLE001
        return {**case, "error": type(error).__name__}
    return {
        **case,
        "codes": row.codes,
        "w_hat": row.w_hat,
        "weight_error": row.weight_error,
        "clipped": row.clipped,
        "y": row.y,
        "y_hat": row.y_hat,
        "delta_y": row.delta_y,
        "terms": row.terms,
    }


def scale_lab_cases() -> list:
    rng = np.random.default_rng(2024)
    article = [scale_row(scale.ARTICLE_W, scale.ARTICLE_X, s) for s in (0.5, 0.125)]
    # far beyond ±6·scale every distance ties in floating point: both codecs must saturate to ±6
    saturating = [
        scale_row([1e17, -1e17, 5.9, 6.0, 6.1], [1.0, 1.0, 1.0, 1.0, 1.0], 1.0),
        scale_row([1.0, -1.0, 0.0], [1.0, 2.0, 3.0], 2.0**-60),
    ]
    rows = []
    for _ in range(200):
        kind = rng.random()
        if kind < 0.5:
            s = 2.0 ** int(rng.integers(-8, 4))
        elif kind < 0.75:
            s = float(rng.uniform(0.01, 3))
        elif kind < 0.93:
            s = float(rng.choice([0.3, 0.1, 0.7, 1.1, 0.2, 0.35]))
        else:
            s = float(rng.choice([1e-300, 5e-324, 1e300, 2.0**-1000, 3e-310]))
        n = int(rng.integers(1, 17))
        magnitudes = s * e2m1.MAGNITUDES.astype(np.float64)
        w = rng.normal(0, 3 * s, n)
        for i in range(n):
            pick = rng.random()
            sign = rng.choice([-1.0, 1.0])
            if pick < 0.25:  # an exact midpoint between two scaled values: a tie by the arithmetic
                k = int(rng.integers(0, 7))
                w[i] = sign * (magnitudes[k] + magnitudes[k + 1]) / 2
            elif pick < 0.35:  # exactly representable
                w[i] = sign * magnitudes[int(rng.integers(0, 8))]
            elif pick < 0.42:  # beyond the ruler: clips
                w[i] = sign * s * rng.uniform(6, 20)
            elif pick < 0.45:
                w[i] = -0.0
        x = rng.normal(0, 2, n)
        if rng.random() < 0.3:
            x = rng.integers(-4, 5, n).astype(np.float64)
        rows.append(scale_row(w, x, s))
    errors = [
        scale_row([1.0], [1.0], 0.0),
        scale_row([1.0], [1.0], -0.0),
        scale_row([1.0], [1.0], -0.5),
        scale_row([1.0], [1.0], math.nan),
        scale_row([1.0], [1.0], math.inf),
        scale_row([1.0], [1.0], -math.inf),
        scale_row([1.0, 2.0], [1.0], 0.5),
        scale_row([], [], 0.5),
        scale_row([math.nan], [1.0], 0.5),
        scale_row([1.0], [math.inf], 0.5),
        scale_row([1e308, 1e308], [1.0, 1.0], 1e308),  # the sum overflows
        scale_row([1e200, 1.0], [1e200, 1.0], 0.5),  # a product overflows
        scale_row([1.0, -1.0], [1e308, 1e308], 0.5),  # exact, then reconstructed products overflow
    ]
    return article + saturating + rows + errors


def scale_representable_cases() -> list:
    scales = [0.5, 0.125, 1.0, 0.3, 0.1, 1e-300, 5e-324, 1e300, 1e308, 2.0**-1000, 3e-310, 7.0]
    return [{"scale": s, "values": scale.representable(s)} for s in scales]


# ---------------------------------------------------------------------------------------------
# Block formats (Q4_K and every GGUF block type: golden_blocks.py)
# ---------------------------------------------------------------------------------------------


def one_row_explain(explained: dict) -> dict:
    """Python positions are index tuples; the JS codec works on one row, so they are plain ints."""
    (index,) = explained["index"]
    (block,) = explained["block"]
    return {**explained, "index": index, "block": block}


def mxfp4_cases() -> list:
    rng = np.random.default_rng(3204)
    extremes = [0, 1, 2, 126, 127, 128, 253, 254, 255]
    cases = []
    for row in range(50):
        n_blocks = int(rng.integers(1, 5))
        codes = rng.integers(0, 16, 32 * n_blocks)
        scale_bytes = rng.integers(0, 256, n_blocks)
        if row % 3 == 0:
            scale_bytes[0] = extremes[row % len(extremes)]
        tensor = mxfp4.from_parts(codes, scale_bytes)
        indices = sorted({0, int(rng.integers(0, codes.size))})
        cases.append(
            {
                "codes": codes,
                "scale_bytes": scale_bytes,
                "weights": tensor.dequantize(),
                "explain": [one_row_explain(tensor.explain(i)) for i in indices],
            }
        )
    return cases


def nvfp4_cases() -> list:
    rng = np.random.default_rng(1604)
    cases = []
    for row in range(50):
        n_blocks = int(rng.integers(1, 5))
        codes = rng.integers(0, 16, 16 * n_blocks)
        scale_bytes = rng.integers(0, 256, n_blocks)
        if row % 2 == 0:
            global_scale = None
        else:
            global_scale = float(rng.choice([2688.0, 1.0, 6.0, float(log_spread(rng, -10, 14, 1)[0])]))
        tensor = nvfp4.from_parts(codes, scale_bytes, global_scale)
        indices = sorted({0, int(rng.integers(0, codes.size))})
        cases.append(
            {
                "codes": codes,
                "scale_bytes": scale_bytes,
                "global_scale": global_scale,
                "tensor_factor": tensor.tensor_factor,
                "weights": tensor.dequantize(),
                "explain": [one_row_explain(tensor.explain(i)) for i in indices],
            }
        )
    return cases


def nvfp4_tensor_factor_cases() -> list:
    """Tensor scales at and beyond float32's edges: accepted, or refused with the error class."""
    scales = [2688.0, 1.0, 3.4e38, 3.5e38, 1e39, 1.5e-45, 1e-46, 1e-50, 0.0, -1.0]
    return [
        {"global_scale": g, **outcome(lambda g=g: nvfp4.from_parts([0] * 16, [0x38], g).tensor_factor)} for g in scales
    ]


NUMBER_TEXTS = [
    "0.5",
    "1\u202e2",  # a right-to-left override, spelt out in the message
    "-1e-3",
    " 1.5 ",
    ".5",
    "1.",
    "+2",
    "\u22120.25",
    "3/8",
    "-3 / 8",
    "1/0",
    "0/0",
    "2^-3",
    "2^(-3)",
    "-2^10",
    "2^1024",
    "2^-1075",
    "2^-1074",
    "1e308",
    "1e309",
    "-1e999",
    "5e-324",
    "1e-400",
    "",
    "   ",
    "abc",
    "NaN",
    "-inf",
    "Infinity",
    "0x10",
    "1,5",
    "1_0",
    "\u0661",
    "1e",
    "e5",
    "--1",
    "2^",
    "2^1.5",
    "3/8/2",
    # near misses of the grammar, each refused or read as the one-pass reader reads it
    "1.2.3",
    "1e5/2",
    "1e+",
    "1e5e5",
    ".",
    "+",
    "./2",
    "1/.",
    "1/-2",
    "1//2",
    "1/2/",
    "1 / .5",
    "2^-",
    "2^(3",
    "2^3)",
    "02^3",
    "2.^3",
    " \u22122 ^ ( \u22123 ) ",
    "2^-0000000003",
    "\u0131nf",  # a dotless i: not the word inf
    "\ufeff1",  # a byte-order mark is hidden, not a space
    "\xa01\u3000",  # a no-break and an ideographic space are spaces
    "1\x85",
    # the length limit, checked before the text is read: 100 characters at most, counted as Python
    # counts them (an emoji is one character, two UTF-16 units)
    "1" * 100,
    "1" * 101,
    "0." + "0" * 97 + "1",
    "2^" + "0" * 97 + "3",
    "1e" + "9" * 98,
    "1.5" + " " * 98,
    "1/" + "1" * 200,
    "1" + "/1" * 100,
    "\U0001f600" * 60,
    "1" * 99 + "\U0001f600",
    "\U0001f600" * 101,
]
ROW_TEXTS = [
    "-1, 0.3, 0.9, 1.7",
    "1, 2\u200b",  # a zero-width space inside an item, spelt out in the message
    "2 1 -1 0.5",
    "1;2;3",
    "",
    " , ",
    "1, abc",
    "1, 2^-3, 3/8",
    ", ".join(["1"] * 64),
    ", ".join(["1"] * 65),
    "1e999, 1",
    "\u22121, \u22122",
    "1, " + "9" * 101,  # an item too long to read is quoted by its start
    ", ".join(["1" * 100] * 64),  # the longest row: 64 numbers of the longest kind
    "1," * 3265,  # past the longest row, refused before it is split
    "1,,2",  # two commas with nothing between: refused, not read as two numbers
    "1, 2,",  # a comma at the end leaves an empty last item
    ";1",
    "1 ;  ; 2",
    "1 , 2\t;3  4",  # spaces around a separator, and spaces alone, are one separator
]


def parse_cases() -> dict:
    def read(call, *args):
        try:
            return {"value": call(*args)}
        except InputError as error:
            return {"message": str(error)}

    return {
        "numbers": [{"text": text, **read(parse_number, text)} for text in NUMBER_TEXTS],
        "rows": [{"text": text, **read(parse_number_row, text, "weights")} for text in ROW_TEXTS],
    }


# ---------------------------------------------------------------------------------------------
# The registry and sizes (number text, the exercises and the zoo: golden_teach.py)
# ---------------------------------------------------------------------------------------------


def registry_cases() -> list:
    """The registry's constants, in registry order, as widgets/codec/formats/registry.js must hold them."""
    return [
        {
            "name": fmt.name,
            "title": fmt.title,
            "blockSize": fmt.block_size,
            "bitsPerWeight": fmt.bits_per_weight,
            "nanScaleBytes": list(fmt.nan_scale_bytes),
        }
        for fmt in FORMATS.values()
    ]


def size_tables() -> dict:
    """The tables widgets/codec/formats/sizes.js holds, in order: bits per weight by format (two
    reference points, then the registry's titles) and the bits and group sizes MLX's affine mode
    takes. The node test compares them whole, so an entry added, dropped or moved on either side fails."""
    return {
        "format_bits_per_weight": list(sizes.FORMAT_BITS_PER_WEIGHT.items()),
        "affine_bits": affine.SUPPORTED_BITS,
        "affine_group_sizes": affine.SUPPORTED_GROUP_SIZES,
    }


def bits_per_weight_cases() -> list:
    cases = [{"format": name, "opts": {}, "value": bits} for name, bits in sizes.FORMAT_BITS_PER_WEIGHT.items()]
    for n in (1, 16, 4096, 7_000_000_000):
        cases.append({"format": "NVFP4", "opts": {"n_weights": n}, "value": sizes.nvfp4_bits_per_weight(n)})
    for (bits, group), value in sizes.affine_grid().items():
        cases.append({"format": "affine", "opts": {"bits": bits, "group_size": group}, "value": value})
    cases.append(
        {
            "format": "affine",
            "opts": {"bits": 4, "group_size": 64, "parameter_bits": 32},
            "value": affine.bits_per_weight(4, 64, 32),
        }
    )
    cases.append({"format": "affine", "opts": {"bits": 7, "group_size": 64}, **outcome(affine.bits_per_weight, 7, 64)})
    cases.append({"format": "affine", "opts": {"bits": 4, "group_size": 16}, **outcome(affine.bits_per_weight, 4, 16)})
    cases.append({"format": "NVFP4", "opts": {"n_weights": 0}, **outcome(sizes.nvfp4_bits_per_weight, 0)})
    return cases


# ---------------------------------------------------------------------------------------------
# Scale bytes from a value, against ml_dtypes
# ---------------------------------------------------------------------------------------------


def e8m0_encode_cases() -> list:
    """lab.codes.e8m0.encode under both rules, for E2M1's 6, E4M3's 448 and a bare scale (1)."""
    rng = np.random.default_rng(8801)
    amaxes = [0.0, 5e-324, 1e-45, 2.0**-140, 1.0, 1.5, 3.0, 6.0, 6.000001, 7.0, 12.0, 448.0, 1e30, 2.0**130, 1.7e38]
    amaxes += log_spread(rng, -20, 20, 60).tolist()
    return [
        {"amax": float(a), "rule": rule, "element_max": m, "byte": e8m0.encode(float(a), rule, m)}
        for a in amaxes
        for rule in e8m0.SCALE_RULES
        for m in (6.0, 448.0, 1.0)
    ]


def e8m0_nearest_cases() -> list:
    """ml_dtypes' float8_e8m0fnu cast of normal float32 values: the nearest power of two, ties
    (1.5 * 2^e) up; zero, negatives and values past 2^127 give NaN (0xFF). Below 2^-126 (float32
    subnormals) ml_dtypes rounds by another rule, so those are not part of the contract."""
    rng = np.random.default_rng(8802)
    values = [2.0**-126, 1.0, 1.4, 1.5, 1.6, 3.0, 0.75, 0.7499, 2.0**127, 1.49 * 2.0**127, 1.5 * 2.0**127, 0.0, -1.0]
    values += [1.5 * 2.0**e for e in range(-120, 127, 7)]
    values += log_spread(rng, -125, 126, 80).tolist()
    as32 = np.array(values, dtype=np.float32)
    cast = as32.astype(ml_dtypes.float8_e8m0fnu).view(np.uint8)
    return [{"x": float(x), "byte": int(b)} for x, b in zip(as32, cast, strict=True)]


def e4m3_encode_ml_dtypes_cases() -> list:
    """ml_dtypes' float8_e4m3fn cast of float32 values within +-464 (beyond, it gives NaN where
    the lab saturates at 448): round half to even, the byte e4m3Encode must give."""
    rng = np.random.default_rng(4302)
    finite = np.array([e4m3.decode(b) for b in range(0x7F)], dtype=np.float64)
    values = ((finite[:-1] + finite[1:]) / 2).tolist() + finite.tolist() + [463.0, -463.0, -0.0]
    # up to E4M3's largest finite value, 448, beyond which ml_dtypes' cast has its own rule
    values += (np.minimum(log_spread(rng, -12, 9, 200), 448.0) * rng.choice([-1.0, 1.0], 200)).tolist()
    as32 = np.array(values, dtype=np.float32)
    cast = as32.astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    return [{"x": float(x), "byte": int(b)} for x, b in zip(as32, cast, strict=True)]


# ---------------------------------------------------------------------------------------------
# Assembly
# ---------------------------------------------------------------------------------------------


def build_golden() -> dict:
    with np.errstate(over="ignore"):  # the extreme scale-lab scales overflow on purpose
        return _sections()


def _sections() -> dict:
    block_formats, block_cases = gguf_block_cases()
    return {
        "meta": {
            "generator": "tests/js/make_golden.py",
            "regenerate": REGENERATE,
            "floats": "tagged IEEE bit patterns in big-endian hex, float64 or float32; NaN by name",
            "keys": "Python names; the JS codec uses them in camelCase",
        },
        "bits_per_weight": bits_per_weight_cases(),
        "e2m1": e2m1_cases(),
        "e2m1_encode": e2m1_encode_cases(),
        "e2m1_encode_ml_dtypes": e2m1_encode_ml_dtypes_cases(),
        "e4m3": e4m3_cases(),
        "e4m3_encode": e4m3_encode_cases(),
        "e8m0": e8m0_cases(),
        "e8m0_encode": e8m0_encode_cases(),
        "e8m0_nearest_ml_dtypes": e8m0_nearest_cases(),
        "e4m3_encode_ml_dtypes": e4m3_encode_ml_dtypes_cases(),
        "exercise_prng": prng_cases(),
        "exercises": exercise_cases(),
        "zoo": zoo_cases(),
        "format_float32": format_float32_cases(),
        "format_lab_number": format_lab_number_cases(),
        "visible_text": visible_text_cases(),
        "fp16": fp16_cases(),
        "fp16_encode": fp16_encode_cases(),
        "fsum": fsum_cases(),
        "gguf_block_formats": block_formats,
        "gguf_blocks": block_cases,
        "mxfp4": mxfp4_cases(),
        "nibble": nibble_cases(),
        "nibble_decoders": nibble_decoder_cases(),
        "nvfp4": nvfp4_cases(),
        "nvfp4_tensor_factor": nvfp4_tensor_factor_cases(),
        "parse": parse_cases(),
        "q4k": q4k_cases(),
        "registry": registry_cases(),
        "q4k_metadata_sources": q4k_metadata_source_cases(),
        "q4k_pack": q4k_pack_cases(),
        "q4k_placement": q4k_placement_cases(),
        "q4k_presentation": q4k_presentation(),
        "scale_lab": scale_lab_cases(),
        "scale_representable": scale_representable_cases(),
        "sizes": size_tables(),
    }


def dumps(value) -> str:
    return json.dumps(encode(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def golden_text() -> str:
    """golden.json's exact text: one section per key, one case per line."""
    golden = build_golden()
    sections = []
    for key in sorted(golden):
        value = golden[key]
        if isinstance(value, list):
            body = ",\n".join(dumps(case) for case in value)
            sections.append(f"{json.dumps(key)}: [\n{body}\n]")
        else:
            sections.append(f"{json.dumps(key)}: {dumps(value)}")
    return "{\n" + ",\n".join(sections) + "\n}\n"


def main() -> None:
    text = golden_text()
    GOLDEN_PATH.write_text(text, encoding="utf-8")
    print(f"wrote {GOLDEN_PATH} ({len(text.encode('utf-8')):,} bytes)")


if __name__ == "__main__":
    main()
