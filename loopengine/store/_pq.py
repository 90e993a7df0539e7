"""The fast path's statements on PostgreSQL, run on the client library (psycopg's ``pq`` layer).

psycopg's cursor spends ~55 µs of CPU a statement in Python (query conversion, its bookkeeping
of prepared statements, result description) where running the same prepared statement on
``PGconn.exec_prepared`` costs ~10 (2-core machine): a daemon runs ten of them an execution.
Each statement is prepared once per connection under a name of its own; parameters are dumped
and values loaded by the connection's own psycopg adapters (text format), so a row holds what
the cursor would have given. ``exec_prepared`` releases the GIL while it waits.
"""

from __future__ import annotations

import select
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
_ANSWERED = (*_DONE, pq.ExecStatus.PIPELINE_ABORTED)
_IDLE = pq.TransactionStatus.IDLE
_SESSION = "loopengine.pq"
_Key = tuple[str, tuple[int, ...]]
"""A prepared statement's text and parameter types."""


class Session:
    """One psycopg connection's prepared statements, dumpers and loaders."""

    __slots__ = ("driver", "dumpers", "encoding", "loaders", "made", "names", "pgconn")

    def __init__(self, driver: psycopg.Connection[Any]) -> None:
        self.driver = driver
        self.pgconn = driver.pgconn
        self.encoding = driver.info.encoding
        self.names: dict[_Key, bytes] = {}
        self.made = 0
        self.dumpers: dict[Any, Dumper] = {}
        self.loaders: dict[int, Callable[[bytes], Any]] = {}

    def run(self, sql: str, arguments: Sequence[Any]) -> pq.abc.PGresult:
        """The result of ``sql`` (``$n`` parameters) run with ``arguments``, in the connection's
        transaction (begun with it, in one round trip, when none is open). A statement is
        prepared once for each set of parameter types its values dump to, as psycopg does."""
        if self.pgconn.transaction_status == _IDLE:
            return self.run_all([(sql, arguments)])[0]
        key, params = self._bound(sql, arguments)
        name = self.names.get(key)
        if name is None:
            name = self._name()
            self.checked(self.pgconn.prepare(name, sql.encode(self.encoding), key[1]))
            self.names[key] = name
        return self.checked(self.pgconn.exec_prepared(name, params))

    def run_all(self, statements: Sequence[tuple[str, Sequence[Any]]]) -> list[pq.abc.PGresult]:
        """The results of ``statements``, run in order in one round trip (libpq's pipeline) in
        the connection's transaction, begun with them when none is open. When one fails, those
        after it do not run, and its error is raised once every answer was read."""
        results, failed = self.pipeline(statements)
        if failed is not None:
            self.checked(failed)
        return results

    def pipeline(
        self, statements: Sequence[tuple[str, Sequence[Any]]]
    ) -> tuple[list[pq.abc.PGresult], pq.abc.PGresult | None]:
        """``run_all``'s results, and the failed one (not raised), if any: those after it hold
        no rows. A connection that breaks, or any error, halfway is closed, never left in
        pipeline mode (SQLAlchemy then replaces it)."""
        pgconn = self.pgconn
        bound = [self._bound(sql, arguments) for sql, arguments in statements]
        made: dict[_Key, bytes] = {}
        answers: list[_Key | None] = []  # each answer's statement prepared, or None: a run
        begin = pgconn.transaction_status == _IDLE
        pgconn.enter_pipeline_mode()
        try:
            if begin:
                pgconn.send_query_params(b"BEGIN", None)
            for key, params in bound:
                name = self.names.get(key) or made.get(key)
                if name is None:
                    name = made[key] = self._name()
                    pgconn.send_prepare(name, key[0].encode(self.encoding), key[1])
                    answers.append(key)
                pgconn.send_query_prepared(name, params)
                answers.append(None)
            pgconn.pipeline_sync()
            self._send()
            began = self._next() if begin else None
            results = [(key, self._next()) for key in answers]
            self._next()
            pgconn.exit_pipeline_mode()
        except BaseException:
            self.driver.close()
            raise
        for made_for, result in results:
            if made_for is not None and result.status == pq.ExecStatus.COMMAND_OK:
                self.names[made_for] = made[made_for]
        answered = [result for result in (began, *(r for _, r in results)) if result is not None]
        failed = next((r for r in answered if r.status not in _ANSWERED), None)
        return [result for made_for, result in results if made_for is None], failed

    def commit(self) -> None:
        """Commit the open transaction (psycopg's own commit then finds none, and sends
        nothing): its commit costs several times this one's CPU."""
        if self.pgconn.transaction_status == pq.TransactionStatus.INTRANS:
            self.checked(self.pgconn.exec_(b"COMMIT"))

    def _send(self) -> None:
        """Send what the pipeline holds, reading answers meanwhile (libpq's rule for a pipeline
        on a non-blocking connection: a server blocked writing them would not read)."""
        pgconn = self.pgconn
        while pgconn.flush():
            if _wait(pgconn.socket, select.POLLIN | select.POLLOUT) & select.POLLIN:
                pgconn.consume_input()

    def _next(self) -> pq.abc.PGresult:
        """The pipeline's next answer, once it came (waiting releases the GIL)."""
        pgconn = self.pgconn
        while True:
            if pgconn.is_busy():
                _wait(pgconn.socket, select.POLLIN)
                pgconn.consume_input()
            elif (result := pgconn.get_result()) is not None:
                return result

    def _bound(self, sql: str, arguments: Sequence[Any]) -> tuple[_Key, list[Any]]:
        """The statement's key (its text and the types its values dump to) and its values
        dumped."""
        dumpers = [None if value is None else self._dumper(value) for value in arguments]
        types = tuple(0 if dumper is None else dumper.oid for dumper in dumpers)
        params = [
            None if dumper is None else dumper.dump(value)
            for dumper, value in zip(dumpers, arguments, strict=True)
        ]
        return (sql, types), params

    def _name(self) -> bytes:
        self.made += 1
        return f"loopengine_{self.made - 1}".encode()

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

    def checked(self, result: pq.abc.PGresult) -> pq.abc.PGresult:
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


def _wait(socket: int, events: int) -> int:
    """The events of ``events`` that came on ``socket`` (``poll``: any descriptor number)."""
    waiting = select.poll()
    waiting.register(socket, events)
    return next((happened for _, happened in waiting.poll()), 0)


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
