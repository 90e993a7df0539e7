"""A claim reads and leases the jobs it takes through indexes, whatever PostgreSQL knows of the
queue: a lease naming jobs by id through the queue's status index read every queued job (14 ms
a claim behind 20,000), and so did the read of the oldest due jobs, in a bitmap scan and a sort,
while the table's statistics were older than its backlog (17 ms behind 20,000), as did the lease
in a scan of the table; and the lease was planned again each claim (0.43 ms of its 0.72)."""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import quote

import sqlalchemy as sa

from loopengine.store import JobEnvelope, create_engine, queue
from loopengine.store import _tables as tables
from loopengine.store.queue import _LEASE_OLDEST_RETURNING
from tests.postgres import PostgresServer, generic_plan, migrated_engine

_QUEUED = 3000


def _queued(count: int) -> list[dict[str, Any]]:
    return [
        {"id": f"{n:032x}", "loop_id": "busy", "status": queue.QUEUED, "not_before": 0.0}
        | {"attempts": 0, "cancel_requested": False, "created_at": float(n)}
        for n in range(count)
    ]


def test_a_lease_reads_the_jobs_it_names_by_their_ids_in_a_generic_plan(
    shared_postgres: PostgresServer,
) -> None:
    jobs = _queued(_QUEUED)
    with migrated_engine(shared_postgres) as engine, engine.connect() as connection:
        connection.execute(tables.jobs.insert(), jobs)
        bound = {"now": time.time(), "most": 4, "to": "a", "until": time.time() + 30}
        bound["ids"] = [job["id"] for job in jobs[:32]]
        plan = generic_plan(connection, _LEASE_OLDEST_RETURNING["postgresql"], bound)
    assert "ix_jobs_status_created" not in plan, plan


def _job(n: int) -> queue.Job:
    job_id = f"{n:032x}"
    return queue.Job(
        id=job_id,
        loop_id="busy",
        trigger={"type": "manual"},
        envelope=JobEnvelope(job_id, job_id, "busy", {}, {}, {}, job_id).as_dict(),
        idempotency_key=job_id,
        status=queue.QUEUED,
        not_before=0.0,
        created_at=float(n),
    )


def _read(connection: sa.Connection) -> tuple[int, int]:
    """The sequential scans of the jobs table and the entries of its status index the
    transaction under way read."""
    read = connection.exec_driver_sql(
        "SELECT pg_stat_get_xact_numscans('jobs'::regclass),"
        " pg_stat_get_xact_tuples_returned('ix_jobs_status_created'::regclass)"
    )
    scans, entries = read.one()
    return int(scans), int(entries)


def test_a_claim_reads_through_indexes_on_a_table_never_analysed(
    shared_postgres: PostgresServer,
) -> None:
    with migrated_engine(shared_postgres) as engine, engine.connect() as connection:
        queue.insert_jobs(connection, [_job(n) for n in range(_QUEUED)])
        connection.exec_driver_sql("SET plan_cache_mode = force_generic_plan")
        connection.commit()
        claimed = queue.claim_jobs(connection, {"busy": 4}, "a", time.time, 30.0, 4)
        table_scans, entries = _read(connection)
    assert [job.id for job, _ in claimed] == [f"{n:032x}" for n in range(4)]
    assert table_scans == 0, f"the claim scanned the jobs table {table_scans} times"
    assert entries < 100, f"the claim read {entries} of the status index's {_QUEUED} entries"


def test_a_claims_statements_are_planned_once_a_connection(
    shared_postgres: PostgresServer,
) -> None:
    with migrated_engine(shared_postgres) as engine:
        with engine.begin() as connection:
            queue.insert_jobs(connection, [_job(n) for n in range(20)])
        engine.dispose()
        with engine.connect() as connection:
            for _ in range(10):
                with connection.begin():
                    assert queue.claim_jobs(connection, {"busy": 20}, "a", time.time, 30.0, 2)
            planned = connection.exec_driver_sql(
                "SELECT statement, custom_plans FROM pg_prepared_statements WHERE custom_plans > 0"
            ).all()
    assert planned == []


def test_a_claim_gives_back_the_sessions_own_scan_settings(
    shared_postgres: PostgresServer,
) -> None:
    shown = "SELECT current_setting('enable_bitmapscan'), current_setting('enable_seqscan')"
    with shared_postgres.database(migrated=True) as url:
        for setting in ("on", "off"):
            options = quote(f"-c enable_bitmapscan={setting} -c enable_seqscan={setting}")
            engine = create_engine(f"{url}?options={options}")
            try:
                with engine.begin() as connection:
                    queue.claim_jobs(connection, {"busy": 4}, "a", time.time, 30.0, 4)
                    kept = tuple(connection.exec_driver_sql(shown).one())
            finally:
                engine.dispose()
            assert kept == (setting, setting)
