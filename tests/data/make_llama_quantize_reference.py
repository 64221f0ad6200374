"""Pins what llama.cpp's own `llama-quantize` writes for each recipe it names, from the shipped Gemma 3
270M file, for tests/oracles/test_recipes_llama_quantize.py to hold lab.study.recipes.plan to.

Run outside CI (a few minutes on 2 cores), with llama.cpp's tools built from llama-cpp-python
0.3.36's vendored llama.cpp (the build /work/shared/reference/mlx-lm-0.32.2-observed.md describes)
and gguf==0.19.0; nothing of the lab is imported:

    .venv/bin/python tests/data/make_llama_quantize_reference.py [path/to/gemma-3-270m-q4_k_m.gguf]

The tool is $LLAMA_QUANTIZE (default /tmp/lcp/build/bin/llama-quantize; its shared libraries are
looked for next to it) and the unpacked sdist it was built from is $LLAMA_CPP_PYTHON_SRC (default
/tmp/lcp/llama_cpp_python-0.3.36), whose llama_cpp/__init__.py gives the version recorded. The model
is the argument, else the file the lab joins into ~/.cache/four-bit-lab-models (or $LAB_MODEL_DIR);
the script refuses a file whose sha256 is not SHIPPED_SHA256.

For each of RECIPES, one at a time under `nice -n 10`, it runs

    llama-quantize --allow-requantize SHIPPED OUT RECIPE

into a temporary folder (never the repository), reads OUT with gguf-py's GGUFReader and deletes it.
Written to tests/data/llama_quantize_reference.json:

    llama_cpp_python   the version of the sdist whose llama.cpp built the tool
    llama_cpp_commit   the vendored llama.cpp commit llama-cpp-python 0.3.36 names
    shipped_sha256     the input file's sha256
    gguf_py            the version of gguf-py that read the outputs
    command            the command line, with IN and OUT for the paths (run under nice -n 10)
    recipes            per recipe:
        command        the command line run, with IN and OUT for the paths
        exit_status    the tool's exit status
        seconds        the tool's wall-clock seconds (on a machine shared with other work: a rough figure)
        log_tail       the last lines of the tool's output, kept where it wrote no file (its refusal)
        file_bytes     the size of the file it wrote, if it wrote one
        tensors        {tensor name: [GGML type name, sha256 of the tensor's bytes]}, in file order
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path

import gguf

SHIPPED_SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
OUT = Path(__file__).resolve().parent / "llama_quantize_reference.json"
TOOL = Path(os.environ.get("LLAMA_QUANTIZE", "/tmp/lcp/build/bin/llama-quantize"))
SOURCE = Path(os.environ.get("LLAMA_CPP_PYTHON_SRC", "/tmp/lcp/llama_cpp_python-0.3.36"))
#: the commit llama-cpp-python 0.3.36 vendors (its CHANGELOG: "update llama.cpp to ggml-org/llama.cpp@0c1e57098")
LLAMA_CPP_COMMIT = "0c1e57098"
#: the recipes issue 40 names, as llama-quantize spells them
RECIPES = (
    "Q2_K",
    "Q3_K_S",
    "Q3_K_M",
    "Q3_K_L",
    "Q4_K_S",
    "Q4_K_M",
    "Q5_K_S",
    "Q5_K_M",
    "Q6_K",
    "Q8_0",
    "Q4_0",
    "IQ4_NL",
    "IQ4_XS",
)
COMMAND = ["nice", "-n", "10", str(TOOL), "--allow-requantize", "{in}", "{out}", "{recipe}"]
LOG_LINES = 12


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while block := file.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def default_model() -> Path:
    folder = os.environ.get("LAB_MODEL_DIR") or Path.home() / ".cache" / "four-bit-lab-models"
    return Path(folder) / "gemma-3-270m-q4_k_m.gguf"


def llama_cpp_python_version() -> str:
    found = re.search(r'__version__\s*=\s*"([^"]+)"', (SOURCE / "llama_cpp" / "__init__.py").read_text())
    if not found:
        raise SystemExit(f"no __version__ in {SOURCE / 'llama_cpp' / '__init__.py'}")
    return found.group(1)


def tensors(path: Path) -> dict[str, list[str]]:
    """{name: [type name, sha256 of its bytes]} as gguf-py reads the file, in file order."""
    reader = gguf.GGUFReader(path)
    return {
        tensor.name: [tensor.tensor_type.name, hashlib.sha256(tensor.data.tobytes()).hexdigest()]
        for tensor in reader.tensors
    }


def run(model: Path, recipe: str, folder: Path) -> dict:
    out = folder / f"{recipe}.gguf"
    fill = {"{in}": str(model), "{out}": str(out), "{recipe}": recipe}
    command = [fill.get(part, part) for part in COMMAND]
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [str(TOOL.parent), env.get("LD_LIBRARY_PATH")]))
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    seconds = time.perf_counter() - start
    row = {
        "command": f"llama-quantize --allow-requantize IN OUT {recipe}",
        "exit_status": done.returncode,
        "seconds": round(seconds, 2),
    }
    if done.returncode == 0 and out.exists():
        row["file_bytes"] = out.stat().st_size
        row["tensors"] = tensors(out)
        out.unlink()
    else:
        log = (done.stdout + done.stderr).strip().splitlines()
        row["log_tail"] = log[-LOG_LINES:]
        row["wrote_file"] = out.exists()
        out.unlink(missing_ok=True)
    return row


def main() -> None:
    model = Path(sys.argv[1]) if len(sys.argv) > 1 else default_model()
    if sha256(model) != SHIPPED_SHA256:
        raise SystemExit(f"{model} is not the shipped file (sha256 {SHIPPED_SHA256})")
    reference = {
        "llama_cpp_python": llama_cpp_python_version(),
        "llama_cpp_commit": LLAMA_CPP_COMMIT,
        "gguf_py": metadata.version("gguf"),
        "shipped_sha256": SHIPPED_SHA256,
        "command": "llama-quantize --allow-requantize IN OUT {recipe}",
        "recipes": {},
    }
    with tempfile.TemporaryDirectory(prefix="llama-quantize-reference-") as folder:
        for recipe in RECIPES:
            row = run(model, recipe, Path(folder))
            reference["recipes"][recipe] = row
            wrote = f"{len(row['tensors'])} tensors, {row['file_bytes']} bytes" if "tensors" in row else "no file"
            print(f"{recipe}: exit {row['exit_status']}, {row['seconds']} s, {wrote}", flush=True)
    OUT.write_text(json.dumps(reference, indent=1) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
