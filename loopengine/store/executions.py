"""Executions and their phase results."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa

import loopengine.store._fastpath as fastpath
from loopengine.store._tables import executions, phase_results

__all__ = [
    "get_execution",
    "insert_execution",
    "insert_phases",
    "last_finished",
    "list_executions",
    "phases_of",
    "running_executions",
    "update_execution",
]

Row = dict[str, Any]

_INSERT = executions.insert()
_UPDATE = executions.update().where(executions.c.id == sa.bindparam("_id"))
_INSERT_PHASES = phase_results.insert()
_GET = sa.select(executions).where(executions.c.id == sa.bindparam("id"))
_PHASES = (
    sa.select(phase_results)
    .where(phase_results.c.execution_id == sa.bindparam("id"))
    .order_by(phase_results.c.seq)
)
_LAST_FINISHED = (
    sa.select(executions.c.outcome, executions.c.completed_at, executions.c.started_at)
    .where(executions.c.loop_id == sa.bindparam("loop_id"), executions.c.status == "finished")
    .order_by(executions.c.completed_at.desc())
    .limit(1)
)


def insert_execution(connection: sa.Connection, row: Mapping[str, Any]) -> None:
    fastpath.execute(connection, _INSERT, row)


def update_execution(connection: sa.Connection, execution_id: str, **values: Any) -> None:
    fastpath.execute(connection, _UPDATE, {"_id": execution_id, **values})


def insert_phases(connection: sa.Connection, rows: Sequence[Mapping[str, Any]]) -> None:
    if rows:
        fastpath.execute_many(connection, _INSERT_PHASES, rows)


def get_execution(connection: sa.Connection, execution_id: str) -> Row | None:
    row = connection.execute(_GET, {"id": execution_id}).mappings().first()
    return dict(row) if row else None


def phases_of(connection: sa.Connection, execution_id: str) -> list[Row]:
    return [dict(row) for row in connection.execute(_PHASES, {"id": execution_id}).mappings()]


def list_executions(
    connection: sa.Connection,
    *,
    loop_id: str | None = None,
    outcome: str | None = None,
    limit: int = 20,
) -> list[Row]:
    query = sa.select(executions).order_by(executions.c.started_at.desc()).limit(limit)
    if loop_id is not None:
        query = query.where(executions.c.loop_id == loop_id)
    if outcome is not None:
        query = query.where(executions.c.outcome == outcome)
    return [dict(row) for row in connection.execute(query).mappings()]


def running_executions(connection: sa.Connection) -> list[Row]:
    query = sa.select(executions).where(executions.c.status == "running")
    return [dict(row) for row in connection.execute(query).mappings()]


def last_finished(connection: sa.Connection, loop_id: str) -> Row | None:
    return fastpath.fetch_one(connection, _LAST_FINISHED, {"loop_id": loop_id})
