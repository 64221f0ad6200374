"""Pieces shared by the block formats: input checks in MLX's words and flat-index bookkeeping."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from lab._arrays import is_integer, to_float32_input
from lab.errors import DTypeError, GroupSizeError, ShapeError


def check_group(mode: str, group_size: int, expected: int) -> None:
    # != alone would let 32.0 (or True for a group of 1) through as a group size
    if not is_integer(group_size) or group_size != expected:
        raise GroupSizeError(f"[quantize] {mode} quantization requires group size {expected} but got {group_size}.")


def float_input(w: ArrayLike, group_size: int) -> tuple[np.ndarray, str]:
    """The weights as float32 plus the dtype to emulate; the last dimension must split into groups.

    A float32 input is not copied (the quantizers only read their weights), which spares a pass
    over every weight; float16 and bfloat16 inputs are widened into a new array.
    """
    weights, dtype = to_float32_input(w, what="w", copy=False)
    if weights.ndim == 0 or weights.shape[-1] == 0 or weights.shape[-1] % group_size:
        shape = "(" + ",".join(str(n) for n in weights.shape) + ")"
        raise ShapeError(
            "[quantize] The last dimension of the matrix needs to be divisible by the quantization "
            f"group size {group_size}. However the provided  matrix has shape {shape}"
        )
    return weights, dtype


def grouped(array: np.ndarray, group_size: int) -> np.ndarray:
    return array.reshape(*array.shape[:-1], array.shape[-1] // group_size, group_size)


def block_amax(magnitude: np.ndarray) -> np.ndarray:
    """The largest value of each block of non-negative float32 magnitudes [..., n, group] -> [..., n].

    Non-negative float32 numbers are ordered like their bit patterns read as integers, so the
    max of the int32 view is the bit pattern of the float max. numpy's integer max over short
    rows runs about twice as fast as its float max, which has to watch for NaN (the magnitudes
    here are finite), and starting from 0 spares it a copy per row.
    """
    return magnitude.view(np.int32).max(axis=-1, initial=0).view(np.float32)


def element_index(shape: tuple[int, ...], index) -> tuple[int, ...]:
    """A flat index or a full index tuple as a full index tuple, checked against `shape`.

    Only integers index: int() would quietly truncate 2.5 to 2, and True is an int in Python.
    """
    if is_integer(index):
        total = int(np.prod(shape))
        if not -total <= index < total:
            raise ShapeError(f"element index {index} is outside a tensor of {total} weights")
        return tuple(int(i) for i in np.unravel_index(int(index) % total, shape))
    if not isinstance(index, (tuple, list)) or not all(is_integer(i) for i in index):
        raise DTypeError(
            f"an element index is an integer (a flat index) or a tuple of {len(shape)} integers, got {index!r}"
        )
    index = tuple(int(i) for i in index)
    if len(index) != len(shape) or any(not 0 <= i < n for i, n in zip(index, shape, strict=True)):
        raise ShapeError(f"element index {index} does not fit a tensor of shape {shape}")
    return index
