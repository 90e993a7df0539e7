"""A claim reads and leases the few jobs it takes through indexes, whatever PostgreSQL knows of
the queue, in plans made once a connection; the session's own planner settings hold after it."""

from __future__ import annotations

import time
from urllib.parse import quote

import pytest
import sqlalchemy as sa

from loopengine.store import _tables as tables
from loopengine.store import create_engine, queue
from loopengine.store.queue import _LEASE_OLDEST_RETURNING
from tests.postgres import PostgresServer, generic_plan, migrated_engine
from tests.store.test_queue import job


def test_a_lease_reads_the_jobs_it_names_by_their_ids_in_a_generic_plan(
    shared_postgres: PostgresServer,
) -> None:
    jobs = [
        {"id": f"{n:032x}", "loop_id": "busy", "status": queue.QUEUED, "not_before": 0.0}
        | {"attempts": 0, "cancel_requested": False, "created_at": float(n)}
        for n in range(5000)
    ]
    with migrated_engine(shared_postgres) as engine, engine.connect() as connection:
        connection.execute(tables.jobs.insert(), jobs)
        bound = {"now": time.time(), "most": 4, "to": "a", "until": time.time() + 30}
        bound["ids"] = [job["id"] for job in jobs[:32]]
        plan = generic_plan(connection, _LEASE_OLDEST_RETURNING["postgresql"], bound)
    assert "ix_jobs_status_created" not in plan, plan


def _job(n: int, loop_id: str = "busy") -> queue.Job:
    return job(f"{n:032x}", loop_id, float(n))


_READ = (
    "SELECT pg_stat_get_xact_numscans('jobs'::regclass),"
    " pg_stat_get_xact_tuples_returned('ix_jobs_status_created'::regclass)"
)


def _claim_counting(
    connection: sa.Connection, limits: dict[str, int], counters: str
) -> tuple[list[str], int, int]:
    """The ids of the jobs a claim of 4 of ``limits`` took, and how much each of the two
    ``counters`` (a SELECT of the transaction's statistics) grew meanwhile."""
    before = connection.exec_driver_sql(counters).one()
    claimed = queue.claim_jobs(connection, limits, "a", time.time, 30.0, 4)
    after = connection.exec_driver_sql(counters).one()
    return [job.id for job, _ in claimed], after[0] - before[0], after[1] - before[1]


def _claimed_reading(engine: sa.Engine, queued: int) -> tuple[list[str], int, int]:
    """The ids of the jobs a claim of 4 took behind ``queued`` jobs of a table never analysed,
    the sequential scans of the table it made and the entries of its status index it read."""
    with engine.begin() as connection:
        connection.exec_driver_sql("ALTER TABLE jobs SET (autovacuum_enabled = off)")
        queue.insert_jobs(connection, [_job(n) for n in range(queued)])
    with engine.begin() as connection:
        return _claim_counting(connection, {"busy": 4}, _READ)


def test_a_claim_leases_the_jobs_it_chose_without_scanning_the_table(
    shared_postgres: PostgresServer,
) -> None:
    with migrated_engine(shared_postgres) as engine:
        claimed, scans, _ = _claimed_reading(engine, 3000)
    assert claimed == [f"{n:032x}" for n in range(4)]
    assert scans == 0


def test_a_claim_reads_the_oldest_due_jobs_in_order_of_the_index(
    shared_postgres: PostgresServer,
) -> None:
    with migrated_engine(shared_postgres) as engine:
        claimed, _, entries = _claimed_reading(engine, 20_000)
    assert claimed == [f"{n:032x}" for n in range(4)]
    assert entries < 100, f"the claim read {entries} of the status index's 20,000 entries"


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


_SETTINGS = ("enable_seqscan", "plan_cache_mode")


@pytest.mark.parametrize(
    "values", [("on", "auto"), ("off", "force_custom_plan")], ids=["defaults", "others"]
)
def test_a_claim_leaves_the_sessions_own_planner_settings(
    shared_postgres: PostgresServer, values: tuple[str, ...]
) -> None:
    given = zip(_SETTINGS, values, strict=True)
    options = quote(" ".join(f"-c {name}={value}" for name, value in given))
    shown = "SELECT " + ", ".join(f"current_setting('{name}')" for name in _SETTINGS)
    with shared_postgres.database(migrated=True) as url:
        engine = create_engine(f"{url}?options={options}")
        try:
            with engine.begin() as connection:
                queue.claim_jobs(connection, {"busy": 4}, "a", time.time, 30.0, 4)
                kept = tuple(connection.exec_driver_sql(shown).one())
        finally:
            engine.dispose()
    assert kept == values


_AMONG_READS = (
    "SELECT pg_stat_get_xact_tuples_returned('envelopes_pkey'::regclass),"
    " pg_stat_get_xact_tuples_returned('ix_jobs_loop_status_created'::regclass)"
)


def _claimed_among(engine: sa.Engine) -> tuple[list[str], int, int]:
    """The ids of the jobs a claim of 4 took behind 300 due jobs of a loop at its limit, the
    oldest, and 300 of two other loops, in turn (queued since the table was analysed: one loop,
    it seemed), and the envelopes and the entries of the index of each loop's jobs it read."""
    full, behind = _job(0), [_job(n) for n in range(1, 301)]
    others = [_job(n, f"other{n % 2}") for n in range(1000, 1300)]
    with engine.begin() as connection:
        queue.insert_jobs(connection, [full])
    with engine.begin() as connection:
        assert queue.claim_jobs(connection, {"busy": 1}, "a", time.time, 30.0, 1)
        queue.insert_jobs(connection, behind)
        connection.exec_driver_sql("ANALYZE jobs")
        queue.insert_jobs(connection, others)
    with engine.begin() as connection:
        limits = {"busy": 1, "other0": 300, "other1": 300}
        return _claim_counting(connection, limits, _AMONG_READS)


def test_a_claim_among_named_loops_reads_the_envelopes_of_a_few_jobs(
    shared_postgres: PostgresServer,
) -> None:
    with migrated_engine(shared_postgres) as engine:
        claimed, envelopes, _ = _claimed_among(engine)
    assert claimed == [f"{n:032x}" for n in range(1000, 1004)]
    assert envelopes <= queue._LOOKED_AT, f"the claim read {envelopes} envelopes for 4 jobs"


def test_a_claim_among_named_loops_reads_the_first_jobs_of_each_in_order(
    shared_postgres: PostgresServer,
) -> None:
    with migrated_engine(shared_postgres) as engine:
        claimed, _, entries = _claimed_among(engine)
    assert claimed == [f"{n:032x}" for n in range(1000, 1004)]
    assert entries <= 2 * queue._LOOKED_AT, f"the claim read {entries} of its loops' 300 jobs"
