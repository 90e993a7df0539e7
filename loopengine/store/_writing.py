"""One write without an event loop, for the commands that only feed the store (``emit``,
``metrics record``): scripts call them in loops, so they start without the async store, the
engine or the loop models, which a single row does not need."""

from __future__ import annotations

from collections.abc import Callable
from typing import Concatenate, ParamSpec, TypeVar

import sqlalchemy as sa

from loopengine.store._database import BUSY_TIMEOUT_MS, WRITER, create_engine, translated
from loopengine.store._migrations import migrate

__all__ = ["write_once"]

T = TypeVar("T")
P = ParamSpec("P")


def write_once(
    url: str,
    operation: Callable[Concatenate[sa.Connection, P], T],
    *args: P.args,
    **kwargs: P.kwargs,
) -> T:
    """Run ``operation(connection, *args, **kwargs)`` in one write transaction of the store at
    ``url``, created or migrated first as ``Store.open`` does; another process's write lock is
    waited for as the store's worker thread waits for it."""
    engine = create_engine(url)
    driver_error: type[BaseException] = engine.dialect.loaded_dbapi.Error
    try:
        with engine.connect() as connection:
            connection.info[WRITER] = True
            if engine.dialect.name == "sqlite":
                driver = connection.connection.driver_connection
                assert driver is not None
                driver.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            with connection.begin():
                migrate(connection)
                return operation(connection, *args, **kwargs)
    except (sa.exc.SQLAlchemyError, driver_error) as exc:  # BEGIN IMMEDIATE runs on the driver
        raise translated(exc, driver_error) from None
    finally:
        engine.dispose()
