"""The audit trail and the index of stored artifacts."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

import loopengine.store._fastpath as fastpath
from loopengine.store._record import Record
from loopengine.store._tables import artifacts, audit

__all__ = [
    "Artifact",
    "AuditRecord",
    "artifacts_of",
    "audit_of",
    "insert_artifact",
    "inserting_audit",
]

_INSERT_AUDIT = audit.insert()
_INSERT_ARTIFACT = artifacts.insert()


@dataclass(frozen=True, slots=True)
class Artifact(Record):
    """Where one artifact of an execution was stored, and until when it is kept."""

    execution_id: str
    loop_id: str
    name: str
    type: str
    storage: str
    location: str
    indexed: bool
    created_at: float
    expires_at: float | None = None


@dataclass(frozen=True, slots=True)
class AuditRecord(Record):
    """One line of a loop's audit trail: the record (its fields as the loop chose) and when."""

    record: dict[str, Any]
    created_at: float


def inserting_audit(
    execution_id: str, loop_id: str, record: Mapping[str, object], at: float
) -> fastpath.Bound:
    """The statement writing one audit record of ``execution_id``."""
    values = {"execution_id": execution_id, "loop_id": loop_id, "record": record, "created_at": at}
    return _INSERT_AUDIT, values


def insert_artifact(connection: sa.Connection, artifact: Artifact) -> None:
    connection.execute(_INSERT_ARTIFACT, artifact.row())


def audit_of(connection: sa.Connection, loop_id: str, limit: int) -> list[AuditRecord]:
    """The newest ``limit`` audit records of ``loop_id`` (record and when it was written)."""
    query = (
        sa.select(audit.c.record, audit.c.created_at)
        .where(audit.c.loop_id == loop_id)
        .order_by(audit.c.id.desc())
        .limit(limit)
    )
    return [AuditRecord.from_row(row) for row in connection.execute(query).mappings()]


def artifacts_of(connection: sa.Connection, execution_id: str) -> list[Artifact]:
    """Where the artifacts of one execution were stored."""
    query = sa.select(artifacts).where(artifacts.c.execution_id == execution_id)
    return [Artifact.from_row(row) for row in connection.execute(query).mappings()]
