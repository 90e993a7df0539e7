"""Job envelopes, unique by idempotency key."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa

import loopengine.store._fastpath as fastpath
from loopengine.store._tables import envelopes

__all__ = ["envelope_by_key", "get_envelope", "insert_envelope"]

_INSERT = envelopes.insert()
_BY_KEY = sa.select(envelopes).where(envelopes.c.idempotency_key == sa.bindparam("key"))
_BY_ID = sa.select(envelopes).where(envelopes.c.job_id == sa.bindparam("job_id"))


def insert_envelope(connection: sa.Connection, row: Mapping[str, Any]) -> None:
    fastpath.execute(connection, _INSERT, row)


def envelope_by_key(connection: sa.Connection, idempotency_key: str) -> dict[str, Any] | None:
    return fastpath.fetch_one(connection, _BY_KEY, {"key": idempotency_key})


def get_envelope(connection: sa.Connection, job_id: str) -> dict[str, Any] | None:
    row = connection.execute(_BY_ID, {"job_id": job_id}).mappings().first()
    return dict(row) if row else None
