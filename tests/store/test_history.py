"""Jobs that ended leave the queue for its history, moved by a sweep in batches: each moved once
however many daemons sweep at once, and read as before by id, by idempotency key and by
retention."""

from __future__ import annotations

import dataclasses
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from loopengine.store import JobEnvelope, create_engine, history, intake, migrate, queue
from loopengine.store import _tables as tables
from tests.postgres import PostgresServer, migrated_engine


@dataclasses.dataclass(frozen=True)
class _Start:
    """The overlap policy's answer: run it."""

    action: str = "start"
    reason: str | None = None


_START = _Start()


@pytest.fixture(scope="module")
def postgres(shared_postgres: PostgresServer) -> Iterator[sa.Engine]:
    with migrated_engine(shared_postgres) as built:
        yield built


@pytest.fixture
def emptied(postgres: sa.Engine) -> sa.Engine:
    """The module's PostgreSQL database, its queue and history empty."""
    with postgres.begin() as connection:
        connection.exec_driver_sql("TRUNCATE jobs, job_history, envelopes")
    return postgres


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[sa.Engine]:
    if request.param == "postgresql":
        yield request.getfixturevalue("emptied")
        return
    built = create_engine(f"sqlite:///{tmp_path / 'store.db'}")
    with built.begin() as connection:
        migrate(connection)
    yield built
    built.dispose()


def _job(
    status: str = queue.DONE,
    created_at: float = 1.0,
    finished_at: float | None = 1.0,
    key: str | None = None,
) -> queue.Job:
    job_id = uuid.uuid4().hex
    return queue.Job(
        id=job_id,
        loop_id="tick",
        trigger={"type": "manual"},
        envelope=JobEnvelope(job_id, job_id, "tick", {}, {}, {}, key or job_id).as_dict(),
        idempotency_key=key or job_id,
        status=status,
        not_before=created_at,
        created_at=created_at,
        reason="overlap" if status == queue.SKIPPED else None,
        outcome="completed" if status == queue.DONE else None,
        finished_at=finished_at if status in history.ENDED else None,
    )


def _insert(engine: sa.Engine, *jobs: queue.Job) -> None:
    with engine.begin() as connection:
        queue.insert_jobs(connection, jobs)


def _sweep(engine: sa.Engine, before: float, most: int = history.BATCH) -> int:
    with engine.begin() as connection:
        return history.sweep(connection, before, most)


def _ids(engine: sa.Engine, table: sa.Table) -> list[str]:
    with engine.connect() as connection:
        return sorted(connection.execute(sa.select(table.c.id)).scalars())


def _rows(engine: sa.Engine, table: sa.Table) -> list[dict[str, Any]]:
    with engine.connect() as connection:
        rows = connection.execute(sa.select(table).order_by(table.c.id)).mappings()
        return [dict(row) for row in rows]


def test_jobs_that_ended_before_the_time_given_move_to_history_as_they_were(
    engine: sa.Engine,
) -> None:
    old, non_run = _job(finished_at=10.0), _job(queue.SKIPPED, created_at=5.0, finished_at=None)
    recent = _job(finished_at=50.0)
    live = [_job(queue.QUEUED), _job(queue.QUEUED, created_at=0.5)]
    _insert(engine, old, non_run, recent, *live)
    with engine.begin() as connection:  # one of them running
        queue.claim_job(connection, live[1], "daemon", 60.0)
    before = {row["id"]: row for row in _rows(engine, tables.jobs)}
    assert _sweep(engine, before=20.0) == 2
    assert _rows(engine, tables.job_history) == sorted(
        (before[old.id], before[non_run.id]), key=lambda row: str(row["id"])
    )
    assert _ids(engine, tables.jobs) == sorted([recent.id, *(job.id for job in live)])


def test_a_sweep_moves_at_most_its_batch_and_says_how_many(engine: sa.Engine) -> None:
    _insert(engine, *(_job() for _ in range(5)))
    assert [_sweep(engine, 20.0, most=2) for _ in range(4)] == [2, 2, 1, 0]
    assert len(_ids(engine, tables.job_history)) == 5


def test_a_job_swept_to_history_is_read_by_id_and_by_key_as_before(engine: sa.Engine) -> None:
    ended = _job(key="order-7")
    _insert(engine, ended)

    def read() -> tuple[queue.Job | None, queue.Job | None]:
        with engine.connect() as connection:
            return queue.get_job(connection, ended.id), queue.job_keyed(connection, "order-7")

    queued = read()
    _sweep(engine, 20.0)
    assert read() == queued
    assert [job.status if job else None for job in queued] == [queue.DONE, queue.DONE]


def test_a_firing_under_the_key_of_a_swept_job_is_its_duplicate(engine: sa.Engine) -> None:
    ended = _job(key="order-7")
    _insert(engine, ended)
    _sweep(engine, 20.0)
    again = _job(queue.QUEUED, key="order-7")
    arrival = intake.Arrival(again, "t", lambda running, queued: _START)
    with engine.begin() as connection:
        taken, job = intake.enqueue_keyed(connection, arrival, 30.0)
    assert taken.status == intake.DUPLICATE
    assert (job.id if job else None) == ended.id


def test_a_firing_under_the_key_of_a_swept_non_run_runs(engine: sa.Engine) -> None:
    refused = _job(queue.SKIPPED, key="order-8", finished_at=None)
    _insert(engine, refused)
    _sweep(engine, 20.0)
    again = _job(queue.QUEUED, key="order-8")
    arrival = intake.Arrival(again, "t", lambda running, queued: _START)
    with engine.begin() as connection:
        taken, job = intake.enqueue_keyed(connection, arrival, 30.0)
    assert taken.status == queue.QUEUED
    assert (job.id if job else None) == again.id


def test_retention_prunes_swept_jobs_and_those_not_swept_yet(engine: sa.Engine) -> None:
    swept, unswept, kept = _job(created_at=1.0), _job(created_at=2.0), _job(created_at=90.0)
    _insert(engine, swept)
    _sweep(engine, 20.0)
    _insert(engine, unswept, kept)
    with engine.begin() as connection:
        queue.prune_loop(connection, "tick", 50.0)
    assert _ids(engine, tables.job_history) + _ids(engine, tables.jobs) == [kept.id]
    with engine.connect() as connection:
        envelopes = connection.execute(sa.select(tables.envelopes.c.job_id)).scalars()
        assert list(envelopes) == [kept.id]


def test_a_sweep_passes_over_jobs_another_sweep_is_moving(emptied: sa.Engine) -> None:
    """PostgreSQL: the rows a sweep not yet committed holds are skipped, not waited for nor
    moved twice."""
    _insert(emptied, *(_job() for _ in range(10)))
    with emptied.connect() as first, first.begin():
        assert history.sweep(first, 20.0, 3) == 3
        with emptied.connect() as second, second.begin():
            second.exec_driver_sql("SET LOCAL lock_timeout = '10s'")  # waiting fails, not hangs
            assert history.sweep(second, 20.0, 100) == 7
    assert len(_ids(emptied, tables.job_history)) == 10
    assert _ids(emptied, tables.jobs) == []


def test_sweeps_run_at_once_by_several_daemons_move_each_job_once(emptied: sa.Engine) -> None:
    ended = [_job() for _ in range(2_000)]
    for start in range(0, len(ended), 500):
        _insert(emptied, *ended[start : start + 500])
    sweepers = 4
    barrier = threading.Barrier(sweepers)
    moved: list[int] = []
    errors: list[BaseException] = []

    def sweep() -> None:
        barrier.wait()
        try:
            while count := _sweep(emptied, 20.0, 25):
                moved.append(count)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=sweep) for _ in range(sweepers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert sum(moved) == len(ended)
    assert _ids(emptied, tables.job_history) == sorted(job.id for job in ended)
    assert _ids(emptied, tables.jobs) == []
