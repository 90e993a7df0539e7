"""Executions and their phase results, as typed rows (``ExecutionRow``, ``PhaseResult``)."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

import loopengine.store._fastpath as fastpath
from loopengine._json import JSONObject
from loopengine.errors import ContractError
from loopengine.store._record import (
    ExecutionRow,
    JobEnvelope,
    PhaseResult,
    Record,
    iso,
)
from loopengine.store._tables import FINISHED_RUN, envelopes, executions, loop_state, phases
from loopengine.store.approvals import Approval, get_approval
from loopengine.store.jobs import (
    TAKING_LEASED,
    execution_of_key,
    get_envelope,
    insert_envelope,
    taking_leased_envelope,
)
from loopengine.store.learning import LearnedState
from loopengine.store.leases import Lease
from loopengine.store.records import Artifact, artifacts_of

__all__ = [
    "MAX_CURSOR",
    "ExecutionRecord",
    "LastRun",
    "Left",
    "Narrowed",
    "Page",
    "PhaseRows",
    "Start",
    "StartingPoint",
    "claim_execution",
    "claim_key",
    "fail_left_running",
    "get_execution",
    "ids_named",
    "ids_starting_with",
    "insert_execution",
    "insert_phases",
    "inserting_execution",
    "inserting_phases",
    "last_seq",
    "list_executions",
    "mark_all_interrupted",
    "newest_of_each",
    "page_of_executions",
    "phases_of",
    "read_record",
    "resume_point",
    "running_executions",
    "started_after",
    "starting_point",
    "starting_points",
    "taking_envelope",
    "unfinished",
    "update_execution",
    "updating_execution",
]


@dataclass(frozen=True, slots=True)
class ExecutionRecord:
    """Everything stored about one execution, read in one transaction."""

    execution: ExecutionRow
    phases: tuple[PhaseResult, ...]
    envelope: JobEnvelope | None
    approval: Approval | None
    artifacts: tuple[Artifact, ...]

    @property
    def plan(self) -> list[JSONObject] | None:
        """What a gated decision would run (its params, the items it would affect), as decide
        recorded it; None when the decision was not gated."""
        for phase in self.phases:
            if phase.phase == "decide":
                gate = phase.data.get("approval")
                return gate.get("plan") if isinstance(gate, dict) else None
        return None

    def view(self) -> JSONObject:
        """The full record as ``show --json`` prints it."""
        execution = self.execution
        data = execution.context.get("data", {})
        view = {
            **execution.summary(),
            "loop_version": execution.loop_version,
            "loop_file": execution.loop_file,
            "dry_run": execution.dry_run,
            "durability": execution.durability,
            "job": self.envelope.as_dict() if self.envelope else {},
            "decision": data.get("decision"),
            "analysis": data.get("analysis"),
            "plan": self.plan,
            "validate": data.get("validate"),
            "learn": data.get("learn"),
            "phases": [phase.view() for phase in self.phases],
            "artifacts": [
                {"name": a.name, "type": a.type, "storage": a.storage, "location": a.location}
                for a in self.artifacts
            ],
            "usage": execution.usage,
            "error": execution.error,
        }
        if self.approval is not None:
            gate = self.approval
            view["approval"] = {
                "action": gate.action,
                "status": gate.status,
                "requested_at": iso(gate.requested_at),
                "deadline": iso(gate.deadline),
                "decided_at": iso(gate.decided_at),
                "note": gate.note,
            }
        return view


_INSERT = executions.insert()
_UPDATE = executions.update().where(executions.c.id == sa.bindparam("_id"))
_INSERT_PHASES = phases.insert()


def _typed(column: sa.Column[Any], prefix: str = "") -> sa.ColumnElement[Any]:
    """A parameter for ``column`` (named its key, after ``prefix``) whose type PostgreSQL knows
    when its value is null: the dialect casts text and JSON parameters itself (a cast to
    ``VARCHAR(n)`` would cut a long value, and SQLite's cast to ``JSON`` reads a number);
    numbers and booleans are cast here."""
    parameter = sa.bindparam(prefix + column.key, type_=column.type)
    if isinstance(column.type, sa.Float | sa.Boolean | sa.Integer):
        return sa.cast(parameter, column.type)
    return parameter


_INSERT_TAKEN = executions.insert().from_select(
    [column.key for column in executions.c],
    sa.select(*(_typed(column) for column in executions.c)).where(
        sa.exists().where(
            envelopes.c.job_id == sa.bindparam("job_id"),
            envelopes.c.execution_id == sa.bindparam("id"),
        )
    ),
)
"""The execution's row, once its envelope is taken for it (``taking_envelope``)."""
_INSERT_ON_TAKING = (
    executions.insert()
    .from_select(
        [column.key for column in executions.c],
        sa.select(*(_typed(column, "row_") for column in executions.c)).select_from(TAKING_LEASED),
    )
    .add_cte(TAKING_LEASED)
)
"""On PostgreSQL, the envelope taken and the execution's row inserted in one statement (its
values named apart: a parameter named as a column of envelopes would be set by the update)."""
_ROWS = sa.select(*executions.c, envelopes.c.trigger).outerjoin_from(
    executions, envelopes, envelopes.c.job_id == executions.c.job_id
)
"""Executions with how each was started (its envelope's trigger)."""
_GET = _ROWS.where(executions.c.id == sa.bindparam("id"))
_PHASES = (
    sa.select(phases.c.results)
    .where(phases.c.execution_id == sa.bindparam("id"))
    .order_by(phases.c.seq)
)
_LAST_FINISHED = (
    sa.select(executions.c.outcome, executions.c.completed_at, executions.c.started_at)
    .where(executions.c.loop_id == sa.bindparam("loop_id"), sa.text(FINISHED_RUN))
    .order_by(executions.c.completed_at.desc())
    .limit(1)
    .subquery("last_run")
)
_STARTING_POINT = sa.select(
    *_LAST_FINISHED.c,
    loop_state.c["values"],
    loop_state.c.samples,
    loop_state.c.last_adjusted_at,
).select_from(
    sa.select(sa.literal_column("1").label("one"))
    .subquery("one")
    .outerjoin(_LAST_FINISHED, sa.true())
    .outerjoin(loop_state, loop_state.c.loop_id == sa.bindparam("loop_id"))
)
"""The loop's last finished execution and its learned state, each an index lookup, in one row
whose columns are null for what is missing."""


def ids_starting_with(connection: sa.Connection, prefix: str, limit: int) -> list[str]:
    """Execution ids that start with ``prefix`` (a shortened id), at most ``limit``."""
    escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    query = (
        sa.select(executions.c.id)
        .where(executions.c.id.like(f"{escaped}%", escape="\\"))
        .order_by(executions.c.id)
        .limit(limit)
    )
    return list(connection.execute(query).scalars())


def claim_execution(
    connection: sa.Connection, execution_id: str, from_status: str, owner: str
) -> bool:
    """Take an execution that is ``from_status`` (e.g. ``interrupted``) to run it: only one
    process wins, whatever the race; the others get False."""
    query = (
        executions.update()
        .where(executions.c.id == execution_id, executions.c.status == from_status)
        .values(status="running", outcome=None, owner=owner)
    )
    return bool(connection.execute(query).rowcount)


def mark_interrupted(connection: sa.Connection, execution_id: str, owner: str, at: float) -> bool:
    """End an execution its dead ``owner`` left running as ``interrupted``; False when it is no
    longer that owner's (another process recovered it, and maybe resumed it, meanwhile)."""
    query = (
        executions.update()
        .where(
            executions.c.id == execution_id,
            executions.c.status == "running",
            executions.c.owner == owner,
        )
        .values(status="interrupted", outcome="interrupted", completed_at=at)
    )
    return bool(connection.execute(query).rowcount)


def fail_left_running(connection: sa.Connection, job_id: str, error: str, at: float) -> int:
    """End as ``failed`` the execution of ``job_id`` that an unexpected error left ``running``
    (its job is recorded failed in the same transaction, so the two agree)."""
    query = (
        executions.update()
        .where(executions.c.job_id == job_id, executions.c.status == "running")
        .values(status="finished", outcome="failed", error=error, completed_at=at)
    )
    return int(connection.execute(query).rowcount)


def inserting_execution(row: ExecutionRow) -> fastpath.Bound:
    """The statement inserting the execution's row; its trigger is its envelope's."""
    values = row.row()
    del values["trigger"]
    return _INSERT, values


def insert_execution(connection: sa.Connection, row: ExecutionRow) -> None:
    fastpath.execute(connection, *inserting_execution(row))


def updating_execution(execution_id: str, values: Mapping[str, object]) -> fastpath.Bound:
    """The statement setting some columns of one execution (``status``, ``context``…)."""
    return _UPDATE, {"_id": execution_id, **values}


def update_execution(connection: sa.Connection, execution_id: str, /, **values: Any) -> None:
    fastpath.execute(connection, *updating_execution(execution_id, values))


@dataclass(frozen=True, slots=True)
class PhaseRows:
    """The phases one commit records, ``seq`` numbering the last: ``results`` is their list as
    ``PhaseResult.stored`` makes it, encoded once for the commit, so it no longer changes as the
    execution goes on."""

    seq: int
    results: fastpath.Encoded

    @classmethod
    def of(cls, seq: int, results: Sequence[PhaseResult]) -> PhaseRows:
        return cls(seq, fastpath.Encoded.of([result.stored() for result in results]))

    def then(self, later: PhaseRows) -> PhaseRows:
        """These phases and the ``later`` ones, as one row numbered as the last."""
        joined = f"{self.results[:-1]},{later.results[1:]}"
        return PhaseRows(later.seq, fastpath.Encoded(joined))

    def row(self, execution_id: str) -> dict[str, object]:
        return {"execution_id": execution_id, "seq": self.seq, "results": self.results}


def inserting_phases(execution_id: str, rows: PhaseRows) -> fastpath.Bound:
    """The statement recording what ``rows`` hold of ``execution_id``'s phases."""
    return _INSERT_PHASES, rows.row(execution_id)


def insert_phases(connection: sa.Connection, execution_id: str, rows: PhaseRows) -> None:
    fastpath.execute(connection, *inserting_phases(execution_id, rows))


def get_execution(connection: sa.Connection, execution_id: str) -> ExecutionRow | None:
    row = connection.execute(_GET, {"id": execution_id}).mappings().first()
    return ExecutionRow.from_row(row) if row else None


def phases_of(connection: sa.Connection, execution_id: str) -> list[PhaseResult]:
    """The execution's phases, in the order they ran."""
    rows = connection.execute(_PHASES, {"id": execution_id}).scalars()
    return [PhaseResult.from_stored(item) for results in rows for item in results]


def last_seq(connection: sa.Connection, execution_id: str) -> int:
    """The number of the last committed phase (0 when none is)."""
    query = sa.select(sa.func.max(phases.c.seq)).where(phases.c.execution_id == execution_id)
    return int(connection.execute(query).scalar() or 0)


def list_executions(
    connection: sa.Connection,
    *,
    loop_id: str | None = None,
    outcome: str | None = None,
    limit: int = 20,
    started_by: float | None = None,
    excluding: Collection[str] = (),
    narrowed: Narrowed | None = None,
) -> list[ExecutionRow]:
    """The newest executions first, of one loop and with one outcome when given, and as
    ``narrowed`` further; a page after another starts at ``started_by`` (inclusive), without the
    ``excluding`` ids it listed."""
    query = _ROWS.order_by(executions.c.started_at.desc()).limit(limit)
    if narrowed is not None:
        query = narrowed.applied(query)
    if started_by is not None:
        query = query.where(executions.c.started_at <= started_by)
    if excluding:
        query = query.where(executions.c.id.not_in(list(excluding)))
    if loop_id is not None:
        query = query.where(executions.c.loop_id == loop_id)
    if outcome is not None:
        query = query.where(executions.c.outcome == outcome)
    return [ExecutionRow.from_row(row) for row in connection.execute(query).mappings()]


def newest_of_each(
    connection: sa.Connection, loop_ids: Sequence[str], count: int
) -> dict[str, list[ExecutionRow]]:
    """The newest ``count`` executions of each loop of ``loop_ids``, newest first: one indexed
    read per loop, all in one transaction (a strip of outcomes per loop on one page)."""
    return {
        loop_id: list_executions(connection, loop_id=loop_id, limit=count) for loop_id in loop_ids
    }


@dataclass(frozen=True, slots=True)
class Narrowed:
    """More of what a listing of executions may ask: a status (``running``, ``waiting``…), how
    they were started (``manual``, ``cron``…), and a span of start times (``since`` inclusive,
    ``until`` exclusive, epoch seconds)."""

    status: str | None = None
    trigger_type: str | None = None
    since: float | None = None
    until: float | None = None

    def applied(self, query: sa.Select[Any]) -> sa.Select[Any]:
        """``query`` narrowed to these."""
        if self.status is not None:
            query = query.where(executions.c.status == self.status)
        if self.trigger_type is not None:
            query = query.where(executions.c.trigger_type == self.trigger_type)
        if self.since is not None:
            query = query.where(executions.c.started_at >= self.since)
        if self.until is not None:
            query = query.where(executions.c.started_at < self.until)
        return query


MAX_CURSOR = 4096
"""Longest cursor read: it names the executions a page ended on that started at one instant
(almost always one)."""


@dataclass(frozen=True, slots=True)
class Page:
    """A page of ``list_executions``; ``next_cursor`` reads the following one (None: the last)."""

    rows: list[ExecutionRow]
    next_cursor: str | None


def page_of_executions(
    connection: sa.Connection,
    *,
    loop_id: str | None = None,
    outcome: str | None = None,
    limit: int = 20,
    cursor: str | None = None,
    narrowed: Narrowed | None = None,
) -> Page:
    """The page of executions after ``cursor`` (the first without one). A cursor is the start
    time of the page's last execution and the ids listed that started then, so that ties are
    neither repeated nor skipped; ``ContractError`` when ``cursor`` is not one."""
    started_by, listed = _read_cursor(cursor) if cursor else (None, ())
    rows = list_executions(
        connection,
        loop_id=loop_id,
        outcome=outcome,
        limit=limit,
        started_by=started_by,
        excluding=listed,
        narrowed=narrowed,
    )
    if len(rows) < limit:
        return Page(rows, None)
    last = rows[-1].started_at
    ended = [*(listed if started_by == last else ()), *(r.id for r in rows if r.started_at == last)]
    text = json.dumps({"s": last, "ids": ended}, separators=(",", ":"))
    return Page(rows, base64.urlsafe_b64encode(text.encode()).decode().rstrip("="))


def _read_cursor(text: str) -> tuple[float, tuple[str, ...]]:
    try:
        if len(text) > MAX_CURSOR:
            raise ValueError(text)
        raw = json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
        started_by, listed = float(raw["s"]), raw["ids"]
        if not isinstance(listed, list) or not all(isinstance(i, str) for i in listed):
            raise TypeError(listed)
    except (ValueError, TypeError, KeyError, RecursionError, binascii.Error):
        raise ContractError(
            "not a cursor of this listing: pass next_cursor as it was returned"
        ) from None
    return started_by, tuple(listed)


_IN_ONE_QUERY = 500
"""Ids one query names at most (SQLite's bound variables are limited)."""


def unfinished(connection: sa.Connection, ids: Sequence[str]) -> frozenset[str]:
    """Which of ``ids`` name executions not finished (running, interrupted or waiting)."""
    found: set[str] = set()
    for start in range(0, len(ids), _IN_ONE_QUERY):
        some = ids[start : start + _IN_ONE_QUERY]
        query = sa.select(executions.c.id).where(
            executions.c.id.in_(some), executions.c.status != "finished"
        )
        found.update(connection.execute(query).scalars())
    return frozenset(found)


def running_executions(connection: sa.Connection) -> list[ExecutionRow]:
    query = _ROWS.where(executions.c.status == "running")
    return [ExecutionRow.from_row(row) for row in connection.execute(query).mappings()]


@dataclass(frozen=True, slots=True)
class LastRun(Record):
    """How and when a loop's latest finished execution ended (its next one's ``last_run``)."""

    outcome: str | None
    completed_at: float | None
    started_at: float


def read_record(connection: sa.Connection, execution_id: str) -> ExecutionRecord | None:
    """Everything stored about one execution; None when unknown."""
    execution = get_execution(connection, execution_id)
    if execution is None:
        return None
    envelope = get_envelope(connection, execution.job_id)
    return ExecutionRecord(
        execution,
        tuple(phases_of(connection, execution_id)),
        envelope,
        get_approval(connection, execution_id),
        tuple(artifacts_of(connection, execution_id)),
    )


def ids_named(connection: sa.Connection, given: str, shortest: int, limit: int) -> list[str]:
    """The ids of the executions ``given`` may name, in one read: those it starts (at most
    ``limit``) when it is a prefix of ``shortest`` to 31 characters, else itself if it exists."""
    if shortest <= len(given) < 32 and (found := ids_starting_with(connection, given, limit)):
        return found
    return [given] if get_execution(connection, given) is not None else []


StartingPoint = tuple[LastRun | None, LearnedState | None]
"""The loop's last finished execution and its learned state: what its next execution starts
from."""
Left = StartingPoint
"""What a commit of an execution left its loop's next one: the run it ended (None: none, or a
dry run) and the learned state it wrote (None: none)."""
Start = tuple[str | None, LastRun | None, LearnedState | None]
"""What an execution starts from: the execution that already took its idempotency key (then it
does not run), else its loop's ``StartingPoint``."""


def starting_point(connection: sa.Connection, loop_id: str) -> StartingPoint:
    """The loop's last finished execution (a dry run is not a run: the next one's ``last_run``
    and ``since_last_run`` never count it) and its learned state, in one statement."""
    return starting_points(connection, [loop_id])[loop_id]


def starting_points(
    connection: sa.Connection, loop_ids: Sequence[str], first: Sequence[fastpath.Bound] = ()
) -> dict[str, StartingPoint]:
    """The ``starting_point`` of each of ``loop_ids``, read after the statements ``first``, all
    in one round trip on PostgreSQL."""
    reads = [(_STARTING_POINT, {"loop_id": loop_id}) for loop_id in loop_ids]
    _, found = fastpath.execute_all(connection, first, reads)
    return {loop_id: _started_from(rows[0]) for loop_id, rows in zip(loop_ids, found, strict=True)}


def _started_from(row: Mapping[str, object]) -> StartingPoint:
    last = None if row["started_at"] is None else LastRun.from_row(row)
    state = None if row["samples"] is None else LearnedState.from_row(row)
    return last, state


def started_after(start: StartingPoint, left: Left) -> StartingPoint:
    """What a loop's next execution starts from, read as ``start``, once a commit after that
    read left ``left``: the later of the two last runs (by their end, as the read orders them),
    and the learned state it wrote, if any (the last written is the one kept)."""
    last, state = start
    ended, learned = left
    if ended is not None and (
        last is None or (last.completed_at or 0.0) <= (ended.completed_at or 0.0)
    ):
        last = ended
    return last, learned if learned is not None else state


def claim_key(connection: sa.Connection, envelope: JobEnvelope, row: ExecutionRow) -> Start:
    """Take ``envelope``'s idempotency key for the execution ``row`` and insert both, with where
    it starts from, unless an execution took the key already (then that one): of several
    processes starting with one key at once, one runs and the others return its execution."""
    existing = execution_of_key(connection, envelope.idempotency_key)
    if existing is not None:
        return existing, None, None
    insert_envelope(connection, envelope, row)
    insert_execution(connection, row)
    return None, *starting_point(connection, row.loop_id)


def taking_envelope(lease: Lease, row: ExecutionRow, dialect: str) -> list[fastpath.Bound]:
    """The statements inserting the execution ``row`` of the job ``lease`` holds, its stored
    envelope (and key) taken for it: the first takes it while the lease holds and no execution
    took it, checking the lease as ``check_lease`` does (its row count is 1 then), and the row
    is inserted only once it did; on PostgreSQL, one statement does both."""
    taking, values = taking_leased_envelope(lease, row.id), inserting_execution(row)[1]
    if dialect == "postgresql":
        return [(_INSERT_ON_TAKING, {**taking[1], **{f"row_{k}": v for k, v in values.items()}})]
    return [taking, (_INSERT_TAKEN, values)]


def resume_point(
    connection: sa.Connection, execution_id: str
) -> tuple[ExecutionRecord | None, int]:
    """The execution's record and the number of its last committed phase, read together."""
    return read_record(connection, execution_id), last_seq(connection, execution_id)


def mark_all_interrupted(
    connection: sa.Connection, owned: Sequence[tuple[str, str]], at: float
) -> list[str]:
    """End as ``interrupted`` each ``(execution id, dead owner)`` still that owner's; the ids
    ended (see ``mark_interrupted``)."""
    return [
        execution_id
        for execution_id, owner in owned
        if mark_interrupted(connection, execution_id, owner, at)
    ]
