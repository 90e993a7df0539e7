"""What a phase hands back to the runner."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from loopengine.contract import Outcome
from loopengine.store import Effect

__all__ = ["PhaseOutput"]


@dataclass(slots=True)
class PhaseOutput:
    """The phase's recorded data; ``stop`` ends the execution with that outcome."""

    data: dict[str, Any] = field(default_factory=dict)
    stop: Outcome | None = None
    errors: list[str] = field(default_factory=list)
    effects: list[Effect] = field(default_factory=list)
    """What the store writes in the same transaction as this phase's record."""

    @property
    def success(self) -> bool:
        return not self.errors
