"""A trigger firing becomes a job: the loop's overlap policy decides, in the transaction that
writes the job (and the cron slot), so two daemons, or a daemon and ``loopengine trigger``, agree.

Every firing leaves a row: a queued job, or a non-run (``skipped``, ``paused``) with its reason.
The policy itself is a pure function of the caller's (``Arrival.admit``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import sqlalchemy as sa

import loopengine.store._fastpath as fastpath
from loopengine.store import queue, webhooks

__all__ = [
    "Admission",
    "Arrival",
    "Counts",
    "Intake",
    "PlannedSlot",
    "enqueue",
    "enqueue_all",
    "enqueue_body",
    "enqueue_keyed",
    "enqueue_keyed_all",
    "fire_thresholds",
    "plan_slots",
    "record_slots",
]

DUPLICATE = "duplicate"
PAUSED = "the loop is paused"


class Admission(Protocol):
    """What the overlap policy says of a firing: ``start``, ``queue``, ``replace``, or ``skip``
    with why."""

    @property
    def action(self) -> str: ...

    @property
    def reason(self) -> str | None: ...


@dataclass(frozen=True, slots=True)
class Arrival:
    """A firing as the queue takes it: its job (queued status, keyed by the firing's idempotency
    key), the cron slot it fills, and the loop's overlap policy."""

    job: queue.Job
    trigger_id: str
    admit: Callable[[int, int], Admission]
    """The loop's overlap policy, pure: from its running and queued jobs, what to do."""
    slot: float | None = None
    """A cron slot's scheduled instant: recorded uniquely with the job."""

    @property
    def loop_id(self) -> str:
        return self.job.loop_id


@dataclass(frozen=True, slots=True)
class Intake:
    """What became of a firing: ``queued``, ``skipped``, ``paused`` or ``duplicate``."""

    status: str
    job_id: str | None = None
    reason: str | None = None


Cursor = tuple[str, int]
"""A log cursor's name and the position it moves to with what was read up to there."""


def _non_run(
    connection: sa.Connection, arrival: Arrival, status: str, reason: str, now: float
) -> Intake:
    if arrival.slot is not None:
        return _record_slot(connection, arrival, status, reason, now)
    skipped = _skipped(arrival, reason)
    won = queue.insert_job(connection, skipped)
    return Intake(status if won else DUPLICATE, skipped.id if won else None, reason)


def _record_slot(
    connection: sa.Connection,
    arrival: Arrival,
    status: str,
    reason: str | None,
    now: float,
    job_id: str | None = None,
) -> Intake:
    """Record ``arrival``'s cron slot once, run (``queued``, with its job) or not (with why)."""
    won = queue.insert_tick(connection, _tick(arrival, status, reason, now, job_id))
    return Intake(status if won else DUPLICATE, job_id if won else None, reason)


def _tick(
    arrival: Arrival, status: str, reason: str | None, now: float, job_id: str | None = None
) -> queue.Tick:
    assert arrival.slot is not None
    return queue.Tick(
        arrival.loop_id, arrival.trigger_id, arrival.slot, status, reason, job_id, now
    )


Counts = dict[str, tuple[int, int]]
"""Each loop's running and queued jobs, as the overlap policy decides on them, kept across the
firings one transaction queues: read once a loop, then updated as its jobs queue or are replaced."""


def enqueue(
    connection: sa.Connection,
    arrival: Arrival,
    now: float,
    *,
    paused: bool = False,
    counts: Counts | None = None,
) -> Intake:
    """Queue ``arrival``'s job, or record why it does not run (paused, overlap); ``counts``
    shares the overlap policy's counts with the other firings of the transaction."""
    if paused:
        return _non_run(connection, arrival, "paused", PAUSED, now)
    counts = {} if counts is None else counts
    loop_id = arrival.loop_id
    if loop_id not in counts:
        counts[loop_id] = queue.job_counts(connection, loop_id)
    running, queued = counts[loop_id]
    decision = arrival.admit(running, queued)
    if decision.action == "skip":
        return _non_run(connection, arrival, "skipped", decision.reason or "overlap", now)
    job = arrival.job
    if arrival.slot is not None:
        intake = _record_slot(connection, arrival, queue.QUEUED, None, now, job.id)
        if intake.status == DUPLICATE:
            return intake
    if decision.action == "replace":
        queue.replace_jobs(connection, loop_id, now)
        queued = 0
        counts[loop_id] = (running, queued)
    if not queue.insert_job(connection, job):
        return Intake(DUPLICATE)
    counts[loop_id] = (running, queued + 1)
    return Intake(queue.QUEUED, job.id)


def enqueue_all(
    connection: sa.Connection, arrivals: Sequence[Arrival], now: float, cursor: Cursor | None = None
) -> list[Intake]:
    """Queue each arrival (a paused loop's recorded as a non-run) and move ``cursor`` past what
    fired them, atomically: a crash queues all and moves the cursor, or does neither."""
    paused = queue.paused(connection)
    counts: Counts = {}
    done = [
        enqueue(connection, arrival, now, paused=arrival.loop_id in paused, counts=counts)
        for arrival in arrivals
    ]
    if cursor is not None:
        queue.move_cursor(connection, *cursor, now)
    return done


def record_slots(
    connection: sa.Connection, slots: Sequence[tuple[Arrival, str | None]], now: float
) -> list[Intake]:
    """Decide cron slots together: each is queued (``None``) or recorded not run with why (its
    status the reason's text before ``:``). One statement reads what the overlap policies decide
    on, one records every slot, two queue the jobs, however many slots are due together."""
    paused = queue.paused(connection)
    counted = {arrival.loop_id for arrival, why in slots if why is None}
    planned, replacing = plan_slots(
        slots, set(paused), queue.jobs_counts(connection, counted - set(paused)), now
    )
    won = queue.insert_ticks(connection, [slot.tick for slot in planned])
    for loop_id, keys in replacing.items():
        if keys & won:
            queue.replace_jobs(connection, loop_id, now)
    jobs = [slot.job for slot in planned if slot.job is not None and slot.key in won]
    queued = queue.insert_jobs(connection, jobs)
    return [slot.intake(won, queued) for slot in planned]


@dataclass(slots=True)
class PlannedSlot:
    """A cron slot as ``record_slots`` writes it: its row, and the job it queues if it runs."""

    tick: queue.Tick
    job: queue.Job | None = None

    @property
    def key(self) -> tuple[str, str, float]:
        return self.tick.loop_id, self.tick.trigger_id, self.tick.scheduled_for

    def intake(self, won: set[tuple[str, str, float]], queued: set[str]) -> Intake:
        """What became of the slot, given the slots recorded and the jobs queued."""
        if self.key not in won:
            return Intake(DUPLICATE, None, self.tick.reason)
        if self.job is None:
            return Intake(self.tick.status, None, self.tick.reason)
        if self.job.id in queued:
            return Intake(queue.QUEUED, self.job.id)
        return Intake(DUPLICATE)


def plan_slots(
    slots: Sequence[tuple[Arrival, str | None]],
    paused: set[str],
    counts: dict[str, tuple[int, int]],
    now: float,
) -> tuple[list[PlannedSlot], dict[str, set[tuple[str, str, float]]]]:
    """The rows of cron slots decided together, as ``enqueue`` would write them one by one from
    each loop's running and queued ``counts`` (updated as the slots queue jobs), and the slots
    that replace their loop's queued jobs (``on_overlap: replace``), by loop. A job of the batch
    that a later slot replaces is written replaced."""
    planned: list[PlannedSlot] = []
    replacing: dict[str, set[tuple[str, str, float]]] = {}
    batch: dict[str, list[PlannedSlot]] = {}
    for arrival, why in slots:
        loop_id = arrival.loop_id
        if why is not None:
            planned.append(PlannedSlot(_tick(arrival, why.split(":", 1)[0], why, now)))
            continue
        if loop_id in paused:
            planned.append(PlannedSlot(_tick(arrival, "paused", PAUSED, now)))
            continue
        running, queued = counts[loop_id]
        decision = arrival.admit(running, queued)
        if decision.action == "skip":
            reason = decision.reason or "overlap"
            planned.append(PlannedSlot(_tick(arrival, queue.SKIPPED, reason, now)))
            continue
        slot = PlannedSlot(_tick(arrival, queue.QUEUED, None, now, arrival.job.id), arrival.job)
        if decision.action == "replace":
            replacing.setdefault(loop_id, set()).add(slot.key)
            for earlier in batch.pop(loop_id, []):
                assert earlier.job is not None
                earlier.job = dataclasses.replace(
                    earlier.job, status=queue.SKIPPED, reason=queue.REPLACED, finished_at=now
                )
            queued = 0
        counts[loop_id] = (running, queued + 1)
        batch.setdefault(loop_id, []).append(slot)
        planned.append(slot)
    return planned, replacing


def fire_thresholds(
    connection: sa.Connection,
    states: Sequence[queue.TriggerState],
    arrivals: Sequence[Arrival],
    now: float,
    cursor: Cursor | None = None,
) -> list[tuple[Arrival, Intake]]:
    """Save threshold triggers' changed ``states``, queue what they fired and move ``cursor``,
    atomically. A firing whose trigger another daemon already saved as ``firing`` fired there
    (the same episode): it is left out."""
    already = {
        key
        for key in {(a.loop_id, a.trigger_id) for a in arrivals}
        if queue.trigger_state_of(connection, *key) == "firing"
    }
    for state in states:
        queue.save_trigger_state(connection, state)
    fresh = [a for a in arrivals if (a.loop_id, a.trigger_id) not in already]
    return list(zip(fresh, enqueue_all(connection, fresh, now, cursor), strict=True))


def enqueue_keyed(
    connection: sa.Connection, arrival: Arrival, now: float
) -> tuple[Intake, queue.Job | None]:
    """Queue a firing sent by a client under its idempotency key (a paused loop recording a
    non-run), with the job the key names. A key whose earlier firing did not run is taken
    again: a sender retrying after a refusal gets a run, not a ``duplicate`` of nothing. The key
    is looked up only when the insert finds it taken."""
    [keyed] = enqueue_keyed_all(connection, [(arrival, now)])
    return keyed


def enqueue_keyed_all(
    connection: sa.Connection, arrivals: Sequence[tuple[Arrival, float]]
) -> list[tuple[Intake, queue.Job | None]]:
    """``enqueue_keyed`` of each ``(arrival, now)`` in turn, in one transaction (the firings of
    concurrent requests): each is decided and written as its own call would, the paused loops
    and each loop's counts read once."""
    paused = queue.paused(connection)
    together = _together(connection, arrivals, set(paused))
    if together is not None:
        return together
    counts: Counts = {}
    return [
        _keyed(connection, arrival, now, arrival.loop_id in paused, counts)
        for arrival, now in arrivals
    ]


_SAVEPOINT = sa.text("SAVEPOINT together")
_UNDONE = sa.text("ROLLBACK TO SAVEPOINT together")
_RELEASE = sa.text("RELEASE SAVEPOINT together")
"""``_together``'s savepoint, taken on the driver's cursor (SQLAlchemy's costs ~100 µs)."""


def _together(
    connection: sa.Connection, arrivals: Sequence[tuple[Arrival, float]], paused: set[str]
) -> list[tuple[Intake, queue.Job | None]] | None:
    """``enqueue_keyed_all``'s outcome when its jobs and non-runs can be decided beforehand
    and written by one statement a table (every key free, none replacing, no cron slot); None,
    and nothing written, when they cannot."""
    if any(arrival.slot is not None for arrival, _ in arrivals):
        return None
    counts = queue.jobs_counts(connection, {arrival.loop_id for arrival, _ in arrivals} - paused)
    written: list[tuple[queue.Job, Intake]] = []
    for arrival, _ in arrivals:
        job_id = arrival.job.id
        if arrival.loop_id in paused:
            written.append((_skipped(arrival, PAUSED), Intake("paused", job_id, PAUSED)))
            continue
        running, queued = counts[arrival.loop_id]
        decision = arrival.admit(running, queued)
        if decision.action == "replace":
            return None
        if decision.action == "skip":
            reason = decision.reason or "overlap"
            written.append((_skipped(arrival, reason), Intake("skipped", job_id, reason)))
            continue
        counts[arrival.loop_id] = (running, queued + 1)
        written.append((arrival.job, Intake(queue.QUEUED, job_id)))
    fastpath.execute(connection, _SAVEPOINT, {})
    whole = len(queue.insert_jobs(connection, [job for job, _ in written])) == len(written)
    if not whole:
        fastpath.execute(connection, _UNDONE, {})
    fastpath.execute(connection, _RELEASE, {})
    return [(taken, job) for job, taken in written] if whole else None


def _keyed(
    connection: sa.Connection, arrival: Arrival, now: float, paused: bool, counts: Counts
) -> tuple[Intake, queue.Job | None]:
    intake = enqueue(connection, arrival, now, paused=paused, counts=counts)
    if intake.status != DUPLICATE:
        return intake, _written(arrival, intake)
    earlier = queue.job_keyed(connection, arrival.job.idempotency_key)
    if earlier is None or earlier.status != queue.SKIPPED:
        return intake, earlier
    queue.release_key(connection, earlier.id)
    intake = enqueue(connection, arrival, now, paused=paused, counts=counts)
    return intake, _written(arrival, intake)


def _written(arrival: Arrival, intake: Intake) -> queue.Job | None:
    """The job ``enqueue`` wrote for ``arrival`` (queued, or a non-run with why)."""
    if intake.job_id is None:
        return None
    if intake.status == queue.QUEUED:
        return arrival.job
    return _skipped(arrival, intake.reason)


def _skipped(arrival: Arrival, reason: str | None) -> queue.Job:
    """The job ``arrival`` leaves when it does not run, and why."""
    return dataclasses.replace(arrival.job, status=queue.SKIPPED, reason=reason)


def enqueue_body(
    connection: sa.Connection, body: str, arrival: Arrival, now: float, until: float
) -> tuple[Intake, queue.Job | None]:
    """Queue a signed delivery (``enqueue_keyed``) unless another delivery holds its body
    ``body`` (``webhooks.hold_body``): then a ``duplicate`` of that one's job."""
    holder = webhooks.hold_body(connection, body, arrival.job.id, now, until)
    if holder != arrival.job.id:
        return Intake(DUPLICATE), queue.get_job(connection, holder)
    return enqueue_keyed(connection, arrival, now)
