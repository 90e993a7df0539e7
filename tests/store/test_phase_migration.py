"""Version 13 on SQLite and PostgreSQL: each phase row of an older store becomes a commit's row
listing that phase, so its executions read back as they were, however many rows it holds."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa

from loopengine.store import _migrations, approvals, executions, migrate
from tests.store.old_schemas import V11_EXECUTIONS, V11_PHASES, at_version_11

PHASES = ("detect", "analyze", "decide")


def _phase(execution_id: str, seq: int, phase: str) -> dict[str, Any]:
    data = {"decision": {"action": "trash"}} if phase == "decide" else {"n": seq}
    return {
        "execution_id": execution_id,
        "seq": seq,
        "phase": phase,
        "started_at": float(seq),
        "completed_at": seq + 0.5,
        "success": phase != "analyze",
        "outcome": "awaiting_approval" if phase == "decide" else None,
        "data": data,
        "errors": ["slow"] if phase == "analyze" else [],
    }


def _execution(execution_id: str) -> dict[str, Any]:
    return {
        "id": execution_id,
        "loop_id": "tidy",
        "loop_version": "v",
        "loop_file": "tidy.yaml",
        "status": "waiting",
        "job_id": execution_id,
        "trigger_type": "manual",
        "durability": "phase",
        "dry_run": False,
        "started_at": 1.0,
        "context": {},
        "usage": {},
    }


@pytest.fixture
def migrated(engine: sa.Engine, monkeypatch: pytest.MonkeyPatch) -> sa.Engine:
    """Two executions of three phase rows each at version 11, moved two rows at a time."""
    ids = ("a" * 32, "b" * 32)
    with engine.begin() as connection:
        at_version_11(connection)
        connection.execute(V11_EXECUTIONS.insert(), [_execution(i) for i in ids])
        rows = [_phase(i, seq, phase) for i in ids for seq, phase in enumerate(PHASES, 1)]
        connection.execute(V11_PHASES.insert(), rows)
    monkeypatch.setattr(_migrations, "_MOVED_AT_ONCE", 2)
    with engine.begin() as connection:
        migrate(connection)
    return engine


def test_each_execution_reads_back_its_phases_as_they_were(migrated: sa.Engine) -> None:
    with migrated.connect() as connection:
        for execution_id in ("a" * 32, "b" * 32):
            found = executions.phases_of(connection, execution_id)
            assert [p.phase for p in found] == list(PHASES)
            assert [(p.success, p.errors, p.outcome) for p in found] == [
                (True, (), None),
                (False, ("slow",), None),
                (True, (), "awaiting_approval"),
            ]
            assert found[0].data == {"n": 1}
            assert executions.last_seq(connection, execution_id) == 3


def test_the_old_table_is_gone_and_a_waiting_execution_shows_its_decision(
    migrated: sa.Engine,
) -> None:
    with migrated.begin() as connection:
        approvals.insert_approval(
            connection, approvals.Approval("a" * 32, "tidy", "trash", "pending", 1.0, 9e9)
        )
        listed = approvals.waiting(connection, 2.0, 10)
        assert not sa.inspect(connection).has_table("phase_results")
    assert [(w.execution_id, w.decision) for w in listed] == [("a" * 32, {"action": "trash"})]
