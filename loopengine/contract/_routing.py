"""Which actions a decided name runs: one rule for the engine and for validation, so what
validation proves about the approval gate is what the engine does.

Every action whose ``action_id`` is the name and every action tagged with it (``on:``), in file
order; else a built-in action (runs no ``act.actions``); else the catch-all actions (those without
``on:``).
"""

from __future__ import annotations

from collections.abc import Sequence

from loopengine.contract._enums import BuiltinAction

__all__ = ["ActionKey", "routed"]

ActionKey = tuple[str | None, Sequence[str] | None]
"""An action's ``action_id`` and ``on:`` tags (None: no ``on:``, a catch-all)."""


def routed(decided: str, actions: Sequence[ActionKey]) -> tuple[list[int], bool]:
    """The positions of the actions ``decided`` runs, and whether it fell to the catch-all."""
    named = [
        i
        for i, (action_id, on) in enumerate(actions)
        if decided == action_id or decided in (on or ())
    ]
    if named:
        return named, False
    if decided in set(BuiltinAction):
        return [], False
    return [i for i, (_, on) in enumerate(actions) if on is None], True
