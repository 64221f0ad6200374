"""What notebook 13 writes (lab.teach.guide_page): its readings follow the numbers they read, and the
predicate builder reads rows as data, refusing bad ones beside the field they name."""

from __future__ import annotations

import ast
import re

import pytest

from lab.device.guide_checks import ModeChecks, PromptRun, ReferenceRun, SentinelRun
from lab.device.predicates import PredicateError
from lab.teach import guide_page

# A model of two layers, each with the Linears mlx-lm's gemma3_text has, and its embedding.
LAYERS = {"model.embed_tokens": (1024, 64)} | {
    f"model.layers.{i}.{name}": shape
    for i in range(2)
    for name, shape in {
        "self_attn.q_proj": (128, 64),
        "self_attn.k_proj": (64, 64),
        "self_attn.v_proj": (64, 64),
        "self_attn.o_proj": (64, 128),
        "mlp.gate_proj": (256, 64),
        "mlp.up_proj": (256, 64),
        "mlp.down_proj": (64, 256),
    }.items()
}


def _mode(name: str, departures, max_differences, prefill: float = 0.0, unwritten: int = 0) -> ModeChecks:
    prompts = tuple(
        PromptRun(f"p{i}", (1, 2), "text", departure, "reading", 6, difference, difference / 10, 4, 0.1, 0.5)
        for i, (departure, difference) in enumerate(zip(departures, max_differences, strict=True))
    )
    sentinels = (SentinelRun("quantized_matmul", 4130, unwritten, 0.0), SentinelRun("gather_qmm", 4130, 0, 0.0))
    return ModeChecks(name, name.upper(), "mode", 4.25, 100, prompts, "band", 16, 5, prefill, True, sentinels, 30.0)


def test_the_bands_reading_counts_the_modes_it_names():
    checks = [_mode("mxfp4", [0, None, 9], [5.0, 1.0, 2.0]), _mode("nvfp4", [7, None, None], [1.0, 1.2, 0.9])]
    text = guide_page.bands_reading(checks)
    assert text.startswith(
        "In the guide's corruption band: 1 of 2 modes (MXFP4). Departing within the first 6 tokens of "
        "some prompt: 1 of 2. By the guide's reading, a broken kernel."
    )
    assert "find no kernel fault" in text


def test_a_kernel_fault_is_named_instead_of_explained_away():
    checks = [_mode("mxfp4", [0, 0, 0], [9.0, 9.0, 9.0], unwritten=3), _mode("nvfp4", [None] * 3, [0.5] * 3)]
    text = guide_page.bands_reading(checks)
    assert text.endswith("Checks 3 and 4, in the next section, find a fault in MXFP4.")
    assert "no kernel fault" not in text


def test_the_implementations_reading_follows_its_rows():
    rows = [
        {"lab_against_mlx_lm": (None, None), "llama_cpp_against_mlx_lm": (None, 3), "lab_departures": (None, None)},
        {"lab_against_mlx_lm": (None, 4), "llama_cpp_against_mlx_lm": None, "lab_departures": (2, 9)},
    ]
    text = guide_page.implementations_reading(rows)
    assert "the lab's answers are mlx-lm's, token for token; llama.cpp's differ." in text
    assert "within the first 6 tokens on 1 of 2 prompts" in text
    assert "part on 1 of 2 prompts" in text


def test_the_tables_show_each_mode_and_prompt():
    reference = ReferenceRun(("p0", "p1\nline"), ((1, 2), (3, 4)), ("a\nb", "c"))
    checked = _mode("mxfp4", [None, 1], [0.5, 4.0])
    greedy = guide_page.greedy_table(reference, [checked])
    assert greedy.count("MXFP4") == 2 and "| none | exact match |" in greedy and "| 1 | red flag |" in greedy
    answers = guide_page.answers_view(reference, checked)
    assert "a<br>b" in answers and "\\n" not in answers  # answers keep their lines, as line breaks


@pytest.mark.parametrize(
    ("rows", "field", "words"),
    [
        ("*.v_proj 0-40 affine4_g64", "row 1, layers", "beyond the model"),
        ("x.y all affine4_g64", "row 1, pattern", "matches no layer"),
        ("*.q_proj all affine9", "row 1, format", "not a format MLX quantizes to"),
        ("*.q_proj all", "row 1", "has 2 fields"),
        ("# only a comment\n\n", "rows", "no rows"),
        ("*.q_proj all mxfp4\nmodel.embed_tokens all affine4_g128", "row 2, format", "64"),
        ("<script> all affine4_g64", "row 1, pattern", "character"),
        ("x" * 5000, "rows", "at most 4000"),
    ],
)
def test_bad_rows_are_refused_beside_the_field_they_name(rows, field, words):
    with pytest.raises(PredicateError, match=re.escape(words)) as refused:
        guide_page.predicate_report(rows, LAYERS)
    assert refused.value.field == field


def test_the_report_counts_bits_before_any_weight_and_writes_a_predicate_that_only_parses():
    report = guide_page.predicate_report("*.down_proj 1 affine8_g64\n* all affine4_g64", LAYERS)
    # the embedding's 65536 weights and two layers' 73728 each at 4 + 32 × 2 / 64 = 5 bits (float32
    # scale and bias per group of 64), but the second layer's down_proj, 16384, at 8 + 1 = 9 bits
    weights = 65536 + 2 * 73728
    expected = ((weights - 16384) * 5 + 16384 * 9) / weights  # 5.3077
    assert f"**{expected:.4f} bits per weight**" in report
    source = report.split("```python\n", 1)[1].split("```", 1)[0]
    tree = ast.parse(source)  # text for a learner's script: parsed here, never run
    assert {node.name for node in tree.body if isinstance(node, ast.FunctionDef)} >= {"class_predicate"}


def test_the_kv_reading_names_what_hurts_more_from_the_rows():
    def row(weights, cache, changed, lab_kl, mlx_kl):
        return {"weights": weights, "kv_cache": cache, "changed": changed, "lab_kl": lab_kl, "mlx_kl": mlx_kl}

    rows = [
        row("reference", "8-bit g64", "KV only", 0.001, 0.001),
        row("reference", "4-bit g64", "KV only", 0.13, 0.14),
        row("mxfp4", "float", "weights only", 0.38, 0.65),
        row("affine4_g64", "float", "weights only", 0.28, 0.42),
    ]
    text = guide_page.kv_reading(rows)
    assert "(4-bit g64) moves the next-token distributions by 0.1300 nats in the lab (0.1400 in mlx-lm)" in text
    assert "the gentlest weights alone (MLX affine 4-bit g64) by 0.2800 (0.4200)" in text
    assert text.endswith("On this model the weights hurt more.")
    rows[1] = row("reference", "4-bit g64", "KV only", 0.5, 0.5)
    assert guide_page.kv_reading(rows).endswith("On this model the KV cache hurt more.")
    assert guide_page.kv_weights(["nvfp4", "mxfp4", "affine4_g64"]) == ["reference", "affine4_g64", "mxfp4"]


def test_a_page_with_no_alarming_mode_says_so():
    checks = [_mode("affine8_g64", [None, None, 9], [0.5, 0.7, 1.0])]
    assert guide_page.bands_reading(checks) == (
        "No mode lands in the guide's corruption band or departs within its first tokens."
    )
