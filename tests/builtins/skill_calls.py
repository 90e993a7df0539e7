"""Calling a built-in skill as the engine does, in a context whose config allows given hosts."""

from __future__ import annotations

from typing import Any

from loopengine.builtins import builtin_registry
from loopengine.contract import Config
from loopengine.skills import SkillContext


def context(*allow: str, dry_run: bool = False, key: str = "e1:act:send") -> SkillContext:
    """An act-phase context whose ``actions.http.allow`` lists ``allow``."""
    config = Config.model_validate({"actions": {"http": {"allow": list(allow)}}})
    return SkillContext(
        execution_id="e1",
        loop_id="sending",
        phase="act",
        step="send",
        idempotency_key=key,
        config=config,
        dry_run=dry_run,
    )


async def call(skill: str, ctx: SkillContext, **params: Any) -> Any:
    """Call ``skill`` with ``params`` checked by its model (by the names a loop writes)."""
    definition = builtin_registry().skill(skill)
    model = definition.params.model_validate(params)
    values = {name: getattr(model, name) for name in type(model).model_fields}
    return await definition.fn(ctx, **values)
