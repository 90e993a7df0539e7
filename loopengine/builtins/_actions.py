"""Built-in decided actions that need no ``act.actions`` entry."""

from __future__ import annotations

from collections.abc import Mapping

from loopengine._json import JSON, JSONObject
from loopengine.contract import BuiltinAction
from loopengine.skills import SkillContext, skill

__all__ = ["escalate_to_human", "log_and_notify", "log_only", "none_action", "notify"]


async def _announce(ctx: SkillContext, name: str, data: Mapping[str, JSON], dry_run: bool) -> bool:
    """Append ``name`` to the store's event log, where a daemon's event triggers see it; not in
    a dry run, nor outside an engine. Whether it was appended."""
    if dry_run or ctx.dry_run or ctx.store is None:
        return False
    from loopengine.store import signals

    body = {**data, "loop_id": ctx.loop_id, "execution_id": ctx.execution_id}
    now = ctx.clock()
    await ctx.store.write(signals.insert_event, name, ctx.loop_id, body, now, ctx.execution_id)
    return True


def _decided(ctx: SkillContext) -> str:
    decision = ctx.data.get("decision")
    action = decision.get("action") if isinstance(decision, dict) else None
    return f"loop {ctx.loop_id} decided {action!r}" if action else f"loop {ctx.loop_id} ran"


@skill(BuiltinAction.NONE, description="Do nothing; the decision is only recorded.")
async def none_action(ctx: SkillContext) -> JSONObject:
    return {}


@skill(
    BuiltinAction.LOG_ONLY, description="Write the decision to the execution log; change nothing."
)
async def log_only(
    ctx: SkillContext, message: str | None = None, dry_run: bool = False
) -> JSONObject:
    text = message or _decided(ctx)
    ctx.logger.info("%s", text)
    return {"log": {"message": text}}


@skill(
    BuiltinAction.NOTIFY,
    description="Append a notification event (`loop.notification` by default) to the event log.",
)
async def notify(
    ctx: SkillContext,
    message: str | None = None,
    event: str = "loop.notification",
    severity: str = "info",
    dry_run: bool = False,
) -> JSONObject:
    text = message or _decided(ctx)
    ctx.logger.info("notify %s: %s", event, text)
    notification = {"event": event, "message": text, "severity": severity}
    sent = await _announce(ctx, event, {"message": text, "severity": severity}, dry_run)
    return {"notification": {**notification, "emitted": sent}}


@skill(BuiltinAction.LOG_AND_NOTIFY, description="Log the decision and send a notification event.")
async def log_and_notify(
    ctx: SkillContext,
    message: str | None = None,
    event: str = "loop.notification",
    dry_run: bool = False,
) -> JSONObject:
    logged = await log_only(ctx, message)
    notified = await notify(ctx, message, event, dry_run=dry_run)
    return {**logged, **notified}


@skill(
    BuiltinAction.ESCALATE_TO_HUMAN,
    description="Hand the decision to a person: an escalation event (`target`, else "
    "`loop.escalated`) in the event log.",
)
async def escalate_to_human(
    ctx: SkillContext, reason: str | None = None, target: str | None = None, dry_run: bool = False
) -> JSONObject:
    text = reason or _decided(ctx)
    ctx.logger.warning("escalated to %s: %s", target or "a human", text)
    event = target or "loop.escalated"
    sent = await _announce(ctx, event, {"reason": text, "target": target}, dry_run)
    return {"escalation": {"target": target, "reason": text, "event": event, "emitted": sent}}
