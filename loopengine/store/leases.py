"""A worker's lease on a job: the fencing token every write of its execution is checked against
(``check_lease``), apart from the queue so that the execution's writes can check it too."""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa

import loopengine.store._fastpath as fastpath
from loopengine.errors import LeaseLost
from loopengine.store._database import transaction_set
from loopengine.store._tables import jobs

__all__ = [
    "HELD",
    "RUNNING",
    "STILL_HELD",
    "Lease",
    "check_lease",
    "forget_lease",
    "held",
    "lease_check",
    "lease_checked",
    "lost",
    "still_held",
]

RUNNING = "running"
"""The status of a claimed job."""


@dataclass(frozen=True, slots=True)
class Lease:
    """A worker's claim on a job, and its fencing token: the job's ``attempts`` once claimed,
    which the next claim (another daemon taking over an expired lease) raises."""

    job_id: str
    owner: str
    generation: int


HELD = (
    jobs.c.id == sa.bindparam("lease_job"),
    jobs.c.owner == sa.bindparam("lease_owner"),
    jobs.c.attempts == sa.bindparam("lease_generation"),
    jobs.c.status == RUNNING,
)
"""The conditions a job row meets while the lease ``held(lease)`` binds holds it (built once:
a statement built per call cost more than its round trip)."""


def held(lease: Lease) -> dict[str, object]:
    """The parameters of ``HELD`` for ``lease``."""
    return {
        "lease_job": lease.job_id,
        "lease_owner": lease.owner,
        "lease_generation": lease.generation,
    }


def lost(lease: Lease) -> LeaseLost:
    """The error of a write made under ``lease`` once it no longer holds its job."""
    return LeaseLost(f"job {lease.job_id} passed to another daemon: this one stops")


_CHECK = sa.select(jobs.c.id).where(*HELD).with_for_update()
_CHECKED = "loopengine_leases_checked"
"""Where a connection keeps the leases checked in its transaction (``check_lease``)."""


def check_lease(connection: sa.Connection, lease: Lease) -> None:
    """Raise ``LeaseLost`` unless ``lease`` still holds its job; the job's row stays locked until
    the transaction ends (PostgreSQL), so a takeover waits for what this transaction commits.
    Checked once a transaction: the commits of an execution grouped in one check it once."""
    if (checking := lease_check(connection, lease)) is not None:
        lease_checked(connection, lease, fastpath.execute(connection, *checking))


def lease_check(connection: sa.Connection, lease: Lease) -> fastpath.Bound | None:
    """The statement ``check_lease`` runs, for a caller that runs it with others; None when
    this transaction checked ``lease`` already. Its row count goes to ``lease_checked``."""
    return None if lease in transaction_set(connection, _CHECKED) else (_CHECK, held(lease))


def lease_checked(connection: sa.Connection, lease: Lease, count: int) -> None:
    """What ``lease_check``'s statement found (``count`` rows): ``LeaseLost`` when none."""
    still_held(lease, count)
    transaction_set(connection, _CHECKED).add(lease)


def still_held(lease: Lease, count: int) -> None:
    """A write under ``lease`` matched ``count`` rows: ``LeaseLost`` when none (the lease no
    longer holds its job)."""
    if not count:
        raise lost(lease)


STILL_HELD = _CHECK.exists()
"""The condition, for a write of its own, that the lease ``held(lease)`` binds still holds its
job, locking the job's row as ``check_lease`` does (``lease_checked`` records it once it
matched)."""


def forget_lease(connection: sa.Connection, lease: Lease) -> None:
    """``lease`` is to be checked again in this transaction (its job was just ended or given
    back)."""
    transaction_set(connection, _CHECKED).discard(lease)
