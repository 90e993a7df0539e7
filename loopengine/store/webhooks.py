"""Webhook bodies held against replays: the first verified delivery sending a body holds it until
its hook's tolerance ends, and another delivery sending it meanwhile is answered as that one."""

from __future__ import annotations

import sqlalchemy as sa

from loopengine.store._dialect import dialect_insert
from loopengine.store._tables import webhook_bodies

__all__ = ["hold_body"]


def hold_body(connection: sa.Connection, key: str, job_id: str, now: float, until: float) -> str:
    """Hold the body ``key`` for the delivery queued as job ``job_id`` until ``until``, unless
    another delivery holds it now; the job of the delivery holding it. Holds past their time are
    forgotten first (one indexed delete)."""
    connection.execute(webhook_bodies.delete().where(webhook_bodies.c.expires_at <= now))
    held = {"key": key, "job_id": job_id, "expires_at": until}
    connection.execute(
        dialect_insert(connection, webhook_bodies).values(**held).on_conflict_do_nothing()
    )
    holder = sa.select(webhook_bodies.c.job_id).where(webhook_bodies.c.key == key)
    return str(connection.execute(holder).scalar_one())
