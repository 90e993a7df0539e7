"""Job envelopes, unique by idempotency key."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa

from loopengine.store.tables import envelopes

__all__ = ["envelope_by_key", "get_envelope", "insert_envelope"]


def insert_envelope(connection: sa.Connection, row: Mapping[str, Any]) -> None:
    connection.execute(envelopes.insert(), [dict(row)])


def envelope_by_key(connection: sa.Connection, idempotency_key: str) -> dict[str, Any] | None:
    query = sa.select(envelopes).where(envelopes.c.idempotency_key == idempotency_key)
    row = connection.execute(query).mappings().first()
    return dict(row) if row else None


def get_envelope(connection: sa.Connection, job_id: str) -> dict[str, Any] | None:
    row = connection.execute(sa.select(envelopes).where(envelopes.c.job_id == job_id)).mappings()
    first = row.first()
    return dict(first) if first else None
