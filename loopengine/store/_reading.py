"""The store read without an event loop, for the commands that only read (``history``,
``show``, ``status``, the listings): one connection, each read in its own transaction, nothing
migrated or written. They start faster without the async machinery they would not use."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Concatenate, ParamSpec, TypeVar

import sqlalchemy as sa

from loopengine.errors import StorageError
from loopengine.store._database import create_engine, translated
from loopengine.store._migrations import MIGRATIONS, check_readable

__all__ = ["Reader", "open_read_only"]

T = TypeVar("T")
P = ParamSpec("P")


class Reader:
    """Runs read operations (the repositories' functions of a connection) one after another."""

    def __init__(self, connection: sa.Connection, schema_version: int) -> None:
        self._connection = connection
        self._driver_error: type[BaseException] = connection.dialect.loaded_dbapi.Error
        self.schema_version = schema_version
        """What the database holds: 0 when it was never migrated (nothing recorded yet)."""

    def read(
        self,
        operation: Callable[Concatenate[sa.Connection, P], T],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T:
        """Run ``operation(connection, *args, **kwargs)`` in a read transaction (repositories
        may use the driver's cursor: its errors are translated too)."""
        try:
            with self._connection.begin():
                return operation(self._connection, *args, **kwargs)
        except (sa.exc.SQLAlchemyError, self._driver_error) as exc:
            found = translated(exc, self._driver_error)
            latest = MIGRATIONS[-1].version
            if 0 < self.schema_version < latest:
                found = StorageError(
                    f"{found}: the store's schema is version {self.schema_version}, older than "
                    f"this loopengine's ({latest}); a command that runs loops (`loopengine run`, "
                    "`loopengine daemon`) upgrades it"
                )
            raise found from None


@contextmanager
def open_read_only(url: str) -> Iterator[Reader]:
    """The database at ``url`` opened read-only; a newer schema than this loopengine knows is
    refused."""
    engine = create_engine(url, read_only=True)
    try:
        with engine.connect() as connection:
            reader = Reader(connection, 0)
            reader.schema_version = reader.read(check_readable)
            yield reader
    except sa.exc.SQLAlchemyError as exc:
        raise translated(exc) from None
    finally:
        engine.dispose()
