"""The corrective pipeline's bounds, validated once: what refinement and the orchestrator both
read, so it sits below them."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from loopengine.errors import ContractError
from loopengine.knowledge.corrective._verdicts import Thresholds

__all__ = ["MAX_GRADED", "MAX_REWRITES", "CragSettings"]

MAX_GRADED = 50
"""Most chunks of one retrieval graded (``k``)."""
MAX_REWRITES = 10
"""Most rewritten queries tried (``max_rewrites``)."""


@dataclass(frozen=True, slots=True)
class CragSettings:
    """The pipeline's bounds; ``max_calls`` None allows what the other bounds can use at most
    (every grade, rewrite, web grade and two answers)."""

    k: int = 5
    thresholds: Thresholds = field(default_factory=Thresholds)
    max_rewrites: int = 2
    max_calls: int | None = None
    deadline_s: float = 120.0
    concurrency: int = 4
    budget_chars: int = 4_000
    max_evidence: int = 8

    def __post_init__(self) -> None:
        problems = [
            f"{name} must be {rule}, got {value}"
            for name, value, ok, rule in (
                ("k", self.k, 1 <= self.k <= MAX_GRADED, f"1–{MAX_GRADED}"),
                (
                    "max_rewrites",
                    self.max_rewrites,
                    0 <= self.max_rewrites <= MAX_REWRITES,
                    f"0–{MAX_REWRITES}",
                ),
                ("max_calls", self.max_calls, self.max_calls is None or self.max_calls >= 1, "≥ 1"),
                ("deadline_s", self.deadline_s, 0 < self.deadline_s < math.inf, "above 0"),
                ("concurrency", self.concurrency, self.concurrency >= 1, "≥ 1"),
                ("budget_chars", self.budget_chars, self.budget_chars >= 200, "≥ 200"),
                ("max_evidence", self.max_evidence, self.max_evidence >= 1, "≥ 1"),
            )
            if not ok
        ]
        if problems:
            raise ContractError(f"corrective RAG settings: {'; '.join(problems)}")

    @property
    def call_bound(self) -> int:
        """Model calls allowed: ``max_calls``, else all the pipeline can make."""
        most = self.k * (self.max_rewrites + 2) + self.max_rewrites + 2
        return most if self.max_calls is None else self.max_calls
