"""The four-bit lab: what a 4-bit weight really is, in four layers that import downward only.

    lab.errors, lab.numbers        the typed errors, and the number grammar every page reads and writes
    lab.codes                      element and scale codes: e2m1, e8m0, e4m3, nibble (UINT4, INT4)
    lab.formats                    block formats behind one registry (FORMATS) and one tensor Protocol:
                                   mxfp4, mxfp8, nvfp4, affine, q4k, q8_0; rounding presets; MLX's layout
    lab.interop                    files and libraries: gguf (validated reading, inventories, writing)
    lab.teach                      the teaching apps: scale lab, sizes, metrics, charts, course, zoo,
                                   real weights, the on-device pane (device)

The modules learners and notebooks name most are re-exported here, so `from lab import mxfp4, q4k`
keeps working whichever layer a module lives in. They load on first use: importing `lab` alone
pulls in neither altair nor gguf.
"""

from __future__ import annotations

import importlib

from lab.numbers import format_number

__version__ = "0.1.0"

#: short name -> the module it stands for
_SHORT_NAMES = {
    "e2m1": "lab.codes.e2m1",
    "e8m0": "lab.codes.e8m0",
    "e4m3": "lab.codes.e4m3",
    "nibble": "lab.codes.nibble",
    "rounding": "lab.formats.rounding",
    "mxfp4": "lab.formats.mxfp4",
    "mxfp8": "lab.formats.mxfp8",
    "nvfp4": "lab.formats.nvfp4",
    "affine": "lab.formats.affine",
    "q4k": "lab.formats.q4k",
    "q8_0": "lab.formats.q8_0",
    "mlx_layout": "lab.formats.mlx_layout",
    "gguf_tools": "lab.interop.gguf",
    "scale": "lab.teach.scale",
    "sizes": "lab.teach.sizes",
    "metrics": "lab.teach.metrics",
    "charts": "lab.teach.charts",
    "course": "lab.teach.course",
    "zoo": "lab.teach.zoo",
    "real_weights": "lab.teach.real_weights",
    "device": "lab.teach.pane",
}

__all__ = ["format_number", *_SHORT_NAMES]


def __getattr__(name: str):
    try:
        module = importlib.import_module(_SHORT_NAMES[name])
    except KeyError:
        raise AttributeError(f"module 'lab' has no attribute {name!r}") from None
    globals()[name] = module
    return module


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_SHORT_NAMES))
