"""Human-approval gates."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from loopengine.store._tables import approvals

__all__ = ["decide_approval", "get_approval", "insert_approval", "pending_approvals"]


def insert_approval(connection: sa.Connection, row: dict[str, Any]) -> None:
    connection.execute(approvals.insert(), [row])


def get_approval(connection: sa.Connection, execution_id: str) -> dict[str, Any] | None:
    query = sa.select(approvals).where(approvals.c.execution_id == execution_id)
    row = connection.execute(query).mappings().first()
    return dict(row) if row else None


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


def pending_approvals(connection: sa.Connection) -> list[dict[str, Any]]:
    query = sa.select(approvals).where(approvals.c.status == "pending")
    return [dict(row) for row in connection.execute(query).mappings()]
