"""lab.study.recipes.plan against llama-quantize's own output, recipe by recipe (issue 40: "the plans
for the other llama.cpp recipes equal llama-quantize's own output types").

tests/data/llama_quantize_reference.json pins, for each recipe llama.cpp names that issue 40 lists,
what `llama-quantize --allow-requantize SHIPPED OUT RECIPE` (llama-cpp-python 0.3.36's vendored
llama.cpp) did from the shipped Gemma 3 270M file: its exit status and, where it wrote a file, every
tensor's type as gguf-py read it (tests/data/make_llama_quantize_reference.py; run outside CI). A
recipe the tool refused without an importance matrix is pinned as that refusal. This test reads the
JSON and plans; it runs no llama.cpp.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import require_shipped_gguf

from lab.study import recipes

REFERENCE = json.loads((Path(__file__).resolve().parents[1] / "data" / "llama_quantize_reference.json").read_text())
#: the shipped file's sha256 (lab/study/shipped_gguf's package pins the same)
SHIPPED_SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
#: the recipes issue 40 names, as llama-quantize spells them
ISSUE_RECIPES = (
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
#: what llama-quantize says when a recipe needs an importance matrix (llama-quant.cpp:1136-1143)
REFUSAL = "this quantization requires an importance matrix"
PINNED = [recipe for recipe in ISSUE_RECIPES if REFERENCE["recipes"][recipe]["exit_status"] == 0]
REFUSED = [recipe for recipe in ISSUE_RECIPES if REFERENCE["recipes"][recipe]["exit_status"] != 0]


def test_the_reference_pins_every_recipe_of_the_issue_from_the_shipped_file():
    assert REFERENCE["llama_cpp_python"] == "0.3.36"
    assert REFERENCE["shipped_sha256"] == SHIPPED_SHA256
    assert tuple(REFERENCE["recipes"]) == ISSUE_RECIPES
    assert set(recipes.LLAMA_CPP_RECIPES) == set(ISSUE_RECIPES)
    for recipe in PINNED:
        row = REFERENCE["recipes"][recipe]
        assert row["command"] == f"llama-quantize --allow-requantize IN OUT {recipe}"
        assert len(row["tensors"]) == 236 and row["file_bytes"] > 0
    for recipe in REFUSED:
        row = REFERENCE["recipes"][recipe]
        assert not row["wrote_file"] and "tensors" not in row
        assert any(REFUSAL in line for line in row["log_tail"]), row["log_tail"]


@pytest.mark.parametrize("recipe", PINNED)
def test_the_plan_equals_llama_quantizes_output_types(recipe):
    require_shipped_gguf()
    pinned = {name: kind for name, (kind, _sha) in REFERENCE["recipes"][recipe]["tensors"].items()}
    plan = recipes.plan(recipe)
    differ = {
        name: (plan.get(name), pinned.get(name))
        for name in plan.keys() | pinned.keys()
        if plan.get(name) != pinned.get(name)
    }
    assert not differ, f"{recipe}: {{tensor: (plan, llama-quantize)}} {dict(sorted(differ.items()))}"


#: the types llama-quantize will not write without an importance matrix (tensor_requires_imatrix,
#: llama-quant.cpp:856-875; Q2_K needs one only in a Q2_K_S file, a recipe issue 40 does not list)
NEEDS_IMATRIX = {"IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS"}


@pytest.mark.parametrize("recipe", ISSUE_RECIPES)
def test_a_recipe_is_refused_without_an_importance_matrix_exactly_when_its_plan_needs_one(recipe):
    """llama-quantize refuses a run without an imatrix when a matrix other than the embedding or the
    output would be stored in a type that needs one. None of issue 40's recipes asks for such a type
    on Gemma 3 (IQ4_NL and IQ4_XS do not need one), and the tool refused none; the lab's plan without
    an imatrix must agree, so a future pin that records a refusal fails here until the lab says why."""
    require_shipped_gguf()
    plan = recipes.plan(recipe, imatrix=False)
    needs = sorted(
        name
        for name, kind in plan.items()
        if kind in NEEDS_IMATRIX and name not in ("token_embd.weight", "output.weight")
    )
    assert (REFERENCE["recipes"][recipe]["exit_status"] != 0) == bool(needs), needs
