"""The queue's repository: leases held by one owner, and retention that keeps what catch-up and
running work still need."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from loopengine.errors import ContractError, LeaseLost
from loopengine.store import (
    AppendLogs,
    ExecutionRow,
    JobEnvelope,
    PhaseResult,
    Store,
    create_engine,
    executions,
    logs,
    migrate,
    queue,
    records,
    signals,
)
from loopengine.testing import memory_store

DAY = 86_400.0


def scenario(steps: Callable[[Store], Any]) -> Any:
    async def main() -> Any:
        async with memory_store() as store:
            return await steps(store)

    return asyncio.run(main())


def job(job_id: str, loop_id: str = "tick", created_at: float = 0.0) -> queue.Job:
    return queue.Job(
        id=job_id,
        loop_id=loop_id,
        trigger={"type": "manual"},
        envelope=JobEnvelope(job_id, job_id, loop_id, {}, {}, {}, job_id).as_dict(),
        idempotency_key=job_id,
        status=queue.QUEUED,
        not_before=created_at,
        created_at=created_at,
    )


def test_a_lease_taken_over_is_reported_lost_and_cannot_be_finished() -> None:
    async def steps(store: Store) -> tuple[Any, ...]:
        await store.write(lambda c: queue.insert_job(c, job("j1")))
        first = await store.write(lambda c: queue.claim_job(c, job("j1"), "a", 10.0))
        stale, second = await store.write(queue.claim_next, {"tick": 5}, "b", lambda: 11.0, 29.0)
        renewed = await store.write(lambda c: queue.renew_leases(c, "a", ["j1"], 50.0))
        finished = await store.write(
            lambda c: queue.finish_job(c, first, outcome="completed", execution_id=None, now=12.0)
        )
        return stale.id, (first, second), renewed, finished

    stale, leases, renewed, finished = scenario(steps)
    assert stale == "j1"
    assert leases == (queue.Lease("j1", "a", 1), queue.Lease("j1", "b", 2))
    assert renewed == (set(), {"j1"})
    assert finished is False


def test_a_lease_taken_over_fails_its_holders_checks() -> None:
    async def steps(store: Store) -> tuple[Any, ...]:
        await store.write(lambda c: queue.insert_job(c, job("j1")))
        first = await store.write(lambda c: queue.claim_job(c, job("j1"), "a", 10.0))
        await store.write(lambda c: queue.check_lease(c, first))
        _, second = await store.write(queue.claim_next, {"tick": 5}, "b", lambda: 11.0, 29.0)
        await store.write(lambda c: queue.check_lease(c, second))
        with pytest.raises(LeaseLost, match="job j1 passed to another daemon"):
            await store.write(lambda c: queue.check_lease(c, first))

    scenario(steps)


def test_an_owner_does_not_claim_its_own_expired_lease() -> None:
    async def steps(store: Store) -> tuple[queue.Job, queue.Lease] | None:
        await store.write(lambda c: queue.insert_job(c, job("j1")))
        await store.write(lambda c: queue.claim_job(c, job("j1"), "a", 10.0))
        return await store.write(queue.claim_next, {"tick": 5}, "a", lambda: 11.0, 29.0)

    assert scenario(steps) is None


def _execution(execution_id: str, started_at: float, status: str) -> ExecutionRow:
    return ExecutionRow(
        id=execution_id,
        loop_id="tick",
        loop_version="v",
        loop_file="tick.yaml",
        status=status,
        job_id=execution_id,
        trigger_type="cron",
        durability="phase",
        dry_run=False,
        started_at=started_at,
    )


def test_retention_prunes_old_finished_work_and_keeps_the_rest() -> None:
    now = 100 * DAY

    def fill(connection: sa.Connection) -> None:
        for execution_id, started, status in (
            ("old", now - 30 * DAY, "finished"),
            ("old_running", now - 30 * DAY, "running"),
            ("recent", now - DAY, "finished"),
        ):
            executions.insert_execution(connection, _execution(execution_id, started, status))
            detected = PhaseResult("detect", started, started, True)
            executions.insert_phases(
                connection, execution_id, executions.PhaseRows.of(1, [detected])
            )
            said = logs.LogLine(started, "INFO", "detect", "read", "read 3 rows")
            AppendLogs(execution_id, (said,)).apply(connection)
        for slot in (now - 30 * DAY, now - 20 * DAY):
            queue.insert_tick(
                connection, queue.Tick("tick", "cron", slot, "missed", "r", None, slot)
            )

    async def steps(store: Store) -> tuple[Any, ...]:
        await store.write(fill)
        removed = await store.write(lambda c: queue.prune_loop(c, "tick", now - 7 * DAY))

        def left(connection: sa.Connection) -> tuple[Any, ...]:
            ids = connection.exec_driver_sql("SELECT id FROM executions ORDER BY id").scalars()
            phases = connection.exec_driver_sql("SELECT count(*) FROM phases").scalar()
            lines = connection.exec_driver_sql("SELECT count(*) FROM execution_logs").scalar()
            slots = connection.exec_driver_sql("SELECT scheduled_for FROM ticks").scalars()
            return list(ids), phases, lines, list(slots)

        return removed, *(await store.read(left))

    removed, ids, phases, lines, slots = scenario(steps)
    assert removed == 1
    assert ids == ["old_running", "recent"]
    assert phases == lines == 2
    assert slots == [now - 20 * DAY]


def test_a_claim_takes_no_queued_job_of_a_loop_at_its_limit_but_takes_over_a_stale_one() -> None:
    async def steps(store: Store) -> tuple[Any, ...]:
        for job_id in ("running", "waiting"):
            await store.write(queue.insert_job, job(job_id))
        await store.write(queue.claim_next, {"tick": 1}, "a", lambda: 1.0, 10.0)
        blocked = await store.write(queue.claim_next, {"tick": 1}, "b", lambda: 5.0, 10.0)
        taken = await store.write(queue.claim_next, {"tick": 1}, "b", lambda: 20.0, 10.0)
        return blocked, taken

    blocked, (taken, lease) = scenario(steps)
    assert blocked is None
    assert (taken.id, lease) == ("running", queue.Lease("running", "b", 2))


def test_a_failed_job_ends_the_execution_it_left_running_unless_its_lease_was_lost() -> None:
    async def steps(store: Store) -> tuple[Any, ...]:
        await store.write(queue.insert_job, job("j1"))
        await store.write(executions.insert_execution, _execution("j1", 1.0, "running"))
        first = await store.write(queue.claim_job, job("j1"), "a", 10.0)
        lost = queue.Lease("j1", "a", 2)
        ended = [
            await store.write(queue.end_job, lease, "failed", None, "boom", 5.0)
            for lease in (lost, first)
        ]
        execution = await store.read(executions.get_execution, "j1")
        return ended, execution

    ended, execution = scenario(steps)
    assert ended == [False, True]
    assert (execution.status, execution.outcome, execution.error) == ("finished", "failed", "boom")


def test_the_latest_point_of_each_metric_is_read() -> None:
    async def steps(store: Store) -> dict[str, queue.Point]:
        for name, value, at in (("cpu", 1.0, 1.0), ("cpu", 2.0, 2.0), ("mem", 3.0, 1.0)):
            await store.write(signals.insert_metric, name, value, at, {})
        return await store.read(queue.latest_points, ["cpu", "mem", "disk"])

    latest = scenario(steps)
    assert {name: point.value for name, point in latest.items()} == {"cpu": 2.0, "mem": 3.0}


def test_a_run_under_a_key_a_queued_job_holds_is_refused_and_the_job_keeps_it() -> None:
    async def steps(store: Store) -> queue.Job | None:
        await store.write(queue.insert_job, job("j1"))
        envelope = JobEnvelope("r1", "r1", "tick", {}, {}, {}, "j1")
        with pytest.raises(ContractError, match="held by a queued job"):
            await store.write(executions.claim_key, envelope, _execution("x1", 1.0, "running"))
        return await store.read(queue.job_keyed, "j1")

    kept = scenario(steps)
    assert kept is not None
    assert (kept.id, kept.started) == ("j1", None)


def test_artifacts_past_their_retention_are_listed_oldest_first_and_forgotten() -> None:
    def artifact(name: str, expires_at: float | None) -> records.Artifact:
        return records.Artifact(
            "e1", "tick", name, "report", "file", f"/tmp/{name}.json", False, 0.0, expires_at
        )

    async def steps(store: Store) -> tuple[list[records.Artifact], list[str]]:
        expiries = (("old", 20.0), ("older", 10.0), ("new", 1_000.0), ("kept", None))
        for name, expires_at in expiries:
            await store.write(records.insert_artifact, artifact(name, expires_at))
        expired = await store.read(queue.expired_artifacts, 100.0, 10)
        await store.write(queue.forget_artifacts, expired[:1])
        left = await store.read(records.artifacts_of, "e1")
        return expired, [a.name for a in left]

    expired, left = scenario(steps)
    assert expired == [artifact("older", 10.0), artifact("old", 20.0)]
    assert sorted(left) == ["kept", "new", "old"]


def test_a_claim_takes_over_a_dead_daemons_job_before_an_older_queued_one() -> None:
    async def steps(store: Store) -> list[str]:
        await store.write(queue.insert_job, job("queued", created_at=0.0))
        await store.write(queue.insert_job, job("orphan", created_at=1.0))
        await store.write(lambda c: queue.claim_job(c, job("orphan", created_at=1.0), "dead", 5.0))
        first = await store.write(queue.claim_next, {"tick": 5}, "b", lambda: 10.0, 10.0)
        second = await store.write(queue.claim_next, {"tick": 5}, "b", lambda: 10.0, 10.0)
        return [claimed[0].id for claimed in (first, second)]

    assert scenario(steps) == ["orphan", "queued"]


def test_a_claim_passes_over_jobs_of_loops_it_does_not_serve_or_that_are_full() -> None:
    async def steps(store: Store) -> list[str | None]:
        await store.write(queue.insert_job, job("foreign", "elsewhere", created_at=0.0))
        await store.write(queue.insert_job, job("full-1", "full", created_at=1.0))
        await store.write(queue.insert_job, job("full-2", "full", created_at=2.0))
        await store.write(queue.insert_job, job("mine", "tick", created_at=3.0))
        limits = {"full": 1, "tick": 5}
        taken = []
        for _ in range(3):
            claimed = await store.write(queue.claim_next, limits, "a", lambda: 10.0, 100.0)
            taken.append(claimed[0].id if claimed else None)
        return taken

    assert scenario(steps) == ["full-1", "mine", None]


def test_a_claim_takes_a_batch_of_the_oldest_jobs_each_loop_within_its_limit() -> None:
    async def steps(store: Store) -> list[list[tuple[str, int]]]:
        for index, loop_id in enumerate(("pair", "pair", "pair", "tick", "tick")):
            await store.write(queue.insert_job, job(f"j{index}", loop_id, float(index)))
        limits = {"pair": 2, "tick": 5}
        batches = []
        for most in (3, 4):
            claimed = await store.write(queue.claim_jobs, limits, "a", lambda: 10.0, 10.0, most)
            batches.append([(found.id, lease.generation) for found, lease in claimed])
        return batches

    assert scenario(steps) == [[("j0", 1), ("j1", 1), ("j3", 1)], [("j4", 1)]]


def test_a_lease_is_checked_once_a_transaction_and_again_once_its_job_ended(
    tmp_path: Path,
) -> None:
    engine = create_engine(f"sqlite:///{tmp_path / 'store.db'}")
    with engine.begin() as connection:
        migrate(connection)
        queue.insert_job(connection, job("j1"))
        lease = queue.claim_job(connection, job("j1"), "a", 10.0)
    statements: list[str] = []
    with engine.begin() as connection:
        driver = connection.connection.driver_connection
        driver.set_trace_callback(statements.append)  # type: ignore[union-attr]
        queue.check_lease(connection, lease)
        queue.check_lease(connection, lease)
        checks = len(statements)
        queue.finish_job(connection, lease, outcome="completed", execution_id=None, now=11.0)
        with pytest.raises(LeaseLost):
            queue.check_lease(connection, lease)
    engine.dispose()
    assert checks == 1


def test_a_claim_that_saw_every_due_job_names_no_loop_in_its_queries(tmp_path: Path) -> None:
    """An idle daemon serving 1,000 loops polls the queue: none of its claims binds their ids
    (it did, finding nothing more each time)."""
    engine = create_engine(f"sqlite:///{tmp_path / 'store.db'}")
    with engine.begin() as connection:
        migrate(connection)
        queue.insert_job(connection, job("foreign", "elsewhere"))
    statements: list[str] = []
    limits = {f"loop{index}": 1 for index in range(1000)}
    with engine.begin() as connection:
        driver = connection.connection.driver_connection
        assert driver is not None
        driver.set_trace_callback(statements.append)
        claimed = queue.claim_jobs(connection, limits, "a", lambda: 10.0, 10.0, 4)
        driver.set_trace_callback(None)
    engine.dispose()
    assert claimed == []
    assert statements
    assert not any("loop999" in statement for statement in statements)


def _queue_of(path: Path, jobs: list[tuple[str, float]], running: str | None) -> sa.Engine:
    """A SQLite store at ``path`` whose queue holds ``jobs`` (loop, created_at), and one job of
    ``running`` running under a live lease."""
    engine = create_engine(f"sqlite:///{path}")
    with engine.begin() as connection:
        migrate(connection)
        for index, (loop_id, created_at) in enumerate(jobs):
            queue.insert_job(connection, job(f"j{index}", loop_id, created_at))
        if running is not None:
            queue.insert_job(connection, job("busy", running, -1.0))
            queue.claim_job(connection, job("busy", running, -1.0), "other", 1e12)
    return engine


def _claim_work(engine: sa.Engine, limits: dict[str, int]) -> tuple[str, int]:
    """The job a claim takes, and the work it took: SQLite's virtual machine steps (a count
    that does not depend on the machine's speed)."""
    steps = [0]

    def counted() -> int:
        steps[0] += 1
        return 0

    with engine.begin() as connection:
        driver = connection.connection.driver_connection
        assert driver is not None
        driver.set_progress_handler(counted, 10)
        claimed = queue.claim_next(connection, limits, "a", lambda: 1e9, 10.0)
        driver.set_progress_handler(None, 0)
    engine.dispose()
    assert claimed is not None
    return claimed[0].id, steps[0]


@pytest.mark.parametrize(
    ("queued", "limits", "running", "taken"),
    [
        (lambda n: [(f"loop{i % 30}", float(i)) for i in range(n)], {"loop1": 1}, None, "j1"),
        (
            lambda n: [("full", float(i)) for i in range(n - 1)] + [("free", float(n))],
            {"full": 1, "free": 1},
            "full",
            "last",
        ),
    ],
    ids=["spread-over-loops", "behind-a-loop-at-its-limit"],
)
def test_a_claim_costs_the_same_however_many_jobs_are_queued(
    tmp_path: Path,
    queued: Callable[[int], list[tuple[str, float]]],
    limits: dict[str, int],
    running: str | None,
    taken: str,
) -> None:
    """An ``OR`` of queued and stale jobs once sorted every queued row, and walking the queue in
    order passed every job of a loop at its limit: a claim's work grew with the queue."""
    work = {}
    for size in (200, 4_000):
        engine = _queue_of(tmp_path / f"{size}.db", queued(size), running)
        claimed, work[size] = _claim_work(engine, limits)
        assert claimed == (f"j{size - 1}" if taken == "last" else taken)
    assert work[4_000] < 1.5 * work[200]


def test_a_claim_fills_the_room_of_a_loop_it_counted_behind_a_loop_at_its_limit() -> None:
    """Counted under its lock, a loop's running jobs replace the count read before: added to it,
    the loop looked full and the claim came back short."""

    async def steps(store: Store) -> Any:
        def fill(connection: sa.Connection) -> None:
            running = [job(f"r{i}", "big", float(i)) for i in range(5)] + [job("fr", "full", 5.0)]
            queue.insert_jobs(connection, running)
            queue._claim(connection, running, "other", 1e9)
            queue.insert_jobs(connection, [job("q0", "big", 10.0)])
            queue.insert_jobs(connection, [job(f"f{i}", "full", 11.0 + i) for i in range(40)])
            queue.insert_jobs(connection, [job(f"q{i}", "big", 100.0 + i) for i in range(1, 6)])

        await store.write(fill)
        limits = {"big": 10, "full": 1}
        claimed = await store.write(queue.claim_jobs, limits, "me", lambda: 1000.0, 30.0, 4)
        return [found.id for found, _ in claimed]

    assert scenario(steps) == ["q0", "q1", "q2", "q3"]


def test_a_renewal_behind_the_commit_that_ended_its_job_reports_it_neither_lost_nor_cancelled() -> (
    None
):
    async def steps(store: Store) -> tuple[set[str], set[str]]:
        await store.write(lambda c: queue.insert_job(c, job("j1")))
        lease = await store.write(lambda c: queue.claim_job(c, job("j1"), "a", 10.0))
        ended = {"outcome": "completed", "execution_id": None, "now": 5.0}
        await store.write(lambda c: queue.finish_job(c, lease, **ended))
        return await store.write(lambda c: queue.renew_leases(c, "a", ["j1"], 50.0))

    assert scenario(steps) == (set(), set())


def test_a_lease_may_take_other_jobs_read_only_of_loops_with_room_for_the_whole_batch() -> None:
    """Where the jobs a claim chose were taken meanwhile, its lease takes the next it read, of
    loops no batch can fill past their limit (``x`` has room for one job, ``y`` for four)."""
    read = [{"id": i, "loop_id": i[0]} for i in ("x1", "y1", "x2", "y2", "z1", "y3")]
    assert queue._spare(read, {"x": 1, "y": 4}, 2, ["x1", "y1"]) == ["y2", "y3"]


def test_a_batch_of_jobs_is_written_on_the_drivers_cursor_64_envelopes_a_statement(
    tmp_path: Path,
) -> None:
    """Queueing a batch costs the store's thread no SQLAlchemy execution (about 100 µs an
    intake commit): its envelopes go by one statement 64 rows, its jobs by one more."""
    engine = create_engine(f"sqlite:///{tmp_path / 'store.db'}")
    through_sqlalchemy: list[str] = []
    sa.event.listen(
        engine, "before_cursor_execute", lambda *args: through_sqlalchemy.append(args[2])
    )
    statements: list[str] = []
    with engine.begin() as connection:
        migrate(connection)
        through_sqlalchemy.clear()
        driver = connection.connection.driver_connection
        assert driver is not None
        driver.set_trace_callback(statements.append)
        won = queue.insert_jobs(connection, [job(f"j{n}") for n in range(128)])
        driver.set_trace_callback(None)
    engine.dispose()
    assert len(won) == 128
    assert through_sqlalchemy == []
    assert sum(statement.startswith("INSERT INTO envelopes") for statement in statements) == 2
