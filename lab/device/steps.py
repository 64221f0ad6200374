"""The guarded MLX calls: which devices there are, each call evaluated at once, and refusals recorded.

A step MLX refuses becomes a line in the report, never an exception; the lab's own errors, and
anything that fails while the lab converts MLX's result, propagate so a lab bug is never
reported as MLX refusing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from lab._arrays import to_float32_input
from lab.errors import LabError, ShapeError
from lab.formats import mlx_layout
from lab.formats.fixtures import varied_input

# MLX's exceptions on a refused operation: ValueError for bad arguments, RuntimeError from the
# backend, TypeError for a keyword this version does not take.
MLX_REFUSALS = (ValueError, RuntimeError, TypeError)


def mlx_devices(mx) -> list[tuple[str, object]]:
    """(label, device) for every MLX device that can run an operation: the CPU, then a GPU if any."""
    devices = [("cpu", mx.cpu)]
    try:
        mx.eval(mx.add(mx.array([1.0]), 1.0, stream=mx.gpu))
    except MLX_REFUSALS:
        return devices
    if mx.metal.is_available():
        backend = "Metal"
    elif hasattr(mx, "cuda") and mx.cuda.is_available():
        backend = "CUDA"
    else:
        backend = "unknown backend"
    return devices + [(f"gpu ({backend})", mx.gpu)]


def device_name(mx, device) -> str:
    """What mx.device_info calls this device, or 'unknown'."""
    try:
        info = mx.device_info(device)
    except MLX_REFUSALS:
        return "unknown"
    return str(info.get("device_name", info.get("architecture", "unknown")))


class Steps:
    """Runs MLX calls, evaluating them at once so a refusal surfaces here, and records refusals."""

    def __init__(self, mx) -> None:
        self.mx = mx
        self.refusals: list[str] = []
        self.dtypes: tuple[str, ...] = ()  # the MLX dtypes of the last result, before numpy widened them

    def attempt(self, step: str, call: Callable[[], Any]) -> Any:
        """The call's result as numpy (a tuple for several arrays, a dict for a dict), or None if MLX refused.

        `call` holds MLX calls only. Only what they raise is recorded as a refusal: the lab's own
        errors (every LabError is a ValueError, one of the exception types MLX refuses with) and
        anything raised while the lab converts the result to numpy propagate as they are, so a
        lab bug is never reported as MLX refusing.
        """
        try:
            result = call()
            if isinstance(result, dict):  # mx.load: name -> array
                arrays = tuple(result.values())
            else:
                arrays = tuple(result) if isinstance(result, (tuple, list)) else (result,)
            self.mx.eval(*arrays)
        except MLX_REFUSALS as error:
            if isinstance(error, LabError):
                raise
            self.refusals.append(f"{step}: {type(error).__name__}: {_first_sentence(error)}")
            return None
        converted = tuple(mlx_layout.to_numpy(array) for array in arrays)
        self.dtypes = tuple(str(array.dtype).rsplit(".", 1)[-1] for array in arrays)
        if isinstance(result, dict):
            return dict(zip(result, converted, strict=True))
        return converted if isinstance(result, (tuple, list)) else converted[0]


def _first_sentence(error: BaseException) -> str:
    """What MLX said, up to its first line. A binding's TypeError goes on with "The following
    argument types are supported:" and a signature on the next lines; that sentence is cut too,
    as it promises a list the pane does not show."""
    first = (str(error).splitlines() or [""])[0]
    return first.split(" The following argument types are supported:")[0]


def learner_input(x, length: int) -> np.ndarray:
    """x as float32 [M, length]; without one, a row with varied signs and magnitudes."""
    if x is None:
        return varied_input(length).astype(np.float32)[None, :]
    inputs, _ = to_float32_input(x, what="x")
    inputs = inputs[None, :] if inputs.ndim == 1 else inputs
    if inputs.ndim != 2 or inputs.shape[-1] != length:
        raise ShapeError(f"x must be [{length}] or [M, {length}] to multiply these weights, got shape {inputs.shape}")
    return inputs


def mlx_version(mx) -> str:
    return getattr(mx, "__version__", "unknown")
