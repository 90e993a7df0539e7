"""Phase 4, act: run the decided action's skills over a bounded scope, remembering rollbacks;
what each call returned is ``act.<action_id>.result`` (a list, one per call, with ``items``)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from loopengine._concurrency import run_all
from loopengine.contract import Act, Action, BuiltinAction, ExecMode, Outcome, routed
from loopengine.engine._context import publish
from loopengine.engine._results import kept
from loopengine.engine._run import Rollback, Run
from loopengine.engine._services import NO_PARAMS, Services
from loopengine.engine.phases._base import PhaseOutput, declared
from loopengine.errors import LoopEngineError, SkillError
from loopengine.store import flags

__all__ = ["PLANNED_ITEMS", "plan", "resolve", "run_act"]


def resolve(spec: Act | None, decided: str) -> tuple[list[Action], str | None]:
    """The actions a decision runs, or the built-in action it names."""
    actions = spec.actions if spec else []
    positions, _ = routed(decided, [(a.action_id, a.on) for a in actions])
    if not positions and decided in set(BuiltinAction):
        return [], decided
    return [actions[i] for i in positions], None


def _scope(action: Action, run: Run) -> tuple[list[Any], dict[str, Any]]:
    """The items ``action`` runs on, bounded by ``max_affected``, and how many there were."""
    assert action.items is not None
    items = action.items.evaluate(run.data)
    if items is None:
        items = []
    if not isinstance(items, list):
        raise SkillError(
            f"items of action '{action.action_id}' is {type(items).__name__}, not a list"
        )
    bound = action.max_affected or len(items)
    info = {
        "items": len(items),
        "affected": min(len(items), bound),
        "truncated": len(items) > bound,
    }
    return items[:bound], info


def _split(items: list[Any], spec: Act) -> list[dict[str, Any]]:
    """One call's ``item`` or ``batch`` for each call over ``items``."""
    if spec.execution_mode is ExecMode.BATCH:
        size = spec.batch_size
        return [{"batch": items[i : i + size]} for i in range(0, len(items), size)]
    return [{"item": item} for item in items]


def _units(action: Action, run: Run, spec: Act) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    if action.items is None:
        return [{}], {}
    items, info = _scope(action, run)
    return _split(items, spec), info


PLANNED_ITEMS = 50
"""Most items of an action a plan lists (with how many there are)."""


def plan(run: Run, services: Services, decided: str) -> list[dict[str, Any]]:
    """What ``decided`` would run now, for a person to approve: each action's skill, its params
    as they resolve (for the first item or batch) and the items it would affect (the first
    ``PLANNED_ITEMS``, and how many); an action whose params or items cannot resolve says why."""
    spec = declared(run.loop.spec.act, Act)
    actions, builtin = resolve(spec, decided)
    if builtin is not None:
        return [{"action_id": builtin, "skill": builtin, "params": {}}]
    return [_planned(action, run, services, spec) for action in actions]


def _planned(action: Action, run: Run, services: Services, spec: Act) -> dict[str, Any]:
    entry: dict[str, Any] = {"action_id": action.action_id, "skill": action.skill_id}
    if action.feature_flag is not None:
        entry["feature_flag"] = action.feature_flag
    try:
        if action.items is None:
            entry["params"] = kept(services.rendered(run, action.params, {}))
        else:
            items, _ = _scope(action, run)
            first = _split(items[: spec.batch_size], spec)[:1] or [{}]
            entry["params"] = kept(services.rendered(run, action.params, first[0]))
            entry["items"], entry["count"] = kept(items[:PLANNED_ITEMS]), len(items)
    except LoopEngineError as exc:
        entry["error"] = str(exc)
    return entry


_NOTED = ("log", "notification", "escalation")
"""What the built-in actions write (a message, an event sent), shown on the act phase's line."""


async def _execute(
    action: Action, run: Run, services: Services, spec: Act, dry_run: bool
) -> dict[str, Any]:
    units, info = _units(action, run, spec)
    outputs: list[Any] = [None] * len(units)
    results: list[Any] = [None] * len(units)
    entry: dict[str, Any] = {"result": None if action.items is None else results}
    if not dry_run:  # set first: a rollback after a failed call reads what the others returned
        run.data.setdefault("act", {})[action.action_id] = entry
    suffix = ":dry" if dry_run else f":{run.act_attempts}"

    async def one(index: int, extra: dict[str, Any]) -> None:
        key = f"{run.execution_id}:act:{action.action_id}:{index}{suffix}"
        called = await services.call(
            run,
            "act",
            action.action_id,
            action.skill_id,
            action.params,
            extra=extra,
            dry_run=dry_run,
            max_retries=spec.max_retries,
            key=key,
            keep_result=True,
        )
        outputs[index], results[index] = called.data, kept(called.data)
        if action.items is None:
            entry["result"] = results[index]
        if action.rollback_skill and not dry_run:
            run.rollbacks.append(
                Rollback(
                    action.action_id, action.rollback_skill, action.rollback_params, extra, key
                )
            )

    if spec.execution_mode is ExecMode.PARALLEL:
        await run_all([partial(one, index, extra) for index, extra in enumerate(units)])
    else:
        for index, extra in enumerate(units):
            await one(index, extra)
    noted = {}
    if not dry_run:
        for output in outputs:
            publish(run.data, output)
        if isinstance(first := outputs[0] if action.items is None else None, dict):
            noted = {key: first[key] for key in _NOTED if isinstance(first.get(key), dict)}
    ran = {"action_id": action.action_id, "calls": len(units), "dry_run": dry_run, **info}
    return {**ran, **noted}


async def _enabled(action: Action, services: Services) -> bool:
    if action.feature_flag is None:
        return True
    flag = action.feature_flag
    return await services.store.read(flags.flag_enabled, flag)


async def _run_actions(
    actions: Sequence[Action], run: Run, services: Services, spec: Act, output: PhaseOutput
) -> None:
    ran: list[dict[str, Any]] = output.data.setdefault("actions", [])
    skipped: list[dict[str, str]] = []
    runnable = []
    for action in actions:
        if await _enabled(action, services):
            runnable.append(action)
        else:
            skipped.append(
                {
                    "action_id": action.action_id,
                    "reason": f"feature flag '{action.feature_flag}' is off",
                }
            )
    if skipped:
        output.data["skipped"] = skipped
    if spec.dry_run_first and not run.dry_run:
        for action in runnable:
            try:
                ran.append(await _execute(action, run, services, spec, dry_run=True))
            except SkillError as exc:
                output.errors.append(
                    f"dry run of '{action.action_id}' failed, nothing changed: {exc}"
                )
                output.stop = Outcome.FAILED
                return
    for action in runnable:
        ran.append(await _execute(action, run, services, spec, dry_run=run.dry_run))
    if not runnable:
        output.stop = Outcome.NO_ACTION


async def run_act(run: Run, services: Services) -> PhaseOutput:
    decision = run.data.get("decision") or {}
    decided = str(decision.get("action"))
    spec = declared(run.loop.spec.act, Act)
    run.act_attempts += 1
    output = PhaseOutput(data={"action": decided, "attempt": run.act_attempts})
    actions, builtin = resolve(spec, decided)
    if builtin is not None:
        called = await services.call(
            run,
            "act",
            builtin,
            builtin,
            NO_PARAMS,
            dry_run=run.dry_run,
            max_retries=spec.max_retries,
            keep_result=True,
        )
        run.data.setdefault("act", {})[builtin] = {"result": kept(called.data)}
        output.data["builtin"] = builtin
        if isinstance(called.data, dict):  # what it logged or sent, for ``show``
            output.data.update({k: v for k, v in called.data.items() if k not in output.data})
        return output
    await _run_actions(actions, run, services, spec, output)
    return output
