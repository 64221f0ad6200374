"""Notebooks 9..12's exercises (widgets/codec/teach/exercises.js) against lab/'s own functions.

The browser's checker computes every answer; here each one is worked out again, for the same
parameters, by the Python that computes the notebooks' own figures: lab.teach.sizes for bits per
weight, lab.teach.scale and lab.study.metrics for a row's relative error, lab.study.behaviour's
cosines for similarity and margins, lab.study.compare.pareto_front for the front,
lab.study.chat_study's KL sum and first_divergence for the chat model. The JS side runs in node
(tests/js/exercise_lab_cases.mjs) over many seeds and rounds.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from lab.formats import FORMATS
from lab.study.behaviour import cosine_matrix, row_cosines
from lab.study.chat_study import first_divergence
from lab.study.compare import pareto_front
from lab.study.metrics import relative_error
from lab.teach import scale, sizes

CASES_SCRIPT = Path(__file__).resolve().parents[1] / "js" / "exercise_lab_cases.mjs"
BITS_BY_TITLE = {fmt.title: fmt.bits_per_weight for fmt in FORMATS.values()}
PARAMETER_BITS = {"float32": 32, "bfloat16": 16}


@pytest.fixture(scope="module")
def cases() -> list[dict]:
    node = shutil.which("node")
    if node is None:  # .ci/run installs node, so CI must have it
        (pytest.fail if os.environ.get("CI", "").lower() in ("1", "true", "yes") else pytest.skip)("node is missing")
    seeds = [1, 2, 7, 12345, 2**32 - 1, *range(100, 140)]
    ran = subprocess.run(
        [node, str(CASES_SCRIPT), json.dumps({"seeds": seeds, "rounds": 4})], capture_output=True, text=True
    )
    assert ran.returncode == 0, ran.stderr
    return json.loads(ran.stdout)


def _kl(p: list[float], q: list[float]) -> float:
    # chat_study._measure's sum: exp(reference) · (reference − log_p), reference = ln P, log_p = ln Q
    reference = np.log(np.asarray(p, np.float64))
    log_p = np.log(np.asarray(q, np.float64))
    return float((np.exp(reference) * (reference - log_p)).sum())


def _lab_answer(kind: str, params: dict):
    """The answer lab/ gives for an instance: a number, or for a choice the set of right options (1-based)."""
    if kind == "affine-scale-dtype":
        return sizes.affine_grid(PARAMETER_BITS[params["dtype"]])[(params["bits"], params["groupSize"])]
    if kind == "relative-error":
        row = scale.analyse(params["w"], [1.0] * len(params["w"]), params["scale"])
        return relative_error(np.asarray(params["w"]), row.w_hat)
    if kind == "cosine-similarity":
        return float(row_cosines(np.array([params["a"]]), np.array([params["b"]]))[0])
    if kind == "retrieval-margin":
        cosines = cosine_matrix(np.array([params["query"]]), np.array(params["passages"]))[0]
        return float(cosines[0] - cosines[1:].max())
    if kind == "recipe-bpw":
        parts = params["parts"]
        return sum(part["millions"] * BITS_BY_TITLE[part["format"]] for part in parts) / sum(
            part["millions"] for part in parts
        )
    if kind == "pareto-dominated":
        rows = [
            {"source": "w", "bits_per_weight": BITS_BY_TITLE[row["format"]], "relative_error": row["error"]}
            for row in params["rows"]
        ]
        return {i + 1 for i, row in enumerate(pareto_front(rows)) if not row["on_front"]}
    if kind == "kl-divergence":
        return _kl(params["p"], params["q"])
    if kind == "first-departure":
        departures = [first_divergence(answer["words"], params["reference"]) for answer in params["answers"]]
        earliest = min(at for at in departures if at is not None)
        return {i + 1 for i, at in enumerate(departures) if at == earliest}
    raise AssertionError(f"no lab answer for {kind}")


def test_notebooks_9_to_12_each_have_exercises_and_every_answer_is_labs(cases):
    kinds_by_topic = {}
    for case in cases:
        kinds_by_topic.setdefault(case["topic"], set()).add(case["kind"])
    assert sorted(kinds_by_topic) == [9, 10, 11, 12]
    assert all(len(kinds) >= 2 for kinds in kinds_by_topic.values()), kinds_by_topic
    for case in cases:
        where = f"{case['kind']} seed {case['seed']} round {case['round']}: {case['params']}"
        expected = _lab_answer(case["kind"], case["params"])
        if isinstance(expected, set):
            assert case["answer"] in expected, where
        else:
            assert math.isclose(case["answer"], expected, rel_tol=1e-12, abs_tol=1e-15), where
        # the answer as the lab prints it checks, and so does the answer to the places the question asks for
        assert case["typedChecks"] and case["roundedChecks"], where


def test_the_bits_per_weight_questions_say_their_scale_dtype_and_agree_with_the_accounting(cases):
    """MLX affine with float32 scale and bias is bits + 64/group bits per weight; with bfloat16, bits + 32/group."""
    affine = [case for case in cases if case["kind"] == "affine-scale-dtype"]
    assert {case["params"]["dtype"] for case in affine} == {"float32", "bfloat16"}
    for case in affine:
        params = case["params"]
        per_group = 64 if params["dtype"] == "float32" else 32
        assert case["answer"] == params["bits"] + per_group / params["groupSize"], case
