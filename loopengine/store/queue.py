"""The store as the queue: jobs under leases, cron slots, pauses, daemons and log cursors.

Every function runs inside the caller's transaction (``Store.write``/``read``), so a slot and its
job, or a claim and its lease, are written together or not at all. Inserts that may race with
another daemon (a slot, a job's idempotency key) use ``ON CONFLICT DO NOTHING … RETURNING`` and
say whether they won.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Self

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

import loopengine.store._fastpath as fastpath
from loopengine.store._database import transaction_set
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
    job_history,
    jobs,
    metrics,
    paused_loops,
    phases,
    ticks,
    trigger_states,
)
from loopengine.store.executions import StartingPoint, fail_left_running, starting_points
from loopengine.store.leases import HELD, RUNNING, Lease, check_lease, forget_lease, held
from loopengine.store.records import Artifact
from loopengine.store.signals import Event, TriggerState
from loopengine.store.wakeups import JOB, notify

__all__ = [
    "Claimed",
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
    "claim_jobs",
    "claim_next",
    "claim_to_start",
    "cursor",
    "end_job",
    "events_after",
    "expired_artifacts",
    "finish_job",
    "finishing_job",
    "forget_artifacts",
    "get_job",
    "hand_back",
    "insert_job",
    "insert_jobs",
    "insert_tick",
    "insert_ticks",
    "job_counts",
    "job_keyed",
    "jobs_counts",
    "last_tick",
    "last_ticks",
    "latest_metric_id",
    "latest_points",
    "load_trigger_states",
    "metric_points_after",
    "move_cursor",
    "pause",
    "paused",
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
    "unclaim",
    "unpause",
]

QUEUED, DONE, SKIPPED = "queued", "done", "skipped"
REPLACED = "replaced by a newer fire"
"""Why a queued job did not run: a newer fire took its place (``on_overlap: replace``)."""


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


Claimed = tuple[Job, Lease, StartingPoint | None]
"""A job claimed, its lease, and what its execution starts from (None when it resumes one)."""

_ENVELOPE = ("trace_id", "intent", "scope", "payload", "constraints")


def _with_envelopes(table: sa.Table) -> sa.Select[Any]:
    """Jobs of ``table`` (the queue or its history), each with its envelope."""
    return sa.select(
        *table.c,
        *(envelopes.c[name] for name in _ENVELOPE),
        envelopes.c.trigger,
        envelopes.c.idempotency_key,
        envelopes.c.execution_id.label("started"),
    ).join_from(table, envelopes, envelopes.c.job_id == table.c.id)


_JOBS = _with_envelopes(jobs)
_ENDED_JOBS = _with_envelopes(job_history)
_BOTH = (jobs, job_history)
"""The queue, then the history its ended jobs are swept to (``store.history``)."""


def _any_job(
    connection: sa.Connection, where: Callable[[sa.Table], sa.ColumnElement[bool]]
) -> Job | None:
    """The job ``where`` picks (given the table, queue or history), wherever it is: read in one
    statement, so a job swept to history meanwhile is found in one of the two."""
    query = sa.union_all(_JOBS.where(where(jobs)), _ENDED_JOBS.where(where(job_history)))
    row = connection.execute(query).mappings().first()
    return Job.from_row(row) if row else None


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
    """Insert ``row`` unless a unique key already holds it; whether this insert won."""
    return bool(fastpath.insert_new(connection, table, [row]))


def insert_job(connection: sa.Connection, job: Job) -> bool:
    """Queue a job (or record a non-run, status ``skipped``) with its envelope; False when its
    idempotency key was already taken, by this or another daemon (nothing is written)."""
    return bool(insert_jobs(connection, [job]))


_INSERT_JOB = jobs.insert()


def insert_jobs(connection: sa.Connection, batch: Sequence[Job]) -> set[str]:
    """``insert_job`` for each of ``batch``: its envelopes by ``fastpath.insert_new``, its jobs
    by one ``executemany``; the ids of the jobs queued (the others' idempotency keys were
    already taken)."""
    if not batch:
        return set()
    columns = [job.columns() for job in batch]
    inserted = fastpath.insert_new(connection, envelopes, [envelope for _, envelope in columns])
    won = {job_id for (job_id,) in inserted}
    queued = [values for values, _ in columns if values["id"] in won]
    fastpath.execute_many(connection, _INSERT_JOB, queued)
    if any(values["status"] == QUEUED for values in queued):
        notify(connection, JOB)
    return won


def get_job(connection: sa.Connection, job_id: str) -> Job | None:
    """The job ``job_id``, in the queue or its history."""
    return _any_job(connection, lambda table: table.c.id == job_id)


def release_key(connection: sa.Connection, job_id: str) -> None:
    """Free the idempotency key of a non-run (its row stays, keyed by its own id), so that the
    firing it refused may be queued when it is sent again."""
    skipped = sa.union_all(
        *(sa.select(t.c.id).where(t.c.id == job_id, t.c.status == SKIPPED) for t in _BOTH)
    )
    released = envelopes.update().where(envelopes.c.job_id.in_(skipped))
    connection.execute(released.values(idempotency_key=f"released:{job_id}"))


def job_keyed(connection: sa.Connection, idempotency_key: str) -> Job | None:
    """The job (or recorded non-run) queued under ``idempotency_key``, if any, in the queue or
    its history."""
    return _any_job(connection, lambda _: envelopes.c.idempotency_key == idempotency_key)


def job_counts(connection: sa.Connection, loop_id: str) -> tuple[int, int]:
    """Running and queued jobs of ``loop_id`` (what the overlap policy decides on)."""
    return jobs_counts(connection, [loop_id])[loop_id]


_JOB_COUNTS = (
    sa.select(jobs.c.loop_id, jobs.c.status, sa.func.count())
    .where(
        jobs.c.loop_id.in_(sa.bindparam("loop_ids", expanding=True)),
        jobs.c.status.in_((QUEUED, RUNNING)),
    )
    .group_by(jobs.c.loop_id, jobs.c.status)
)


_JOB_COUNTS_OF_ONE = (
    sa.select(jobs.c.status, sa.func.count().label("count"))
    .where(
        jobs.c.loop_id == sa.bindparam("loop_id"),
        sa.or_(jobs.c.status == QUEUED, jobs.c.status == RUNNING),
    )
    .group_by(jobs.c.status)
)


def jobs_counts(connection: sa.Connection, loop_ids: Collection[str]) -> dict[str, tuple[int, int]]:
    """``job_counts`` of each of ``loop_ids``, read by one statement (on the fast path for one
    loop, what a trigger or a webhook asks)."""
    counts = {loop_id: {RUNNING: 0, QUEUED: 0} for loop_id in loop_ids}
    if len(counts) == 1:
        [(loop_id, counted)] = counts.items()
        bound = {"loop_id": loop_id}
        for row in fastpath.fetch_all(connection, _JOB_COUNTS_OF_ONE, bound):
            counted[row["status"]] = int(row["count"])
    elif counts:
        for loop_id, status, count in connection.execute(_JOB_COUNTS, {"loop_ids": [*counts]}):
            counts[loop_id][status] = int(count)
    return {loop_id: (c[RUNNING], c[QUEUED]) for loop_id, c in counts.items()}


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
        .values(status=SKIPPED, reason=REPLACED, finished_at=now)
    )
    connection.execute(
        jobs.update()
        .where(jobs.c.loop_id == loop_id, jobs.c.status == RUNNING)
        .values(cancel_requested=True)
    )


def _stale(now: float, owner: str) -> tuple[sa.ColumnElement[bool], ...]:
    """Running under an expired lease another owner held (its daemon died)."""
    return (jobs.c.status == RUNNING, jobs.c.lease_until < now, jobs.c.owner != owner)


def _oldest(connection: sa.Connection, where: Iterable[sa.ColumnElement[bool]]) -> list[Job]:
    """The oldest job ``where`` holds, its row locked (skipped when another transaction holds
    it), if any."""
    query = _JOBS.where(*where).order_by(jobs.c.created_at).limit(1)
    return _locked(connection, query.with_for_update(skip_locked=True, of=jobs), {})


def claim_job(connection: sa.Connection, job: Job, owner: str, lease_until: float) -> Lease:
    return _claim(connection, [job], owner, lease_until)[0][1]


_LEASE = (
    jobs.update()
    .where(jobs.c.id.in_(sa.bindparam("ids", expanding=True)))
    .values(
        status=RUNNING,
        owner=sa.bindparam("to"),
        lease_until=sa.bindparam("until"),
        attempts=jobs.c.attempts + 1,
    )
)


def _claim(
    connection: sa.Connection, found: Sequence[Job], owner: str, lease_until: float
) -> list[tuple[Job, Lease]]:
    """Lease ``found`` to ``owner``, in one statement."""
    ids = [job.id for job in found]
    connection.execute(_LEASE, {"ids": ids, "to": owner, "until": lease_until})
    return [(job, Lease(job.id, owner, job.attempts + 1)) for job in found]


_IDS = postgresql.ARRAY(sa.String)
_LOOKED_AT = 32
"""How many of the oldest due jobs a claim reads at least before naming the loops it may take."""
_SEEN = (jobs.c.id, jobs.c.loop_id, jobs.c.status, jobs.c.owner, jobs.c.lease_until)
_WRITTEN_QUEUED: sa.ColumnElement[str] = sa.literal_column(f"'{QUEUED}'")
_WRITTEN_RUNNING: sa.ColumnElement[str] = sa.literal_column(f"'{RUNNING}'")
"""The statuses a claim reads written into its SQL, not bound: its generic plans
(``_CLAIM_SETTINGS``) see which status they read."""
_DUE = (jobs.c.status == _WRITTEN_QUEUED, jobs.c.not_before <= sa.bindparam("now"))
_OLDEST_DUE = (
    sa.select(*_SEEN, jobs.c.created_at)
    .where(*_DUE)
    .order_by(jobs.c.created_at)
    .limit(sa.bindparam("looked_at"))
)
_RUNNING_AND_DUE = sa.union_all(
    sa.select(*_SEEN, jobs.c.created_at).where(jobs.c.status == _WRITTEN_RUNNING),
    sa.select(_OLDEST_DUE.subquery()),
)
"""The running jobs and the oldest due, in one round trip (each half through its index: an
``OR`` of the two made PostgreSQL sort every queued row)."""
_CLAIM_SETTINGS = {"enable_seqscan": "off", "plan_cache_mode": "force_generic_plan"}
"""PostgreSQL's planner settings for a claim, whose statements (run nowhere else) read a few rows
through indexes whatever the statistics say (older than the backlog, after a burst): plans made
once a connection, for any ``LIMIT`` (a custom plan for 32 sorted every queued job: 17 ms behind
20,000, against 0.1; and planning the lease took 0.43 ms of its 0.72), and no scan of the table
for the jobs a lease names (0.7-9 ms behind a few thousand, against 0.1)."""
_SET_FOR_CLAIM: list[fastpath.Bound] = [
    (sa.text(f"SET LOCAL {name} = {value}"), {}) for name, value in _CLAIM_SETTINGS.items()
]
_RESET_AFTER_CLAIM: list[fastpath.Bound] = [
    (sa.text(f"SET LOCAL {name} TO DEFAULT"), {}) for name in _CLAIM_SETTINGS
]
"""Back to the values the session started with (its connection's options, its role's and
database's settings)."""


_STILL_DUE = ((jobs.c.status + "") == QUEUED, jobs.c.not_before <= sa.bindparam("now"))
"""``_DUE`` in a form no index serves, for jobs found by id: a plan reading the queue's
(status, created_at) index for them read every queued job (a fresh table's statistics made
PostgreSQL expect a few), 14 ms a claim behind 20,000 (``tests/store/test_claim_plan.py``)."""


def _lease_oldest(named: sa.ColumnElement[bool]) -> sa.Update:
    """Lock the jobs ``named`` that are still queued (``FOR UPDATE SKIP LOCKED``, a ``LIMIT``)
    and lease them, in one statement."""
    return (
        jobs.update()
        .where(
            jobs.c.id.in_(
                sa.select(jobs.c.id)
                .where(*_STILL_DUE, named)
                .order_by(jobs.c.created_at)
                .limit(sa.bindparam("most"))
                .with_for_update(skip_locked=True)
            ),
        )
        .values(
            status=RUNNING,
            owner=sa.bindparam("to"),
            lease_until=sa.bindparam("until"),
            attempts=jobs.c.attempts + 1,
        )
    )


_LEASE_OLDEST_RETURNING = {
    "postgresql": _lease_oldest(jobs.c.id == sa.any_(sa.bindparam("ids", type_=_IDS)))
    .where(jobs.c.id == envelopes.c.job_id)
    .returning(*_JOBS.selected_columns),
    "sqlite": _lease_oldest(jobs.c.id.in_(sa.bindparam("ids", expanding=True))).returning(
        jobs.c.id
    ),
}
"""The jobs leased, with their envelopes, on PostgreSQL (an array of ids, so the statement runs
through ``_fastpath``; psycopg decodes its JSON); their ids on SQLite, whose ``RETURNING`` reads
no other table (the jobs are read in a second statement, in process)."""
_JOBS_NAMED = _JOBS.where(jobs.c.id.in_(sa.bindparam("ids", expanding=True)))
# SQLite's: ordered by an expression, the jobs of these loops are found through the index of
# each loop's jobs and sorted (walking the queue in order passed every job of a loop at its
# limit); their envelopes are read for those taken only, not for every due job of those loops.
_SQLITE_OLDEST_OF_LOOPS = _JOBS.where(
    jobs.c.id.in_(
        sa.select(jobs.c.id)
        .where(*_DUE, jobs.c.loop_id.in_(sa.bindparam("loops", expanding=True)))
        .order_by(jobs.c.created_at + 0)
        .limit(sa.bindparam("most"))
    )
).order_by(jobs.c.created_at)
_OLDEST_OF_LOOPS = sa.text(
    "SELECT due.id FROM unnest(CAST(:loops AS text[])) AS named(loop_id),"
    " LATERAL (SELECT id, created_at FROM jobs WHERE jobs.loop_id = named.loop_id"
    f" AND status = '{QUEUED}' AND not_before <= :now"
    " ORDER BY loop_id, status, created_at LIMIT :looked_at) AS due"
    " ORDER BY due.created_at LIMIT :looked_at"
)
"""On PostgreSQL, the oldest due jobs of the loops named, unlocked: the first of each loop's, in
the order of its index, so a claim costs the same behind 200 or 10,000 jobs a loop (ordered by
``created_at`` alone, a generic plan walked the queue's status index past the other loops')."""
_LOCK_NAMED = (
    _JOBS.where(jobs.c.id == sa.any_(sa.bindparam("ids", type_=_IDS)), *_STILL_DUE)
    .order_by(jobs.c.created_at)
    .limit(sa.bindparam("most"))
    .with_for_update(skip_locked=True, of=jobs)
)
"""The first ``most`` of the jobs named still queued and due, locked: those another claim holds
are passed for the next (``_OLDEST_OF_LOOPS`` reads more than ``most``)."""
_LOOP_LOCKS = 0x6A6F  # the key space of loop locks among PostgreSQL's advisory locks
_LOCKS_HELD = "queue.loop_locks"
"""The keys of the loop locks the transaction under way holds (``transaction_set``)."""
_BELOW = -(2**31) - 1
# Taken in the order of their keys, waiting, above the highest key the transaction holds (two
# claims each waiting for the other's lock cannot be); below it only when free. Volatile
# functions are evaluated after the ORDER BY sort.
_LOCK_LOOPS = sa.text(
    "SELECT loop_id, hashtext(loop_id) AS key,"
    " CASE WHEN hashtext(loop_id) > :above"
    " THEN pg_advisory_xact_lock(:space, hashtext(loop_id))::text = ''"
    " ELSE pg_try_advisory_xact_lock(:space, hashtext(loop_id)) END AS held"
    " FROM unnest(CAST(:loops AS text[])) AS loop_id ORDER BY 2"
)
_RUNNING_OF_LOOPS = sa.text(
    "SELECT loop_id, count(*) AS running FROM jobs"
    " WHERE status = 'running' AND loop_id = ANY(CAST(:loops AS text[])) GROUP BY loop_id"
)


def claim_next(
    connection: sa.Connection,
    limits: Mapping[str, int],
    owner: str,
    clock: Callable[[], float],
    lease_s: float,
) -> tuple[Job, Lease] | None:
    """``claim_jobs`` of one job: the job and its lease, or None."""
    claimed = claim_jobs(connection, limits, owner, clock, lease_s, 1)
    return claimed[0] if claimed else None


def claim_jobs(
    connection: sa.Connection,
    limits: Mapping[str, int],
    owner: str,
    clock: Callable[[], float],
    lease_s: float,
    most: int,
) -> list[tuple[Job, Lease]]:
    """Claim for ``lease_s`` up to ``most`` jobs ``owner`` may run now, of loops of ``limits``,
    oldest first: a job whose daemon died (it holds its loop's slot already, and is taken over;
    alone), else the oldest jobs queued and due of loops below their limit of running jobs
    (``concurrency.max``), the room of the loops of the oldest counted together. Now is
    read from ``clock`` as the transaction runs: a claim that waited out an outage is not
    leased from before it.

    The oldest due jobs are read through the (status, created_at) index, unlocked, and those
    this daemon may run are locked (``FOR UPDATE SKIP LOCKED``, a ``LIMIT``) and leased in one
    statement: a claim costs the same with 20 or 20,000 jobs queued, takes a batch for the
    price of one, and locks no job of another daemon's loops. The loops are named in the query
    (binding a thousand ids cost more than the rest of the claim) only when none of those jobs
    will do and more are queued: an idle daemon's claim binds none. On PostgreSQL it runs
    under planner settings of its own (``_CLAIM_SETTINGS``), set with its first read."""
    claimed, last = _claim_before_last(connection, limits, owner, clock, lease_s, most)
    if last:
        fastpath.execute_all(connection, last)
    return claimed


def claim_to_start(
    connection: sa.Connection,
    limits: Mapping[str, int],
    owner: str,
    clock: Callable[[], float],
    lease_s: float,
    most: int,
) -> list[Claimed]:
    """``claim_jobs``, with what each job's execution starts from (its loop's
    ``StartingPoint``, read in the claim's last round trip), so that starting it reads nothing;
    None for a job an execution took already (it resumes)."""
    claimed, last = _claim_before_last(connection, limits, owner, clock, lease_s, most)
    fresh = dict.fromkeys(job.loop_id for job, _ in claimed if job.started is None)
    starts = starting_points(connection, list(fresh), last)
    return [(job, lease, None if job.started else starts[job.loop_id]) for job, lease in claimed]


def _claim_before_last(
    connection: sa.Connection,
    limits: Mapping[str, int],
    owner: str,
    clock: Callable[[], float],
    lease_s: float,
    most: int,
) -> tuple[list[tuple[Job, Lease]], Sequence[fastpath.Bound]]:
    """``claim_jobs``'s jobs, and the statements left to run in its last round trip (on
    PostgreSQL, the reset of its planner settings)."""
    now = clock()
    bound = {"now": now, "looked_at": _looked_at(most)}
    if connection.dialect.name != "postgresql":
        read = fastpath.fetch_all(connection, _RUNNING_AND_DUE, bound)
        return _claim_read(connection, read, now, limits, owner, lease_s, most), ()
    _, (read,) = fastpath.execute_all(connection, _SET_FOR_CLAIM, [(_RUNNING_AND_DUE, bound)])
    return _claim_read(connection, read, now, limits, owner, lease_s, most), _RESET_AFTER_CLAIM


def _claim_read(
    connection: sa.Connection,
    read: Sequence[Mapping[str, Any]],
    now: float,
    limits: Mapping[str, int],
    owner: str,
    lease_s: float,
    most: int,
) -> list[tuple[Job, Lease]]:
    """``claim_jobs``, once the running jobs and the oldest due were ``read``."""
    running = [row for row in read if row["status"] == RUNNING]
    stale = [row["id"] for row in running if _orphaned(row, limits, owner, now)]
    if stale and (orphan := _oldest(connection, (*_stale(now, owner), jobs.c.id.in_(stale)))):
        return _claim(connection, orphan, owner, now + lease_s)
    counts = Counter(row["loop_id"] for row in running)
    free = {loop_id for loop_id, limit in limits.items() if counts[loop_id] < limit}
    due = sorted(
        (row for row in read if row["status"] == QUEUED), key=lambda row: row["created_at"]
    )
    looked_at: Sequence[Any] | None = due
    seen_all = len(due) < _looked_at(most)
    claimed: list[tuple[Job, Lease]] = []
    read_again = False
    """Jobs chosen were gone as they were leased (taken by the claim whose loop lock this one
    waited for): the queue is read again, once."""
    while free and len(claimed) < most:
        wanted = most - len(claimed)
        if looked_at is None:
            bound = {"now": now, "looked_at": _looked_at(wanted)}
            looked_at = fastpath.fetch_all(connection, _OLDEST_DUE, bound)
            seen_all = len(looked_at) < _looked_at(wanted)
        candidates = [row for row in looked_at if row["loop_id"] in free]
        looked_at = None
        first = dict.fromkeys(row["loop_id"] for row in candidates[:wanted])
        room = _rooms(connection, first, limits, counts) if first else {}
        for loop_id, left in room.items():
            counts[loop_id] = limits[loop_id] - left
        free.difference_update(loop_id for loop_id, left in room.items() if left <= 0)
        chosen = _chosen(candidates, room, wanted)
        named = chosen
        if connection.dialect.name == "postgresql":
            named = [*chosen, *_spare(candidates, room, wanted, chosen)]
        leasing = {"now": now, "most": wanted, "to": owner, "until": now + lease_s, "ids": named}
        taken = _leased(connection, leasing, owner) if chosen else []
        if not taken and free and not seen_all:
            taken = _claim_among(connection, now, free, wanted, limits, counts, owner, lease_s)
        for job, _ in taken:
            counts[job.loop_id] += 1
            if counts[job.loop_id] >= limits[job.loop_id]:
                free.discard(job.loop_id)
        claimed.extend(taken)
        if len(taken) < len(chosen) and not read_again:
            read_again = True
            continue
        if not taken:
            break
        uncounted = [row for row in candidates if row["loop_id"] not in room]
        if uncounted:
            looked_at = uncounted
        elif seen_all:
            break
    return claimed


def _looked_at(most: int) -> int:
    return max(_LOOKED_AT, 2 * most)


def _orphaned(row: Mapping[str, Any], limits: Mapping[str, int], owner: str, now: float) -> bool:
    """Whether ``row``, a running job of a loop of ``limits``, is another owner's whose lease
    expired (its daemon died)."""
    until = row["lease_until"]
    return row["loop_id"] in limits and row["owner"] != owner and until is not None and until < now


def _chosen(
    candidates: Iterable[Mapping[str, Any]], room: Mapping[str, int], most: int
) -> list[str]:
    """The ids of the first ``most`` of ``candidates`` their loops' ``room`` lets run."""
    left = dict(room)
    chosen: list[str] = []
    for row in candidates:
        if len(chosen) == most:
            break
        if left.get(row["loop_id"], 0) > 0:
            left[row["loop_id"]] -= 1
            chosen.append(row["id"])
    return chosen


def _spare(
    candidates: Iterable[Mapping[str, Any]], room: Mapping[str, int], most: int, chosen: list[str]
) -> list[str]:
    """The other ``candidates`` the lease may take where chosen ones are gone (another daemon's
    claim took them while this one waited for the loop's lock): those of loops with room for
    ``most``, which a lease of ``most`` cannot fill past their limit, all newer than the chosen
    (the lease, oldest first, takes the chosen while they are there). Named with the chosen on
    PostgreSQL (a second lease for them cost a round trip, the loop's lock held); SQLite's
    claims run one at a time."""
    taken = set(chosen)
    return [
        row["id"]
        for row in candidates
        if room.get(row["loop_id"], 0) >= most and row["id"] not in taken
    ]


def _leased(
    connection: sa.Connection, bound: Mapping[str, Any], owner: str
) -> list[tuple[Job, Lease]]:
    """The jobs ``_lease_oldest`` leased to ``owner`` (their rows as the lease left them),
    oldest first."""
    leasing = _LEASE_OLDEST_RETURNING[connection.dialect.name]
    rows: Sequence[Mapping[Any, Any]]
    if connection.dialect.name == "postgresql":
        rows = fastpath.fetch_all(connection, leasing, bound)
    else:
        leased = [row["id"] for row in connection.execute(leasing, bound).mappings()]
        rows = connection.execute(_JOBS_NAMED, {"ids": leased}).mappings().all()
    found = sorted((Job.from_row(row) for row in rows), key=lambda job: job.created_at)
    return [(job, Lease(job.id, owner, job.attempts)) for job in found]


def _claim_among(
    connection: sa.Connection,
    now: float,
    loop_ids: Collection[str],
    most: int,
    limits: Mapping[str, int],
    counts: Mapping[str, int],
    owner: str,
    lease_s: float,
) -> list[tuple[Job, Lease]]:
    """Claim up to ``most`` of the oldest due jobs of ``loop_ids``, named in the query: none of
    the oldest jobs of the queue was one this daemon may take (on PostgreSQL, the first of each
    loop's are read through its index, then locked by id). Their rows are locked first, and
    each loop's room counted then."""
    named = list(loop_ids)
    if connection.dialect.name == "postgresql":
        bound = {"now": now, "looked_at": _looked_at(most), "loops": named}
        oldest = [row["id"] for row in fastpath.fetch_all(connection, _OLDEST_OF_LOOPS, bound)]
        if not oldest:
            return []
        found = _locked(connection, _LOCK_NAMED, {"now": now, "most": most, "ids": oldest})
    else:
        bound = {"now": now, "most": most, "loops": named}
        found = _locked(connection, _SQLITE_OLDEST_OF_LOOPS, bound)
    if not found:
        return []
    rooms = _rooms(connection, dict.fromkeys(job.loop_id for job in found), limits, counts)
    chosen: list[Job] = []
    for loop_id, room in rooms.items():
        chosen.extend([job for job in found if job.loop_id == loop_id][: max(room, 0)])
    chosen.sort(key=lambda job: job.created_at)
    return _claim(connection, chosen, owner, now + lease_s) if chosen else []


def _locked(
    connection: sa.Connection, query: sa.Select[Any], bound: Mapping[str, Any]
) -> list[Job]:
    return [Job.from_row(row) for row in connection.execute(query, bound).mappings()]


def _rooms(
    connection: sa.Connection,
    loop_ids: Collection[str],
    limits: Mapping[str, int],
    counted: Mapping[str, int],
) -> dict[str, int]:
    """How many more jobs each of ``loop_ids`` may run: below its limit by the ``counted``
    running on SQLite, whose ``BEGIN IMMEDIATE`` serialises claims; on PostgreSQL, whose claims
    run side by side (two daemons each took a loop's last slot), counted again under locks of
    the loops held to the claim's commit. A claim waits for a lock another claim holds (it
    found no room, and rested until its next poll, while three daemons claimed), in the
    locks' order; a loop whose lock would be taken out of order is not waited for (no room,
    for now). A daemon hands its claims to the store with ``Store.lead``: waiting, a claim
    holds no lock another write of its transaction took before it."""
    if connection.dialect.name != "postgresql":
        return {loop_id: limits[loop_id] - counted[loop_id] for loop_id in loop_ids}
    held = transaction_set(connection, _LOCKS_HELD)
    named = list(loop_ids)
    bound = {"space": _LOOP_LOCKS, "loops": named, "above": max(held, default=_BELOW)}
    _, (locks, running) = fastpath.execute_all(
        connection, [], then=[(_LOCK_LOOPS, bound), (_RUNNING_OF_LOOPS, {"loops": named})]
    )
    locked = [row for row in locks if row["held"]]
    held.update(row["key"] for row in locked)
    mine = [row["loop_id"] for row in locked]
    counts = {row["loop_id"]: int(row["running"]) for row in running}
    return {
        loop_id: limits[loop_id] - counts.get(loop_id, 0) if loop_id in mine else 0
        for loop_id in loop_ids
    }


def renew_leases(
    connection: sa.Connection, owner: str, job_ids: Iterable[str], lease_until: float
) -> tuple[set[str], set[str]]:
    """Extend the leases ``owner`` holds; the ids whose cancellation was requested, and the ids
    whose lease ``owner`` lost (another daemon took the job over after it expired). A job its
    execution's last commit ended here (a renewal behind that commit) is neither."""
    wanted = list(job_ids)
    if not wanted:
        return set(), set()
    held = (jobs.c.id.in_(wanted), jobs.c.owner == owner, jobs.c.status == RUNNING)
    connection.execute(jobs.update().where(*held).values(lease_until=lease_until))
    mine = (jobs.c.id.in_(wanted), jobs.c.owner == owner)
    query = sa.select(jobs.c.id, jobs.c.status, jobs.c.cancel_requested).where(*mine)
    rows = connection.execute(query).all()
    lost = set(wanted) - {job_id for job_id, _, _ in rows}
    return {job_id for job_id, status, cancel in rows if cancel and status == RUNNING}, lost


_FINISH = (
    jobs.update()
    .where(*HELD)
    .values(
        status=DONE,
        outcome=sa.bindparam("end_outcome"),
        execution_id=sa.bindparam("end_execution"),
        finished_at=sa.bindparam("end_at"),
        reason=sa.bindparam("end_reason"),
        lease_until=None,
    )
)


def finishing_job(
    lease: Lease, *, outcome: str, execution_id: str | None, now: float, reason: str | None = None
) -> fastpath.Bound:
    """The statement recording how the job of ``lease`` ended, unless the lease no longer holds
    it (no row then); the connection must ``forget_lease`` it."""
    ended = {
        "end_outcome": outcome,
        "end_execution": execution_id,
        "end_at": now,
        "end_reason": reason,
    }
    return _FINISH, {**held(lease), **ended}


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
    forget_lease(connection, lease)
    ending = finishing_job(
        lease, outcome=outcome, execution_id=execution_id, now=now, reason=reason
    )
    return bool(fastpath.execute(connection, *ending))


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
    forget_lease(connection, lease)
    back = jobs.update().where(*HELD)
    back = back.values(status=QUEUED, owner=None, lease_until=None, not_before=now)
    if not connection.execute(back, held(lease)).rowcount:
        return False
    notify(connection, JOB)
    return True


def unclaim(connection: sa.Connection, leases: Sequence[Lease], now: float) -> None:
    """Give back jobs claimed ahead that never started: queued again at once, their claim not
    counted among the job's attempts (``MAX_CLAIMS`` counts the claims that ran)."""
    for lease in leases:
        forget_lease(connection, lease)
    back = jobs.update().where(*HELD)
    back = back.values(
        status=QUEUED, owner=None, lease_until=None, not_before=now, attempts=jobs.c.attempts - 1
    )
    given = sum(connection.execute(back, held(lease)).rowcount for lease in leases)
    if given:
        notify(connection, JOB)


def insert_tick(connection: sa.Connection, tick: Tick) -> bool:
    """Record a cron slot (run or not, with its reason); False when it was already recorded."""
    return bool(insert_ticks(connection, [tick]))


def insert_ticks(connection: sa.Connection, batch: Sequence[Tick]) -> set[tuple[str, str, float]]:
    """``insert_tick`` for each of ``batch``, in one statement; the ``(loop_id, trigger_id,
    scheduled_for)`` of the slots recorded (the others already were)."""
    if not batch:
        return set()
    won = fastpath.insert_new(connection, ticks, [tick.row() for tick in batch])
    return {(loop_id, trigger_id, float(at)) for loop_id, trigger_id, at in won}


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


_PAUSED = sa.select(paused_loops.c.loop_id, paused_loops.c.paused_at)


def paused(connection: sa.Connection) -> dict[str, float]:
    """Paused loops and since when (read on the fast path: each intake commit asks)."""
    rows = fastpath.fetch_all(connection, _PAUSED, {})
    return {row["loop_id"]: float(row["paused_at"]) for row in rows}


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
    for table in _BOTH:
        ended = sa.and_(
            table.c.loop_id == loop_id,
            table.c.created_at < before,
            table.c.status.in_((DONE, SKIPPED)),
        )
        unrun = envelopes.c.job_id.in_(sa.select(table.c.id).where(ended))
        connection.execute(envelopes.delete().where(unrun, envelopes.c.execution_id.is_(None)))
        connection.execute(table.delete().where(ended))
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


def expired_artifacts(
    connection: sa.Connection, now: float, limit: int, skip: int = 0
) -> list[Artifact]:
    """At most ``limit`` artifacts past their retention, the longest expired first, after the
    first ``skip``."""
    query = (
        sa.select(*[artifacts.c[name] for name in Artifact.__dataclass_fields__])
        .where(artifacts.c.expires_at < now)
        .order_by(artifacts.c.expires_at, artifacts.c.id)
        .limit(limit)
        .offset(skip)
    )
    return [Artifact.from_row(row) for row in connection.execute(query).mappings()]


def forget_artifacts(connection: sa.Connection, removed: Sequence[Artifact]) -> None:
    """Take artifacts out of the index once their storage no longer holds them."""
    for artifact in removed:
        connection.execute(
            artifacts.delete().where(
                artifacts.c.execution_id == artifact.execution_id,
                artifacts.c.name == artifact.name,
                artifacts.c.location == artifact.location,
            )
        )
