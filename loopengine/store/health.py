"""LLM node health, remembered across processes (cooled-down nodes stay skipped)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import sqlalchemy as sa

from loopengine.store._record import Record
from loopengine.store._tables import node_health

__all__ = ["NodeHealthRow", "load_health", "save_health"]


@dataclass(frozen=True, slots=True)
class NodeHealthRow(Record):
    """A node's consecutive failures, until when it is cooled down, and its last error."""

    node: str
    failures: int
    cooled_until: float
    last_error: str | None
    updated_at: float


def load_health(connection: sa.Connection) -> list[NodeHealthRow]:
    """Every node's failures, cooldown and last error."""
    rows = connection.execute(sa.select(node_health)).mappings()
    return [NodeHealthRow.from_row(row) for row in rows]


def save_health(connection: sa.Connection, rows: Sequence[NodeHealthRow]) -> None:
    """Replace the recorded health with ``rows`` (one per node)."""
    connection.execute(node_health.delete())
    if rows:
        connection.execute(node_health.insert(), [row.row() for row in rows])
