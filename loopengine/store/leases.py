"""A worker's lease on a job: the fencing token every write of its execution is checked against
(``check_lease``), apart from the queue so that the execution's writes can check it too."""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa

from loopengine.errors import LeaseLost
from loopengine.store._tables import jobs

__all__ = ["RUNNING", "Lease", "check_lease", "held"]

RUNNING = "running"
"""The status of a claimed job."""


@dataclass(frozen=True, slots=True)
class Lease:
    """A worker's claim on a job, and its fencing token: the job's ``attempts`` once claimed,
    which the next claim (another daemon taking over an expired lease) raises."""

    job_id: str
    owner: str
    generation: int


def held(lease: Lease) -> tuple[sa.ColumnElement[bool], ...]:
    """The conditions a job row meets while ``lease`` holds it."""
    return (
        jobs.c.id == lease.job_id,
        jobs.c.owner == lease.owner,
        jobs.c.attempts == lease.generation,
        jobs.c.status == RUNNING,
    )


def check_lease(connection: sa.Connection, lease: Lease) -> None:
    """Raise ``LeaseLost`` unless ``lease`` still holds its job; the job's row stays locked until
    the transaction ends (PostgreSQL), so a takeover waits for what this transaction commits."""
    query = sa.select(jobs.c.id).where(*held(lease)).with_for_update()
    if connection.execute(query).first() is None:
        raise LeaseLost(f"job {lease.job_id} passed to another daemon: this one stops")
