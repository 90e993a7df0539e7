"""The audit trail and the index of stored artifacts."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from loopengine.store import _fastpath as fastpath
from loopengine.store._tables import artifacts, audit

__all__ = ["insert_artifact", "insert_audit"]

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
