"""Every registered format MLX has a mode for (MXFP4, MXFP8, NVFP4, MLX affine...), on every device.

run_block is the block pane's door: it resolves the name it is given to a Format once, opens the
device session for that format's MLX mode (or returns the session's report of why nothing runs),
and hands the Format down to lab.device.block_runs, which asks MLX to do what the lab did on
every device. Nothing below climbs back here. MLX decodes the lab's bytes, so a quantizer
disagreement and a decoder disagreement show up separately.
"""

from __future__ import annotations

from lab.device.block_runs import measure_on_devices
from lab.device.report import DeviceReport
from lab.device.session import DeviceSession
from lab.errors import LabError
from lab.formats import affine
from lab.formats.registry import FORMATS, Format, MLXTensor, get

#: the name run_block took for MLX affine before the registry, with bits= and group_size= options
LEGACY_AFFINE = "affine"
#: affine.quantize's defaults, which are MLX's: what "affine" means without bits= or group_size=
_AFFINE_DEFAULTS = {"bits": 4, "group_size": 64}


def resolve_format(fmt: str | Format, options: dict, tensor=None) -> tuple[Format, dict]:
    """The Format a run_block call names, and the quantizer options left once it is chosen.

    "affine" with bits= and group_size= (or a tensor that has them) is the registry entry
    "affine{bits}_g{group_size}" where one is registered, else an unregistered Format around
    affine.quantize with those settings.
    """
    if isinstance(fmt, Format):
        return fmt, options
    if fmt != LEGACY_AFFINE:
        return get(fmt), options
    rest = {key: value for key, value in options.items() if key not in _AFFINE_DEFAULTS}
    settings = {key: options.get(key, getattr(tensor, key, default)) for key, default in _AFFINE_DEFAULTS.items()}
    bits, group_size = settings["bits"], settings["group_size"]
    name = f"affine{bits}_g{group_size}"
    if name in FORMATS:
        return FORMATS[name], rest
    return affine.format_record(bits, group_size), rest


def run_block(fmt: str | Format, w=None, tensor=None, x=None, **options) -> DeviceReport:
    """Run a block (or tensor) of a registered format through MLX on every device and compare with the lab.

    fmt: a registry name ("mxfp4", "nvfp4", "affine4_g64"...) or a Format; "affine" with bits=
       and group_size= names the affine entry with those settings. A format MLX has no mode for
       gets a report that says so.
    w: the original float weights [..., K]. With w, mx.quantize runs on them, its bytes are
       compared with the lab's and MLX's own round trip with the lab's; without w there is
       nothing to quantize and only decoding runs.
    tensor: the lab's tensor; quantized from w with `options` (rule=, global_scale=...) when not
       given. A given tensor already fixes those settings, so passing options with it raises a
       LabError rather than ignoring them.
    x: the learner's input, [K] or [M, K]; a fixed row of varied signs and magnitudes if None.
       Both sides use x rounded to float32, the precision MLX receives it in.
    Q4_K blocks go through run_q4k, which knows MLX's affine rewrite and mx.load of a GGUF file.
    """
    if w is None and tensor is None:
        raise LabError("run_block needs the float weights w, a lab tensor, or both")
    if tensor is not None and options:
        raise LabError(
            f"run_block got a tensor and the quantizer settings {sorted(options)}; the settings apply only "
            "when run_block quantizes w itself, and the tensor already fixes them: pass one or the other"
        )
    spec, options = resolve_format(fmt, options, tensor)
    # Q4_K has no MLX mode of its own: its bytes reach MLX through run_q4k, which knows its affine rewrite
    session = DeviceSession.open("block", spec, spec.mlx)
    if isinstance(session, DeviceReport):
        return session
    if tensor is not None and not isinstance(tensor, MLXTensor):
        raise LabError(
            f"running {spec.title} needs a tensor with MLX's layout (mlx_layout, to_mlx), got {type(tensor)}"
        )
    return measure_on_devices(session, spec, w, tensor, x, options)
