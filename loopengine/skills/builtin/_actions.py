"""Built-in decided actions that need no ``act.actions`` entry."""

from __future__ import annotations

from typing import Any

from loopengine.skills._context import SkillContext
from loopengine.skills._definition import skill

__all__ = ["ACTION_NAMES"]

ACTION_NAMES = frozenset({"log_only", "log_and_notify", "notify", "escalate_to_human", "none"})


def _decided(ctx: SkillContext) -> str:
    decision = ctx.data.get("decision")
    action = decision.get("action") if isinstance(decision, dict) else None
    return f"loop {ctx.loop_id} decided {action!r}" if action else f"loop {ctx.loop_id} ran"


@skill("none", description="Do nothing; the decision is only recorded.")
async def none_action(ctx: SkillContext) -> dict[str, Any]:
    return {}


@skill("log_only", description="Write the decision to the execution log; change nothing.")
async def log_only(ctx: SkillContext, message: str | None = None) -> dict[str, Any]:
    text = message or _decided(ctx)
    ctx.logger.info("%s", text)
    return {"log": {"message": text}}


@skill("notify", description="Send a notification event (`loop.notification` by default).")
async def notify(
    ctx: SkillContext,
    message: str | None = None,
    event: str = "loop.notification",
    severity: str = "info",
) -> dict[str, Any]:
    text = message or _decided(ctx)
    ctx.logger.info("notify %s: %s", event, text)
    return {"notification": {"event": event, "message": text, "severity": severity}}


@skill("log_and_notify", description="Log the decision and send a notification event.")
async def log_and_notify(
    ctx: SkillContext, message: str | None = None, event: str = "loop.notification"
) -> dict[str, Any]:
    logged = await log_only(ctx, message)
    notified = await notify(ctx, message, event)
    return {**logged, **notified}


@skill("escalate_to_human", description="Hand the decision to a person (an escalation event).")
async def escalate_to_human(
    ctx: SkillContext, reason: str | None = None, target: str | None = None
) -> dict[str, Any]:
    text = reason or _decided(ctx)
    ctx.logger.warning("escalated to %s: %s", target or "a human", text)
    return {"escalation": {"target": target, "reason": text}}
