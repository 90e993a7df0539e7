"""What a phase hands back to the runner, and the settings of a phase a loop leaves out."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeVar

from loopengine.contract import Outcome
from loopengine.store import Effect

__all__ = ["PhaseOutput", "declared", "defaults"]

S = TypeVar("S")
_DEFAULTS: dict[type[Any], Any] = {}


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


def defaults(kind: type[S]) -> S:
    """``kind`` built with its defaults, once (a model costs tens of µs to build; it is frozen)."""
    made = _DEFAULTS.get(kind)
    if made is None:
        made = _DEFAULTS[kind] = kind()
    return made


def declared(settings: S | None, kind: type[S]) -> S:
    """A phase's ``settings``, or ``kind``'s defaults when the loop leaves the phase out."""
    return settings if settings is not None else defaults(kind)
