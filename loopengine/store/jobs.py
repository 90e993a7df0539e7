"""Job envelopes, unique by idempotency key: one row per job or execution, which both name by
its ``job_id``; its ``execution_id`` is the execution that took the key."""

from __future__ import annotations

import sqlalchemy as sa

import loopengine.store._fastpath as fastpath
from loopengine.errors import ContractError
from loopengine.store._record import ExecutionRow, JobEnvelope
from loopengine.store._tables import envelopes
from loopengine.store.leases import STILL_HELD, Lease, held

__all__ = [
    "TAKING_LEASED",
    "execution_of_key",
    "get_envelope",
    "insert_envelope",
    "inserting_envelope",
    "taking_leased_envelope",
]

_INSERT = envelopes.insert()
_BY_KEY = sa.select(envelopes.c.execution_id).where(
    envelopes.c.idempotency_key == sa.bindparam("key")
)
_BY_ID = sa.select(envelopes).where(envelopes.c.job_id == sa.bindparam("job_id"))
_TAKE = (
    envelopes.update()
    .where(envelopes.c.job_id == sa.bindparam("_job_id"), envelopes.c.execution_id.is_(None))
    .values(execution_id=sa.bindparam("_execution_id"))
)
_TAKE_LEASED = _TAKE.where(STILL_HELD)
TAKING_LEASED = _TAKE_LEASED.returning(envelopes.c.job_id).cte("taken")
"""``taking_leased_envelope``'s update, for PostgreSQL, as a common table expression: a write
reading it is made only once the envelope is taken, in the same statement."""


def inserting_envelope(envelope: JobEnvelope, row: ExecutionRow) -> fastpath.Bound:
    """The statement recording the envelope the execution ``row`` runs; a reused idempotency
    key fails the transaction."""
    return _INSERT, envelope.row(row.id, row.started_at, row.started_by)


def insert_envelope(connection: sa.Connection, envelope: JobEnvelope, row: ExecutionRow) -> None:
    fastpath.execute(connection, *inserting_envelope(envelope, row))


def execution_of_key(connection: sa.Connection, idempotency_key: str) -> str | None:
    """The execution that took ``idempotency_key``, if any did; ``ContractError`` when a queued
    job holds it and has not run yet (that job's run will be the key's)."""
    row = fastpath.fetch_one(connection, _BY_KEY, {"key": idempotency_key})
    if row is None:
        return None
    if row["execution_id"] is None:
        raise ContractError(
            f"idempotency key {idempotency_key!r} is held by a queued job that has not run yet: "
            "let the daemon run it, or use another key"
        )
    return str(row["execution_id"])


def get_envelope(connection: sa.Connection, job_id: str) -> JobEnvelope | None:
    row = connection.execute(_BY_ID, {"job_id": job_id}).mappings().first()
    return JobEnvelope.from_row(row) if row else None


def taking_leased_envelope(lease: Lease, execution_id: str) -> fastpath.Bound:
    """The statement letting ``execution_id`` take the stored envelope of the job ``lease``
    holds (its key with it) while the lease holds and no execution took it; it checks the lease
    as ``check_lease`` does (its row count is 1 then)."""
    return _TAKE_LEASED, {"_job_id": lease.job_id, "_execution_id": execution_id, **held(lease)}
