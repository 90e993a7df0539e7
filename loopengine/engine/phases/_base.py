"""What a phase hands back to the runner."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa

from loopengine.contract import Outcome

__all__ = ["PhaseOutput"]


@dataclass(slots=True)
class PhaseOutput:
    """The phase's recorded data; ``stop`` ends the execution with that outcome."""

    data: dict[str, Any] = field(default_factory=dict)
    stop: Outcome | None = None
    errors: list[str] = field(default_factory=list)
    writes: list[Callable[[sa.Connection], None]] = field(default_factory=list)
    """Store writes committed in the same transaction as this phase's record."""

    @property
    def success(self) -> bool:
        return not self.errors
