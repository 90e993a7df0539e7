"""Built-in decided actions that need no ``act.actions`` entry. What they announce is an event
handed to the step's commit, so it is kept exactly when the step is (a step cut short announces
nothing; its resumed run announces once)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from loopengine._json import JSON, JSONObject
from loopengine.contract import BuiltinAction
from loopengine.errors import SkillError
from loopengine.skills import SkillContext, SkillOutput, skill

if TYPE_CHECKING:
    from loopengine.store.effects import AppendEvent

__all__ = ["escalate_to_human", "log_and_notify", "log_only", "none_action", "notify"]


def _announced(
    ctx: SkillContext, name: str, data: Mapping[str, JSON], dry_run: bool
) -> tuple[AppendEvent, ...]:
    """The event ``name`` for the step's commit to append to the event log, where a daemon's
    event triggers see it; none in a dry run. It is held to the bounds of ``event.emit``: a name
    or a message (perhaps a model's) that no event may carry is a ``SkillError``."""
    from loopengine.triggers import event_data_problem, event_problem

    body = {**data, "loop_id": ctx.loop_id, "execution_id": ctx.execution_id}
    if problem := event_problem(name):
        raise SkillError(problem)
    if refused := event_data_problem(body, named=f"the data of {name}"):
        raise SkillError(refused.message)
    if dry_run or ctx.dry_run:
        return ()
    from loopengine.store.effects import AppendEvent

    return (AppendEvent(name, ctx.loop_id, body, ctx.clock(), ctx.execution_id),)


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
) -> SkillOutput:
    text = message or _decided(ctx)
    ctx.logger.info("notify %s: %s", event, text)
    sent = _announced(ctx, event, {"message": text, "severity": severity}, dry_run)
    notification = {"event": event, "message": text, "severity": severity, "emitted": bool(sent)}
    return SkillOutput(data={"notification": notification}, effects=sent)


@skill(BuiltinAction.LOG_AND_NOTIFY, description="Log the decision and send a notification event.")
async def log_and_notify(
    ctx: SkillContext,
    message: str | None = None,
    event: str = "loop.notification",
    dry_run: bool = False,
) -> SkillOutput:
    logged = await log_only(ctx, message)
    notified = await notify(ctx, message, event, dry_run=dry_run)
    return SkillOutput(data={**logged, **notified.data}, effects=notified.effects)


@skill(
    BuiltinAction.ESCALATE_TO_HUMAN,
    description="Hand the decision to a person: an escalation event (`target`, else "
    "`loop.escalated`) in the event log.",
)
async def escalate_to_human(
    ctx: SkillContext, reason: str | None = None, target: str | None = None, dry_run: bool = False
) -> SkillOutput:
    text = reason or _decided(ctx)
    ctx.logger.warning("escalated to %s: %s", target or "a human", text)
    event = target or "loop.escalated"
    sent = _announced(ctx, event, {"reason": text, "target": target}, dry_run)
    escalation = {"target": target, "reason": text, "event": event, "emitted": bool(sent)}
    return SkillOutput(data={"escalation": escalation}, effects=sent)
