"""What an execution's commit writes besides its own rows, as values (``AuditEntry``,
``PutState``…), and the unit of work that writes one commit (``write_commit``).

Phases and the recorder build these values; only ``write_commit`` turns them into rows, in the
transaction of the execution's row and phases, so they are kept exactly when those are.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, Protocol

import sqlalchemy as sa

from loopengine.errors import StorageError
from loopengine.store._fastpath import Bound, Encoded, execute_all
from loopengine.store._record import ExecutionRow, JobEnvelope
from loopengine.store.approvals import Approval, insert_approval
from loopengine.store.executions import (
    PhaseRows,
    inserting_execution,
    inserting_phases,
    taking_envelope,
    updating_execution,
)
from loopengine.store.jobs import inserting_envelope
from loopengine.store.learning import put_state, queue_review
from loopengine.store.leases import Lease, forget_lease, lease_check, lease_checked, still_held
from loopengine.store.logs import LogLine, inserting_lines
from loopengine.store.queue import finishing_job
from loopengine.store.records import Artifact, insert_artifact, inserting_audit
from loopengine.store.signals import insert_event, insert_metrics

__all__ = [
    "AppendEvent",
    "AppendLogs",
    "AuditEntry",
    "Effect",
    "ExecutionCommit",
    "IndexArtifacts",
    "JobEnd",
    "Metric",
    "PutState",
    "QueueReview",
    "RecordMetrics",
    "RequestApproval",
    "write_commit",
]


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """The execution's audit record, with the fields its loop chose."""

    execution_id: str
    loop_id: str
    record: dict[str, Any]
    at: float

    def statements(self) -> list[Bound]:
        return [inserting_audit(self.execution_id, self.loop_id, self.record, self.at)]

    def apply(self, connection: sa.Connection) -> None:
        execute_all(connection, self.statements())


@dataclass(frozen=True, slots=True)
class IndexArtifacts:
    """Where the store phase wrote the execution's artifacts."""

    artifacts: tuple[Artifact, ...]

    def apply(self, connection: sa.Connection) -> None:
        for artifact in self.artifacts:
            insert_artifact(connection, artifact)


@dataclass(frozen=True, slots=True)
class Metric:
    """A metric point the learn phase records."""

    name: str
    value: float
    labels: dict[str, Any]


@dataclass(frozen=True, slots=True)
class RecordMetrics:
    """The metric points the learn phase records, at ``at``."""

    points: tuple[Metric, ...]
    at: float

    def apply(self, connection: sa.Connection) -> None:
        labels: list[tuple[dict[str, Any], Encoded]] = []

        def encoded(given: dict[str, Any]) -> Encoded:
            """Points with equal labels (a loop's usual case) share one encoding."""
            for known, text in labels:
                if known == given:
                    return text
            labels.append((given, Encoded.of(given)))
            return labels[-1][1]

        rows = [(p.name, p.value, encoded(p.labels)) for p in self.points]
        insert_metrics(connection, rows, self.at)


@dataclass(frozen=True, slots=True)
class QueueReview:
    """An execution a person should look at (its confidence was below the review threshold)."""

    execution_id: str
    loop_id: str
    reason: str
    at: float

    def apply(self, connection: sa.Connection) -> None:
        queue_review(connection, self.execution_id, self.loop_id, self.reason, self.at)


@dataclass(frozen=True, slots=True)
class PutState:
    """The loop's learned state as the learn phase left it."""

    loop_id: str
    values: dict[str, Any]
    samples: int
    last_adjusted_at: float | None
    at: float

    def apply(self, connection: sa.Connection) -> None:
        put_state(
            connection, self.loop_id, self.values, self.samples, self.last_adjusted_at, self.at
        )


@dataclass(frozen=True, slots=True)
class AppendEvent:
    """An event the execution emits (its loop's ``emit``, an escalation), under the trace
    ``traceparent`` names, if any."""

    name: str
    source: str
    data: Any
    at: float
    execution_id: str | None = None
    traceparent: str | None = None

    def apply(self, connection: sa.Connection) -> None:
        insert_event(
            connection,
            self.name,
            self.source,
            self.data,
            self.at,
            self.execution_id,
            self.traceparent,
        )


@dataclass(frozen=True, slots=True)
class AppendLogs:
    """Lines the execution's skills logged since its last commit."""

    execution_id: str
    lines: tuple[LogLine, ...]

    def statements(self) -> list[Bound]:
        return inserting_lines(self.execution_id, self.lines)

    def apply(self, connection: sa.Connection) -> None:
        execute_all(connection, self.statements())


@dataclass(frozen=True, slots=True)
class RequestApproval:
    """The gate the execution waits at, pending, for a person until ``deadline``."""

    execution_id: str
    loop_id: str
    action: str
    requested_at: float
    deadline: float

    def approval(self) -> Approval:
        """The gate as its row holds it, pending."""
        return Approval(
            self.execution_id,
            self.loop_id,
            self.action,
            "pending",
            self.requested_at,
            self.deadline,
        )

    def apply(self, connection: sa.Connection) -> None:
        insert_approval(connection, self.approval())


class Effect(Protocol):
    """A write the store makes in an execution's commit (``write_commit``): one of the values
    above, or a store module's own (``autolearn.RecordReply``) that a skill hands over."""

    def apply(self, connection: sa.Connection) -> None: ...


@dataclass(frozen=True, slots=True)
class JobEnd:
    """How the job of a commit's lease ends, written with its execution's last commit."""

    outcome: str
    error: str | None
    at: float


@dataclass(slots=True)
class ExecutionCommit:
    """One transaction of an execution. It stays open while it waits in the store's queue: the
    phases that end meanwhile add their rows, values and effects to it (group commit)."""

    execution_id: str
    lease: Lease | None
    """The job's lease when a daemon's worker runs the execution: checked before writing."""
    first: tuple[JobEnvelope, ExecutionRow] | None
    """The envelope and execution row to insert, for the execution's first commit (with a
    lease, the job's envelope is stored already: the row takes it)."""
    values: dict[str, Any] = field(default_factory=dict)
    """The execution row's columns as they are now."""
    phases: PhaseRows | None = None
    """The phases it records, those of the commits it joined with them."""
    effects: list[Effect] = field(default_factory=list)
    ends: JobEnd | None = None
    """The lease's job ends with this commit: ending it checks the lease (one statement)."""


def write_commit(connection: sa.Connection, commit: ExecutionCommit) -> None:
    """An execution's commit, atomically: its lease still held (its job ended, with ``ends``),
    its row inserted (with its envelope, or taking its job's, which checks the lease) or
    updated (none found: the commit inserting it failed, so this one fails too), its phases and
    its effects. Its own rows, the job's end or the lease's check, and its log and audit lines
    go to the database in one round trip."""
    lease, end = commit.lease, commit.ends
    statements: list[Bound] = []
    fence: Callable[[int], None] | None = None
    updated: int | None = None
    if lease is not None and end is not None:
        forget_lease(connection, lease)
        statements.append(
            finishing_job(
                lease,
                outcome=end.outcome,
                execution_id=commit.execution_id,
                now=end.at,
                reason=end.error,
            )
        )
        fence = partial(still_held, lease)
    elif lease is not None and commit.first is not None:
        fence = partial(lease_checked, connection, lease)
    elif lease is not None and (checking := lease_check(connection, lease)) is not None:
        statements.append(checking)
        fence = partial(lease_checked, connection, lease)
    if commit.first is not None:
        envelope, row = commit.first
        row = replace(row, **commit.values)
        if lease is not None:
            statements[:0] = taking_envelope(lease, row, connection.dialect.name)
        else:
            statements += [inserting_envelope(envelope, row), inserting_execution(row)]
    else:
        updated = len(statements)
        statements.append(updating_execution(commit.execution_id, commit.values))
    if commit.phases is not None:
        statements.append(inserting_phases(commit.execution_id, commit.phases))
    others = []
    for effect in commit.effects:
        if isinstance(effect, _WITH_THE_COMMIT):
            statements += effect.statements()
        else:
            others.append(effect)
    counts, _ = execute_all(connection, statements, fence=fence)
    if updated is not None and not counts[updated]:
        raise StorageError(
            f"execution {commit.execution_id} has no row to update: the commit that inserts it "
            "failed, so this one is not written either"
        )
    for effect in others:
        effect.apply(connection)


_WITH_THE_COMMIT = (AppendLogs, AuditEntry)
"""Effects whose statements ``write_commit`` sends with the commit's own."""
