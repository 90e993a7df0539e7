"""One read-only query on any database URL (detect's ``database`` source, the ``query_db`` tool)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import sqlalchemy as sa

from loopengine.errors import StorageError
from loopengine.store._database import create_engine

__all__ = ["read_only_query"]


def read_only_query(
    url: str, statement: Callable[[sa.Dialect], str], limit: int
) -> tuple[list[str], list[dict[str, Any]]]:
    """Columns and at most ``limit`` rows of ``statement(dialect)``, run in a read-only session."""
    engine = create_engine(url, read_only=True)
    try:
        with engine.connect() as connection:
            result = connection.exec_driver_sql(statement(engine.dialect))
            columns = list(result.keys())
            rows = [dict(zip(columns, row, strict=True)) for row in result.fetchmany(limit)]
    except sa.exc.SQLAlchemyError as exc:
        raise StorageError(str(getattr(exc, "orig", None) or exc)) from None
    finally:
        engine.dispose()
    return columns, rows
