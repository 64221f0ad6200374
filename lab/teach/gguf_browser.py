"""Browsing a learner's own GGUF file: open it, list it, summarise it, open one block.

Notebook 6 only lays out what this module returns. A file is always read through the lab's
validating reader (lab.interop.gguf.open_gguf), which memory-maps it: a path to a 20 GB model
costs the walk over its header, never the whole file. Uploaded bytes arrive in memory already, so
they are capped (UPLOAD_LIMIT) and written to a temporary file that the reader maps; the folder is
removed when the browser is closed or garbage-collected, or when its process exits; a folder left
by a process that was killed is removed by the next upload, or when `labctl.py open` starts or stops
(remove_leftover_scratch, which also clears labctl's token folders and notebook 6's toy file).

One block of one tensor is the unit a learner inspects: its raw bytes, the lab's decode of them,
gguf-py's decode of the same bytes (the oracle) and which of the course's widgets shows those bytes
(its `show_block` puts them in): Q4_K's explorer, the ownership view for MXFP4 and NVFP4, and the
block explorer for every other block format; a float tensor's block is a table.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import tempfile
import weakref
from dataclasses import dataclass
from pathlib import Path

import gguf
import numpy as np

from lab.errors import FileReadError, LabError, UnsupportedTypeError
from lab.files import shown_path
from lab.formats import with_gguf
from lab.interop.gguf import DECODABLE_TYPES, FLOAT_TYPES, TENSOR_TYPES, TYPE_IDS, GGUFFile, decode_raw, open_gguf
from lab.interop.gguf.recipes import explain_recipe
from lab.text import quoted, visible

#: uploads above this many bytes are refused: an upload is held in memory whole, a path is mapped
UPLOAD_LIMIT = 64 * 1024**2
#: the longest upload name a label repeats whole (a browser hands over whatever name the file had)
UPLOAD_NAME_CHARS = 120
#: how many consecutive weights of a float tensor (F32, F16, BF16) one "block" shows
FLOAT_BLOCK_WEIGHTS = 32
#: the GGUF types that have a figure of their own: notebook 5's Q4_K explorer, and the ownership
#: view of notebooks 3 and 4, which puts an MXFP4 block beside two NVFP4 ones
_OWN_FIGURES = {"Q4_K": "q4k", "MXFP4": "ownership", "NVFP4": "ownership"}
#: which widget shows a block of each type: those figures, and the block explorer for every other
#: block format of the registry that GGUF has (its JS codec draws the block's bytes); the float
#: types (F32, F16, BF16) get a plain table
EXPLORERS = {fmt.gguf_type: _OWN_FIGURES.get(fmt.gguf_type, "block") for fmt in with_gguf()}


#: every scratch folder the lab leaves while it runs is named SCRATCH_PREFIX, what it holds (one of
#: SCRATCH_KINDS), "-", the owning process id, "-", and tempfile's random suffix, in the system's
#: temporary folder: one pattern, so a later run can tell a killed process's leftovers by their name.
#: labctl.py writes the "server" folders (marimo's token) itself: it runs before the lab is
#: installed, so it spells the same pattern out with the standard library alone.
SCRATCH_PREFIX = "four-bit-lab-"
#: an upload's temporary copy, marimo's token file, notebook 6's toy file
SCRATCH_KINDS = ("upload", "server", "toy")
UPLOAD_PREFIX = f"{SCRATCH_PREFIX}upload-"
_SCRATCH_FOLDER = re.compile(
    re.escape(SCRATCH_PREFIX) + f"(?:{'|'.join(SCRATCH_KINDS)})" + r"-(?P<pid>[0-9]+)-[A-Za-z0-9_]+"
)


def _process_alive(pid: int) -> bool:
    """Whether a process with this id runs (signal 0 checks, and sends nothing)."""
    try:
        os.kill(pid, 0)
    except PermissionError:  # it runs, as another user
        return True
    except (ProcessLookupError, OverflowError):  # no such process, or no process could have this id
        return False
    return True


def scratch_folder(kind: str) -> tempfile.TemporaryDirectory:
    """A new scratch folder of the lab's one pattern, owned by this process: removed when closed,
    garbage-collected or when the process exits, and by remove_leftover_scratch once the process
    is gone."""
    if kind not in SCRATCH_KINDS:
        raise ValueError(f"a scratch folder holds one of {', '.join(SCRATCH_KINDS)}; got {kind!r}")
    return tempfile.TemporaryDirectory(prefix=f"{SCRATCH_PREFIX}{kind}-{os.getpid()}-")


def remove_leftover_scratch(folder: str | Path | None = None) -> list[Path]:
    """Remove the scratch folders whose process has ended (a kernel or a labctl that was killed
    never ran its clean-up); returns what was removed. Only this user's own folders of the scratch
    pattern are removed, a link of that name is never followed (it is removed as a link), and a
    folder whose process still runs is left to that process."""
    removed = []
    if os.name == "nt":  # os.kill there ends the process it asks about; the copies stay until removed
        return removed
    folder = Path(tempfile.gettempdir() if folder is None else folder)
    try:
        entries = list(os.scandir(folder))
    except OSError:  # no temporary folder to look in: nothing was left there either
        return removed
    for entry in entries:
        match = _SCRATCH_FOLDER.fullmatch(entry.name)
        if match is None or _process_alive(int(match["pid"])):
            continue
        try:
            if entry.stat(follow_symlinks=False).st_uid != os.getuid():
                continue
            if entry.is_symlink() or not entry.is_dir(follow_symlinks=False):
                os.unlink(entry.path)
            else:
                shutil.rmtree(entry.path)  # rmtree never follows a link inside the folder
        except OSError:  # removed meanwhile, or not ours to remove: left as it is
            continue
        removed.append(Path(entry.path))
    return removed


class UploadTooLargeError(LabError):
    """An upload above UPLOAD_LIMIT: such a file is opened by its path, through the memory map."""


class GGUFBrowser:
    """An opened GGUF file and where it came from; `close()` (or a with-block) unmaps it and removes
    the temporary copy of an upload."""

    def __init__(self, file: GGUFFile, source: str, size: int, scratch: tempfile.TemporaryDirectory | None = None):
        self.file = file
        #: how the learner gave the file, in words: "the lab's toy file", "upload model.gguf", a path
        self.source = source
        self.size = size
        self._scratch = scratch
        # A notebook drops the old browser when the learner picks another file; the map and the
        # temporary copy go with it even though no cell calls close().
        self._finalizer = weakref.finalize(self, _release, file, scratch)

    def __enter__(self) -> GGUFBrowser:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._finalizer()

    @property
    def temporary_path(self) -> Path | None:
        """Where an upload's temporary copy lies (None for a path the learner gave)."""
        return None if self._scratch is None else self.file.path


def _release(file: GGUFFile, scratch: tempfile.TemporaryDirectory | None) -> None:
    file.close()
    if scratch is not None:
        scratch.cleanup()


def open_path(path: str | Path, source: str | None = None, *, decode_budget: int | None = None) -> GGUFBrowser:
    """A file on this machine, memory-mapped and validated; never read whole, whatever its size."""
    try:
        path = Path(path).expanduser()
    except RuntimeError as error:  # "~name" where this machine has no user called name
        raise FileReadError(f"cannot open {shown_path(path)}: this machine has no such home directory") from error
    gf = open_gguf(path, decode_budget=decode_budget)
    return GGUFBrowser(gf, source or shown_path(path), path.stat().st_size)


def open_upload(contents: bytes, name: str = "upload.gguf", *, limit: int = UPLOAD_LIMIT) -> GGUFBrowser:
    """Uploaded bytes, written to a temporary file that the validating reader maps.

    Uploads above `limit` bytes are refused with UploadTooLargeError before anything is written.
    """
    if len(contents) > limit:
        raise UploadTooLargeError(
            f"{quoted(Path(name).name)} is {len(contents):,} bytes, more than the upload limit of {limit:,}; "
            "type the file's path into the path box instead: the lab maps a file on disk and never loads it whole"
        )
    remove_leftover_scratch()
    scratch = scratch_folder("upload")
    # only the file name's last part is kept, and only as a label: nothing from the upload picks a path
    path = Path(scratch.name) / "upload.gguf"
    try:
        path.write_bytes(contents)
        gf = open_gguf(path)
    except BaseException:
        scratch.cleanup()
        raise
    return GGUFBrowser(gf, f"upload {visible(Path(name).name, UPLOAD_NAME_CHARS)}", len(contents), scratch)


@dataclass(frozen=True)
class TensorRow:
    """One tensor as the browser lists it."""

    name: str
    type_name: str
    shape: tuple[int, ...]
    n_bytes: int
    blocks: int  # how many blocks pick_block can open
    supported: bool  # whether the lab decodes its type

    @property
    def shape_text(self) -> str:
        return " × ".join(str(n) for n in self.shape)


def block_geometry(type_name: str) -> tuple[int, int]:
    """Weights and bytes in one block of a GGUF type; float types show FLOAT_BLOCK_WEIGHTS weights."""
    _, weights, n_bytes = TENSOR_TYPES[TYPE_IDS[type_name]]
    if type_name in FLOAT_TYPES:
        return FLOAT_BLOCK_WEIGHTS, FLOAT_BLOCK_WEIGHTS * n_bytes
    return weights, n_bytes


def tensor_rows(gf: GGUFFile) -> list[TensorRow]:
    """Every tensor in file order: name, type, shape (outermost first), bytes and blocks."""
    rows = []
    for info in gf.tensors:
        weights, _ = block_geometry(info.type_name)
        rows.append(
            TensorRow(
                name=info.name,
                type_name=info.type_name,
                shape=info.shape,
                n_bytes=info.n_bytes,
                blocks=math.ceil(info.n_elements / weights),
                supported=info.type_name in DECODABLE_TYPES,
            )
        )
    return rows


@dataclass(frozen=True)
class MetadataRow:
    """One metadata key: its type, length (arrays only) and a short text of its value."""

    key: str
    type_label: str
    length: int | None
    n_bytes: int
    value_text: str


def metadata_rows(gf: GGUFFile, items: int = 5, max_chars: int = 60) -> list[MetadataRow]:
    """metadata_summary() as rows of text: an array shows its first `items` elements and its length,
    so a 150k-token vocabulary costs `items` strings."""
    rows = []
    for row in gf.metadata_summary(items=items, max_chars=max_chars):
        rows.append(
            MetadataRow(
                key=row["key"],
                type_label=row["type"],
                length=row["length"],
                n_bytes=row["bytes"],
                value_text=_value_text(row["value"], row["length"]),
            )
        )
    return rows


def _value_text(value, length: int | None) -> str:
    if length is None:
        return quoted(value, None) if isinstance(value, str) else str(value)
    shown = [
        _value_text(item, len(item)) if isinstance(item, list | np.ndarray) else _item_text(_item(item))
        for item in value
    ]
    more = f", … {length - len(shown):,} more" if length > len(shown) else ""
    return "[" + ", ".join(shown) + more + "]"


def _item_text(value) -> str:
    """One array element: a string between quotes with its hidden characters spelt, a number as is."""
    return quoted(value, None) if isinstance(value, str) else repr(value)


def _item(value):
    """numpy scalars as plain Python numbers, so the text reads 3, not np.int32(3)."""
    return value.item() if isinstance(value, np.generic) else value


def recipe(gf: GGUFFile) -> dict:
    """What the file's recipe label means in this file (lab.interop.gguf.explain_recipe)."""
    return explain_recipe(gf)


@dataclass(frozen=True)
class GgufPyCheck:
    """The lab's decode of one block against gguf-py's `quants.dequantize` of the same bytes."""

    matches: bool  # every weight equal (NaN where both are NaN)
    max_abs_diff: float  # over weights finite on both sides; 0.0 when none differ
    compared: int

    @property
    def text(self) -> str:
        answer = "yes" if self.matches else "no"
        return f"matches gguf-py: {answer}, max difference {self.max_abs_diff:g} over {self.compared} weights"


@dataclass(frozen=True)
class BlockPick:
    """One block of one tensor: its bytes, both decodes, and which widget shows it."""

    tensor: str
    type_name: str
    block: int
    blocks: int
    first_weight: int  # the block's first weight, counted in file order over the whole tensor
    raw: np.ndarray  # the block's bytes, a uint8 copy
    weights: np.ndarray  # the lab's decode, float32
    reference: np.ndarray  # gguf-py's decode of the same bytes, float32
    check: GgufPyCheck
    explorer: str  # "q4k", "ownership", "block" or "table"


def pick_block(gf: GGUFFile, name: str, block: int, decoder: str = "ocp") -> BlockPick:
    """Block `block` of tensor `name`, read from the memory map (only its own bytes are copied).

    A type the lab does not decode is refused with UnsupportedTypeError naming it; a block number
    outside the tensor with a LabError giving the range.
    """
    info = gf.tensor(name)
    if info.type_name not in DECODABLE_TYPES:
        raise UnsupportedTypeError(
            f"tensor {quoted(name)} has type {info.type_name}, which the lab does not decode; "
            f"it can open {', '.join(DECODABLE_TYPES)}"
        )
    weights_per_block, bytes_per_block = block_geometry(info.type_name)
    blocks = math.ceil(info.n_elements / weights_per_block)
    if isinstance(block, bool) or not isinstance(block, int | np.integer) or not 0 <= block < blocks:
        raise LabError(f"tensor {quoted(name)} has blocks 0 to {blocks - 1}; got {block!r}")
    flat = gf.raw(name).reshape(-1)
    raw = np.array(flat[int(block) * bytes_per_block : (int(block) + 1) * bytes_per_block])
    weights = decode_raw(raw.reshape(1, -1), info.type_name, decoder).reshape(-1)
    # a scale of inf or NaN in the file (a damaged or hostile one) makes gguf-py's arithmetic warn;
    # its NaN and inf are the faithful reading, compared as such, never a warning on the page
    with np.errstate(invalid="ignore", over="ignore"):
        reference = np.asarray(
            gguf.quants.dequantize(raw.reshape(1, -1), gguf.GGMLQuantizationType[info.type_name]), np.float32
        ).reshape(-1)
    return BlockPick(
        tensor=name,
        type_name=info.type_name,
        block=int(block),
        blocks=blocks,
        first_weight=int(block) * weights_per_block,
        raw=raw,
        weights=weights,
        reference=reference,
        check=check_against_gguf_py(weights, reference),
        explorer=EXPLORERS.get(info.type_name, "table"),
    )


def check_against_gguf_py(weights: np.ndarray, reference: np.ndarray) -> GgufPyCheck:
    """Equal where both are numbers and equal, or both NaN; the largest gap over finite pairs."""
    # a float tensor's bytes may hold a signalling NaN, whose widening numpy reports as invalid: it
    # is still a NaN, and compared as one
    with np.errstate(invalid="ignore"):
        lab = np.asarray(weights, np.float64).reshape(-1)
        ref = np.asarray(reference, np.float64).reshape(-1)
    same = (lab == ref) | (np.isnan(lab) & np.isnan(ref))
    finite = np.isfinite(lab) & np.isfinite(ref)
    gaps = np.abs(lab[finite] - ref[finite])
    return GgufPyCheck(
        matches=bool(same.all()), max_abs_diff=float(gaps.max()) if gaps.size else 0.0, compared=lab.size
    )


def block_explorer_types() -> list[str]:
    """The GGUF types the block explorer opens, in the registry's order."""
    return [type_name for type_name, explorer in EXPLORERS.items() if explorer == "block"]


def block_table(pick: BlockPick, limit: int = 64) -> tuple[list[str], list[list[str]]]:
    """Header and rows for a plain table of a block: weight index, the lab's value, gguf-py's."""
    header = ["weight", "lab", "gguf-py"]
    rows = [
        [str(pick.first_weight + i), f"{float(lab):.9g}", f"{float(ref):.9g}"]
        for i, (lab, ref) in enumerate(zip(pick.weights[:limit], pick.reference[:limit], strict=True))
    ]
    return header, rows
