"""Golden values as golden.json writes them: floats as tagged IEEE bit patterns, and an outcome
that is a value or an error's class name (tests/js/make_golden.py)."""

from __future__ import annotations

import math
import struct

import numpy as np


def f64(value) -> str:
    value = float(value)
    if math.isnan(value):
        return "f64:NaN"
    return "f64:" + struct.pack(">d", value).hex()


def f32(value) -> str:
    value = np.float32(value)
    if np.isnan(value):
        return "f32:NaN"
    return "f32:" + np.array(value, dtype=">f4").tobytes().hex()


def encode(obj):
    """Plain JSON values, with every float replaced by its tagged bit pattern."""
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, np.float32):
        return f32(obj)
    if isinstance(obj, (float, np.float64)):
        return f64(obj)
    if isinstance(obj, np.ndarray):
        return [encode(item) for item in obj.tolist()] if obj.dtype != np.float32 else [f32(v) for v in obj.ravel()]
    if isinstance(obj, dict):
        return {str(key): encode(value) for key, value in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [encode(item) for item in obj]
    if obj is None or isinstance(obj, str):
        return obj
    raise TypeError(f"cannot encode {type(obj).__name__} {obj!r}")


def outcome(call, *args) -> dict:
    """{"value": result} or {"error": exception class name}."""
    try:
        return {"value": call(*args)}
    except Exception as error:  # noqa: BLE001 - the class name is the golden datum
        return {"error": type(error).__name__}


def log_spread(rng: np.random.Generator, low: int, high: int, n: int) -> np.ndarray:
    """n magnitudes spread over 2**low .. 2**high, one binade as likely as another, each exact: a
    uniform mantissa in [1, 2) times a whole power of two. np.exp2 of a fraction differs by an ulp
    between CPUs (numpy picks a SIMD path per machine), which made golden.json depend on the
    machine that wrote it."""
    return np.ldexp(rng.uniform(1.0, 2.0, n), rng.integers(low, high, n))
