"""The MLX model folder the lab writes opens in mlx_lm.load in a fresh process, and a learner's folder
that asks to run code of its own is refused before anything loads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import require_mlx_lm
from support import require_shipped_gguf

from lab.device import mlx_folder
from lab.errors import LabError

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
GEMMA_CONFIG = {"model_type": "gemma3_text", "hidden_size": 640}


def _folder(tmp_path: Path, config: dict | str, tokenizer_config: dict | None = None) -> Path:
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text(config if isinstance(config, str) else json.dumps(config))
    if tokenizer_config is not None:
        (folder / "tokenizer_config.json").write_text(json.dumps(tokenizer_config))
    return folder


@pytest.mark.parametrize(
    ("config", "tokenizer_config", "words"),
    [
        ({**GEMMA_CONFIG, "model_file": "evil.py"}, None, "config.json sets model_file"),
        ({**GEMMA_CONFIG, "auto_map": {"AutoModel": "evil.Model"}}, None, "config.json sets auto_map"),
        (GEMMA_CONFIG, {"auto_map": {"AutoTokenizer": ["evil.Tok", None]}}, "tokenizer_config.json sets auto_map"),
        ({"model_type": "my_own_model"}, None, "not a model mlx-lm ships"),
        ({"model_type": "../../evil"}, None, "must name one of mlx-lm's models"),
        ({"hidden_size": 640}, None, "must name one of mlx-lm's models"),
        ("[1, 2]", None, "must hold a JSON object"),
        ('{"model_type": NaN}', None, "config.json"),
    ],
)
def test_a_folder_that_asks_for_code_or_an_unknown_model_is_refused(tmp_path, config, tokenizer_config, words):
    require_mlx_lm()
    with pytest.raises(
        mlx_folder.FolderRefusedError if "JSON object" in words or "sets" in words else LabError
    ) as refusal:
        mlx_folder.check_folder(_folder(tmp_path, config, tokenizer_config))
    assert words in str(refusal.value)


def test_the_refusal_comes_before_mlx_lm_is_asked_to_load(tmp_path, monkeypatch):
    mlx_lm = require_mlx_lm()

    def load_must_not_run(*_args, **_kwargs):
        raise AssertionError("mlx_lm.load ran on a folder that asks for code")

    monkeypatch.setattr(mlx_lm, "load", load_must_not_run)
    with pytest.raises(mlx_folder.FolderRefusedError, match="runs no code from a model folder"):
        mlx_folder.load_folder(_folder(tmp_path, {**GEMMA_CONFIG, "model_file": "evil.py"}))


def test_a_folder_that_is_not_here_is_refused_rather_than_downloaded(tmp_path):
    with pytest.raises(mlx_folder.FolderRefusedError, match="downloads nothing"):
        mlx_folder.check_folder(tmp_path / "mlx-community" / "gemma-3-270m-it-4bit")
    with pytest.raises(mlx_folder.FolderRefusedError, match="has no config.json"):
        mlx_folder.check_folder(tmp_path)


def test_an_oversized_config_is_refused_unread(tmp_path):
    with pytest.raises(mlx_folder.FolderRefusedError, match="larger than a model's config"):
        mlx_folder.check_folder(_folder(tmp_path, " " * (mlx_folder.MAX_CONFIG_BYTES + 1)))


FRESH_PROCESS = """
import json, sys
import mlx.core as mx
from mlx_lm import load
from mlx_lm.generate import generate_step
model, tokenizer = load(sys.argv[1])
battery = json.loads(open(sys.argv[2]).read())["battery"]
prompt = json.loads(open(sys.argv[3]).read())["prompts"][0]
ids = [int(t) for t, _ in generate_step(mx.array(prompt["ids"]), model, max_tokens=int(sys.argv[4]),
                                        sampler=lambda logits: mx.argmax(logits, axis=-1))]
print(json.dumps({"battery": [tokenizer.encode(entry["text"]) for entry in battery],
                  "prompt": tokenizer.encode(prompt["prompt"]), "greedy": ids}))
"""


@pytest.fixture(scope="module")
def mxfp4_folder(tmp_path_factory):
    require_mlx_lm()
    require_shipped_gguf()
    folder = tmp_path_factory.mktemp("written") / "mlx_model"
    written = mlx_folder.write_folder(folder, "mxfp4")
    assert sorted(written) == sorted(os.listdir(folder))
    return folder


def test_the_written_folder_loads_in_mlx_lm_in_a_fresh_process_and_answers_as_pinned(mxfp4_folder):
    """mlx_lm.load(folder) in a process of its own: its tokenizer gives llama.cpp's ids on the whole
    battery (special tokens parsed), and the model mlx-lm's pinned greedy ids in mxfp4."""
    tokens = 6
    run = subprocess.run(
        [sys.executable, "-c", FRESH_PROCESS, str(mxfp4_folder), str(DATA / "chat_reference.json")]
        + [str(DATA / "mlx_lm_reference.json"), str(tokens)],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert run.returncode == 0, run.stderr[-2000:]
    answer = json.loads(run.stdout.strip().splitlines()[-1])
    battery = json.loads((DATA / "chat_reference.json").read_text())["battery"]
    assert answer["battery"] == [entry["special"] for entry in battery]
    pinned = json.loads((DATA / "mlx_lm_reference.json").read_text())
    assert answer["prompt"] == pinned["prompts"][0]["ids"]
    assert answer["greedy"] == pinned["formats"]["mxfp4"][0]["greedy"][:tokens]


def test_labctl_verify_runs_the_guides_checks_on_two_folders(mxfp4_folder):
    """A folder against itself: every check reads as healthy, with exact numbers."""
    run = subprocess.run(
        [sys.executable, str(ROOT / "labctl.py"), "verify", str(mxfp4_folder), "--reference", str(mxfp4_folder)]
        + ["--prompt", "Name three colours.", "--tokens", "4", "--chunk", "16", "--prefill-tokens", "48"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout + run.stderr[-2000:]
    assert "exact match on all 4 tokens" in run.stdout
    assert "max |difference| 0.0000, mean 0.00000" in run.stdout and "noise band" in run.stdout
    assert "check 3: 48 tokens, one pass against chunks of 16" in run.stdout and "disagree" not in run.stdout


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        (["nowhere", "--reference", "nowhere"], "is not a folder on this machine"),
        (["x", "--reference", "x", "--tokens", "0"], "--tokens must be 1 to 4096"),
    ],
)
def test_labctl_verify_refuses_in_one_line_with_status_2(tmp_path, arguments, words):
    run = subprocess.run(
        [sys.executable, "-m", "lab.device.verify_folders", *arguments],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert run.returncode == 2 and words in run.stderr and "Traceback" not in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1
