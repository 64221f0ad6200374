"""A quantization predicate (the MLX guide's §3.6 and §5) built from rows a learner types, never from code.

    rules = read_rules([{"pattern": "mlp.down_proj", "layers": "0–3", "format": "affine8_g32"},
                        {"pattern": "*", "layers": "", "format": "mxfp4"}])
    layers = linear_layers()                   # every module nn.quantize can quantize: path -> (out, in)
    planned = plan(rules, layers)              # path -> registry format, or None for float
    bits_per_weight(planned, layers)           # the whole model's figure, one accounting
    print(predicate_source(rules))             # the same rules as `def class_predicate(path, module):`

`mlx.nn.quantize(model, class_predicate=fn)` asks `fn(path, module)` of every leaf module: False leaves
it in float, a dict `{"group_size": g, "bits": b, "mode": m}` quantizes it so. Here a row says the same
in three fields of text:

    pattern   which modules, by mlx-lm's dotted path. The pattern matches a path when it equals the
              path's LAST whole dotted parts, part by part, and `*` in a part stands for any run of
              characters within that one part (never a dot). So `down_proj` and `mlp.*` match
              `model.layers.3.mlp.down_proj`, `*` matches every module, `mlp` matches none (no path
              ends in it), and `model.layers.*.mlp.down_proj` matches every layer's down_proj. Letters,
              digits, `_`, `.` and `*` only.
    layers    "" for every layer, "5" for layer 5 only, "0-5" or "0–5" for layers 0 to 5 inclusive: the
              index in `model.layers.<i>.`. A module outside the layers (the token embedding) has no
              index, so only a row with no band can reach it.
    format    a registry name with an MLX mode ("mxfp4", "nvfp4", "mxfp8", "affine4_g64" …) or "float"

The first row that matches a module decides it; a module no row matches stays in float. A row that
matches no module is refused, and so is a format whose group does not divide a module's rows: MLX's
nn.quantize would raise there, and mlx-lm's quantize_model would silently leave the module in float
(the guide's §3.4). Nothing typed ever runs: the rows are read as data, matched by the lab's own
matcher (no regular expression is built from them, and a hostile pattern costs at most one scan of
a path's part per star), and predicate_source writes Python text only for the learner to copy; the lab never runs it.
Its patterns are checked again before they are written, so the text holds nothing but the characters
above inside its string literals.

May import: lab.formats, lab.interop, lab.study, lab.device.verify and lab's root modules; mlx and
mlx_lm inside functions only, so that the lab imports where they are not installed.
"""

from __future__ import annotations

import functools
import os
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from lab.device import verify
from lab.errors import InputError
from lab.interop.gguf import open_gguf
from lab.study import accounting, shipped_gguf
from lab.study.chat.gguf_model import read_architecture
from lab.text import quoted, visible

#: the most rows one predicate takes: a model's roles times a few bands is well under it
MAX_ROWS = 32
#: the longest pattern: the chat model's longest path, model.layers.17.self_attn.q_proj, is 32 characters
MAX_PATTERN_CHARS = 120
#: the longest band field: "1000–1000" with spaces around the dash
MAX_LAYERS_CHARS = 16
PATTERN_CHARACTERS = frozenset(string.ascii_letters + string.digits + "_.*")
#: the format name that leaves a module in float
FLOAT = "float"
#: the dashes a band may be written with: the hyphen a keyboard types and the en dash pages print
BAND_DASHES = ("-", "–")
#: what a row's fields are called, in the order a form shows them
FIELDS = ("pattern", "layers", "format")
#: mlx-lm's path to a transformer layer: model.layers.<i>.…
LAYERS_PREFIX = ("model", "layers")


class PredicateError(InputError):
    """A row of rules the lab cannot read or apply. `field` says where ("row 2, pattern"), so a
    form can mark the box it came from; the message says what is wrong in the lab's words."""

    def __init__(self, field: str, problem: str):
        super().__init__(f"{field}: {problem}")
        self.field = field


@dataclass(frozen=True)
class Rule:
    """One row read: modules whose path the pattern matches, within layers first_layer to last_layer
    inclusive (both None: every layer, and modules outside the layers), go to registry format `fmt`
    (None: left in float)."""

    pattern: str
    first_layer: int | None
    last_layer: int | None
    fmt: str | None


def _where(number: int, field: str) -> str:
    return f"row {number}, {field}"


def _field_text(row, number: int, field: str) -> str:
    value = row.get(field, "")
    if not isinstance(value, str):
        raise PredicateError(_where(number, field), f"is {type(value).__name__}, not text")
    return value.strip()


def _checked_pattern(text: str, number: int) -> str:
    where = _where(number, "pattern")
    if not text:
        raise PredicateError(where, "is empty; name the modules, such as mlp.down_proj, *.v_proj or *")
    if len(text) > MAX_PATTERN_CHARS:
        raise PredicateError(where, f"is {len(text)} characters long; a pattern here is at most {MAX_PATTERN_CHARS}")
    stranger = next((char for char in text if char not in PATTERN_CHARACTERS), None)
    if stranger is not None:
        raise PredicateError(
            where,
            f"holds {quoted(stranger)}; a pattern is letters, digits, _, . and * only "
            "(* stands for any run of characters within one part)",
        )
    if "" in text.split("."):
        raise PredicateError(where, f"{quoted(text)} has an empty part: a dot at either end, or two dots together")
    return text


def _layer_number(text: str, where: str, band: str) -> int:
    # isdigit alone would take "²" and other digits int() reads differently or not at all
    if not (text.isascii() and text.isdigit()):
        raise PredicateError(
            where,
            f"{quoted(band)} is not a band; leave it empty for every layer, or write one layer (5) or first–last (0–5)",
        )
    return int(text)


def _band(text: str, number: int, layer_count: int | None) -> tuple[int | None, int | None]:
    where = _where(number, "layers")
    if not text:
        return None, None
    if len(text) > MAX_LAYERS_CHARS:
        raise PredicateError(where, f"is {len(text)} characters long; a band is one layer (5) or first–last (0–5)")
    hyphenated = text
    for dash in BAND_DASHES[1:]:
        hyphenated = hyphenated.replace(dash, BAND_DASHES[0])
    ends = [end.strip() for end in hyphenated.split(BAND_DASHES[0])]
    if len(ends) > 2:
        raise PredicateError(where, f"{quoted(text)} has more than one dash; a band is first–last (0–5)")
    first, last = (_layer_number(end, where, text) for end in (ends[0], ends[-1]))
    if first > last:
        raise PredicateError(where, f"{first}–{last} runs backwards; write the lower layer first ({last}–{first})")
    if layer_count is not None:
        _check_within(last, layer_count, where)
    return first, last


def _check_within(last: int, layer_count: int, where: str) -> None:
    if last >= layer_count:
        raise PredicateError(where, f"layer {last} is beyond the model, whose layers are 0 to {layer_count - 1}")


def _accepted_formats() -> str:
    return ", ".join([FLOAT, *verify.mlx_modes()])


def _format(text: str, number: int) -> str | None:
    where = _where(number, "format")
    if not text:
        raise PredicateError(where, f"is empty; choose one of {_accepted_formats()}")
    name = text.lower()
    if name == FLOAT:
        return None
    if name not in verify.mlx_modes():
        raise PredicateError(
            where, f"{quoted(text)} is not a format MLX quantizes to; choose one of {_accepted_formats()}"
        )
    return name


def read_rules(rows: Sequence[Mapping[str, str]], *, layer_count: int | None = None) -> list[Rule]:
    """The rows of a form as rules, in order, or PredicateError naming the first field the lab
    cannot read. Each row maps "pattern", "layers" and "format" to the text typed (a missing field
    reads as empty). With `layer_count`, a band beyond the model's layers is refused here already;
    plan refuses it in any case."""
    rows = list(rows)
    if len(rows) > MAX_ROWS:
        raise PredicateError("rows", f"there are {len(rows)} rows; a predicate here takes at most {MAX_ROWS}")
    rules = []
    for number, row in enumerate(rows, start=1):
        if not isinstance(row, Mapping):
            raise PredicateError(f"row {number}", f"is {type(row).__name__}, not a row of {', '.join(FIELDS)}")
        pattern, layers, fmt = (_field_text(row, number, field) for field in FIELDS)
        rules.append(Rule(_checked_pattern(pattern, number), *_band(layers, number, layer_count), _format(fmt, number)))
    return rules


def _part_matches(glob: str, part: str) -> bool:
    """One dotted part against one part of a pattern, `*` being any run of characters. The pieces
    between stars must appear in order; taking each at its leftmost place is never wrong for stars
    alone, so the cost is one pass of str.find per piece, with no backtracking."""
    pieces = glob.split("*")
    if len(pieces) == 1:
        return glob == part
    head, *middle, tail = pieces
    if len(part) < len(head) + len(tail) or not (part.startswith(head) and part.endswith(tail)):
        return False
    at, end = len(head), len(part) - len(tail)
    for piece in middle:
        found = part.find(piece, at, end)
        if found < 0:
            return False
        at = found + len(piece)
    return True


def pattern_matches(pattern: str, path: str) -> bool:
    """Whether `pattern` equals the last whole dotted parts of `path`, part by part (see above)."""
    globs, parts = pattern.split("."), path.split(".")
    if len(globs) > len(parts):
        return False
    return all(_part_matches(glob, part) for glob, part in zip(globs, parts[len(parts) - len(globs) :], strict=True))


def layer_index(path: str) -> int | None:
    """The i of `model.layers.<i>.…`, or None for a module outside the layers (the token embedding)."""
    parts = path.split(".")
    if len(parts) > 2 and tuple(parts[:2]) == LAYERS_PREFIX and parts[2].isascii() and parts[2].isdigit():
        return int(parts[2])
    return None


def _in_band(rule: Rule, index: int | None) -> bool:
    if rule.first_layer is None:
        return True
    return index is not None and rule.first_layer <= index <= rule.last_layer


def layer_count(layers: Mapping[str, tuple[int, int]]) -> int:
    indices = [index for index in map(layer_index, layers) if index is not None]
    return max(indices) + 1 if indices else 0


def plan(rules: Sequence[Rule], layers: Mapping[str, tuple[int, int]]) -> dict[str, str | None]:
    """Each module's registry format (None: float), from the first rule that matches its path and
    band, or PredicateError naming the row: a band beyond the model, a row that matches no module,
    or a format whose group size does not divide the rows (the last axis) of a module it decides."""
    layers_in_model = layer_count(layers)
    deciding: dict[str, int | None] = dict.fromkeys(layers)
    for number, rule in enumerate(rules, start=1):
        if rule.last_layer is not None:
            _check_within(rule.last_layer, layers_in_model, _where(number, "layers"))
        named = [path for path in layers if pattern_matches(rule.pattern, path)]
        if not named:
            raise PredicateError(
                _where(number, "pattern"),
                f"{quoted(rule.pattern)} matches no layer of the model; see the list of layers",
            )
        banded = [path for path in named if _in_band(rule, layer_index(path))]
        if not banded:
            raise PredicateError(
                _where(number, "layers"),
                f"{quoted(rule.pattern)} matches {len(named)} of the model's layers, but none in "
                f"{_band_text(rule.first_layer, rule.last_layer)}",
            )
        for path in banded:
            if deciding[path] is None:
                deciding[path] = number
    planned = {}
    for path, number in deciding.items():
        fmt = None if number is None else rules[number - 1].fmt
        if fmt is not None:
            group_size = verify.mlx_modes()[fmt].group_size
            row_length = layers[path][-1]
            if row_length % group_size:
                raise PredicateError(
                    _where(number, "format"),
                    f"{fmt} quantizes groups of {group_size} weights along each row, and a row of "
                    f"{visible(path)} holds {row_length}, which {group_size} does not divide ({row_length} = "
                    f"{row_length // group_size} × {group_size} + {row_length % group_size}); choose a format "
                    "with a smaller group, or float",
                )
        planned[path] = fmt
    return planned


def bits_per_weight(
    planned: Mapping[str, str | None], layers: Mapping[str, tuple[int, int]], scale_dtype: str = accounting.FLOAT32
) -> float:
    """The model's bits per weight under `planned`, over the weights of every module nn.quantize
    considers (the norms' few thousand weights are not counted). A quantized module counts its
    format's lab.study.accounting.bits_per_weight; a float module counts its storage width, which is
    `scale_dtype`'s too, since MLX's affine scales take the weights' own dtype: float32 for the lab's
    chat model, whose weights the bridge gives mlx-lm as float32 (lab.device.verify)."""
    if scale_dtype not in accounting.SCALE_DTYPE_BITS:
        raise InputError(f"a scale dtype is one of {', '.join(accounting.SCALE_DTYPE_BITS)}, not {scale_dtype!r}")
    float_bits = accounting.SCALE_DTYPE_BITS[scale_dtype]
    counts = {path: rows * columns for path, (rows, columns) in layers.items()}
    bits = sum(
        count * (float_bits if planned[path] is None else accounting.bits_per_weight(planned[path], scale_dtype))
        for path, count in counts.items()
    )
    return bits / sum(counts.values())


def _band_text(first: int | None, last: int | None) -> str:
    if first is None:
        return "no band"
    return f"layer {first}" if first == last else f"layers {first}–{last}"


def predicate_source(rules: Sequence[Rule]) -> str:
    """The rules as a Python predicate for a learner's own mlx-lm script: text with the same
    matching (patterns by their last dotted parts, `*` within a part), the same bands and the same
    first-match order, the rules written in as data. The lab never runs it."""
    lines = []
    for number, rule in enumerate(rules, start=1):
        pattern = _checked_pattern(rule.pattern, number)
        if rule.fmt is None:
            params = "None"
        else:
            mode = verify.mlx_modes()[rule.fmt]
            params = f'{{"group_size": {mode.group_size}, "bits": {mode.bits}, "mode": "{mode.mode}"}}'
        lines.append(
            f'    ("{pattern}", {rule.first_layer}, {rule.last_layer}, {params}),'
            f"  # row {number}: {_band_text(rule.first_layer, rule.last_layer)}, {rule.fmt or FLOAT}"
        )
    return "\n".join(
        [
            "# Written by the four-bit lab from your rows. Use it as",
            "#     nn.quantize(model, class_predicate=class_predicate)",
            "# The first row that matches a module decides it; a module no row matches stays in float.",
            "from fnmatch import fnmatchcase",
            "",
            "# (pattern, first layer, last layer, nn.quantize's arguments or None for float)",
            "RULES = [",
            *lines,
            "]",
            "",
            "",
            "def layer_index(path):",
            '    parts = path.split(".")',
            '    if len(parts) > 2 and parts[:2] == ["model", "layers"] and parts[2].isdigit():',
            "        return int(parts[2])",
            "    return None",
            "",
            "",
            "def matches(pattern, path):",
            "    # the pattern's parts against the path's last parts; * stays within one part",
            '    globs, parts = pattern.split("."), path.split(".")',
            "    tail = parts[len(parts) - len(globs) :]",
            "    return len(globs) <= len(parts) and all(fnmatchcase(part, glob) for glob, part in zip(globs, tail))",
            "",
            "",
            "def class_predicate(path, module):",
            '    if not hasattr(module, "to_quantized"):',
            "        return False",
            "    index = layer_index(path)",
            "    for pattern, first, last, params in RULES:",
            "        in_band = first is None or (index is not None and first <= index <= last)",
            "        if in_band and matches(pattern, path):",
            "            return False if params is None else dict(params)",
            "    return False",
            "",
        ]
    )


def quantizable_layers(model) -> dict[str, tuple[int, int]]:
    """Every leaf module of an MLX model that nn.quantize can quantize (its own test: the module has
    to_quantized), by path, with its weight's shape (out, in)."""
    import mlx.nn as nn
    from mlx.utils import tree_flatten

    leaves = tree_flatten(model.leaf_modules(), is_leaf=nn.Module.is_module)
    return {path: tuple(module.weight.shape) for path, module in leaves if hasattr(module, "to_quantized")}


@functools.cache
def _linear_layers_of(path: Path) -> dict[str, tuple[int, int]]:
    from mlx_lm.models import gemma3_text

    with open_gguf(path) as gf:
        config = verify.model_config(read_architecture(gf))
    # MLX makes parameters lazily, so a model built from the config alone costs no weights: only
    # the shapes are read. sanitize, given no lm_head, ties the output to the embedding as
    # lab.device.verify's model does, and the lm_head goes
    model = gemma3_text.Model(gemma3_text.ModelArgs.from_dict(config))
    model.sanitize({})
    return quantizable_layers(model)


def linear_layers(path: str | os.PathLike | None = None) -> dict[str, tuple[int, int]]:
    """Every module mlx.nn.quantize can quantize in the chat model mlx-lm runs (the shipped Gemma 3
    270M by default): each nn.Linear and the nn.Embedding, by mlx-lm's path, with its weight's shape
    (out, in), in the model's order. Read from the GGUF file's metadata and kept once read."""
    path = shipped_gguf.model_file() if path is None else Path(path)
    return dict(_linear_layers_of(path.resolve()))


@dataclass(frozen=True)
class SummaryRow:
    """One line of what a plan does: a role (the path with its layer index as <i>), the layers it
    covers, their format (a registry name or "float"), how many modules and weights."""

    role: str
    layers: str
    fmt: str
    modules: int
    parameters: int


def _role(path: str) -> str:
    index = layer_index(path)
    if index is None:
        return path
    return ".".join([*LAYERS_PREFIX, "<i>", *path.split(".")[3:]])


def _runs(indices: list[int]) -> str:
    runs: list[list[int]] = []
    for index in sorted(indices):
        if runs and index == runs[-1][1] + 1:
            runs[-1][1] = index
        else:
            runs.append([index, index])
    return ", ".join(str(first) if first == last else f"{first}–{last}" for first, last in runs)


def summary_rows(planned: Mapping[str, str | None], layers: Mapping[str, tuple[int, int]]) -> list[SummaryRow]:
    """What `planned` does, grouped by role and format in the model's order: `mlp.down_proj` in
    layers 0–3 to affine8_g32 is one row, its other layers in mxfp4 another; the embedding, with no
    layer index, has "" for its layers."""
    groups: dict[tuple[str, str], list[str]] = {}
    for path in layers:
        groups.setdefault((_role(path), planned[path] or FLOAT), []).append(path)
    # a role's groups together, in the order the model first shows each role
    roles = list(dict.fromkeys(role for role, _fmt in groups))
    ordered = sorted(groups.items(), key=lambda group: roles.index(group[0][0]))
    return [
        SummaryRow(
            role,
            _runs([index for index in map(layer_index, paths) if index is not None]),
            fmt,
            len(paths),
            sum(layers[path][0] * layers[path][1] for path in paths),
        )
        for (role, fmt), paths in ordered
    ]
