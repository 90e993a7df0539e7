"""What differs between the store's two databases and has one answer for both."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

__all__ = ["dialect_insert"]


def dialect_insert(connection: sa.Connection, table: sa.Table) -> Any:
    """The dialect's ``INSERT`` (both have ``ON CONFLICT``); PostgreSQL's loads only there."""
    if connection.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as postgresql_insert

        return postgresql_insert(table)
    from sqlalchemy.dialects.sqlite import insert as sqlite_insert

    return sqlite_insert(table)
