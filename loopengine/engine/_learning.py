"""Learn: a weighted score per execution and bounded steps of learned values; pure."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Signal", "gate", "score", "step"]


@dataclass(frozen=True, slots=True)
class Signal:
    """One feedback value in [0, 1] with its weight; None when the source had no data."""

    name: str
    value: float | None
    weight: float


def score(signals: Sequence[Signal]) -> float | None:
    """Weighted mean of the signals that have a value; None when none has."""
    present = [(s.weight, s.value) for s in signals if s.value is not None and s.weight > 0]
    total = sum(weight for weight, _ in present)
    if not present or total == 0:
        return None
    return sum(weight * min(1.0, max(0.0, value)) for weight, value in present) / total


def step(current: float, target: float, rate: float, max_adjustment: float | None) -> float:
    """Move ``current`` toward ``target`` by ``rate``, the move clamped to ``max_adjustment``."""
    move = rate * (target - current)
    if max_adjustment is not None:
        move = max(-max_adjustment, min(max_adjustment, move))
    return current + move


def gate(
    *,
    samples: int,
    min_samples: int,
    last_adjusted_at: float | None,
    cooldown_hours: float,
    now: float,
) -> str | None:
    """Why learned values may not move now, or None when they may."""
    if samples < min_samples:
        return f"{samples} of {min_samples} samples before the first adjustment"
    if last_adjusted_at is not None and now - last_adjusted_at < cooldown_hours * 3600:
        return f"cooldown: last adjusted {int(now - last_adjusted_at)} s ago"
    return None
