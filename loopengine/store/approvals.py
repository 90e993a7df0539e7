"""Human-approval gates."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from loopengine._json import JSONObject
from loopengine.store._record import Record, iso
from loopengine.store._tables import approvals, phases

__all__ = [
    "MAX_WAITING",
    "Approval",
    "WaitingApproval",
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
    sa.select(approvals)
    .where(approvals.c.status == "pending")
    .order_by(approvals.c.requested_at, approvals.c.execution_id)
)


@dataclass(frozen=True, slots=True)
class WaitingApproval:
    """An execution waiting for a person: its decision, the plan it would run (params, affected
    items) and the time left before it escalates (``overdue`` past its deadline)."""

    execution_id: str
    loop_id: str
    action: str
    requested_at: float
    deadline: float
    time_left_s: float
    overdue: bool
    decision: JSONObject | None
    plan: list[JSONObject] | None

    @classmethod
    def of(cls, gate: Approval, decided: Mapping[str, Any] | None, now: float) -> WaitingApproval:
        """``gate`` with what its execution's decide phase left (``decided``)."""
        data = decided or {}
        requested = data.get("approval") or {}
        return cls(
            gate.execution_id,
            gate.loop_id,
            gate.action,
            gate.requested_at,
            gate.deadline,
            max(0.0, round(gate.deadline - now, 3)),
            gate.deadline < now,
            data.get("decision"),
            requested.get("plan"),
        )

    def as_json(self) -> JSONObject:
        """What ``loopengine approvals --json`` and ``GET /approvals`` list (times in ISO)."""
        return {
            "execution_id": self.execution_id,
            "loop_id": self.loop_id,
            "action": self.action,
            "requested_at": iso(self.requested_at),
            "deadline": iso(self.deadline),
            "time_left_s": self.time_left_s,
            "overdue": self.overdue,
            "decision": self.decision,
            "plan": self.plan,
        }


def waiting(connection: sa.Connection, now: float, limit: int) -> list[WaitingApproval]:
    """What waits for a person at ``now``, oldest first (an overdue one is escalated by the next
    command that runs loops)."""
    gates = [Approval.from_row(row) for row in connection.execute(_WAITING.limit(limit)).mappings()]
    if not gates:
        return []
    ids = [gate.execution_id for gate in gates]
    committed = (
        sa.select(phases.c.execution_id, phases.c.results)
        .where(phases.c.execution_id.in_(ids))
        .order_by(phases.c.execution_id, phases.c.seq)
    )
    decided: dict[str, JSONObject] = {}
    for execution_id, results in connection.execute(committed):
        for item in results:
            if item["phase"] == "decide":
                decided.setdefault(execution_id, item["data"])
    return [WaitingApproval.of(gate, decided.get(gate.execution_id), now) for gate in gates]
