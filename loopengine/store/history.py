"""Jobs that ended leave the queue for its history: the daemons sweep them over in batches, so
the ``jobs`` table every claim reads, locks and updates holds what is queued, running or just
ended, however many jobs ran before.

Ending a job writes nothing more (the sweep runs apart from executions, every few seconds);
readers of a job that ended (by id, by idempotency key, retention) read both tables.
"""

from __future__ import annotations

import sqlalchemy as sa

import loopengine.store._fastpath as fastpath
from loopengine.store._tables import job_history, jobs

__all__ = ["AFTER_S", "BATCH", "ENDED", "sweep"]

ENDED = ("done", "skipped")
"""The statuses of a job that will not run again."""
AFTER_S = 2.0
"""How long an ended job stays in the queue before it is swept (so one sweep moves many)."""
BATCH = 500
"""Most jobs moved by one sweep: one statement's work, short beside the writes it delays."""

_COLUMNS = [column.name for column in jobs.c]
_ENDED = jobs.c.status.in_([sa.literal_column(f"'{status}'") for status in ENDED])
"""Written out, not bound: the statement runs through ``_fastpath``, which binds no list."""
_SWEPT = sa.and_(
    _ENDED,
    sa.func.coalesce(jobs.c.finished_at, jobs.c.created_at) < sa.bindparam("before"),
)
_FIRST_SWEPT = (
    sa.select(jobs.c.id).where(_SWEPT).limit(sa.bindparam("most")).with_for_update(skip_locked=True)
)
_MOVED = jobs.delete().where(jobs.c.id.in_(_FIRST_SWEPT)).returning(*jobs.c).cte("moved")
_MOVE_POSTGRESQL = job_history.insert().from_select(_COLUMNS, sa.select(_MOVED))
"""Delete and insert in one statement (a writable CTE): the rows a concurrent sweep locked are
skipped, those it moved are gone, so each row is moved once."""
_COPY_SQLITE = job_history.insert().from_select(
    _COLUMNS, sa.select(jobs).where(jobs.c.id.in_(_FIRST_SWEPT))
)
_COPIED = sa.select(job_history.c.id).where(job_history.c.id == jobs.c.id).exists()
_FORGET_SQLITE = jobs.delete().where(_ENDED, _COPIED)
"""The ended jobs just copied into history, out of the queue (SQLite's ``BEGIN IMMEDIATE``
serialises sweeps: the copy and the delete see the same rows)."""


def sweep(connection: sa.Connection, before: float, most: int = BATCH) -> int:
    """Move up to ``most`` jobs that ended before ``before`` from the queue to its history; how
    many moved (``most``: more may be left)."""
    bound = {"before": before, "most": most}
    if connection.dialect.name == "postgresql":
        return fastpath.execute(connection, _MOVE_POSTGRESQL, bound)
    moved = fastpath.execute(connection, _COPY_SQLITE, bound)
    if moved:
        fastpath.execute(connection, _FORGET_SQLITE, {})
    return moved
