"""An execution's commit writes its row, its phase rows and its effects in one transaction."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from loopengine.errors import LeaseLost, StorageError
from loopengine.store import (
    AppendEvent,
    Artifact,
    AuditEntry,
    ExecutionCommit,
    ExecutionRow,
    IndexArtifacts,
    JobEnd,
    Metric,
    PhaseResult,
    PutState,
    QueueReview,
    RecordMetrics,
    RequestApproval,
    approvals,
    effects,
    executions,
    learning,
    migrate,
    new_envelope,
    queue,
    records,
    signals,
)
from loopengine.store._tables import reviews


def _first(execution_id: str = "e1") -> tuple[ExecutionCommit, ExecutionRow]:
    envelope = new_envelope("l1", {})
    row = ExecutionRow(
        id=execution_id,
        loop_id="l1",
        loop_version="v1",
        loop_file="l1.yaml",
        status="running",
        job_id=envelope.job_id,
        trigger_type="manual",
        durability="phase",
        dry_run=False,
        started_at=10.0,
    )
    return ExecutionCommit(execution_id, None, (envelope, row)), row


def test_a_first_commit_inserts_the_execution_its_phases_and_each_effect(
    connection: sa.Connection,
) -> None:
    commit, _ = _first()
    commit.values.update(status="waiting", last_phase="decide")
    commit.phases = executions.PhaseRows.of(1, [PhaseResult("detect", 10.0, 11.0, True)])
    artifact = Artifact("e1", "l1", "report", "decision", "file", "/tmp/r.json", True, 12.0)
    commit.effects += [
        AuditEntry("e1", "l1", {"outcome": "completed"}, 12.0),
        IndexArtifacts((artifact,)),
        RecordMetrics((Metric("latency_ms", 120.0, {"node": "a"}),), 12.0),
        QueueReview("e1", "l1", "confidence 0.2 below 0.5", 12.0),
        PutState("l1", {"score": 0.5}, 3, 11.0, 12.0),
        AppendEvent("loop.done", "l1", {"n": 1}, 12.0, "e1"),
        RequestApproval("e1", "l1", "prune", 12.0, 3612.0),
    ]
    with connection.begin():
        effects.write_commit(connection, commit)
    record = executions.read_record(connection, "e1")
    assert record is not None
    assert (record.execution.status, record.execution.last_phase) == ("waiting", "decide")
    assert [phase.phase for phase in record.phases] == ["detect"]
    assert record.artifacts == (artifact,)
    assert record.approval == approvals.Approval("e1", "l1", "prune", "pending", 12.0, 3612.0)
    assert records.audit_of(connection, "l1", 10) == [
        records.AuditRecord({"outcome": "completed"}, 12.0)
    ]
    assert signals.metric_points(connection, "latency_ms", None) == [
        signals.Sample(120.0, {"node": "a"}, 12.0)
    ]
    assert learning.get_state(connection, "l1") == learning.LearnedState({"score": 0.5}, 3, 11.0)
    [event] = signals.recent_events(connection, 0)
    assert (event.name, event.data, event.execution_id) == ("loop.done", {"n": 1}, "e1")
    reasons = connection.execute(sa.select(reviews.c.reason)).scalars().all()
    assert reasons == ["confidence 0.2 below 0.5"]


def test_a_later_commit_updates_the_execution_it_names(connection: sa.Connection) -> None:
    first, _ = _first()
    with connection.begin():
        effects.write_commit(connection, first)
    later = ExecutionCommit("e1", None, None, {"status": "finished", "outcome": "completed"})
    with connection.begin():
        effects.write_commit(connection, later)
    row = executions.get_execution(connection, "e1")
    assert row is not None
    assert (row.status, row.outcome) == ("finished", "completed")


def test_a_failing_effect_keeps_nothing_of_its_commit(connection: sa.Connection) -> None:
    first, _ = _first()
    first.effects.append(RequestApproval("e1", "l1", "prune", 12.0, 3612.0))
    with connection.begin():
        effects.write_commit(connection, first)
    again = ExecutionCommit("e1", None, None, {"status": "finished"})
    again.effects += [
        AppendEvent("loop.done", "l1", {}, 13.0, "e1"),
        RequestApproval("e1", "l1", "prune", 13.0, 3613.0),
    ]
    with pytest.raises(sa.exc.IntegrityError), connection.begin():
        effects.write_commit(connection, again)
    row = executions.get_execution(connection, "e1")
    assert row is not None
    assert row.status == "running"
    assert signals.recent_events(connection, 0) == []


def _leased_commit(connection: sa.Connection) -> tuple[ExecutionCommit, queue.Lease]:
    """The last commit of an execution, started, of a queued job daemon ``a`` claimed; and the
    job's lease."""
    first, row = _first()
    assert first.first is not None
    envelope = first.first[0]
    job = queue.Job(
        id=envelope.job_id,
        loop_id="l1",
        trigger={"type": "manual"},
        envelope=envelope.as_dict(),
        idempotency_key=envelope.idempotency_key,
        status=queue.QUEUED,
        not_before=0.0,
        created_at=0.0,
    )
    with connection.begin():
        queue.insert_job(connection, job)
        lease = queue.claim_job(connection, job, "a", lease_until=100.0)
        executions.insert_execution(connection, row)
    last = ExecutionCommit("e1", lease, None, {"status": "finished", "outcome": "completed"})
    last.ends = JobEnd("completed", None, 20.0)
    return last, lease


def test_a_last_commit_under_a_lease_ends_its_job_with_the_execution(
    connection: sa.Connection,
) -> None:
    last, lease = _leased_commit(connection)
    with connection.begin():
        effects.write_commit(connection, last)
    job = queue.get_job(connection, lease.job_id)
    assert job is not None
    assert (job.status, job.outcome, job.execution_id) == (queue.DONE, "completed", "e1")


def test_a_last_commit_under_a_lease_taken_over_writes_nothing(
    connection: sa.Connection,
) -> None:
    last, lease = _leased_commit(connection)
    last.lease = queue.Lease(lease.job_id, lease.owner, lease.generation + 1)
    with pytest.raises(LeaseLost), connection.begin():
        effects.write_commit(connection, last)
    row = executions.get_execution(connection, "e1")
    assert row is not None
    assert row.status == "running"


@pytest.fixture
def on_both(engine: sa.Engine) -> Iterator[sa.Connection]:
    """A connection to a migrated database of each backend."""
    with engine.connect() as opened:
        with opened.begin():
            migrate(opened)
        yield opened


def _midway(connection: sa.Connection, taken_over: bool) -> ExecutionCommit:
    """A commit of a phase of an execution under a lease (its job not ended), the lease taken
    over by another daemon if ``taken_over``."""
    _, lease = _leased_commit(connection)
    if taken_over:
        lease = queue.Lease(lease.job_id, lease.owner, lease.generation + 1)
    return ExecutionCommit("e1", lease, None, {"last_phase": "act"})


def test_a_commit_midway_under_its_lease_writes_and_leaves_the_job_running(
    on_both: sa.Connection,
) -> None:
    midway = _midway(on_both, taken_over=False)
    with on_both.begin():
        effects.write_commit(on_both, midway)
    row = executions.get_execution(on_both, "e1")
    assert row is not None
    assert row.last_phase == "act"


def test_a_commit_midway_under_a_lease_taken_over_writes_nothing(
    on_both: sa.Connection,
) -> None:
    midway = _midway(on_both, taken_over=True)
    with pytest.raises(LeaseLost), on_both.begin():
        effects.write_commit(on_both, midway)
    row = executions.get_execution(on_both, "e1")
    assert row is not None
    assert row.last_phase is None


def test_a_last_commit_under_a_lease_taken_over_says_so_whatever_fails_after_it(
    on_both: sa.Connection,
) -> None:
    """Its phases' row is there already (a commit that was in fact made, tried again)."""
    last, lease = _leased_commit(on_both)
    last.lease = queue.Lease(lease.job_id, lease.owner, lease.generation + 1)
    last.phases = executions.PhaseRows.of(1, [])
    with on_both.begin():
        executions.insert_phases(on_both, "e1", last.phases)
    with pytest.raises(LeaseLost), on_both.begin():
        effects.write_commit(on_both, last)


def test_a_commit_of_an_execution_whose_row_is_not_there_writes_nothing(
    on_both: sa.Connection,
) -> None:
    """The commit inserting it failed: a later one neither ends the job nor writes its rows."""
    last, lease = _leased_commit(on_both)
    orphan = ExecutionCommit("e2", lease, None, last.values, executions.PhaseRows.of(1, []))
    orphan.ends = last.ends
    with pytest.raises(StorageError, match="e2 has no row"), on_both.begin():
        effects.write_commit(on_both, orphan)
    job = queue.get_job(on_both, lease.job_id)
    assert job is not None
    assert (job.status, executions.last_seq(on_both, "e2")) == (queue.RUNNING, 0)
