"""What a cron trigger does with the fires it missed while no daemon ran, and its jitter; pure.

After downtime the catch-up policy bounds what runs at once (never a burst beyond
``max_catchup``) and gives every other missed slot the reason recorded for it, since every
non-run is recorded. Jitter is derived from a key, not drawn, so every daemon and every restart
agree on when a slot is due.
"""

from __future__ import annotations

import hashlib
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["CatchUp", "catch_up", "jittered"]

_POLICIES = ("skip", "latest", "all")
_TOO_OLD = "missed: older than the catch-up window"


@dataclass(frozen=True, slots=True)
class CatchUp:
    """The missed slots to run now, and every other one with its reason; each oldest first."""

    run: tuple[float, ...]
    not_run: tuple[tuple[float, str], ...]


def catch_up(
    missed: Sequence[float], *, policy: str, window: float, max_catchup: int, now: float
) -> CatchUp:
    """Decide every slot in ``missed``: those older than ``now - window`` never run.

    ``policy`` is ``skip``, ``latest`` or ``all`` (the last ``max_catchup`` slots in the window);
    ValueError for any other.
    """
    if policy not in _POLICIES:
        raise ValueError(f"unknown catchup {policy!r}; expected {', '.join(_POLICIES)}")
    match policy:
        case "skip":
            keep, reason = 0, "missed: catchup is skip"
        case "latest":
            keep, reason = 1, "coalesced: catchup is latest"
        case _:
            keep, reason = max_catchup, f"coalesced: over max_catchup ({max_catchup})"
    slots = sorted(missed)
    recent = bisect_left(slots, now - window)
    split = max(recent, len(slots) - max(keep, 0))
    return CatchUp(
        run=tuple(slots[split:]),
        not_run=tuple(
            (slot, _TOO_OLD if i < recent else reason) for i, slot in enumerate(slots[:split])
        ),
    )


def jittered(at: float, jitter_s: float, key: str) -> float:
    """``at`` delayed by a pseudo-random amount in [0, jitter_s) that only ``key`` determines."""
    digest = hashlib.blake2b(key.encode(), digest_size=8).digest()
    return at + jitter_s * ((int.from_bytes(digest, "big") >> 11) / 2**53)
