"""Where an execution starts from, its loop's last finished run, is read from the index of
finished runs, whatever PostgreSQL knows of the table: never by sorting the loop's executions
(with a fresh table's statistics it did, reading every one of them at each start)."""

from __future__ import annotations

from typing import Any

from loopengine.store import _tables as tables
from loopengine.store.executions import _STARTING_POINT
from tests.postgres import PostgresServer, generic_plan, migrated_engine


def _execution(n: int) -> dict[str, Any]:
    finished = n % 2 == 0
    return {
        "id": f"{n:032x}",
        "loop_id": "busy",
        "loop_version": "1",
        "loop_file": "busy.yaml",
        "status": "finished" if finished else "running",
        "outcome": "completed" if finished else None,
        "job_id": f"{n:032x}",
        "trigger_type": "manual",
        "durability": "phase",
        "dry_run": False,
        "started_at": float(n),
        "completed_at": float(n) + 0.5 if finished else None,
        "context": {},
        "usage": {},
    }


def test_the_last_finished_run_is_read_backward_from_its_index_in_a_generic_plan(
    shared_postgres: PostgresServer,
) -> None:
    with migrated_engine(shared_postgres) as engine, engine.connect() as connection:
        connection.execute(tables.executions.insert(), [_execution(n) for n in range(4000)])
        plan = generic_plan(connection, _STARTING_POINT, {"loop_id": "busy"})
    assert "Index Scan Backward using ix_executions_loop_finished" in plan, plan
    assert "Sort" not in plan, plan
