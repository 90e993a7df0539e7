"""The audit trail and the index of stored artifacts."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from loopengine.store import fastpath
from loopengine.store.tables import artifacts, audit

__all__ = ["expired_artifacts", "insert_artifact", "insert_audit", "remove_artifacts"]

_INSERT_AUDIT = audit.insert()
_INSERT_ARTIFACT = artifacts.insert()


def insert_audit(
    connection: sa.Connection, execution_id: str, loop_id: str, record: dict[str, Any], at: float
) -> None:
    fastpath.execute(
        connection,
        _INSERT_AUDIT,
        {"execution_id": execution_id, "loop_id": loop_id, "record": record, "created_at": at},
    )


def insert_artifact(connection: sa.Connection, row: dict[str, Any]) -> None:
    connection.execute(_INSERT_ARTIFACT, row)


def expired_artifacts(connection: sa.Connection, now: float) -> list[dict[str, Any]]:
    query = sa.select(artifacts).where(
        artifacts.c.expires_at.is_not(None), artifacts.c.expires_at <= now
    )
    return [dict(row) for row in connection.execute(query).mappings()]


def remove_artifacts(connection: sa.Connection, ids: list[int]) -> None:
    connection.execute(artifacts.delete().where(artifacts.c.id.in_(ids)))
