"""The zoo's table: every deliberate bug against each check claimed to catch it."""

from __future__ import annotations

from dataclasses import dataclass

from lab.teach.zoo.checks import (
    CHECK_TITLES,
    CheckResult,
    check_against_mlx,
    check_dot_product,
    check_individual_codes,
    check_lane_placement,
    check_metadata,
    check_nibble_extraction,
    check_weights,
)
from lab.teach.zoo.specimens import SPECIMENS, Specimen


def run_check(check: int, specimen: Specimen, x=None) -> CheckResult:
    """Run one of the article's checks on a specimen of the kind that check takes."""
    if check == 1:
        if specimen.kind == "q4k decoder":
            return check_nibble_extraction(specimen.function)
        return check_individual_codes(specimen.function)
    if check == 2:
        return check_metadata(specimen.function)
    if check == 3:
        return check_lane_placement(specimen.function)
    if check == 4:
        return check_weights(specimen.function)
    if check == 5:
        return check_dot_product(specimen.function, x)
    return check_against_mlx(specimen.function)


@dataclass(frozen=True)
class ZooRow:
    specimen: str
    what_is_wrong: str
    check: int
    check_title: str
    caught: bool  # the check failed on the wrong specimen
    correct_passes: bool  # the same check passed on the correct specimen of that kind
    evidence: str  # what the check saw


@dataclass(frozen=True)
class ZooTable:
    rows: tuple[ZooRow, ...]

    def to_markdown(self) -> str:
        lines = [
            "| deliberate bug | check (article §10) | caught? | correct decoder passes? | evidence |",
            "|---|---|---|---|---|",
        ]
        for row in self.rows:
            lines.append(
                f"| {row.specimen}: {row.what_is_wrong} | {row.check}. {row.check_title} | "
                f"{'yes' if row.caught else 'NO'} | {'yes' if row.correct_passes else 'NO'} | {row.evidence} |"
            )
        return "\n".join(lines) + "\n"

    def as_dicts(self) -> list[dict]:
        return [dict(row.__dict__) for row in self.rows]


def _evidence(result: CheckResult) -> str:
    if not result.ran:
        return f"not run: {result.detail}"
    if result.passed:
        return f"no mismatch in {result.cases} values"
    text = (
        f"{result.mismatches} of {result.cases} differ; first at {result.first_mismatch}: "
        f"expected {result.expected:.6g}, got {result.got:.6g}"
    )
    return f"{text}; {result.detail}" if result.detail else text


def zoo_table(x=None) -> ZooTable:
    """Every deliberate bug against each check claimed to catch it, with the correct specimen as control."""
    correct = {specimen.kind: specimen for specimen in SPECIMENS if not specimen.deliberately_wrong}
    rows = []
    for specimen in SPECIMENS:
        for check in specimen.caught_by:
            on_wrong = run_check(check, specimen, x)
            on_correct = run_check(check, correct[specimen.kind], x)
            rows.append(
                ZooRow(
                    specimen=specimen.name,
                    what_is_wrong=specimen.what_is_wrong,
                    check=check,
                    check_title=CHECK_TITLES[check],
                    caught=on_wrong.ran and not on_wrong.passed,
                    correct_passes=on_correct.passed,
                    evidence=_evidence(on_wrong),
                )
            )
    return ZooTable(rows=tuple(rows))
