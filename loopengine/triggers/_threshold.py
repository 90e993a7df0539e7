"""When a threshold trigger fires: a metric's condition held long enough, once per crossing; pure.

Like a Prometheus alert, a threshold goes inactive → pending (the condition must hold ``for_s``)
→ firing, and fires only on entering firing, so a metric that stays high never fires again.
``clear_value`` (hysteresis) and ``keep_firing_for_s`` keep a metric hovering at the threshold
from firing in a storm. A trigger whose first value holds (or, with ``clear_value``, is not
yet back past it) waits for it to resolve, as it may have fired before the daemon started, unless
``fire_on_start``. The state is a plain value the daemon persists, so it survives a restart.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from loopengine.expr import COMPARISONS

__all__ = ["ThresholdRule", "ThresholdState", "evaluate"]

_STATES = ("inactive", "pending", "firing")
_ON_MISSING = ("hold", "reset")


@dataclass(frozen=True, slots=True)
class ThresholdRule:
    """The condition ``value <operator> rule.value`` and how its state moves."""

    operator: str
    value: float
    for_s: float = 0
    keep_firing_for_s: float = 0
    clear_value: float | None = None
    fire_on_start: bool = False
    on_missing: str = "hold"

    def __post_init__(self) -> None:
        if self.operator not in COMPARISONS:
            raise ValueError(
                f"unknown operator {self.operator!r}; expected {' '.join(COMPARISONS)}"
            )
        if self.on_missing not in _ON_MISSING:
            raise ValueError(f"unknown on_missing {self.on_missing!r}; expected hold or reset")

    def holds(self, value: float) -> bool:
        """Whether the condition holds for ``value``."""
        return COMPARISONS[self.operator](value, self.value)

    def resolved(self, value: float) -> bool:
        """Whether ``value`` no longer holds and is back past ``clear_value`` (when it is set)."""
        if self.holds(value):
            return False
        if self.clear_value is None or self.operator in ("==", "!="):
            return True
        if self.operator in (">", ">="):
            return value <= self.clear_value
        return value >= self.clear_value


@dataclass(frozen=True, slots=True)
class ThresholdState:
    """Where a threshold stands; ``armed`` False: it must resolve before it may fire again."""

    state: str
    since: float
    value: float | None
    armed: bool = True
    cleared_at: float | None = None

    def __post_init__(self) -> None:
        if self.state not in _STATES:
            raise ValueError(
                f"unknown threshold state {self.state!r}; expected {', '.join(_STATES)}"
            )

    def as_dict(self) -> dict[str, Any]:
        """A JSON-able dict that ``from_dict`` reads back."""
        return {
            "state": self.state,
            "since": self.since,
            "value": self.value,
            "armed": self.armed,
            "cleared_at": self.cleared_at,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ThresholdState:
        """The state ``as_dict`` wrote."""
        return cls(
            state=str(data["state"]),
            since=float(data["since"]),
            value=_optional_float(data.get("value")),
            armed=bool(data.get("armed", True)),
            cleared_at=_optional_float(data.get("cleared_at")),
        )


def _optional_float(value: Any) -> float | None:
    return None if value is None else float(value)


def _enter(state: ThresholdState, name: str, now: float) -> ThresholdState:
    since = state.since if state.state == name else now
    return replace(state, state=name, since=since, armed=True, cleared_at=None)


def _from_inactive(
    rule: ThresholdRule, state: ThresholdState, value: float, now: float
) -> tuple[ThresholdState, bool]:
    if not state.armed:
        return replace(state, armed=rule.resolved(value)), False
    if not rule.holds(value):
        return state, False
    return _from_pending(rule, _enter(state, "pending", now), value, now)


def _from_pending(
    rule: ThresholdRule, state: ThresholdState, value: float, now: float
) -> tuple[ThresholdState, bool]:
    if not rule.holds(value):
        return _enter(state, "inactive", now), False
    if now - state.since >= rule.for_s:
        return _enter(state, "firing", now), True
    return state, False


def _from_firing(
    rule: ThresholdRule, state: ThresholdState, value: float, now: float
) -> tuple[ThresholdState, bool]:
    if rule.holds(value):
        return replace(state, cleared_at=None), False
    if state.cleared_at is None and not rule.resolved(value):
        return state, False
    cleared_at = now if state.cleared_at is None else state.cleared_at
    if now - cleared_at >= rule.keep_firing_for_s:
        return _enter(state, "inactive", now), False
    return replace(state, cleared_at=cleared_at), False


_STEP = {"inactive": _from_inactive, "pending": _from_pending, "firing": _from_firing}


def evaluate(
    rule: ThresholdRule, state: ThresholdState | None, value: float | None, now: float
) -> tuple[ThresholdState, bool]:
    """The state after seeing ``value`` (None: no data) at ``now``, and whether it fires now.

    ``state`` None is the first evaluation ever: a condition already holding then fires only
    with ``fire_on_start``; with no data yet, nothing holds, so the first value may fire.
    """
    if state is None and value is None:
        return ThresholdState("inactive", now, None, armed=True), False
    current = state or ThresholdState("inactive", now, None, armed=rule.fire_on_start)
    if value is None:
        reset = rule.on_missing == "reset"
        return (_enter(current, "inactive", now) if reset else current), False
    return _STEP[current.state](rule, replace(current, value=value), value, now)
