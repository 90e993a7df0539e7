"""CRAG's verdict on a retrieval, from its grades and two thresholds: what decides whether the
pipeline answers, rewrites the query or searches the web; pure."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from loopengine.errors import ContractError

__all__ = ["Thresholds", "Verdict", "verdict"]


class Verdict(StrEnum):
    """CRAG's three actions on a retrieval."""

    CORRECT = "correct"
    AMBIGUOUS = "ambiguous"
    INCORRECT = "incorrect"


@dataclass(frozen=True, slots=True)
class Thresholds:
    """A grade above ``upper`` makes a retrieval correct, above ``lower`` ambiguous; a grade
    equal to a threshold is not above it, so an unreadable grade (0) is never evidence."""

    upper: float = 0.7
    lower: float = 0.3

    def __post_init__(self) -> None:
        if not 0.0 <= self.lower < self.upper <= 1.0:
            raise ContractError(
                f"grade thresholds need 0 ≤ lower < upper ≤ 1, got lower={self.lower}, "
                f"upper={self.upper}: set them in that order within 0–1"
            )


def verdict(grades: Iterable[float], thresholds: Thresholds) -> Verdict:
    """CRAG's verdict: any grade above ``upper`` → correct, else any above ``lower`` → ambiguous,
    else (no grade at all too) incorrect."""
    best = max(grades, default=0.0)
    if best > thresholds.upper:
        return Verdict.CORRECT
    return Verdict.AMBIGUOUS if best > thresholds.lower else Verdict.INCORRECT
