"""Following a log by id when ids are taken before commit (a PostgreSQL sequence): an id missing
below a later one may belong to a transaction still open, whose event commits after the later
ones were read. Such gaps are waited for, and the position saved for a restart stays below the
oldest; a gap older than ``wait_s`` (an insert rolled back, an event pruned) is given up."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = ["MAX_GAPS", "LogFollower"]

MAX_GAPS = 10_000
"""Most missing ids waited for at once; past it, the oldest are given up."""


@dataclass(slots=True)
class LogFollower:
    """Which ids of a log to hand on, each once, whatever order their transactions commit in."""

    position: int
    """Every id up to here was handed on or given up: where a restart reads from."""
    wait_s: float
    high: int = field(init=False)
    """The highest id handed on."""
    gaps: dict[int, float] = field(default_factory=dict)
    """Missing ids below ``high``, and when each was first found missing."""

    def __post_init__(self) -> None:
        self.high = self.position

    def take(self, ids: Iterable[int], now: float) -> list[int]:
        """Of ``ids`` just read (ids above ``high``, and gaps that filled), the ones to hand on,
        in order; ids below ``high`` that are not gaps were handed on already."""
        fresh = []
        for found in sorted(set(ids)):
            if self.gaps.pop(found, None) is not None:
                fresh.append(found)
            elif found > self.high:
                for missing in range(max(self.high + 1, found - MAX_GAPS), found):
                    self.gaps[missing] = now
                self.high = found
                fresh.append(found)
        self._give_up(now)
        self.position = min(self.gaps) - 1 if self.gaps else self.high
        return fresh

    def _give_up(self, now: float) -> None:
        expired = [gap for gap, since in self.gaps.items() if now - since >= self.wait_s]
        for gap in expired:
            del self.gaps[gap]
        for gap in sorted(self.gaps)[: max(0, len(self.gaps) - MAX_GAPS)]:
            del self.gaps[gap]
