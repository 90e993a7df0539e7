"""What an execution records: one result per phase, and the execution itself."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

__all__ = ["PhaseRecord", "Usage", "iso"]


def iso(moment: float | None) -> str | None:
    """An epoch instant as ISO 8601 UTC (millisecond precision)."""
    if moment is None:
        return None
    return datetime.fromtimestamp(moment, UTC).isoformat(timespec="milliseconds")


@dataclass(frozen=True, slots=True)
class PhaseRecord:
    """The result of one phase; ``outcome`` is set when the phase ended the execution."""

    phase: str
    started_at: float
    completed_at: float
    success: bool
    data: dict[str, Any] = field(default_factory=dict)
    errors: tuple[str, ...] = ()
    outcome: str | None = None

    @property
    def duration_ms(self) -> float:
        return round((self.completed_at - self.started_at) * 1000, 3)

    def as_dict(self) -> dict[str, Any]:
        return {
            "phase": self.phase,
            "started_at": iso(self.started_at),
            "completed_at": iso(self.completed_at),
            "duration_ms": self.duration_ms,
            "success": self.success,
            "outcome": self.outcome,
            "data": self.data,
            "errors": list(self.errors),
        }


@dataclass(slots=True)
class Usage:
    """LLM tokens and calls an execution consumed."""

    tokens: int = 0
    llm_calls: int = 0

    def as_dict(self) -> dict[str, int]:
        return {"tokens": self.tokens, "llm_calls": self.llm_calls}
