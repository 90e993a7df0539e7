"""The fast path's statements on PostgreSQL, run on the client library (psycopg's ``pq`` layer).

psycopg's cursor spends ~55 µs of CPU a statement in Python (query conversion, its bookkeeping
of prepared statements, result description) where running the same prepared statement on
``PGconn.exec_prepared`` costs ~10 (2-core machine): a daemon runs ten of them an execution.
Each statement is prepared once per connection under a name of its own; parameters are dumped
and values loaded by the connection's own psycopg adapters (text format), so a row holds what
the cursor would have given. ``exec_prepared`` releases the GIL while it waits.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import psycopg
import sqlalchemy as sa
from psycopg import pq
from psycopg.abc import Dumper
from psycopg.adapt import PyFormat

__all__ = ["Session", "session"]

_TEXT = PyFormat.TEXT
_DONE = (pq.ExecStatus.COMMAND_OK, pq.ExecStatus.TUPLES_OK)
_SESSION = "loopengine.pq"


class Session:
    """One psycopg connection's prepared statements, dumpers and loaders."""

    __slots__ = ("driver", "dumpers", "encoding", "loaders", "made", "names", "pgconn")

    def __init__(self, driver: psycopg.Connection[Any]) -> None:
        self.driver = driver
        self.pgconn = driver.pgconn
        self.encoding = driver.info.encoding
        self.names: dict[tuple[str, tuple[int, ...]], bytes] = {}
        self.made = 0
        self.dumpers: dict[Any, Dumper] = {}
        self.loaders: dict[int, Callable[[bytes], Any]] = {}

    def run(self, sql: str, arguments: Sequence[Any]) -> pq.abc.PGresult:
        """The result of ``sql`` (``$n`` parameters) run with ``arguments``, in the connection's
        transaction (begun here as psycopg begins it, when none is open). A statement is
        prepared once for each set of parameter types its values dump to, as psycopg does."""
        if self.pgconn.transaction_status == pq.TransactionStatus.IDLE:
            self._checked(self.pgconn.exec_(b"BEGIN"))
        dumpers = [None if value is None else self._dumper(value) for value in arguments]
        types = tuple(0 if dumper is None else dumper.oid for dumper in dumpers)
        name = self.names.get((sql, types))
        if name is None:
            name = f"loopengine_{self.made}".encode()
            self.made += 1
            self._checked(self.pgconn.prepare(name, sql.encode(self.encoding), types))
            self.names[sql, types] = name
        params = [
            None if dumper is None else dumper.dump(value)
            for dumper, value in zip(dumpers, arguments, strict=True)
        ]
        return self._checked(self.pgconn.exec_prepared(name, params))  # type: ignore[arg-type]

    def rows(self, result: pq.abc.PGresult) -> list[dict[str, object]]:
        """The result's rows as dicts of the values the cursor would have loaded."""
        value = result.get_value
        columns = [
            (i, (result.fname(i) or b"").decode(self.encoding), self._loader(result.ftype(i)))
            for i in range(result.nfields)
        ]
        return [
            {
                name: None if (data := value(row, i)) is None else load(data)
                for i, name, load in columns
            }
            for row in range(result.ntuples)
        ]

    def _dumper(self, value: Any) -> Dumper:
        kind = type(value)
        base = self.dumpers.get(kind)
        if base is None:
            made = self.driver.adapters.get_dumper(kind, _TEXT)(kind, self.driver)
            base = self.dumpers[kind] = made
        key = base.get_key(value, _TEXT)
        if key is kind:
            return base
        dumper = self.dumpers.get(key)
        if dumper is None:
            dumper = self.dumpers[key] = base.upgrade(value, _TEXT)
        return dumper

    def _loader(self, oid: int) -> Callable[[bytes], Any]:
        load = self.loaders.get(oid)
        if load is None:
            kind = self.driver.adapters.get_loader(oid, pq.Format.TEXT)
            load = kind(oid, self.driver).load if kind is not None else self._text
            self.loaders[oid] = load
        return load

    def _text(self, value: bytes) -> str:
        return value.decode(self.encoding)

    def _checked(self, result: pq.abc.PGresult) -> pq.abc.PGresult:
        """``result``, or the error psycopg's cursor would have raised for it."""
        if result.status in _DONE:
            return result
        if self.pgconn.status != pq.ConnStatus.OK:
            message = self.pgconn.error_message.decode(self.encoding, "replace").strip()
            raise psycopg.OperationalError(message or "the connection to the server was lost")
        error = psycopg.errors.error_from_result(result, encoding=self.encoding)
        if isinstance(error, psycopg.errors.InvalidSqlStatementName):
            self.names.clear()
        raise error


def session(connection: sa.Connection) -> Session | None:
    """The connection's session, made the first time; None when its transactions are not
    psycopg's plain ``BEGIN`` (autocommit, an isolation level or access mode set on it)."""
    driver = connection.connection.driver_connection
    if not isinstance(driver, psycopg.Connection):
        return None
    if (
        driver.autocommit
        or driver.isolation_level is not None
        or driver.read_only is not None
        or driver.deferrable is not None
    ):
        return None
    info = connection.connection.info
    kept = info.get(_SESSION)
    if kept is None or kept.driver is not driver:
        kept = info[_SESSION] = Session(driver)
    return kept
