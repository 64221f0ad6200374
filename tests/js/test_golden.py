"""tests/js/golden.json is what the Python codec computes today.

The node tests (tests/js/codec.test.mjs) check the JS codec (widgets/codec/) against golden.json; this test
makes sure golden.json is not stale, so a change to lab/ cannot leave the JS codec checked
against old numbers.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

GENERATOR = Path(__file__).parent / "make_golden.py"


def load_generator():
    spec = importlib.util.spec_from_file_location("make_golden", GENERATOR)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_golden_json_matches_the_python_codec():
    generator = load_generator()
    expected = generator.golden_text()
    committed = generator.GOLDEN_PATH.read_text(encoding="utf-8") if generator.GOLDEN_PATH.exists() else ""
    if committed == expected:
        return
    try:
        old, new = json.loads(committed), json.loads(expected)
        stale = sorted(key for key in new.keys() | old.keys() if old.get(key) != new.get(key))
    except json.JSONDecodeError:
        stale = ["(golden.json is missing or not valid JSON)"]
    raise AssertionError(
        f"tests/js/golden.json is stale: sections {', '.join(stale)} differ from what lab/ computes now. "
        f"Regenerate it with `{generator.REGENERATE}`, then run `node --test tests/js/` to check "
        "the JS codec (widgets/codec/) against the new numbers."
    )


def test_golden_json_is_modest():
    assert GENERATOR.with_name("golden.json").stat().st_size < 2_000_000
