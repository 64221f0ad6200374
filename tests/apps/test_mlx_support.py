"""lab.device.mlx_support against what the installed MLX does, as measured with MLX 0.32.4 on CPU.

The expectations are the measurements: a newer MLX that loads more GGUF types fails here on
purpose, so the table in notebook 11 is reread rather than left stale.
"""

from __future__ import annotations

import pytest

from lab.device import mlx_support
from lab.formats import FORMATS, mlx_layout

pytestmark = pytest.mark.skipif(not mlx_layout.mlx_available(), reason="MLX is not installed")


@pytest.fixture(scope="module")
def rows():
    return {row["format"]: row for row in mlx_support()}


def test_one_row_per_registry_format_with_mlx_modes_from_the_registry(rows):
    assert list(rows) == list(FORMATS)
    assert {name for name, row in rows.items() if row["mlx_mode"] != "none"} == {
        fmt.name for fmt in FORMATS.values() if fmt.mlx is not None
    }
    assert rows["nf4"]["mlx_mode"] == "none" and rows["nf4"]["mx_load"] == "not GGUF"


def test_iq4_types_are_refused_by_mx_load(rows):
    for name in ("iq4_nl", "iq4_xs"):
        assert rows[name]["mx_load"] == "refused"
        assert rows[name]["error"] == "RuntimeError: [load_gguf] gguf_tensor_to_f16 failed"


def test_mxfp4_and_nvfp4_tensors_vanish_without_an_error(rows):
    for name in ("mxfp4", "nvfp4"):
        assert (rows[name]["mx_load"], rows[name]["returned"], rows[name]["error"]) == ("no arrays", "", "")


def test_q4_0_q4_1_and_q8_0_come_back_as_affine_triples_within_float16_rounding(rows):
    for name, bits, words in (("q4_0", 4, 32), ("q4_1", 4, 32), ("q8_0", 8, 64)):
        row = rows[name]
        assert row["mx_load"] == "quantized triple"
        assert f"probe.weight uint32 [2, {words}]" in row["returned"] and f"group 32, {bits} bits" in row["returned"]
        # the scale and the bias are float16 in MLX's affine layout: a few float16 steps at |w| ~ 3
        assert 0 < row["max_abs_diff"] <= 2**-8


def test_q6_k_decodes_to_float16_and_q4_k_does_not_match_gguf_py(rows):
    assert rows["q6_k"]["mx_load"] == "float tensor" and rows["q6_k"]["returned"] == "probe.weight float16 [2, 256]"
    assert rows["q6_k"]["max_abs_diff"] <= 2**-10  # half a float16 step below 4
    assert rows["q4k"]["mx_load"] == "float tensor"
    assert rows["q4k"]["max_abs_diff"] > 0.5  # notebook 5's pane names the wrong decoder that explains it
