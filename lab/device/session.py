"""One device session: the installed MLX, the devices it runs on, and how it runs each registry format.

    session = DeviceSession.open(fmt)     # a DeviceSession, or NoDevice saying why nothing runs fmt here
    session.devices                       # (label, device) for the CPU, then a GPU where there is one
    mlx_parameters(fmt)                   # the keyword arguments MLX runs fmt's bytes with, or None
    no_mode(fmt, session.version)         # what a pane says of a format MLX has no mode for

Every pane (run_block, run_model, run_chat) opens one session, rather than importing MLX and
listing devices itself; where there is no MLX, or MLX has no mode for a format, NoDevice holds
the one wording every pane shows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lab.device.steps import mlx_devices, mlx_version
from lab.formats import mlx_layout, q4k
from lab.formats.registry import Format, with_mlx

#: Q4_K on MLX: its 32-lane subblocks are affine groups of 32 (lab.formats.q4k.to_mlx_affine)
Q4K_AFFINE = {"mode": "affine", "bits": 4, "group_size": 32}


def mlx_parameters(fmt: Format) -> dict | None:
    """The MLX parameters a format's bytes run with: its own mode, Q4_K's affine repack, or None."""
    if fmt.mlx is not None:
        return fmt.mlx.parameters()
    return Q4K_AFFINE if fmt.name == q4k.FORMAT.name else None


def mlx_layout_of(fmt: Format, tensor) -> tuple:
    """A tensor's arrays as MLX takes them: the format's own MLX layout, or Q4_K's affine repack."""
    return tensor.mlx_layout() if fmt.mlx is not None else tensor.to_mlx_affine()


@dataclass(frozen=True)
class NoDevice:
    """Why nothing runs on a device: no MLX here (with how to install it), or no MLX mode for a format."""

    message: str
    install_hint: str = ""
    mlx_version: str | None = None  # None where MLX could not be imported

    @property
    def available(self) -> bool:
        return self.mlx_version is not None


@dataclass(frozen=True)
class DeviceSession:
    """The installed MLX and every device it can run an operation on."""

    mx: Any
    devices: tuple[tuple[str, object], ...]  # (label, device): "cpu", then "gpu (Metal)" or "gpu (CUDA)"

    @classmethod
    def open(cls, fmt: Format | None = None) -> DeviceSession | NoDevice:
        """A session on the installed MLX, or NoDevice saying why there is none and how to install it;
        with `fmt`, also NoDevice where MLX cannot run that format's bytes (see mlx_parameters)."""
        try:
            mx = mlx_layout.mlx_core()
        except mlx_layout.MLXUnavailableError as error:
            return NoDevice(str(error), mlx_layout.install_hint())
        if fmt is not None and mlx_parameters(fmt) is None:
            return no_mode(fmt, mlx_version(mx))
        return cls(mx, tuple(mlx_devices(mx)))

    @property
    def version(self) -> str:
        return mlx_version(self.mx)


def no_mode(fmt: Format, version: str | None) -> NoDevice:
    """What every pane says of a format whose bytes MLX cannot take (`version`: MLX's, None without MLX)."""
    modes = ", ".join(sorted({other.mlx.mode for other in with_mlx()}))
    return NoDevice(
        f"MLX has no {fmt.title} mode: mx.quantize and mx.dequantize take mode= as one of {modes} only, "
        f"so there is nothing of {fmt.title} for a device to run.",
        mlx_version=version,
    )
