"""Job envelopes, unique by idempotency key."""

from __future__ import annotations

import sqlalchemy as sa

import loopengine.store._fastpath as fastpath
from loopengine.store._record import JobEnvelope
from loopengine.store._tables import envelopes

__all__ = ["execution_of_key", "get_envelope", "insert_envelope"]

_INSERT = envelopes.insert()
_BY_KEY = sa.select(envelopes.c.execution_id).where(
    envelopes.c.idempotency_key == sa.bindparam("key")
)
_BY_ID = sa.select(envelopes).where(envelopes.c.job_id == sa.bindparam("job_id"))


def insert_envelope(
    connection: sa.Connection, envelope: JobEnvelope, execution_id: str, created_at: float
) -> None:
    """Record the envelope an execution runs; a reused idempotency key fails the transaction."""
    fastpath.execute(connection, _INSERT, envelope.row(execution_id, created_at))


def execution_of_key(connection: sa.Connection, idempotency_key: str) -> str | None:
    """The execution that took ``idempotency_key``, if any did."""
    row = fastpath.fetch_one(connection, _BY_KEY, {"key": idempotency_key})
    return None if row is None else str(row["execution_id"])


def get_envelope(connection: sa.Connection, job_id: str) -> JobEnvelope | None:
    row = connection.execute(_BY_ID, {"job_id": job_id}).mappings().first()
    return JobEnvelope.from_row(row) if row else None
