"""Built-in decided actions that need no ``act.actions`` entry."""

from __future__ import annotations

from typing import Any

from loopengine.contract import BuiltinAction
from loopengine.skills._context import SkillContext
from loopengine.skills._definition import skill

__all__ = ["escalate_to_human", "log_and_notify", "log_only", "none_action", "notify"]


def _decided(ctx: SkillContext) -> str:
    decision = ctx.data.get("decision")
    action = decision.get("action") if isinstance(decision, dict) else None
    return f"loop {ctx.loop_id} decided {action!r}" if action else f"loop {ctx.loop_id} ran"


@skill(BuiltinAction.NONE, description="Do nothing; the decision is only recorded.")
async def none_action(ctx: SkillContext) -> dict[str, Any]:
    return {}


@skill(
    BuiltinAction.LOG_ONLY, description="Write the decision to the execution log; change nothing."
)
async def log_only(ctx: SkillContext, message: str | None = None) -> dict[str, Any]:
    text = message or _decided(ctx)
    ctx.logger.info("%s", text)
    return {"log": {"message": text}}


@skill(
    BuiltinAction.NOTIFY, description="Send a notification event (`loop.notification` by default)."
)
async def notify(
    ctx: SkillContext,
    message: str | None = None,
    event: str = "loop.notification",
    severity: str = "info",
) -> dict[str, Any]:
    text = message or _decided(ctx)
    ctx.logger.info("notify %s: %s", event, text)
    return {"notification": {"event": event, "message": text, "severity": severity}}


@skill(BuiltinAction.LOG_AND_NOTIFY, description="Log the decision and send a notification event.")
async def log_and_notify(
    ctx: SkillContext, message: str | None = None, event: str = "loop.notification"
) -> dict[str, Any]:
    logged = await log_only(ctx, message)
    notified = await notify(ctx, message, event)
    return {**logged, **notified}


@skill(
    BuiltinAction.ESCALATE_TO_HUMAN,
    description="Hand the decision to a person (an escalation event).",
)
async def escalate_to_human(
    ctx: SkillContext, reason: str | None = None, target: str | None = None
) -> dict[str, Any]:
    text = reason or _decided(ctx)
    ctx.logger.warning("escalated to %s: %s", target or "a human", text)
    return {"escalation": {"target": target, "reason": text}}
