"""Version 12 on SQLite and PostgreSQL: each job's envelope and idempotency key move to its
``envelopes`` row, the one its execution names, and a held webhook body names its job."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from loopengine.store import _tables as tables
from loopengine.store import executions, migrate, queue, webhooks
from tests.store.old_schemas import (
    V11_BODIES,
    V11_ENVELOPES,
    V11_EXECUTIONS,
    V11_JOBS,
    at_version_11,
)


def _job(job_id: str, key: str, status: str = queue.QUEUED, **values: Any) -> dict[str, Any]:
    envelope = {
        "job_id": job_id,
        "trace_id": f"trace-{job_id}",
        "intent": "tick",
        "scope": {"limit": 1000},
        "payload": {"of": job_id},
        "constraints": {},
        "idempotency_key": key,
    }
    return {
        "id": job_id,
        "loop_id": "tick",
        "trigger": {"type": "manual"},
        "envelope": envelope,
        "idempotency_key": key,
        "status": status,
        "not_before": 1.0,
        "attempts": 0,
        "cancel_requested": False,
        "created_at": 1.0,
        "reason": None,
        "execution_id": None,
        **values,
    }


def _envelope(job_id: str, key: str, execution_id: str) -> dict[str, Any]:
    return {**_job(job_id, key)["envelope"], "execution_id": execution_id, "created_at": 1.0}


def _at_version_11(engine: sa.Engine) -> None:
    """A job that ran, one queued, a non-run whose key was released, one queued whose key an
    execution outside the queue took, and bodies held by a delivery and by a forgotten one."""
    with engine.begin() as connection:
        at_version_11(connection)
        connection.execute(
            V11_JOBS.insert(),
            [
                _job("ran", "k-ran", queue.DONE, execution_id="x-ran"),
                _job("queued", "k-queued"),
                _job("refused", "released:refused", queue.SKIPPED, reason="paused"),
                _job("late", "k-run"),
            ],
        )
        connection.execute(
            V11_ENVELOPES.insert(),
            [_envelope("ran", "k-ran", "x-ran"), _envelope("run", "k-run", "x-run")],
        )
        ran = {
            "id": "x-ran",
            "loop_id": "tick",
            "loop_version": "v",
            "loop_file": "tick.yaml",
            "status": "finished",
            "job_id": "ran",
            "trigger_type": "cron",
            "durability": "phase",
            "dry_run": False,
            "started_at": 1.0,
            "context": {},
            "usage": {},
            "trigger": {"id": "nightly", "scheduled_for": 1.0},
        }
        connection.execute(V11_EXECUTIONS.insert(), [ran])
        bodies = [("body", "k-queued"), ("forgotten", "k-gone")]
        connection.execute(
            V11_BODIES.insert(),
            [{"key": key, "idempotency_key": held, "expires_at": 9e9} for key, held in bodies],
        )


def _migrated(engine: sa.Engine) -> None:
    _at_version_11(engine)
    with engine.begin() as connection:
        migrate(connection)


def _jobs(engine: sa.Engine) -> dict[str, queue.Job]:
    with engine.connect() as connection:
        names = ("ran", "queued", "refused", "late")
        found = {name: queue.get_job(connection, name) for name in names}
    return {name: job for name, job in found.items() if job is not None}


def test_a_queued_job_keeps_its_envelope_and_key_in_its_envelope_row(engine: sa.Engine) -> None:
    _migrated(engine)
    queued = _jobs(engine)["queued"]
    assert queued.envelope == _job("queued", "k-queued")["envelope"]
    assert (queued.idempotency_key, queued.started) == ("k-queued", None)


def test_a_job_that_ran_names_its_execution_through_its_envelope(engine: sa.Engine) -> None:
    _migrated(engine)
    ran = _jobs(engine)["ran"]
    assert (ran.idempotency_key, ran.started, ran.execution_id) == ("k-ran", "x-ran", "x-ran")


def test_a_released_key_stays_released(engine: sa.Engine) -> None:
    _migrated(engine)
    assert _jobs(engine)["refused"].idempotency_key == "released:refused"


def test_a_key_an_execution_outside_the_queue_took_stays_its_and_the_job_reports_it(
    engine: sa.Engine,
) -> None:
    _migrated(engine)
    late = _jobs(engine)["late"]
    assert (late.idempotency_key, late.started) == ("taken:late", "x-run")
    with engine.connect() as connection:
        query = sa.select(tables.envelopes.c.execution_id).where(
            tables.envelopes.c.idempotency_key == "k-run"
        )
        assert connection.execute(query).scalar_one() == "x-run"


def test_a_held_body_names_its_job_and_a_body_of_no_job_is_let_go(engine: sa.Engine) -> None:
    _migrated(engine)
    with engine.begin() as connection:
        assert webhooks.hold_body(connection, "body", "other", 2.0, 300.0) == "queued"
        assert webhooks.hold_body(connection, "forgotten", "other", 2.0, 300.0) == "other"


def test_jobs_keep_no_copy_of_their_envelope_and_new_jobs_queue(engine: sa.Engine) -> None:
    _migrated(engine)
    with engine.begin() as connection:
        columns = {column["name"] for column in sa.inspect(connection).get_columns("jobs")}
        values = _job("fresh", "k-fresh")
        fresh = queue.Job(
            **{name: values[name] for name in ("id", "loop_id", "trigger", "envelope")},
            idempotency_key="k-fresh",
            status=queue.QUEUED,
            not_before=1.0,
            created_at=1.0,
        )
        assert queue.insert_job(connection, fresh)
        assert not queue.insert_job(connection, fresh)
    assert {"envelope", "idempotency_key"} & columns == set()


def test_an_execution_keeps_how_it_was_started_in_its_envelope_alone(engine: sa.Engine) -> None:
    _migrated(engine)
    with engine.connect() as connection:
        ran = executions.get_execution(connection, "x-ran")
        columns = {column["name"] for column in sa.inspect(connection).get_columns("executions")}
    assert ran is not None
    assert (ran.trigger_type, ran.trigger) == ("cron", {"id": "nightly", "scheduled_for": 1.0})
    assert _jobs(engine)["queued"].trigger == {"type": "manual"}
    assert "trigger" not in columns
