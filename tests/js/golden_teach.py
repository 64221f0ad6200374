"""golden.json's sections for the course's own pieces: number formatting, visible text, the
exercises' generator and the zoo (tests/js/make_golden.py)."""

from __future__ import annotations

import math

import numpy as np
from golden_values import log_spread

from lab.codes import e2m1, e8m0, nibble
from lab.formats import affine, mxfp4, nvfp4, q4k, q8_0
from lab.numbers import format_float32
from lab.numbers import format_number as format_lab_number
from lab.teach import scale, sizes
from lab.teach.zoo import checks as zoo_checks
from lab.teach.zoo import specimens as zoo_specimens
from lab.text import visible


def format_lab_number_cases() -> list:
    rng = np.random.default_rng(1010)
    values = [0.0, -0.0, math.nan, math.inf, -math.inf, 1.0, -1.5, 0.1, 1e16, 1e-5, 1e-4, 123456.0, 1234567890.0]
    values += [12345678905.0, 10000000005.0, 2.0**-15, -(2.0**-15), 2.0**-127, 2.0**127, 6 * 2.0**127, 5e-324]
    values += [9999999999.5, 99999.999995, 0.00012345678905]
    values += log_spread(rng, -149, 127, 120).astype(np.float32).astype(np.float64).tolist()
    values += (rng.uniform(-1, 1, 60) * np.exp2(rng.integers(-30, 40, 60))).tolist()
    return [{"value": float(v), "text": format_lab_number(v)} for v in values]


#: text from outside the lab: controls, zero-width and bidi marks, other spaces, emoji, scripts
#: that run right to left, markup that must stay text, and values long enough to be cut
VISIBLE_TEXTS = [
    "",
    "plain name.weight",
    "<b>x</b> **y** [a](javascript:alert(1))",
    "tab\there\nnew line\r\x00\x1f\x7f\x85",
    "zero\u200bwidth \u200c\u200d\ufeff joiners",
    "right\u202eto left\u2066isolate\u2069",
    "no\u00a0break en\u2002em\u2003 ideographic\u3000 space",
    "line\u2028para\u2029",
    "emoji 🧪🇩🇪 and a tag \U000e0041",
    "Größe · 日本語のテキスト · עברית · العربية",
    "private \ue000 use",
]


VISIBLE_LIMITS = [None, 1, 2, 5, 8, 12, 40]


def visible_text_cases() -> list:
    return [
        {"text": text, "limit": limit, "shown": visible(text, limit)}
        for text in VISIBLE_TEXTS
        for limit in VISIBLE_LIMITS
    ]


def format_float32_cases() -> list:
    rng = np.random.default_rng(3232)
    values = [0.0, -0.0, math.nan, math.inf, -math.inf, 1.0, -3.25, 0.1, 1e7, 1e-4, 2.0**-149, 2.0**-126, 2.0**-127]
    values += [float(np.float32(1e-4)), float(np.nextafter(np.float32(1e-4), np.float32(0)))]
    values += [float(np.nextafter(np.float32(1e7), np.float32(0))), 16777216.0, 65504.0, 2.0**-24, 2.0**127]
    values += [float(np.finfo(np.float32).max), 0.3, 33554432.0, 1.0 + 2.0**-23]
    # Even mantissas whose shortest text sits exactly on the midpoint to a neighbour: numpy
    # counts the midpoint as reading back to the even value, so "3.355445e+07" is enough.
    values += [33554448.0, 67108896.0, 134217792.0, 268435584.0, 8590399488.0, 549785567232.0]
    values += [2.0**k for k in range(-149, 128, 7)]
    patterns = rng.integers(0, 1 << 32, 250, dtype=np.uint64).astype(np.uint32).view(np.float32)
    values += [float(v) for v in patterns if np.isfinite(v)]
    values += (np.float32(0.125) * rng.integers(0, 64, 40).astype(np.float32) * rng.integers(0, 16, 40)).tolist()
    return [{"value": np.float32(v), "text": format_float32(v)} for v in values]


def mulberry32(seed: int):
    """The exercises' PRNG (codec/teach/exercises.js), in 32-bit arithmetic."""
    state = seed & 0xFFFFFFFF

    def imul(a: int, b: int) -> int:
        return (a * b) & 0xFFFFFFFF

    def draw() -> float:
        nonlocal state
        state = (state + 0x6D2B79F5) & 0xFFFFFFFF
        t = state
        t = imul(t ^ (t >> 15), t | 1)
        t ^= (t + imul(t ^ (t >> 7), t | 61)) & 0xFFFFFFFF
        return ((t ^ (t >> 14)) & 0xFFFFFFFF) / 4294967296

    return draw


def exercise_seed(seed: int, kind: str, round_: int) -> int:
    value = 0x811C9DC5
    for char in kind:
        value = ((value ^ ord(char)) * 0x01000193) & 0xFFFFFFFF
    return (value ^ (seed & 0xFFFFFFFF) ^ ((round_ * 0x9E3779B9) & 0xFFFFFFFF)) & 0xFFFFFFFF


def prng_cases() -> list:
    cases = []
    for seed, kind, round_ in [
        (0, "nibble-decode", 0),
        (1, "e8m0-rule", 0),
        (1, "e8m0-rule", 5),
        (2**32 - 1, "zoo-check", 3),
    ]:
        mixed = exercise_seed(seed, kind, round_)
        draw = mulberry32(mixed)
        cases.append({"seed": seed, "kind": kind, "round": round_, "mixed": mixed, "draws": [draw() for _ in range(6)]})
    return cases


def zoo_cases() -> dict:
    wrong = [s for s in zoo_specimens.SPECIMENS if s.deliberately_wrong]
    return {
        # (number, title) pairs in Python's order: a JS object would list its number keys ascending
        "check_titles": list(zoo_checks.CHECK_TITLES.items()),
        "wrong_specimens": [
            {"name": s.name, "kind": s.kind, "what_is_wrong": s.what_is_wrong, "caught_by": list(s.caught_by)}
            for s in wrong
        ],
    }


def _padded(code: int, length: int) -> np.ndarray:
    return np.array([code] + [0] * (length - 1))


def exercise_cases() -> list:
    """Instance parameters chosen here and the answer lab/ computes; the node test feeds the
    parameters to exerciseSolve and exerciseCheck and compares bit for bit."""
    rng = np.random.default_rng(5150)
    cases = []

    def add(kind, params, answer, accepted=None):
        case = {"kind": kind, "params": params, "answer": answer}
        if accepted is not None:
            case["accepted"] = accepted
        cases.append(case)

    readings = {"E2M1": e2m1.decode, "UINT4": nibble.as_uint4, "INT4": nibble.as_int4}
    for code in range(16):
        for reading, decode in readings.items():
            add("nibble-decode", {"code": code, "reading": reading}, decode(code))
    values = [float(e2m1.decode(c)) for c in range(16)]
    for value in values:
        if value != 0:
            add("e2m1-code", {"value": value}, values.index(value))
    for _ in range(12):
        w, s = int(rng.integers(-400, 401)) / 100, 2.0 ** int(rng.integers(-3, 1))
        add("scale-nearest", {"w": w, "scale": s}, scale.analyse([w], [1.0], s).w_hat[0])
        w2 = [int(v) / 10 for v in rng.integers(-30, 31, 2)]
        x2 = [float(v) for v in rng.choice([-3, -2, -1, 1, 2, 3], 2)]
        s2 = 2.0 ** int(rng.integers(-2, 1))
        add("scale-delta-y", {"w": w2, "x": x2, "scale": s2}, scale.analyse(w2, x2, s2).delta_y)
    for amax in [0.75, 1.5, 3.0, 5.99, 6.0, 6.01, 9.99, 12.0, 0.0625, 24.5]:
        for rule in e8m0.SCALE_RULES:
            add("e8m0-rule", {"amax": amax, "rule": rule}, e8m0.encode(amax, rule))
    for _ in range(12):
        code, byte = int(rng.integers(0, 16)), int(rng.integers(122, 132))
        add(
            "mxfp4-decode",
            {"code": code, "scale_byte": byte},
            mxfp4.from_parts(_padded(code, 32), [byte]).dequantize()[0],
        )
        byte4, g = int(rng.integers(0x28, 0x49)), float(rng.choice([672, 1344, 2688, 5376, 10752]))
        weight = nvfp4.from_parts(_padded(code, 16), [byte4], global_scale=g).dequantize()[0]
        add("nvfp4-decode", {"code": code, "scale_byte": byte4, "global_scale": g}, weight)
        trap = int(rng.integers(3, 11)) << 3
        add(
            "nvfp4-reciprocal",
            {"code": max(code, 1), "scale_byte": trap},
            nvfp4.from_parts(_padded(max(code, 1), 16), [trap]).dequantize()[0],
        )
    for p in (0, 1, 31, 32, 63, 64, 100, 127):
        low, high = q4k.lanes(p)
        add("q4k-lane", {"payload_index": p, "nibble": "low"}, low)
        add("q4k-lane", {"payload_index": p, "nibble": "high"}, high)
    for _ in range(6):
        b12 = [int(v) for v in rng.integers(0, 256, 12)]
        scales, mins = q4k.unpack_scale_min(np.array(b12))
        for j in range(8):
            add("q4k-metadata", {"metadata": b12, "subblock": j, "field": "s"}, scales[j])
            add("q4k-metadata", {"metadata": b12, "subblock": j, "field": "m"}, mins[j])
    gguf = {"Q4_K": q4k, "Q8_0": q8_0}
    for name, module in gguf.items():
        add("gguf-bpw", {"type": name}, module.BITS_PER_WEIGHT)
        for rows, columns in [(1, 256), (2, 2816), (4096, 4096), (32, 512)]:
            blocks = rows * columns // module.BLOCK_WEIGHTS
            add("gguf-bytes", {"type": name, "rows": rows, "columns": columns}, blocks * module.BLOCK_BYTES)
    for billions in (1, 3, 7, 8, 13, 70, 405):
        for name in ("BF16", "ideal 4-bit", "MXFP4", "NVFP4", "Q4_K", "Q8_0"):
            bits = sizes.FORMAT_BITS_PER_WEIGHT[name]
            add("capacity-gb", {"billions": billions, "format": name}, sizes.payload_gigabytes(billions * 10**9, bits))
    for bits in (2, 3, 4, 8):
        for group in (32, 64, 128):
            add("capacity-affine", {"bits": bits, "group_size": group}, affine.bits_per_weight(bits, group))
    for specimen in zoo_specimens.SPECIMENS:
        if specimen.deliberately_wrong:
            add("zoo-check", {"specimen": specimen.name}, specimen.caught_by[0], list(specimen.caught_by))
    wrong_decoders = {
        "raw E8M0 byte as the scale": zoo_specimens.decode_mxfp4_raw_scale_byte,
        "INT4 instead of E2M1": zoo_specimens.decode_mxfp4_int4_elements,
    }
    for name, decoder in wrong_decoders.items():
        for code in (1, 5, 7, 8, 10, 15):
            for byte in (124, 127, 129):
                add(
                    "zoo-wrong-value",
                    {"specimen": name, "code": code, "scale_byte": byte},
                    decoder(_padded(code, 32), [byte])[0],
                )
    return cases
