"""The store: one writer thread owns the write connection, so transactions never interleave.

Every operation is a plain function of a SQLAlchemy ``Connection`` run in that thread inside one
transaction (``BEGIN IMMEDIATE`` on SQLite) and awaited by the caller: a batch of rows costs one
thread hop. A cancelled caller does not cancel a write already running: its outcome is unknown
to that caller, which is why executions carry idempotency keys.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import sqlalchemy as sa

from loopengine.errors import StorageError
from loopengine.store.database import WRITER, create_engine
from loopengine.store.migrations import migrate

__all__ = ["Store"]

T = TypeVar("T")


class Store:
    """Async access to the database through a single serialising worker thread."""

    def __init__(self, engine: sa.Engine) -> None:
        self.engine = engine
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="loopengine-store")
        self._connection: sa.Connection | None = None

    @classmethod
    async def open(cls, url: str) -> Store:
        """Connect to ``url`` and migrate its schema to the latest version."""
        store = cls(create_engine(url))
        try:
            await store.write(migrate)
        except BaseException:
            await store.close()
            raise
        return store

    def _run(self, operation: Callable[[sa.Connection], T], writer: bool) -> T:
        if self._connection is None:
            self._connection = self.engine.connect()
            self._connection.info[WRITER] = True
        connection = self._connection
        connection.info[WRITER] = writer
        try:
            with connection.begin():
                return operation(connection)
        except sa.exc.SQLAlchemyError as exc:
            raise StorageError(
                f"database error: {exc.orig if hasattr(exc, 'orig') else exc}"
            ) from exc

    async def _submit(self, operation: Callable[[sa.Connection], T], writer: bool) -> T:
        future = self._thread.submit(self._run, operation, writer)
        return await asyncio.wrap_future(future)

    async def write(self, operation: Callable[[sa.Connection], T]) -> T:
        """Run ``operation`` in one write transaction; committed when this returns."""
        return await self._submit(operation, writer=True)

    async def read(self, operation: Callable[[sa.Connection], T]) -> T:
        """Run ``operation`` in one read transaction."""
        return await self._submit(operation, writer=False)

    def _close_connection(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
        self.engine.dispose()

    async def close(self) -> None:
        await asyncio.wrap_future(self._thread.submit(self._close_connection))
        self._thread.shutdown(wait=True)
