"""The daemon on PostgreSQL: the same queue, and several daemons on one database share the work
(``FOR UPDATE SKIP LOCKED`` claims in batches, unique slots), so each slot and each job runs
exactly once."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from loopengine.store import JobEnvelope, queue
from tests.daemon.conftest import BY_HAND, ON_EVENT, TICK, Workspace
from tests.job_rows import ALL_JOBS
from tests.postgres import PostgresServer
from tests.waiting import wait_until


@pytest.fixture(scope="module")
def postgres_url(shared_postgres: PostgresServer) -> Iterator[str]:
    with shared_postgres.database() as url:
        yield url


@pytest.fixture
def on_postgres(workspace: Workspace, postgres_url: str) -> Iterator[Workspace]:
    workspace.env["LOOPENGINE_DATABASE"] = postgres_url
    yield workspace
    workspace.close()
    engine = sa.create_engine(postgres_url)
    with engine.begin() as connection:
        connection.execute(sa.text("DROP SCHEMA public CASCADE; CREATE SCHEMA public"))
    engine.dispose()


@pytest.fixture
def database(postgres_url: str) -> Iterator[sa.Engine]:
    engine = sa.create_engine(postgres_url)
    yield engine
    engine.dispose()


SLOTS = "SELECT count(*) FROM ticks"
EVENTS_RUN = "SELECT count(*) FROM executions WHERE loop_id = 'on_event' AND outcome IS NOT NULL"


def _count(engine: sa.Engine, query: str) -> int:
    with engine.connect() as connection:
        return int(connection.execute(sa.text(query)).scalar_one())


def test_two_daemons_on_one_database_run_each_slot_and_event_once(
    on_postgres: Workspace, database: sa.Engine
) -> None:
    loops = on_postgres.root / "loops"
    (loops / "tick.yaml").write_text(TICK.format(catchup="latest"))
    (loops / "on_event.yaml").write_text(ON_EVENT)
    (loops / "by_hand.yaml").write_text(BY_HAND)
    first, second = on_postgres.start("first.log"), on_postgres.start("second.log")
    contested = max(_count(database, SLOTS) + 2, 3)
    for page in range(1, 6):
        on_postgres.cli("emit", "seo.page.updated", "--data", f'{{"page": {page}}}')
    assert (
        '"outcome": "completed"' in on_postgres.cli("trigger", "by_hand", "--wait", "--json").stdout
    )
    wait_until(
        lambda: _count(database, SLOTS) >= contested and _count(database, EVENTS_RUN) >= 5,
        "two slots fired with both daemons up, and the five events run",
    )
    assert first.stop() == 0
    assert second.stop() == 0

    with database.connect() as connection:
        slots = connection.execute(sa.text("SELECT scheduled_for FROM ticks")).scalars().all()
        started = "SELECT e.loop_id, n.trigger, e.outcome FROM executions e "
        started += "JOIN envelopes n ON n.job_id = e.job_id"
        runs = connection.execute(sa.text(started)).all()
    assert len(slots) == len(set(slots)) >= 3
    by_loop = Counter(loop_id for loop_id, _, _ in runs)
    assert by_loop["on_event"] == 5
    assert by_loop["by_hand"] == 1
    scheduled = Counter(
        trigger["scheduled_for"] for loop_id, trigger, _ in runs if loop_id == "tick"
    )
    assert scheduled
    assert max(scheduled.values()) == 1
    assert {outcome for _, _, outcome in runs} == {"completed"}


EVERY_SECOND = """\
id: {id}
trigger: {{type: cron, config: {{expression: "* * * * * *", catchup: skip}}}}
decide: {{decision_tree: [], fallback_action: log_only}}
"""
LOOPS_DUE_TOGETHER = 12


def test_three_daemons_run_each_slot_of_loops_due_together_once(
    on_postgres: Workspace, database: sa.Engine
) -> None:
    loops = on_postgres.root / "loops"
    for index in range(LOOPS_DUE_TOGETHER):
        (loops / f"second_{index}.yaml").write_text(EVERY_SECOND.format(id=f"second_{index}"))
    daemons = [on_postgres.start(f"daemon_{index}.log") for index in range(3)]
    wanted = 3 * LOOPS_DUE_TOGETHER
    wait_until(
        lambda: _count(database, "SELECT count(*) FROM ticks WHERE status = 'queued'") >= wanted,
        "three seconds of slots queued with the three daemons up",
    )
    for daemon in daemons:
        assert daemon.stop() == 0

    with database.connect() as connection:
        queued = connection.execute(
            sa.text("SELECT loop_id, scheduled_for, job_id FROM ticks WHERE status = 'queued'")
        ).all()
        jobs = Counter(
            (loop_id, trigger["scheduled_for"])
            for loop_id, trigger in connection.execute(
                sa.text(
                    f"SELECT j.loop_id, n.trigger FROM {ALL_JOBS} AS j JOIN envelopes n ON n.job_id = j.id"
                )
            )
        )
        runs = Counter(connection.execute(sa.text("SELECT job_id FROM executions")).scalars().all())
    assert len({loop_id for loop_id, _, _ in queued}) == LOOPS_DUE_TOGETHER
    assert max(jobs.values()) == 1
    assert len(jobs) >= len(queued)
    assert max(runs.values()) == 1


MANY = """\
id: many
trigger: {type: manual}
concurrency: {max: 12}
decide: {decision_tree: [], fallback_action: log_only}
"""
JOBS = 300


def _queue_many(engine: sa.Engine) -> None:
    with engine.begin() as connection:
        for index in range(JOBS):
            job_id = f"many-{index:04}"
            envelope = JobEnvelope(job_id, job_id, "many", {}, {}, {}, job_id).as_dict()
            queued = queue.Job(
                id=job_id,
                loop_id="many",
                trigger={"type": "manual"},
                envelope=envelope,
                idempotency_key=job_id,
                status=queue.QUEUED,
                not_before=0.0,
                created_at=float(index),
            )
            queue.insert_job(connection, queued)


def test_three_daemons_draining_one_queue_run_every_job_exactly_once(
    on_postgres: Workspace, database: sa.Engine
) -> None:
    (on_postgres.root / "loops" / "many.yaml").write_text(MANY)
    daemons = [on_postgres.start(f"daemon{index}.log") for index in range(3)]
    _queue_many(database)
    done = f"SELECT count(*) FROM {ALL_JOBS} AS j WHERE loop_id = 'many' AND status = 'done'"
    daemons[0].wait_until(lambda: _count(database, done) == JOBS, "the jobs all ended")
    assert [daemon.stop() for daemon in daemons] == [0, 0, 0]

    with database.connect() as connection:
        jobs = connection.execute(
            sa.text(f"SELECT attempts, outcome FROM {ALL_JOBS} AS j WHERE loop_id = 'many'")
        ).all()
        runs = connection.execute(
            sa.text(
                "SELECT job_id, count(*) FROM executions WHERE loop_id = 'many' GROUP BY job_id"
            )
        ).all()
    assert Counter(jobs) == {(1, "completed"): JOBS}
    assert len(runs) == JOBS
    assert {count for _, count in runs} == {1}
