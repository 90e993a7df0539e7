"""One read-only query on any database URL (detect's ``database`` source, the ``query_db`` tool)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import sqlalchemy as sa

from loopengine.errors import StorageError
from loopengine.store._database import create_engine

__all__ = ["read_only_query", "select_from"]


def _deadline(connection: sa.Connection, timeout_s: float) -> None:
    """Stop the statement after ``timeout_s``: PostgreSQL's ``statement_timeout``, SQLite's
    progress handler (which interrupts a runaway recursive CTE)."""
    if connection.dialect.name == "postgresql":
        connection.exec_driver_sql(f"SET LOCAL statement_timeout = {int(timeout_s * 1000)}")
        return
    raw: Any = connection.connection.driver_connection
    if hasattr(raw, "set_progress_handler"):
        ends = time.monotonic() + timeout_s
        raw.set_progress_handler(lambda: int(time.monotonic() > ends), 10_000)


def read_only_query(
    url: str, statement: Callable[[sa.Dialect], str], limit: int, *, timeout_s: float = 30.0
) -> tuple[list[str], list[dict[str, Any]]]:
    """Columns and at most ``limit`` rows of ``statement(dialect)``, run in a read-only session
    that ends after ``timeout_s``."""
    engine = create_engine(url, read_only=True)
    try:
        with engine.connect() as connection:
            _deadline(connection, timeout_s)
            result = connection.exec_driver_sql(statement(engine.dialect))
            columns = list(result.keys())
            rows = [dict(zip(columns, row, strict=True)) for row in result.fetchmany(limit)]
    except sa.exc.SQLAlchemyError as exc:
        raise StorageError(str(getattr(exc, "orig", None) or exc)) from None
    finally:
        engine.dispose()
    return columns, rows


def select_from(url: str, table: str, where: str | None, limit: int) -> list[dict[str, Any]]:
    """At most ``limit`` rows of ``table`` (quoted as its database quotes a name) that match the
    clause ``where``, read as ``read_only_query`` reads."""

    def statement(dialect: sa.Dialect) -> str:
        quoted = dialect.identifier_preparer.quote(table)
        return f"SELECT * FROM {quoted}" + (f" WHERE {where}" if where else "") + f" LIMIT {limit}"

    return read_only_query(url, statement, limit)[1]
