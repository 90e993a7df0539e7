"""What happens to an execution between processes: resume, approve, reject, escalate, recover."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from loopengine.contract import Loop, Outcome
from loopengine.engine._persistence import OWNER, Journal, owner_died
from loopengine.engine._run import Rollback, Run
from loopengine.engine._runner import ORDER, Engine, ExecutionDone
from loopengine.engine._services import NO_PARAMS
from loopengine.errors import LoopEngineError, NotResumable
from loopengine.store import (
    AppendEvent,
    Approval,
    ExecutionRecord,
    ExecutionRow,
    JobEnvelope,
    Usage,
    approvals,
    executions,
    queue,
)

__all__ = ["answer_approval", "escalate_overdue", "recover_interrupted", "resume"]

LoopLoader = Callable[[str], Loop]


def _rollback_template(loop: Loop, action_id: str) -> Any:
    for action in loop.spec.act.actions if loop.spec.act else ():
        if action.action_id == action_id:
            return action.rollback_params
    return NO_PARAMS


async def _load(engine: Engine, execution_id: str) -> tuple[ExecutionRecord, int]:
    """The execution's record and the number of its last committed phase (the next follows)."""
    record, last = await engine.services.store.read(executions.resume_point, execution_id)
    if record is None or record.envelope is None:
        raise NotResumable(f"no execution {execution_id!r} (see `loopengine history`)")
    return record, last


def _trigger_of(row: ExecutionRow) -> dict[str, Any]:
    """How the execution was started (its ``trigger``), from its row."""
    return {**row.started_by, "fired_at": row.started_at}


def _rebuild(record: ExecutionRecord, envelope: JobEnvelope, loop: Loop) -> Run:
    row, state = record.execution, record.execution.context
    run = Run(
        execution_id=row.id,
        loop=loop,
        envelope=envelope,
        data={**state["data"], "job": envelope.as_dict(), "trigger": _trigger_of(row)},
        started_at=row.started_at,
        trigger_type=row.trigger_type,
        dry_run=row.dry_run,
    )
    run.phases = list(record.phases)
    run.usage = Usage(**row.usage)
    run.rollbacks = [
        Rollback(
            r["action_id"],
            r["skill"],
            _rollback_template(loop, r["action_id"]),
            r["extra"],
            r["key"],
        )
        for r in state.get("rollbacks", ())
    ]
    run.act_attempts = state.get("act_attempts", 0)
    run.samples = state.get("samples", 0)
    run.last_adjusted_at = state.get("last_adjusted_at")
    return run


async def _restore(
    engine: Engine,
    load_loop: LoopLoader,
    execution_id: str,
    *,
    to_run: bool = True,
    lease: queue.Lease | None = None,
) -> tuple[Run, Journal, ExecutionRow]:
    """The execution as it was at its last commit, with its loop as the file now holds it;
    ``to_run`` refuses a loop whose content changed since the execution started (what would run
    is not what was decided), naming the parts that differ."""
    record, last = await _load(engine, execution_id)
    row = record.execution
    loop = load_loop(row.loop_file)
    if loop.id != row.loop_id:
        raise NotResumable(f"{row.loop_file} now holds loop '{loop.id}', not '{row.loop_id}'")
    assert record.envelope is not None
    recorder = engine.recorder(loop, resumed=True, lease=lease)
    recorder.resume_at(last)
    if "data" not in row.context:
        return await _start_over(engine, loop, row, record.envelope, recorder), recorder, row
    changed = loop.changed_since(row.context.get("loop_parts", {}))
    if to_run and row.loop_version != loop.version and changed:
        raise NotResumable(
            f"{row.loop_file} changed since execution {row.id} started ({', '.join(changed)} "
            "differ): restore that version to continue it, or start a new run"
        )
    return _rebuild(record, record.envelope, loop), recorder, row


async def _start_over(
    engine: Engine, loop: Loop, row: ExecutionRow, envelope: JobEnvelope, recorder: Journal
) -> Run:
    """The run of an execution whose process died before its first commit: nothing of it was
    kept, so it starts from detect, under its own id, with the loop the file holds now."""
    run = engine.new_run(loop, envelope, _trigger_of(row), row.dry_run)
    run.execution_id, run.started_at = row.id, row.started_at
    engine.prelude(run, *await recorder.starting_point(loop.id))
    if row.loop_version != loop.version:
        await engine.services.store.write(
            executions.update_execution, row.id, loop_version=loop.version
        )
    return run


def _next_index(run: Run) -> int:
    done = {record.phase for record in run.phases}
    for index, (phase, _) in enumerate(ORDER):
        if phase.value not in done:
            return index
    return len(ORDER)


async def resume(
    engine: Engine, load_loop: LoopLoader, execution_id: str, *, lease: queue.Lease | None = None
) -> ExecutionDone:
    """Continue an interrupted execution from the phase after its last committed one. It is
    claimed first (interrupted → running, atomically), then restored, so what runs is what the
    claim found; a restore that refuses gives it back. With a job's ``lease``, it stops
    (``LeaseLost``) once another daemon took the job."""
    store = engine.services.store
    if not await store.write(executions.claim_execution, execution_id, "interrupted", OWNER):
        row = await store.read(executions.get_execution, execution_id)
        if row is None:
            raise NotResumable(f"no execution {execution_id!r} (see `loopengine history`)")
        if row.status == "running":
            raise NotResumable(f"execution {execution_id} is being run by another process")
        raise NotResumable(
            f"execution {execution_id} is {row.outcome or row.status}, not interrupted"
        )
    try:
        run, recorder, _ = await _restore(engine, load_loop, execution_id, lease=lease)
    except LoopEngineError:
        await store.write(executions.update_execution, execution_id, status="interrupted")
        raise
    return await engine.drive(run, recorder, _next_index(run))


async def _pending(engine: Engine, execution_id: str) -> Approval:
    store = engine.services.store
    gate = await store.read(approvals.get_approval, execution_id)
    if gate is None:
        if await store.read(executions.get_execution, execution_id) is None:
            raise NotResumable(f"no execution {execution_id!r} (see `loopengine history`)")
        raise NotResumable(f"execution {execution_id} has no approval gate")
    if gate.status != "pending":
        raise NotResumable(f"execution {execution_id} was already {gate.status}")
    return gate


async def answer_approval(
    engine: Engine, load_loop: LoopLoader, execution_id: str, approve: bool, note: str | None
) -> ExecutionDone:
    """Approve (the gated action runs now) or reject (the execution ends as ``rejected``)."""
    gate = await _pending(engine, execution_id)
    now = engine.services.clock()
    if now > gate.deadline:
        await escalate_overdue(engine, load_loop)
        raise NotResumable(f"the approval window of {execution_id} closed: it was escalated")
    run, recorder, _ = await _restore(engine, load_loop, execution_id, to_run=approve)
    store = engine.services.store
    status = "approved" if approve else "rejected"
    if not await store.write(approvals.decide_approval, execution_id, status, now, note):
        raise NotResumable(f"execution {execution_id} was answered meanwhile")
    run.data["approval"] = {"status": status, "note": note}
    if approve:
        await store.write(
            executions.update_execution, execution_id, status="running", outcome=None, owner=OWNER
        )
        return await engine.drive(run, recorder, _next_index(run))
    skipped = [engine.skipped(run, phase, "rejected") for phase, _ in ORDER[_next_index(run) :]]
    return await engine.finish(run, recorder, Outcome.REJECTED, skipped, note)


async def _escalate(engine: Engine, load_loop: LoopLoader, gate: Approval, now: float) -> bool:
    store = engine.services.store
    execution_id = gate.execution_id
    if not await store.write(approvals.decide_approval, execution_id, "escalated", now, None):
        return False
    run, recorder, _ = await _restore(engine, load_loop, execution_id, to_run=False)
    decide = run.loop.spec.decide
    target = decide.human_approval.escalation_target if decide and decide.human_approval else None
    event = {"execution_id": execution_id, "loop_id": run.loop.id, "action": gate.action}
    name = target or "loop.escalated"
    emit = AppendEvent(name, run.loop.id, event, now, execution_id)
    skipped = [engine.skipped(run, phase, "escalated") for phase, _ in ORDER[_next_index(run) :]]
    reason = f"no answer within the approval window; escalated to {name}"
    await engine.finish(run, recorder, Outcome.ESCALATED, skipped, reason, [emit])
    return True


async def escalate_overdue(engine: Engine, load_loop: LoopLoader) -> list[str]:
    """End every approval wait past its deadline as ``escalated`` and emit the escalation event."""
    store = engine.services.store
    now = engine.services.clock()
    overdue = [g for g in await store.read(approvals.pending_approvals) if g.deadline < now]
    return [g.execution_id for g in overdue if await _escalate(engine, load_loop, g, now)]


async def recover_interrupted(engine: Engine) -> list[str]:
    """Mark executions whose process died mid-run (on this host) as ``interrupted``."""
    store = engine.services.store
    rows = await store.read(executions.running_executions)
    dead = [(row.id, row.owner) for row in rows if row.owner and owner_died(row.owner)]
    return await store.write(executions.mark_all_interrupted, dead, time.time()) if dead else []
