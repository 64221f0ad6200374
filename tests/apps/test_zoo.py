"""The decoder zoo: every deliberate bug fails the check the article pairs it with, every correct
specimen passes it, and a symmetric fixture lets the metadata bug through."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from conftest import require_mlx

from lab.formats import q4k
from lab.formats.q4k import misreadings
from lab.teach import zoo

WRONG_PAIRS = [
    pytest.param(specimen, check, id=f"{specimen.name}-check{check}")
    for specimen in zoo.SPECIMENS
    if specimen.deliberately_wrong
    for check in specimen.caught_by
]
CORRECT = {specimen.kind: specimen for specimen in zoo.SPECIMENS if not specimen.deliberately_wrong}


def _needs_mlx(check: int) -> None:
    if check == 6:
        require_mlx()


@pytest.mark.parametrize(("specimen", "check"), WRONG_PAIRS)
def test_claimed_check_catches_the_bug(specimen, check):
    _needs_mlx(check)
    result = zoo.run_check(check, specimen)
    assert result.ran and not result.passed
    assert result.mismatches > 0 and result.first_mismatch


@pytest.mark.parametrize(("specimen", "check"), WRONG_PAIRS)
def test_same_check_passes_the_correct_specimen(specimen, check):
    _needs_mlx(check)
    result = zoo.run_check(check, CORRECT[specimen.kind])
    assert result.passed and result.mismatches == 0 and result.cases > 0


def test_code_check_reference_agrees_with_ml_dtypes():
    """Check 1's reference is the article's formula; a decoder built on ml_dtypes must pass it."""

    def ml_dtypes_decoder(codes, scale_bytes):
        values = codes.view(ml_dtypes.float4_e2m1fn).astype(np.float64)
        scales = np.asarray(scale_bytes, dtype=np.uint8).view(ml_dtypes.float8_e8m0fnu).astype(np.float64)
        return (values.reshape(*scales.shape[:-1], -1, 32) * scales[..., None]).reshape(codes.shape).astype(np.float32)

    assert zoo.check_individual_codes(ml_dtypes_decoder).passed


def test_the_article_numbers_through_the_wrong_decoders():
    block = q4k.presentation_fixture()
    # lane 32 holds 0xA5's high nibble 10: (0.125*3)*10 - 0.0625*8 = 3.25 with subblock 1's fields
    assert misreadings.decode_shared_metadata(block)[32] == (0.125 * 2) * 10 - 0.0625 * 4  # 2.25: subblock 0's
    interleaved = misreadings.decode_lanes_interleaved(block)
    assert interleaved[0] == 1.0 and interleaved[1] == 0.25 * 10 - 0.25  # 10 lands next to 5
    scales, mins = zoo.unpack_scale_min_unsplit(block[4:16])
    assert scales[4] == block[8] & 63 and scales[4] != 33  # reads B[8] for s_4 instead of assembling 33


def test_symmetric_fixture_hides_the_metadata_bug():
    """The article's point: with one scale and one minimum everywhere, reading the wrong
    subblock's metadata gives the right number, so every weight check passes."""
    wrong = misreadings.decode_shared_metadata
    symmetric = zoo.symmetric_blocks()
    assert zoo.check_weights(wrong, blocks=symmetric).passed
    assert zoo.check_dot_product(wrong, blocks=symmetric).passed
    assert zoo.check_lane_placement(wrong, blocks=symmetric).passed
    assert not zoo.check_weights(wrong).passed  # the asymmetric default catches it
    # the nibble check uses uniform metadata on purpose, so it cannot see this bug either
    assert zoo.check_nibble_extraction(wrong).passed


def test_uniform_zero_metadata_hides_the_split_bug():
    zero_rows = np.zeros((4, 12), dtype=np.uint8)
    assert zoo.check_metadata(zoo.unpack_scale_min_unsplit, metadata=zero_rows).passed
    assert not zoo.check_metadata(zoo.unpack_scale_min_unsplit).passed


def test_lane_check_tells_placement_from_metadata():
    misplaced = zoo.check_lane_placement(misreadings.decode_lanes_interleaved)
    assert "not lane" in misplaced.detail
    wrong_metadata = zoo.check_lane_placement(misreadings.decode_shared_metadata)
    assert not wrong_metadata.passed and "right lane" in wrong_metadata.detail


def test_dot_product_check_reports_signed_error():
    x = zoo.varied_input(256)
    result = zoo.check_dot_product(misreadings.decode_shared_metadata, x=x)
    assert not result.passed and "signed output error" in result.detail
    assert f"signed output error {result.got - result.expected:+.6g}" in result.detail


def test_random_data_hides_the_tie_rule(mx):
    """Ties-to-even differs from MLX only on exact midpoints: random weights pass, planted ties fail."""
    rng = np.random.default_rng(1)
    random_weights = (rng.normal(0, 1, (8, 64)) * rng.uniform(0.1, 10, (8, 1))).astype(np.float32)
    assert zoo.check_against_mlx(zoo.quantize_mxfp4_ties_to_even, w=random_weights).passed
    assert not zoo.check_against_mlx(zoo.quantize_mxfp4_ties_to_even).passed


def test_table_lists_every_bug_as_caught(mx):
    table = zoo.zoo_table()
    assert len(table.rows) == len(WRONG_PAIRS)
    assert all(row.caught and row.correct_passes for row in table.rows)
    markdown = table.to_markdown()
    assert markdown.count("\n") == len(table.rows) + 2
    assert {row["check"] for row in table.as_dicts()} == {1, 2, 3, 4, 5, 6}


def test_check_against_mlx_without_mlx_does_not_run(monkeypatch):
    from lab.formats import mlx_layout

    def unavailable():
        raise mlx_layout.MLXUnavailableError("MLX is not installed (simulated)")

    monkeypatch.setattr(mlx_layout, "mlx_core", unavailable)
    result = zoo.check_against_mlx(zoo.quantize_mxfp4_mlx)
    assert not result.ran and not result.passed and "not installed" in result.detail


def test_code_check_sees_the_sign_of_zero():
    """A decoder that collapses -0 to +0 (as ggml's integer table does) fails check 1 at code 1000."""

    def collapsing_decoder(codes, scale_bytes):
        return zoo.decode_mxfp4(codes, scale_bytes) + np.float32(0)

    result = zoo.check_individual_codes(collapsing_decoder)
    assert not result.passed and result.first_mismatch.startswith("code 1000")
