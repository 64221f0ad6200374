"""A bounded mutation fuzzer for the lab's GGUF reader, as notebook 6 uses it: valid files (a
toy model of the lab's writer, a file of every type the lab decodes) are bit-flipped, overwritten
with boundary values (0, all ones, 2^31, 2^63, lengths and offsets past the file), truncated and
spliced, then opened, listed, summarised and one block of each tensor picked and decoded.

Every refusal must be a LabError (the notebook shows those; anything else is a crash), nothing
may warn, each file is handled within FILE_S seconds, and the process grows by less than
GROWTH_MB: the reader's checks and the decode budget bound what a file can make the lab allocate.
Fixed seed and a time budget (BUDGET_S) checked in the loop, so a slower machine runs fewer
files rather than longer; it is in the slow tier (tests/conftest.py). A file it ever catches stays
as a regression row in tests/apps/test_gguf_hostile.py.
"""

from __future__ import annotations

import random
import resource
import struct
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from lab.errors import LabError
from lab.interop.gguf import DECODABLE_TYPES, FLOAT_TYPES, WRITABLE_TYPES, q4_k_m_style_plan, write_gguf
from lab.teach import gguf_browser

SEED = 35
BUDGET_S = 40
FILE_S = 2.0
GROWTH_MB = 256
#: what one decode may produce: a tiny file must not talk the reader into a large allocation
DECODE_BUDGET = 4 * 1024**2
#: the values an overwrite writes: zero, all ones, the signed limits and sizes past any file
BOUNDARY_VALUES = (
    0,
    1,
    2**7,
    2**8 - 1,
    2**15,
    2**16 - 1,
    2**31 - 1,
    2**31,
    2**32 - 1,
    2**32,
    2**63 - 1,
    2**63,
    2**64 - 1,
)


def seed_files(folder: Path) -> list[bytes]:
    """The files the mutations start from: notebook 6's kind of toy model, and one tensor of each
    type the lab decodes with a few metadata arrays and strings."""
    rng = np.random.default_rng(SEED)
    toy = {
        f"blk.{layer}.{part}.weight": rng.normal(0, 0.02, (32, 256)).astype(np.float32)
        for layer in range(2)
        for part in ("attn_q", "ffn_down")
    }
    toy["token_embd.weight"] = rng.normal(0, 0.02, (16, 256)).astype(np.float32)
    toy["blk.0.attn_norm.weight"] = np.ones(256, np.float32)
    paths = [write_gguf(folder / "toy.gguf", toy, q4_k_m_style_plan(toy), name="toy", file_type="Q4_K_M")]
    every = {f"t.{type_name}": rng.normal(0, 1, (2, 256)).astype(np.float32) for type_name in WRITABLE_TYPES}
    metadata = {"lab.words": ["one", "two", "three"], "lab.numbers": np.arange(6, dtype=np.int32), "lab.note": "fuzz"}
    paths.append(write_gguf(folder / "every.gguf", every, {f"t.{t}": t for t in WRITABLE_TYPES}, metadata=metadata))
    return [path.read_bytes() for path in paths]


def mutate(data: bytes, seeds: list[bytes], rng: random.Random) -> bytes:
    """One to four mutations; the header (the first few kilobytes: counts, lengths, offsets) is
    where most of them land, since the tensor bytes a reader checks least are only numbers."""
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        where = rng.randrange(len(out)) if rng.random() < 0.3 else rng.randrange(min(len(out), 4096))
        choice = rng.random()
        if choice < 0.3:
            out[where] ^= 1 << rng.randrange(8)
        elif choice < 0.7:
            width = rng.choice((1, 2, 4, 8))
            value = rng.choice((*BOUNDARY_VALUES, len(out), len(out) + 1)) & ((1 << (8 * width)) - 1)
            out[where : where + width] = value.to_bytes(width, "little")
        elif choice < 0.85:
            del out[rng.randrange(len(out) + 1) :]
        else:
            other = rng.choice(seeds)
            start = rng.randrange(len(other))
            piece = other[start : start + rng.randint(1, 512)]
            out[where : where + rng.randint(0, len(piece))] = piece
        if not out:
            out = bytearray(struct.pack("<4sI", b"GGUF", 3))
    return bytes(out)


def browse(path: Path) -> None:
    """What notebook 6 does with a file: open it, list tensors and metadata, read its recipe, and
    pick the first and last block of each tensor (a float tensor's too), decoded."""
    with gguf_browser.open_path(path, decode_budget=DECODE_BUDGET) as browser:
        rows = gguf_browser.tensor_rows(browser.file)
        gguf_browser.metadata_rows(browser.file)
        gguf_browser.recipe(browser.file)
        for row in rows:
            info = browser.file.tensor(row.name)
            if info.type_name not in DECODABLE_TYPES:
                continue
            weights, _ = gguf_browser.block_geometry(info.type_name)
            blocks = -(-info.n_elements // weights)
            for block in {0, max(blocks - 1, 0)}:
                gguf_browser.pick_block(browser.file, row.name, block)
            if info.type_name in FLOAT_TYPES or info.n_elements <= 4096:
                browser.file.decode(row.name)


def test_mutated_gguf_files_are_refused_with_lab_errors_only(tmp_path):
    seeds = seed_files(tmp_path)
    for data in seeds:  # the seeds themselves open cleanly
        (tmp_path / "seed.gguf").write_bytes(data)
        browse(tmp_path / "seed.gguf")
    rng = random.Random(SEED)
    path = tmp_path / "mutant.gguf"
    started = time.monotonic()
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    files, refused = 0, 0
    while time.monotonic() - started < BUDGET_S:
        data = mutate(rng.choice(seeds), seeds, rng)
        path.write_bytes(data)
        begun = time.monotonic()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                browse(path)
        except LabError:
            refused += 1
        except Exception as error:  # noqa: BLE001 - any other exception is the finding
            kept = tmp_path / f"crash-{files}.gguf"
            kept.write_bytes(data)
            pytest.fail(f"file {files} ({kept}): {type(error).__name__}: {error}")
        assert time.monotonic() - begun < FILE_S, f"file {files} took {time.monotonic() - begun:.1f} s"
        files += 1
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before) / 1024
    assert grown_mb < GROWTH_MB, f"the process grew by {grown_mb:.0f} MB over {files} files"
    assert files > 100 and 0 < refused < files, (files, refused)
