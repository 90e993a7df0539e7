"""Human-approval gates."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from loopengine.store._record import Record, iso
from loopengine.store._tables import approvals, phase_results

__all__ = [
    "MAX_WAITING",
    "Approval",
    "decide_approval",
    "get_approval",
    "insert_approval",
    "pending_approvals",
    "waiting",
]

MAX_WAITING = 10_000
"""Most waiting executions one listing returns."""


@dataclass(frozen=True, slots=True)
class Approval(Record):
    """The gate an execution waits at for a person: ``pending`` until it is approved, rejected
    or escalated (at ``decided_at``), or past its ``deadline``."""

    execution_id: str
    loop_id: str
    action: str
    status: str
    requested_at: float
    deadline: float
    decided_at: float | None = None
    note: str | None = None


def insert_approval(connection: sa.Connection, approval: Approval) -> None:
    connection.execute(approvals.insert(), [approval.row()])


def get_approval(connection: sa.Connection, execution_id: str) -> Approval | None:
    query = sa.select(approvals).where(approvals.c.execution_id == execution_id)
    row = connection.execute(query).mappings().first()
    return Approval.from_row(row) if row else None


def decide_approval(
    connection: sa.Connection, execution_id: str, status: str, at: float, note: str | None
) -> bool:
    """Record a decision on a pending gate; False when it was not pending any more."""
    result = connection.execute(
        approvals.update()
        .where(approvals.c.execution_id == execution_id, approvals.c.status == "pending")
        .values(status=status, decided_at=at, note=note)
    )
    return result.rowcount == 1


def pending_approvals(connection: sa.Connection) -> list[Approval]:
    query = sa.select(approvals).where(approvals.c.status == "pending")
    return [Approval.from_row(row) for row in connection.execute(query).mappings()]


_WAITING = (
    sa.select(approvals, phase_results.c.data)
    .join(
        phase_results,
        sa.and_(
            phase_results.c.execution_id == approvals.c.execution_id,
            phase_results.c.phase == "decide",
        ),
        isouter=True,
    )
    .where(approvals.c.status == "pending")
    .order_by(approvals.c.requested_at, approvals.c.execution_id)
)


def waiting(connection: sa.Connection, now: float, limit: int) -> list[dict[str, Any]]:
    """What waits for a person, oldest first: each execution's decision, the plan it would run
    (params, affected items) and the time left before it escalates (``overdue`` past its
    deadline: the next command that runs loops escalates it)."""
    rows = connection.execute(_WAITING.limit(limit)).mappings()
    return [_waiting(row, now) for row in rows]


def _waiting(row: Mapping[Any, Any], now: float) -> dict[str, Any]:
    data = row["data"] or {}
    gate = data.get("approval") or {}
    return {
        "execution_id": row["execution_id"],
        "loop_id": row["loop_id"],
        "action": row["action"],
        "requested_at": iso(row["requested_at"]),
        "deadline": iso(row["deadline"]),
        "time_left_s": max(0.0, round(row["deadline"] - now, 3)),
        "overdue": row["deadline"] < now,
        "decision": data.get("decision"),
        "plan": gate.get("plan"),
    }
