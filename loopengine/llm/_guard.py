"""Anti-loop guard v2 (seed 000 §3): stop a stage that repeats itself; pure values.

A call's identity is its tool name plus its arguments in canonical form (keys sorted at every
depth, integral floats as integers, whitespace in strings collapsed), so cosmetic differences do
not hide a repeat. A stage stops at the second identical call, at the second failure of a tool
with the same error, and at an A-B-A-B ping-pong between two tools answering the same each time.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["LoopGuard", "Stop", "call_key", "canonical"]

_SPACE = re.compile(r"\s+")


def canonical(value: Any) -> Any:
    """``value`` with mapping keys sorted, integral floats as ints and whitespace collapsed."""
    if isinstance(value, dict):
        return {str(k): canonical(value[k]) for k in sorted(value, key=str)}
    if isinstance(value, list | tuple):
        return [canonical(item) for item in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        return _SPACE.sub(" ", value.strip())
    return value


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def call_key(name: str, arguments: Any) -> str:
    """The identity of a tool call: name + canonical arguments."""
    return f"{name}:{_digest(canonical(arguments))}"


@dataclass(frozen=True, slots=True)
class Stop:
    """Why the stage stops."""

    rule: str
    detail: str


@dataclass(frozen=True, slots=True)
class _Seen:
    key: str
    name: str
    outcome: str


@dataclass(frozen=True, slots=True)
class LoopGuard:
    """What a stage has called so far; ``check`` before a call, ``record`` after it."""

    history: tuple[_Seen, ...] = ()

    def check(self, name: str, arguments: Any) -> Stop | None:
        """Whether calling ``name(arguments)`` now would repeat an earlier call of the stage."""
        key = call_key(name, arguments)
        if any(seen.key == key for seen in self.history):
            shown = json.dumps(canonical(arguments), ensure_ascii=False)
            return Stop("repeat", f"{name}({shown}) was already called in this stage")
        return None

    def record(
        self, name: str, arguments: Any, *, ok: bool, result: Any
    ) -> tuple[LoopGuard, Stop | None]:
        """The guard after a call finished, and a stop when failures or ping-pong show a loop."""
        outcome = ("ok:" if ok else "error:") + _digest(canonical(result))
        seen = _Seen(call_key(name, arguments), name, outcome)
        guard = LoopGuard((*self.history, seen))
        if not ok and any(
            earlier.name == name and earlier.outcome == outcome for earlier in self.history
        ):
            return guard, Stop("same_error", f"{name} failed twice with the same error")
        last = guard.history[-4:]
        if (
            len(last) == 4
            and last[0].name == last[2].name != last[1].name == last[3].name
            and last[0].outcome == last[2].outcome
            and last[1].outcome == last[3].outcome
        ):
            return guard, Stop("alternation", f"{last[0].name} and {last[1].name} keep alternating")
        return guard, None
