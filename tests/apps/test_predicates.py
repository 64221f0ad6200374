"""lab.device.predicates without MLX: rows read into rules, every refusal naming its field, the
matcher against fnmatch part by part, plans on hand-written layers, and the one bits-per-weight
accounting. tests/oracles/test_predicates_mlx.py holds the plan to MLX's own nn.quantize."""

from __future__ import annotations

import ast
import itertools
import time
from fnmatch import fnmatchcase

import pytest

from lab.device import predicates
from lab.device.predicates import PredicateError, Rule, pattern_matches, plan, read_rules
from lab.errors import InputError

#: a two-layer model in mlx-lm's paths, Gemma's roles; the shapes are (out, in)
LAYERS = {
    "model.embed_tokens": (512, 64),
    **{
        f"model.layers.{index}.{role}": shape
        for index in range(2)
        for role, shape in {
            "self_attn.q_proj": (128, 64),
            "self_attn.v_proj": (32, 64),
            "mlp.up_proj": (256, 64),
            "mlp.down_proj": (64, 256),
        }.items()
    },
}


def _row(pattern="*", layers="", fmt="mxfp4") -> dict[str, str]:
    return {"pattern": pattern, "layers": layers, "format": fmt}


def _refusal(rows, **options) -> PredicateError:
    with pytest.raises(PredicateError) as caught:
        read_rules(rows, **options)
    return caught.value


def test_rows_read_as_typed_in_a_form():
    rules = read_rules(
        [
            _row("mlp.down_proj", "0–1", "affine8_g32"),
            _row(" *.v_proj ", "1", "Float"),
            _row("model.layers.*.mlp.up_proj", " 0 - 1 ", "NVFP4"),
            _row("*", "", "mxfp4"),
        ]
    )
    assert rules == [
        Rule("mlp.down_proj", 0, 1, "affine8_g32"),
        Rule("*.v_proj", 1, 1, None),
        Rule("model.layers.*.mlp.up_proj", 0, 1, "nvfp4"),
        Rule("*", None, None, "mxfp4"),
    ]


@pytest.mark.parametrize(
    ("row", "field", "words"),
    [
        (_row(pattern=""), "row 2, pattern", "is empty"),
        (_row(pattern="a" * 121), "row 2, pattern", "at most 120"),
        (_row(pattern="mlp.down_proj;import os"), "row 2, pattern", "';'"),
        (_row(pattern="mlp.down_pro?"), "row 2, pattern", "'?'"),
        (_row(pattern="mlp.[a-z]*"), "row 2, pattern", "'['"),
        (_row(pattern="mlp\u202e.up"), "row 2, pattern", "\\u202e"),
        (_row(pattern="mlp..up_proj"), "row 2, pattern", "empty part"),
        (_row(pattern=".up_proj"), "row 2, pattern", "empty part"),
        (_row(layers="5-2"), "row 2, layers", "runs backwards"),
        (_row(layers="five"), "row 2, layers", "not a band"),
        (_row(layers="-3"), "row 2, layers", "not a band"),
        (_row(layers="3-"), "row 2, layers", "not a band"),
        (_row(layers="1-2-3"), "row 2, layers", "more than one dash"),
        (_row(layers="²"), "row 2, layers", "not a band"),
        (_row(layers="1" * 17), "row 2, layers", "characters long"),
        (_row(fmt=""), "row 2, format", "is empty"),
        (_row(fmt="q4_k"), "row 2, format", "not a format MLX quantizes to"),
        (_row(fmt="affine5_g64"), "row 2, format", "not a format MLX quantizes to"),
        ({"pattern": 5, "layers": "", "format": "float"}, "row 2, pattern", "not text"),
        (["*", "", "float"], "row 2", "not a row"),
    ],
)
def test_each_refusal_names_its_row_and_field(row, field, words):
    refusal = _refusal([_row(), row])
    assert refusal.field == field
    assert str(refusal).startswith(f"{field}: ")
    assert words in str(refusal)
    assert isinstance(refusal, InputError)


def test_an_unknown_format_is_answered_with_the_accepted_ones():
    message = str(_refusal([_row(fmt="int4")]))
    for name in ("float", "mxfp4", "nvfp4", "mxfp8", "affine4_g64", "affine8_g32"):
        assert name in message


def test_a_band_beyond_the_model_is_refused_when_the_count_is_given():
    assert read_rules([_row(layers="17")], layer_count=18) == [Rule("*", 17, 17, "mxfp4")]
    refusal = _refusal([_row(layers="16–18")], layer_count=18)
    assert refusal.field == "row 1, layers"
    assert "0 to 17" in str(refusal)


def test_too_many_rows_are_refused_and_a_missing_field_reads_empty():
    assert _refusal([_row()] * 33).field == "rows"
    assert len(read_rules([_row()] * 32)) == 32
    assert _refusal([{"pattern": "*", "layers": ""}]).field == "row 1, format"


PATHS = [
    "model.embed_tokens",
    "model.layers.3.mlp.down_proj",
    "model.layers.12.self_attn.v_proj",
    "model.layers.1.self_attn.q_proj",
    "lm_head",
]


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("down_proj", "model.layers.3.mlp.down_proj", True),
        ("mlp.*", "model.layers.3.mlp.down_proj", True),
        ("*", "model.layers.3.mlp.down_proj", True),
        ("mlp", "model.layers.3.mlp.down_proj", False),
        ("proj", "model.layers.3.mlp.down_proj", False),
        ("model.layers.*.mlp.down_proj", "model.layers.3.mlp.down_proj", True),
        ("model.layers.*.*", "model.layers.3.mlp.down_proj", False),
        ("layers.*.*.*", "model.layers.3.mlp.down_proj", True),
        ("*.v_proj", "model.layers.12.self_attn.v_proj", True),
        ("*.*.*.*.*.*", "model.layers.12.self_attn.v_proj", False),
        ("model.layers.1*.*.*", "model.layers.12.self_attn.v_proj", True),
        ("model.layers.1*.*.*", "model.layers.3.mlp.down_proj", False),
        ("d*n_pr*j", "model.layers.3.mlp.down_proj", True),
        ("embed_tokens", "model.embed_tokens", True),
        ("*_proj", "model.embed_tokens", False),
    ],
)
def test_a_pattern_matches_the_paths_last_whole_parts(pattern, path, expected):
    assert pattern_matches(pattern, path) is expected


def test_the_matcher_agrees_with_fnmatch_part_by_part():
    """The lab's matcher against the text predicate_source writes for learners (fnmatch on each part)."""
    globs = ["*", "d*", "*j", "*o*", "**", "d*w*n_*r*j", "*_*_*", "q", "1*", "*3", "mlp", "self_attn", "model", "x*"]
    for path in PATHS:
        for size in (1, 2, 3):
            for pattern_parts in itertools.product(globs, repeat=size):
                pattern = ".".join(pattern_parts)
                parts = path.split(".")
                tail = parts[len(parts) - size :]
                expected = size <= len(parts) and all(map(fnmatchcase, tail, pattern_parts))
                assert pattern_matches(pattern, path) is expected, (pattern, path)


def test_a_hostile_pattern_costs_time_linear_in_its_length():
    # a backtracking glob would try every way of sharing the part among 60 stars
    started = time.perf_counter()
    assert not pattern_matches("*" * 60 + "x", "a" * 50_000)
    assert not pattern_matches("*a" * 59 + "b", "a" * 50_000)
    assert not pattern_matches(".".join(["*a*"] * 40), ".".join(["a" * 1000] * 39 + ["b" * 1000]))
    assert time.perf_counter() - started < 1.0


def test_the_first_matching_row_decides_and_the_rest_stay_in_float():
    rules = read_rules(
        [
            _row("self_attn.v_proj", "", "float"),
            _row("*_proj", "1", "nvfp4"),
            _row("layers.*.*.*", "0-1", "affine4_g64"),
            _row("mlp.down_proj", "", "mxfp8"),
        ]
    )
    assert plan(rules, LAYERS) == {
        "model.embed_tokens": None,
        "model.layers.0.self_attn.q_proj": "affine4_g64",
        "model.layers.0.self_attn.v_proj": None,
        "model.layers.0.mlp.up_proj": "affine4_g64",
        "model.layers.0.mlp.down_proj": "affine4_g64",
        "model.layers.1.self_attn.q_proj": "nvfp4",
        "model.layers.1.self_attn.v_proj": None,
        "model.layers.1.mlp.up_proj": "nvfp4",
        "model.layers.1.mlp.down_proj": "nvfp4",
    }


def test_only_a_row_without_a_band_reaches_the_embedding():
    everything = plan(read_rules([_row("*", "", "mxfp4")]), LAYERS)
    assert set(everything.values()) == {"mxfp4"}
    banded = plan(read_rules([_row("*", "0-1", "mxfp4")]), LAYERS)
    assert banded["model.embed_tokens"] is None
    refusal = _plan_refusal([_row("embed_tokens", "0", "mxfp4")])
    assert refusal.field == "row 1, layers"
    assert "none in layer 0" in str(refusal)


def _plan_refusal(rows, layers=LAYERS) -> PredicateError:
    rules = read_rules(rows)
    with pytest.raises(PredicateError) as caught:
        plan(rules, layers)
    return caught.value


def test_a_row_that_matches_no_layer_is_refused_on_its_field():
    refusal = _plan_refusal([_row(), _row("mlp.gate_proj", "", "float")])
    assert refusal.field == "row 2, pattern"
    assert "'mlp.gate_proj' matches no layer" in str(refusal)
    assert _plan_refusal([_row("embed_tokens", "1", "float")]).field == "row 1, layers"
    beyond = _plan_refusal([_row("q_proj", "1-2", "float")])
    assert beyond.field == "row 1, layers"
    assert "0 to 1" in str(beyond)


def test_a_group_that_does_not_divide_a_row_is_refused_naming_the_layer_and_the_numbers():
    layers = {**LAYERS, "model.layers.1.mlp.down_proj": (64, 208)}
    # affine8_g32's group of 32 does not divide 208; the first row decides down_proj in layer 1 only
    refusal = _plan_refusal([_row("down_proj", "1", "affine8_g32"), _row()], layers)
    assert refusal.field == "row 1, format"
    for words in ("model.layers.1.mlp.down_proj", "208", "32", "208 = 6 × 32 + 16"):
        assert words in str(refusal)
    # nvfp4's group of 16 divides 208, and a float row takes the layer out of any group
    assert plan(read_rules([_row("down_proj", "1", "nvfp4"), _row()]), layers)["model.layers.1.mlp.down_proj"] == (
        "nvfp4"
    )
    assert plan(read_rules([_row("down_proj", "1", "float"), _row()]), layers)["model.layers.1.mlp.down_proj"] is None


def test_bits_per_weight_counts_each_layer_in_its_format_and_float_at_its_width():
    layers = {
        "model.embed_tokens": (8, 64),
        "model.layers.0.mlp.down_proj": (64, 128),
        "model.layers.0.mlp.up_proj": (128, 64),
    }
    planned = {
        "model.embed_tokens": None,
        "model.layers.0.mlp.down_proj": "affine4_g64",
        "model.layers.0.mlp.up_proj": "mxfp4",
    }
    weights = 512 + 8192 + 8192
    # float32: float at 32, affine 4 + (32 + 32) / 64 for its float32 scale and bias, MXFP4 4 + 8 / 32
    assert predicates.bits_per_weight(planned, layers) == pytest.approx((512 * 32 + 8192 * 5 + 8192 * 4.25) / weights)
    # bfloat16: float at 16, affine 4 + (16 + 16) / 64; MXFP4's E8M0 scale does not change
    assert predicates.bits_per_weight(planned, layers, "bfloat16") == pytest.approx(
        (512 * 16 + 8192 * 4.5 + 8192 * 4.25) / weights
    )
    assert predicates.bits_per_weight(dict.fromkeys(layers), layers) == 32.0
    with pytest.raises(InputError, match="scale dtype"):
        predicates.bits_per_weight(planned, layers, "float8")


def test_the_source_holds_the_rules_as_data_and_is_the_same_every_time():
    rules = read_rules([_row("mlp.down_proj", "0–1", "affine8_g32"), _row("*.v_proj", "", "float"), _row()])
    source = predicates.predicate_source(rules)
    assert source == predicates.predicate_source(list(rules))
    tree = ast.parse(source)  # parsed, never run
    [table] = [node.value for node in tree.body if isinstance(node, ast.Assign) and node.targets[0].id == "RULES"]
    assert ast.literal_eval(table) == [
        ("mlp.down_proj", 0, 1, {"group_size": 32, "bits": 8, "mode": "affine"}),
        ("*.v_proj", None, None, None),
        ("*", None, None, {"group_size": 32, "bits": 4, "mode": "mxfp4"}),
    ]
    assert [node.name for node in tree.body if isinstance(node, ast.FunctionDef)] == [
        "layer_index",
        "matches",
        "class_predicate",
    ]
    imports = [node for node in tree.body if isinstance(node, ast.Import | ast.ImportFrom)]
    assert [(node.module, [alias.name for alias in node.names]) for node in imports] == [("fnmatch", ["fnmatchcase"])]


def test_the_source_refuses_a_rule_whose_pattern_could_break_out_of_its_string():
    with pytest.raises(PredicateError) as caught:
        predicates.predicate_source([Rule('x"), __import__("os"), ("', None, None, None)])
    assert caught.value.field == "row 1, pattern"


def test_the_summary_groups_layers_by_role_and_format():
    rules = read_rules([_row("mlp.down_proj", "0", "affine8_g32"), _row("*_proj", "", "mxfp4")])
    rows = predicates.summary_rows(plan(rules, LAYERS), LAYERS)
    assert [(row.role, row.layers, row.fmt, row.modules, row.parameters) for row in rows] == [
        ("model.embed_tokens", "", "float", 1, 512 * 64),
        ("model.layers.<i>.self_attn.q_proj", "0–1", "mxfp4", 2, 2 * 128 * 64),
        ("model.layers.<i>.self_attn.v_proj", "0–1", "mxfp4", 2, 2 * 32 * 64),
        ("model.layers.<i>.mlp.up_proj", "0–1", "mxfp4", 2, 2 * 256 * 64),
        ("model.layers.<i>.mlp.down_proj", "0", "affine8_g32", 1, 64 * 256),
        ("model.layers.<i>.mlp.down_proj", "1", "mxfp4", 1, 64 * 256),
    ]
