"""Undo completed actions in reverse order, within a time limit."""

from __future__ import annotations

from typing import Any

import anyio

from loopengine.engine._run import Run
from loopengine.engine._services import Services
from loopengine.errors import LoopEngineError
from loopengine.skills import ROLLBACK_SUFFIX

__all__ = ["roll_back"]


async def roll_back(run: Run, services: Services, max_ms: int) -> dict[str, Any]:
    """Run the rollback skills of completed actions, newest first; says whether all succeeded."""
    done: list[str] = []
    errors: list[str] = []
    with anyio.move_on_after(max_ms / 1000) as scope:
        while run.rollbacks:
            entry = run.rollbacks[-1]
            try:
                await services.call(
                    run,
                    "validate",
                    f"rollback:{entry.action_id}",
                    entry.skill,
                    entry.params,
                    extra=entry.extra,
                    key=f"{entry.key}{ROLLBACK_SUFFIX}",
                    keep_result=True,
                )
            except LoopEngineError as exc:
                errors.append(f"rollback of '{entry.action_id}' failed: {exc}")
                break
            run.rollbacks.pop()
            done.append(entry.action_id)
    if scope.cancelled_caught:
        errors.append(f"rollback did not finish within {max_ms} ms")
    return {
        "rolled_back": done,
        "remaining": len(run.rollbacks),
        "errors": errors,
        "complete": not errors,
    }
