"""The store as the queue: jobs under leases, cron slots, pauses, daemons and log cursors.

Every function runs inside the caller's transaction (``Store.write``/``read``), so a slot and its
job, or a claim and its lease, are written together or not at all. Inserts that may race with
another daemon (a slot, a job's idempotency key) use ``ON CONFLICT DO NOTHING … RETURNING`` and
say whether they won.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Self

import sqlalchemy as sa

from loopengine.store._dialect import dialect_insert
from loopengine.store._record import Record
from loopengine.store._tables import (
    approvals,
    artifacts,
    cursors,
    daemons,
    envelopes,
    events,
    execution_logs,
    executions,
    jobs,
    metrics,
    paused_loops,
    phases,
    ticks,
    trigger_states,
)
from loopengine.store.executions import fail_left_running
from loopengine.store.leases import RUNNING, Lease, check_lease, held
from loopengine.store.records import Artifact
from loopengine.store.signals import Event, TriggerState
from loopengine.store.wakeups import JOB, notify

__all__ = [
    "Daemon",
    "Event",
    "Job",
    "Lease",
    "Point",
    "Served",
    "Slots",
    "Tick",
    "TriggerState",
    "active_daemons",
    "beat",
    "check_lease",
    "claim_job",
    "claim_next",
    "cursor",
    "end_job",
    "events_after",
    "finish_job",
    "get_job",
    "hand_back",
    "insert_job",
    "insert_tick",
    "job_counts",
    "job_keyed",
    "last_tick",
    "last_ticks",
    "latest_metric_id",
    "latest_points",
    "load_trigger_states",
    "metric_points_after",
    "move_cursor",
    "pause",
    "paused",
    "prune_artifacts",
    "prune_loop",
    "queue_depth",
    "release_jobs",
    "release_key",
    "release_owners",
    "renew_leases",
    "replace_jobs",
    "requeue",
    "running_owners",
    "save_daemon",
    "save_trigger_state",
    "stop_daemon",
    "trigger_state_of",
    "unpause",
]

QUEUED, DONE, SKIPPED = "queued", "done", "skipped"


@dataclass(frozen=True, slots=True)
class Job(Record):
    """A trigger firing in the queue: a job (queued, running, done) or a non-run (``skipped``,
    with its reason); ``attempts`` is the fencing token of its latest claim."""

    id: str
    loop_id: str
    trigger: Mapping[str, Any]
    envelope: Mapping[str, Any]
    """The ``JobEnvelope`` it runs, as ``JobEnvelope.as_dict`` shows it (its ``envelopes`` row)."""
    idempotency_key: str
    status: str
    not_before: float
    created_at: float
    reason: str | None = None
    owner: str | None = None
    lease_until: float | None = None
    attempts: int = 0
    cancel_requested: bool = False
    execution_id: str | None = None
    outcome: str | None = None
    finished_at: float | None = None
    started: str | None = None
    """The execution that took its envelope, once one did (read with the job, never written)."""

    @classmethod
    def from_row(cls, row: Mapping[Any, Any]) -> Self:
        """A job from a row of ``_JOBS`` (its columns, its envelope's and ``started``)."""
        kept = (*_ENVELOPE, "idempotency_key")
        envelope = {"job_id": row["id"], **{name: row[name] for name in kept}}
        return super(Job, cls).from_row({**row, "envelope": envelope})

    def row(self) -> dict[str, Any]:
        """The job as the API shows it, its envelope within."""
        shown = super(Job, self).row()
        del shown["started"]
        return shown

    def columns(self) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
        """The job's row and its envelope's (a recorded non-run's too: it holds the key and the
        trigger)."""
        values = self.row()
        envelope = values.pop("envelope")
        key = values.pop("idempotency_key")
        kept = {
            "trigger": values.pop("trigger"),
            "job_id": self.id,
            "trace_id": envelope.get("trace_id", self.id),
            "intent": envelope.get("intent", self.loop_id),
            **{name: envelope.get(name, {}) for name in ("scope", "payload", "constraints")},
            "idempotency_key": key,
            "execution_id": None,
            "created_at": self.created_at,
        }
        return values, kept


_ENVELOPE = ("trace_id", "intent", "scope", "payload", "constraints")
_JOBS = sa.select(
    *jobs.c,
    *(envelopes.c[name] for name in _ENVELOPE),
    envelopes.c.trigger,
    envelopes.c.idempotency_key,
    envelopes.c.execution_id.label("started"),
).join_from(jobs, envelopes, envelopes.c.job_id == jobs.c.id)


@dataclass(frozen=True, slots=True)
class Tick(Record):
    """A cron slot, decided once: run (``queued``, with its job) or not (with why)."""

    loop_id: str
    trigger_id: str
    scheduled_for: float
    status: str
    reason: str | None
    job_id: str | None
    recorded_at: float


@dataclass(frozen=True, slots=True)
class Point(Record):
    """A metric's point, as threshold triggers read it."""

    id: int
    name: str
    value: float
    recorded_at: float


@dataclass(frozen=True, slots=True)
class Slots:
    """A trigger a daemon serves, and its upcoming slots (a cron's; none for other kinds)."""

    id: str
    type: str
    next_fires: tuple[float, ...] = ()


@dataclass(frozen=True, slots=True)
class Served:
    """A loop a daemon serves: its file and its triggers."""

    loop_id: str
    file: str
    triggers: tuple[Slots, ...] = ()


@dataclass(frozen=True, slots=True)
class Daemon(Record):
    """A daemon's row: its heartbeat, and each loop it serves with its triggers' next fires."""

    id: str
    host: str
    pid: int
    started_at: float
    heartbeat_at: float
    stopped_at: float | None = None
    loops: tuple[Served, ...] = ()

    @classmethod
    def from_row(cls, row: Mapping[Any, Any]) -> Self:
        loops = tuple(
            Served(
                loop["loop_id"],
                loop["file"],
                tuple(
                    Slots(t["id"], t["type"], tuple(t.get("next_fires") or ()))
                    for t in loop["triggers"]
                ),
            )
            for loop in row["loops"]
        )
        return super(Daemon, cls).from_row({**row, "loops": loops})

    def row(self) -> dict[str, Any]:
        """The row, its loops as JSON data built by hand (``asdict`` took 50 ms for 1,000)."""
        loops = [
            {
                "loop_id": loop.loop_id,
                "file": loop.file,
                "triggers": [
                    {"id": slots.id, "type": slots.type, "next_fires": list(slots.next_fires)}
                    for slots in loop.triggers
                ],
            }
            for loop in self.loops
        ]
        return {**super(Daemon, self).row(), "loops": loops}


def _insert_ignoring_conflict(
    connection: sa.Connection, table: sa.Table, row: Mapping[str, Any]
) -> bool:
    """Insert ``row`` unless a unique key already holds it; whether this insert won (read from
    ``RETURNING``: PostgreSQL's driver gives no row count for ``ON CONFLICT DO NOTHING``)."""
    inserted = dialect_insert(connection, table).values(**row).on_conflict_do_nothing()
    returned = inserted.returning(*table.primary_key.columns)
    return connection.execute(returned).first() is not None


def insert_job(connection: sa.Connection, job: Job) -> bool:
    """Queue a job (or record a non-run, status ``skipped``) with its envelope; False when its
    idempotency key was already taken, by this or another daemon (nothing is written)."""
    values, envelope = job.columns()
    if not _insert_ignoring_conflict(connection, envelopes, envelope):
        return False
    connection.execute(jobs.insert().values(**values))
    if job.status == QUEUED:
        notify(connection, JOB)
    return True


def get_job(connection: sa.Connection, job_id: str) -> Job | None:
    row = connection.execute(_JOBS.where(jobs.c.id == job_id)).mappings().first()
    return Job.from_row(row) if row else None


def release_key(connection: sa.Connection, job_id: str) -> None:
    """Free the idempotency key of a non-run (its row stays, keyed by its own id), so that the
    firing it refused may be queued when it is sent again."""
    skipped = sa.select(jobs.c.id).where(jobs.c.id == job_id, jobs.c.status == SKIPPED)
    released = envelopes.update().where(envelopes.c.job_id.in_(skipped))
    connection.execute(released.values(idempotency_key=f"released:{job_id}"))


def job_keyed(connection: sa.Connection, idempotency_key: str) -> Job | None:
    """The job (or recorded non-run) queued under ``idempotency_key``, if any."""
    query = _JOBS.where(envelopes.c.idempotency_key == idempotency_key)
    row = connection.execute(query).mappings().first()
    return Job.from_row(row) if row else None


def job_counts(connection: sa.Connection, loop_id: str) -> tuple[int, int]:
    """Running and queued jobs of ``loop_id`` (what the overlap policy decides on)."""
    query = (
        sa.select(jobs.c.status, sa.func.count())
        .where(jobs.c.loop_id == loop_id, jobs.c.status.in_((QUEUED, RUNNING)))
        .group_by(jobs.c.status)
    )
    counts: dict[str, int] = dict(connection.execute(query).all())
    return int(counts.get(RUNNING, 0)), int(counts.get(QUEUED, 0))


def queue_depth(connection: sa.Connection) -> dict[str, int]:
    """Jobs queued and running, over all loops."""
    query = (
        sa.select(jobs.c.status, sa.func.count())
        .where(jobs.c.status.in_((QUEUED, RUNNING)))
        .group_by(jobs.c.status)
    )
    counts: dict[str, int] = dict(connection.execute(query).all())
    return {QUEUED: int(counts.get(QUEUED, 0)), RUNNING: int(counts.get(RUNNING, 0))}


def replace_jobs(connection: sa.Connection, loop_id: str, now: float) -> None:
    """Make way for a newer fire of ``loop_id`` (``on_overlap: replace``): its queued jobs are
    dropped as replaced, and the workers running it are asked to cancel."""
    connection.execute(
        jobs.update()
        .where(jobs.c.loop_id == loop_id, jobs.c.status == QUEUED)
        .values(status=SKIPPED, reason="replaced by a newer fire", finished_at=now)
    )
    connection.execute(
        jobs.update()
        .where(jobs.c.loop_id == loop_id, jobs.c.status == RUNNING)
        .values(cancel_requested=True)
    )


def _stale(now: float, owner: str) -> tuple[sa.ColumnElement[bool], ...]:
    """Running under an expired lease another owner held (its daemon died)."""
    return (jobs.c.status == RUNNING, jobs.c.lease_until < now, jobs.c.owner != owner)


def _due(now: float) -> tuple[sa.ColumnElement[bool], ...]:
    return (jobs.c.status == QUEUED, jobs.c.not_before <= now)


def _oldest(
    connection: sa.Connection,
    where: Iterable[sa.ColumnElement[bool]],
    by: sa.ColumnElement[float] = jobs.c.created_at,
) -> Job | None:
    """The oldest job ``where`` holds (``by`` its age), its row locked; rows another transaction
    locked are skipped on PostgreSQL, so daemons never wait on each other (SQLite's ``BEGIN
    IMMEDIATE`` already serialises claims)."""
    query = _JOBS.where(*where).order_by(by).limit(1).with_for_update(skip_locked=True, of=jobs)
    row = connection.execute(query).mappings().first()
    return Job.from_row(row) if row else None


def claim_job(connection: sa.Connection, job: Job, owner: str, lease_until: float) -> Lease:
    connection.execute(
        jobs.update()
        .where(jobs.c.id == job.id)
        .values(
            status=RUNNING,
            owner=owner,
            lease_until=lease_until,
            attempts=jobs.c.attempts + 1,
        )
    )
    return Lease(job.id, owner, job.attempts + 1)


_LOOKED_AT = 32
"""How many of the oldest due jobs a claim reads before naming the loops it may take."""
_LOOP_LOCKS = 0x6A6F  # the key space of loop locks among PostgreSQL's advisory locks


def claim_next(
    connection: sa.Connection,
    limits: Mapping[str, int],
    owner: str,
    clock: Callable[[], float],
    lease_s: float,
) -> tuple[Job, Lease] | None:
    """Claim for ``lease_s`` a job ``owner`` may run now, of a loop of ``limits``: first a job
    whose daemon died (it holds its loop's slot already, and is taken over), else the oldest
    job queued and due of a loop below its limit of running jobs (``concurrency.max``). Now is
    read from ``clock`` as the transaction runs: a claim that waited out an outage is not
    leased from before it.

    The oldest due jobs are read through the (status, created_at) index, unlocked, and the
    first this daemon may run is locked: a claim costs the same with 20 or 20,000 jobs queued
    and locks no job of another daemon's loops. The loops are named in the query (binding a
    thousand ids cost more than the rest of the claim) only when none of those jobs will do."""
    now = clock()
    running = connection.execute(
        sa.select(jobs.c.id, jobs.c.loop_id, jobs.c.owner, jobs.c.lease_until).where(
            jobs.c.status == RUNNING
        )
    ).all()
    stale = [
        job_id
        for job_id, loop_id, holder, until in running
        if loop_id in limits and holder != owner and until is not None and until < now
    ]
    if stale and (job := _oldest(connection, (*_stale(now, owner), jobs.c.id.in_(stale)))):
        return job, claim_job(connection, job, owner, now + lease_s)
    counts = Counter(loop_id for _, loop_id, _, _ in running)
    free = {loop_id for loop_id, most in limits.items() if counts[loop_id] < most}
    while free:
        job = _oldest_of(connection, now, free)
        if job is None:
            return None
        if _has_room(connection, job.loop_id, limits[job.loop_id]):
            return job, claim_job(connection, job, owner, now + lease_s)
        free.discard(job.loop_id)
    return None


def _oldest_of(connection: sa.Connection, now: float, loop_ids: Collection[str]) -> Job | None:
    """The oldest job queued and due of ``loop_ids``, its row locked."""
    looked_at = connection.execute(
        sa.select(jobs.c.id, jobs.c.loop_id)
        .where(*_due(now))
        .order_by(jobs.c.created_at)
        .limit(_LOOKED_AT)
    ).all()
    wanted = [job_id for job_id, loop_id in looked_at if loop_id in loop_ids]
    found = _oldest(connection, (*_due(now), jobs.c.id.in_(wanted))) if wanted else None
    among = jobs.c.loop_id.in_(list(loop_ids))
    # Ordered by an expression, the jobs of these loops are found through the (loop_id, status)
    # index and sorted: walking the queue in order passed every job of a loop at its limit.
    return found or _oldest(connection, (*_due(now), among), by=jobs.c.created_at + 0)


def _has_room(connection: sa.Connection, loop_id: str, most: int) -> bool:
    """Whether ``loop_id`` runs fewer than ``most`` jobs, counted under a lock of the loop held
    to the claim's commit on PostgreSQL, whose claims run side by side (two daemons each took a
    loop's last slot); one another claim holds is not waited for (no room, for now)."""
    if connection.dialect.name != "postgresql":
        return True
    held = connection.exec_driver_sql(
        "SELECT pg_try_advisory_xact_lock(%(space)s, hashtext(%(loop)s))",
        {"space": _LOOP_LOCKS, "loop": loop_id},
    ).scalar_one()
    if not held:
        return False
    count = sa.select(sa.func.count()).where(jobs.c.loop_id == loop_id, jobs.c.status == RUNNING)
    return int(connection.execute(count).scalar_one()) < most


def renew_leases(
    connection: sa.Connection, owner: str, job_ids: Iterable[str], lease_until: float
) -> tuple[set[str], set[str]]:
    """Extend the leases ``owner`` holds; the ids whose cancellation was requested, and the ids
    whose lease ``owner`` lost (another daemon took the job over after it expired)."""
    wanted = list(job_ids)
    if not wanted:
        return set(), set()
    held = (jobs.c.id.in_(wanted), jobs.c.owner == owner, jobs.c.status == RUNNING)
    connection.execute(jobs.update().where(*held).values(lease_until=lease_until))
    query = sa.select(jobs.c.id, jobs.c.cancel_requested).where(*held)
    rows = connection.execute(query).all()
    lost = set(wanted) - {job_id for job_id, _ in rows}
    return {job_id for job_id, cancel in rows if cancel}, lost


def finish_job(
    connection: sa.Connection,
    lease: Lease,
    *,
    outcome: str,
    execution_id: str | None,
    now: float,
    reason: str | None = None,
) -> bool:
    """Record how the job of ``lease`` ended; False when the lease no longer holds it."""
    result = connection.execute(
        jobs.update()
        .where(*held(lease))
        .values(
            status=DONE,
            outcome=outcome,
            execution_id=execution_id,
            finished_at=now,
            reason=reason,
            lease_until=None,
        )
    )
    return bool(result.rowcount)


def end_job(
    connection: sa.Connection,
    lease: Lease,
    outcome: str,
    execution_id: str | None,
    error: str | None,
    now: float,
) -> bool:
    """Record how the job of ``lease`` ended (``finish_job``) and, when it failed, end with it
    the execution a failure left running, atomically: the two agree. False when the lease no
    longer holds the job (nothing is written)."""
    ended = finish_job(
        connection, lease, outcome=outcome, execution_id=execution_id, now=now, reason=error
    )
    if ended and outcome == "failed":
        fail_left_running(connection, lease.job_id, error or "failed", now)
    return ended


def running_owners(connection: sa.Connection) -> set[str]:
    """The owners holding running jobs (a daemon checks which of them died on its host)."""
    query = sa.select(jobs.c.owner).where(jobs.c.status == RUNNING).distinct()
    return {owner for owner in connection.execute(query).scalars() if owner}


def release_jobs(connection: sa.Connection, owner: str) -> int:
    """End ``owner``'s leases now (graceful shutdown, or a dead daemon found on this host): its
    running jobs are claimed again at once, and their executions resumed."""
    query = (
        jobs.update().where(jobs.c.owner == owner, jobs.c.status == RUNNING).values(lease_until=0.0)
    )
    released = int(connection.execute(query).rowcount)
    if released:
        notify(connection, JOB)
    return released


def release_owners(connection: sa.Connection, owners: Iterable[str]) -> None:
    """``release_jobs`` of each of ``owners`` (the dead daemons found on this host)."""
    for owner in owners:
        release_jobs(connection, owner)


def requeue(connection: sa.Connection, lease: Lease, now: float) -> bool:
    """Give the job of ``lease`` back to the queue (any daemon, this one too, claims it again and
    resumes its execution); False when the lease no longer held it."""
    query = jobs.update().where(*held(lease))
    back = query.values(status=QUEUED, owner=None, lease_until=None, not_before=now)
    if not connection.execute(back).rowcount:
        return False
    notify(connection, JOB)
    return True


def insert_tick(connection: sa.Connection, tick: Tick) -> bool:
    """Record a cron slot (run or not, with its reason); False when it was already recorded."""
    return _insert_ignoring_conflict(connection, ticks, tick.row())


def last_tick(connection: sa.Connection, loop_id: str, trigger_id: str) -> float | None:
    """The latest slot recorded for this trigger: where catch-up starts after downtime."""
    query = sa.select(sa.func.max(ticks.c.scheduled_for)).where(
        ticks.c.loop_id == loop_id, ticks.c.trigger_id == trigger_id
    )
    value = connection.execute(query).scalar()
    return None if value is None else float(value)


def last_ticks(
    connection: sa.Connection, triggers: Iterable[tuple[str, str]]
) -> dict[tuple[str, str], float | None]:
    """``last_tick`` of each ``(loop_id, trigger_id)``, read together."""
    return {key: last_tick(connection, *key) for key in triggers}


def pause(connection: sa.Connection, loop_id: str, now: float) -> bool:
    """Pause ``loop_id``; False when it already was."""
    return _insert_ignoring_conflict(
        connection, paused_loops, {"loop_id": loop_id, "paused_at": now}
    )


def unpause(connection: sa.Connection, loop_id: str) -> bool:
    """Unpause ``loop_id``; False when it was not paused."""
    query = paused_loops.delete().where(paused_loops.c.loop_id == loop_id)
    return bool(connection.execute(query).rowcount)


def paused(connection: sa.Connection) -> dict[str, float]:
    """Paused loops and since when."""
    rows = connection.execute(sa.select(paused_loops.c.loop_id, paused_loops.c.paused_at))
    return {loop_id: float(at) for loop_id, at in rows}


def cursor(connection: sa.Connection, name: str) -> int:
    value = connection.execute(sa.select(cursors.c.position).where(cursors.c.name == name))
    return int(value.scalar() or 0)


def move_cursor(connection: sa.Connection, name: str, position: int, now: float) -> None:
    """Advance cursor ``name`` to ``position`` (never backwards: daemons may race)."""
    if not _insert_ignoring_conflict(
        connection, cursors, {"name": name, "position": position, "updated_at": now}
    ):
        connection.execute(
            cursors.update()
            .where(cursors.c.name == name, cursors.c.position < position)
            .values(position=position, updated_at=now)
        )


def events_after(
    connection: sa.Connection, position: int, limit: int, gaps: Collection[int] = ()
) -> list[Event]:
    """Events appended after id ``position``, in log order, then those of ids in ``gaps`` (ids
    missing below later ones when last read: their transactions may have committed since)."""
    query = sa.select(events).where(events.c.id > position).order_by(events.c.id).limit(limit)
    found = [Event.from_row(row) for row in connection.execute(query).mappings()]
    if gaps:
        filled = sa.select(events).where(events.c.id.in_(list(gaps))).order_by(events.c.id)
        found.extend(Event.from_row(row) for row in connection.execute(filled).mappings())
    return found


def latest_metric_id(connection: sa.Connection) -> int:
    return int(connection.execute(sa.select(sa.func.max(metrics.c.id))).scalar() or 0)


_POINTS = sa.select(*(metrics.c[name] for name in Point.__dataclass_fields__))
"""A metric's points as ``Point`` records."""


def metric_points_after(
    connection: sa.Connection, position: int, names: Iterable[str], limit: int
) -> list[Point]:
    """Points of the metrics ``names`` recorded after id ``position``, in recording order."""
    query = (
        _POINTS.where(metrics.c.id > position, metrics.c.name.in_(list(names)))
        .order_by(metrics.c.id)
        .limit(limit)
    )
    return [Point.from_row(row) for row in connection.execute(query).mappings()]


def latest_points(connection: sa.Connection, names: Iterable[str]) -> dict[str, Point]:
    """The latest point of each metric of ``names`` that has one."""
    found = {}
    for name in names:
        query = (
            _POINTS.where(metrics.c.name == name).order_by(metrics.c.recorded_at.desc()).limit(1)
        )
        row = connection.execute(query).mappings().first()
        if row is not None:
            found[name] = Point.from_row(row)
    return found


def load_trigger_states(connection: sa.Connection) -> dict[tuple[str, str], TriggerState]:
    rows = connection.execute(sa.select(trigger_states)).mappings()
    return {(row["loop_id"], row["trigger_id"]): TriggerState.from_row(row) for row in rows}


def trigger_state_of(connection: sa.Connection, loop_id: str, trigger_id: str) -> str | None:
    """A threshold trigger's saved state, its row locked until the transaction ends (PostgreSQL:
    two daemons deciding on one trigger take turns)."""
    query = (
        sa.select(trigger_states.c.state)
        .where(trigger_states.c.loop_id == loop_id, trigger_states.c.trigger_id == trigger_id)
        .with_for_update()
    )
    return connection.execute(query).scalar()


def _upsert(connection: sa.Connection, table: sa.Table, row: Mapping[str, Any]) -> None:
    """Insert ``row``, or update the row holding its primary key (one statement, no race)."""
    keys = [column.name for column in table.primary_key]
    changes = {name: value for name, value in row.items() if name not in keys}
    statement = dialect_insert(connection, table).values(**row)
    connection.execute(statement.on_conflict_do_update(index_elements=keys, set_=changes))


def save_trigger_state(connection: sa.Connection, state: TriggerState) -> None:
    _upsert(connection, trigger_states, state.row())


def save_daemon(connection: sa.Connection, daemon: Daemon) -> None:
    """Insert or refresh this daemon's row (its heartbeat and its loops' next fires)."""
    _upsert(connection, daemons, daemon.row())


def beat(connection: sa.Connection, daemon_id: str, now: float) -> None:
    """Refresh the heartbeat of this daemon's row, its loops unchanged since ``save_daemon``."""
    connection.execute(daemons.update().where(daemons.c.id == daemon_id).values(heartbeat_at=now))


def stop_daemon(connection: sa.Connection, daemon_id: str, now: float) -> None:
    connection.execute(daemons.update().where(daemons.c.id == daemon_id).values(stopped_at=now))


def hand_back(connection: sa.Connection, daemon_id: str, now: float) -> None:
    """A stopping daemon's last write: its running jobs are claimed again at once
    (``release_jobs``) and its row says it stopped, together."""
    release_jobs(connection, daemon_id)
    stop_daemon(connection, daemon_id, now)


def active_daemons(connection: sa.Connection, since: float) -> list[Daemon]:
    """Daemons not stopped whose heartbeat is newer than ``since``."""
    query = (
        sa.select(daemons)
        .where(daemons.c.stopped_at.is_(None), daemons.c.heartbeat_at >= since)
        .order_by(daemons.c.started_at)
    )
    return [Daemon.from_row(row) for row in connection.execute(query).mappings()]


def prune_loop(connection: sa.Connection, loop_id: str, before: float) -> int:
    """Forget ``loop_id``'s finished executions started before ``before`` (with their phase
    results, envelopes, approvals and logs), its ended jobs and its cron slots, except each
    trigger's latest (where catch-up starts). The number of executions removed."""
    old = (
        sa.select(executions.c.id)
        .where(
            executions.c.loop_id == loop_id,
            executions.c.started_at < before,
            executions.c.status.notin_(("running", "interrupted", "waiting")),
        )
        .scalar_subquery()
    )
    for table in (phases, envelopes, approvals, execution_logs):
        connection.execute(table.delete().where(table.c.execution_id.in_(old)))
    removed = connection.execute(executions.delete().where(executions.c.id.in_(old))).rowcount
    ended = sa.and_(
        jobs.c.loop_id == loop_id, jobs.c.created_at < before, jobs.c.status.in_((DONE, SKIPPED))
    )
    unrun = envelopes.c.job_id.in_(sa.select(jobs.c.id).where(ended))
    connection.execute(envelopes.delete().where(unrun, envelopes.c.execution_id.is_(None)))
    connection.execute(jobs.delete().where(ended))
    latest = (
        sa.select(ticks.c.trigger_id, sa.func.max(ticks.c.scheduled_for))
        .where(ticks.c.loop_id == loop_id)
        .group_by(ticks.c.trigger_id)
    )
    for trigger_id, last in connection.execute(latest).all():
        connection.execute(
            ticks.delete().where(
                ticks.c.loop_id == loop_id,
                ticks.c.trigger_id == trigger_id,
                ticks.c.scheduled_for < min(before, last),
            )
        )
    return int(removed)


def prune_artifacts(connection: sa.Connection, now: float) -> list[Artifact]:
    """Forget artifacts past their retention; the rows removed (their files are the caller's)."""
    columns = [artifacts.c[name] for name in Artifact.__dataclass_fields__]
    gone = artifacts.delete().where(artifacts.c.expires_at < now).returning(*columns)
    return [Artifact.from_row(row) for row in connection.execute(gone).mappings()]
