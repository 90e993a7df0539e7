"""A trigger firing becomes a job: the loop's overlap policy decides, in the transaction that
writes the job (and the cron slot), so two daemons, or a daemon and ``loopengine trigger``, agree.

Every firing leaves a row: a queued job, or a non-run (``skipped``, ``paused``) with its reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa

from loopengine.contract import Loop
from loopengine.daemon._log import DaemonLog
from loopengine.store import new_envelope, queue
from loopengine.triggers import Overlap, on_overlap

__all__ = ["Firing", "Intake", "enqueue", "enqueue_keyed", "log_intake", "record_slot"]


@dataclass(frozen=True, slots=True)
class Firing:
    """One trigger firing: which loop, how (``trigger`` is what ``history`` shows), with what."""

    loop: Loop
    trigger: Mapping[str, Any]
    idempotency_key: str
    payload: Mapping[str, Any] = field(default_factory=dict)
    scope: Mapping[str, Any] | None = None
    constraints: Mapping[str, Any] | None = None
    """The envelope's constraints (``{"dry_run": true}`` asks for a dry run)."""
    not_before: float = 0.0
    slot: float | None = None
    """A cron slot's scheduled instant: recorded uniquely with the job."""


@dataclass(frozen=True, slots=True)
class Intake:
    """What became of a firing: ``queued``, ``skipped``, ``paused`` or ``duplicate``."""

    status: str
    job_id: str | None = None
    reason: str | None = None


def _non_run(
    connection: sa.Connection, firing: Firing, status: str, reason: str, now: float
) -> Intake:
    if firing.slot is not None:
        return record_slot(connection, firing, status, reason, now)
    row = _job_row(firing, now)
    won = queue.insert_job(connection, {**row, "status": queue.SKIPPED, "reason": reason})
    return Intake(status if won else "duplicate", row["id"] if won else None, reason)


def record_slot(
    connection: sa.Connection,
    firing: Firing,
    status: str,
    reason: str | None,
    now: float,
    job_id: str | None = None,
) -> Intake:
    """Record ``firing``'s cron slot once, run (``queued``, with its job) or not (with why)."""
    row = {
        "loop_id": firing.loop.id,
        "trigger_id": str(firing.trigger.get("id") or firing.trigger["type"]),
        "scheduled_for": firing.slot,
        "status": status,
        "reason": reason,
        "job_id": job_id,
        "recorded_at": now,
    }
    won = queue.insert_tick(connection, row)
    return Intake(status if won else "duplicate", job_id if won else None, reason)


def _job_row(firing: Firing, now: float) -> dict[str, Any]:
    """The queued job of ``firing``, with its envelope (keyed by the firing's idempotency key)."""
    envelope = new_envelope(
        firing.loop.id,
        firing.payload,
        scope=firing.scope,
        constraints=firing.constraints,
        idempotency_key=firing.idempotency_key,
    ).as_dict()
    return {
        "id": envelope["job_id"],
        "loop_id": firing.loop.id,
        "trigger": dict(firing.trigger),
        "envelope": dict(envelope),
        "idempotency_key": envelope["idempotency_key"],
        "status": queue.QUEUED,
        "not_before": firing.not_before or now,
        "created_at": now,
    }


def enqueue(
    connection: sa.Connection, firing: Firing, now: float, *, paused: bool = False
) -> Intake:
    """Queue ``firing`` as a job, or record why it does not run (paused, overlap)."""
    if paused:
        return _non_run(connection, firing, "paused", "the loop is paused", now)
    concurrency = firing.loop.spec.concurrency
    running, queued = queue.job_counts(connection, firing.loop.id)
    decision = on_overlap(
        concurrency.on_overlap,
        running=running,
        queued=queued,
        max_running=concurrency.max,
        max_queue=concurrency.max_queue,
    )
    if decision.action is Overlap.SKIP:
        return _non_run(connection, firing, "skipped", decision.reason or "overlap", now)
    row = _job_row(firing, now)
    if firing.slot is not None:
        intake = record_slot(connection, firing, queue.QUEUED, None, now, row["id"])
        if intake.status == "duplicate":
            return intake
    if decision.action is Overlap.REPLACE:
        queue.replace_jobs(connection, firing.loop.id, now)
    if not queue.insert_job(connection, row):
        return Intake("duplicate")
    return Intake(queue.QUEUED, row["id"])


def enqueue_keyed(
    connection: sa.Connection, firing: Firing, now: float
) -> tuple[Intake, dict[str, Any] | None]:
    """Queue a firing sent by a client under its idempotency key (a paused loop recording a
    non-run), with the job the key names. A key whose earlier firing did not run is taken
    again: a sender retrying after a refusal gets a run, not a ``duplicate`` of nothing."""
    earlier = queue.job_keyed(connection, firing.idempotency_key)
    if earlier is not None and earlier["status"] == queue.SKIPPED:
        queue.release_key(connection, earlier["id"])
    paused = firing.loop.id in queue.paused(connection)
    intake = enqueue(connection, firing, now, paused=paused)
    return intake, queue.job_keyed(connection, firing.idempotency_key)


def log_intake(log: DaemonLog, intake: Intake, **fields: Any) -> bool:
    """One log line for what became of a firing: ``fire`` with its job, or ``skip`` with why
    (a duplicate, already recorded by this or another daemon, says nothing). Whether it queued."""
    if intake.status == queue.QUEUED:
        log.line("fire", **fields, job=intake.job_id)
        return True
    if intake.status != "duplicate":
        log.line("skip", intake.reason or intake.status, **fields, status=intake.status)
    return False
