"""What a trigger firing does while its loop already runs, per the loop's ``on_overlap``; pure.

The caller holds the counts (running leases, queued fires) and acts on the decision; a SKIP
carries the reason recorded for the fire that did not run, since every non-run is recorded.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

__all__ = ["Overlap", "OverlapDecision", "on_overlap"]

_POLICIES = ("skip", "queue", "queue_one", "replace", "parallel")


class Overlap(StrEnum):
    """What to do with a fire: start it, queue it, drop it, or cancel the running one for it."""

    START = "start"
    QUEUE = "queue"
    SKIP = "skip"
    REPLACE = "replace"


@dataclass(frozen=True, slots=True)
class OverlapDecision:
    """The action, and for SKIP the reason recorded as the non-run's."""

    action: Overlap
    reason: str | None = None


def _queue(queued: int, max_queue: int) -> OverlapDecision:
    if queued < max_queue:
        return OverlapDecision(Overlap.QUEUE)
    return OverlapDecision(Overlap.SKIP, f"queue full (max_queue {max_queue})")


def on_overlap(
    policy: str, *, running: int, queued: int, max_running: int, max_queue: int
) -> OverlapDecision:
    """The decision for one fire under ``policy``; ValueError for an unknown policy.

    A free slot with nothing queued always starts; ``max_running`` is the concurrency ``max``.
    """
    if policy not in _POLICIES:
        raise ValueError(f"unknown on_overlap {policy!r}; expected {', '.join(_POLICIES)}")
    if running < max_running and not queued:
        return OverlapDecision(Overlap.START)
    match policy:
        case "skip":
            return OverlapDecision(Overlap.SKIP, f"overlap: {running} running, on_overlap is skip")
        case "queue":
            return _queue(queued, max_queue)
        case "queue_one":
            if queued:
                return OverlapDecision(Overlap.SKIP, "coalesced: one already queued")
            return OverlapDecision(Overlap.QUEUE)
        case "replace":
            return OverlapDecision(Overlap.REPLACE)
        case _:
            if running < max_running:
                return OverlapDecision(Overlap.START)
            return _queue(queued, max_queue)
