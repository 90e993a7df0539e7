"""LLM node health, remembered across processes (cooled-down nodes stay skipped)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa

from loopengine.store._tables import node_health

__all__ = ["load_health", "save_health"]


def load_health(connection: sa.Connection) -> list[dict[str, Any]]:
    """Every node's failures, cooldown and last error."""
    return [dict(row) for row in connection.execute(sa.select(node_health)).mappings()]


def save_health(connection: sa.Connection, rows: Sequence[dict[str, Any]]) -> None:
    """Replace the recorded health with ``rows`` (one per node)."""
    connection.execute(node_health.delete())
    if rows:
        connection.execute(node_health.insert(), list(rows))
