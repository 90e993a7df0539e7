"""Databases as an older loopengine left them, for the migration tests."""

from __future__ import annotations

import sqlalchemy as sa

from loopengine.store import MIGRATIONS
from loopengine.store import _tables as tables


def migrated_to(connection: sa.Connection, version: int) -> None:
    """Apply the migrations up to ``version`` and record them, as that version did."""
    tables.schema_version.create(connection)
    for migration in MIGRATIONS[:version]:
        migration.apply(connection)
        row = {"version": migration.version, "applied_at": 0.0, "description": "old"}
        connection.execute(tables.schema_version.insert().values(**row))
