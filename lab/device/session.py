"""One device session: the installed MLX, the devices it runs on, and the one report of "nothing runs here".

    session = DeviceSession.open("block", spec, spec.mlx)   # a DeviceSession, or the DeviceReport saying why not
    session.devices                                         # (label, device): the CPU, then a GPU where there is one
    mlx_mode(spec)                                          # the MLX mode a format's bytes run in, or None

Every pane (run_block, run_q4k, run_model, run_chat) opens one session, rather than importing MLX
and listing devices itself. Where there is no MLX, or no MLX mode for the format's bytes, the
session is not opened and the pane returns the report `open` hands back instead: every pane says
it in the same words.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lab.device.report import DeviceReport
from lab.device.steps import mlx_devices, mlx_version
from lab.formats import mlx_layout
from lab.formats.registry import Format, MLXMode, with_mlx


def mlx_mode(fmt: Format) -> MLXMode | None:
    """The MLX mode a format's bytes run in: its own, or the one its blocks rewrite into (Q4_K's
    affine groups of 32); None where MLX can take neither."""
    return fmt.mlx or fmt.mlx_rewrite


def mlx_layout_of(fmt: Format, tensor) -> tuple:
    """A tensor's arrays as MLX takes them: in the format's own MLX layout, or rewritten into its `mlx_rewrite`."""
    return tensor.mlx_layout() if fmt.mlx is not None else tensor.to_mlx_affine()


@dataclass(frozen=True)
class DeviceSession:
    """The installed MLX and every device it can run an operation on."""

    mx: Any
    devices: tuple[tuple[str, object], ...]  # (label, device): "cpu", then "gpu (Metal)" or "gpu (CUDA)"

    @classmethod
    def open(cls, pane: str, fmt: Format, mode: MLXMode | None) -> DeviceSession | DeviceReport:
        """A session on the installed MLX for running `fmt`'s bytes in `mode`; where that cannot be,
        the `pane`'s report of why: no MLX here (and how to install it), or no mode (None) to run in."""
        try:
            mx = mlx_layout.mlx_core()
        except mlx_layout.MLXUnavailableError as error:
            return DeviceReport(
                pane, fmt.name, fmt.title, str(error), available=False, install_hint=mlx_layout.install_hint()
            )
        if mode is None:
            modes = ", ".join(sorted({other.mlx.mode for other in with_mlx()}))
            message = (
                f"MLX has no {fmt.title} mode: mx.quantize and mx.dequantize take mode= as one of {modes} only, "
                f"so there is nothing of {fmt.title} for a device to run."
            )
            return DeviceReport(pane, fmt.name, fmt.title, message, mlx_version=mlx_version(mx))
        return cls(mx, tuple(mlx_devices(mx)))

    @property
    def version(self) -> str:
        return mlx_version(self.mx)
