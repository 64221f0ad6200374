"""One row of the browser bench (bench/browser.py) and the site bench (bench/site.py)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Measure:
    """One benchmark row: a value against its goal (both in `unit`; lower is better)."""

    task: str
    value: float
    unit: str
    goal: float | None
    note: str = ""

    @property
    def verdict(self) -> str:
        if self.goal is None:
            return "-"
        return "meets" if self.value < self.goal else "misses"
