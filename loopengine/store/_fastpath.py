"""The hot path's statements, compiled once per dialect and run on the DBAPI cursor.

Results are plain DBAPI values (booleans come back as 0/1 on SQLite), so only statements whose
results need no type processing besides JSON go through here.

SQLAlchemy Core builds them; executing a compiled string with positional parameters skips the
per-call compile-cache lookup and result processing that cost ~20 µs a statement. JSON columns
are (de)serialised here, as SQLAlchemy's JSON type would, and ``MaskedText`` masked as its type
would. Only module-level statements go through this path, so caching them by identity is safe.
On PostgreSQL they are compiled with ``$n`` parameters and run by ``_pq`` (a connection in
autocommit, and ``execute_many``, on psycopg's ``RawCursor``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from loopengine.store._database import MaskedText, dumps, masked
from loopengine.store._dialect import dialect_insert

if TYPE_CHECKING:
    from loopengine.store._pq import Session

__all__ = [
    "Bound",
    "Encoded",
    "commit",
    "execute",
    "execute_all",
    "execute_many",
    "fetch_all",
    "fetch_one",
    "insert_new",
]


class Encoded(str):
    """JSON already encoded, for a JSON column (written as is)."""

    __slots__ = ()

    @classmethod
    def of(cls, value: Any) -> Encoded:
        """``value`` encoded as the store encodes JSON columns."""
        return cls(dumps(value))


Encode = Callable[[Any], Any]
"""How a parameter is written: JSON encoded, text masked."""

Bound = tuple[Any, Mapping[str, Any]]
"""A statement this module runs and its parameters (``execute_all`` runs several)."""


@dataclass(frozen=True, slots=True)
class _Prepared:
    sql: str
    names: tuple[str, ...] | None
    encoders: Mapping[str, Encode]
    json_results: frozenset[str]
    constants: Mapping[str, Any]
    order: tuple[tuple[str, Encode | None], ...] = ()
    """Each positional parameter's name, and how it is written when its column needs it."""

    def arguments(self, params: Mapping[str, Any]) -> Sequence[Any] | dict[str, Any]:
        if self.names is None:
            names = {*params, *self.constants}
            return {name: self._value(name, params, self.encoders.get(name)) for name in names}
        return self.positional(params)

    def positional(self, params: Mapping[str, Any]) -> list[Any]:
        if not self.constants:
            return [encode(params[name]) if encode else params[name] for name, encode in self.order]
        return [self._value(name, params, encode) for name, encode in self.order]

    def _value(self, name: str, params: Mapping[str, Any], encode: Encode | None) -> Any:
        item = params[name] if name in params else self.constants.get(name)
        return encode(item) if encode else item


_EMPTY: dict[type, Encoded] = {dict: Encoded("{}"), list: Encoded("[]")}
"""Empty objects and lists (most envelopes' constraints, most phases' errors) as written."""


def _json(item: Any) -> Any:
    if item is None or isinstance(item, Encoded):
        return item
    if not item and (empty := _EMPTY.get(type(item))) is not None:
        return empty
    return dumps(item)


_CACHE: dict[tuple[int, str, frozenset[str]], _Prepared] = {}


def _is_json(type_: Any) -> bool:
    return isinstance(type_, sa.JSON)


def _encoder(type_: Any) -> Encode | None:
    if _is_json(type_):
        return _json
    return masked if isinstance(type_, MaskedText) else None


_DOLLAR: dict[type, sa.Dialect] = {}


def _compiling(dialect: sa.Dialect) -> sa.Dialect:
    """The dialect statements are compiled with: on PostgreSQL, one writing ``$n`` parameters
    (what the server prepares), else the connection's."""
    if dialect.name != "postgresql":
        return dialect
    kind = type(dialect)
    dollar = _DOLLAR.get(kind)
    if dollar is None:
        dollar = _DOLLAR[kind] = kind(paramstyle="numeric_dollar")  # type: ignore[call-arg]
        dollar.server_version_info = dialect.server_version_info
    return dollar


def _prepare(connection: sa.Connection, statement: Any, keys: frozenset[str]) -> _Prepared:
    dialect = connection.dialect
    cache_key = (id(statement), dialect.name, keys)
    prepared = _CACHE.get(cache_key)
    if prepared is None:
        compiled = statement.compile(dialect=_compiling(dialect), column_keys=sorted(keys) or None)
        positional = compiled.positiontup is not None
        encoders = {
            name: encode
            for name, bind in compiled.binds.items()
            if (encode := _encoder(bind.type)) is not None
        }
        selected = getattr(statement, "selected_columns", ())
        json_results = frozenset(c.key for c in selected if _is_json(c.type))
        constants = {
            name: bind.effective_value
            for name, bind in compiled.binds.items()
            if name not in keys and not bind.required
        }
        names = tuple(compiled.positiontup or ()) if positional else None
        prepared = _Prepared(
            compiled.string,
            names,
            encoders,
            json_results,
            constants,
            tuple((name, encoders.get(name)) for name in names or ()),
        )
        _CACHE[cache_key] = prepared
    return prepared


def _cursor(connection: sa.Connection) -> Any:
    driver: Any = connection.connection.driver_connection
    if connection.dialect.name == "postgresql":
        import psycopg

        return psycopg.RawCursor(driver)
    return driver.cursor()


def execute(connection: sa.Connection, statement: Any, params: Mapping[str, Any]) -> int:
    """Run one statement; returns the row count (of a statement returning rows, the rows it
    read: SQLite's driver gives none)."""
    prepared = _prepare(connection, statement, frozenset(params))
    if (session := _session(connection)) is not None:
        return session.run(prepared.sql, prepared.positional(params)).command_tuples or 0
    cursor = _cursor(connection)
    try:
        cursor.execute(prepared.sql, prepared.arguments(params))
        return len(cursor.fetchall()) if cursor.description else int(cursor.rowcount)
    finally:
        cursor.close()


def execute_all(
    connection: sa.Connection,
    statements: Sequence[Bound],
    then: Sequence[Bound] = (),
    *,
    fence: Callable[[int], None] | None = None,
) -> tuple[list[int], list[list[dict[str, Any]]]]:
    """Run ``statements`` in order, then the queries ``then``: the statements' row counts, and
    each query's rows as ``fetch_all`` reads them. On PostgreSQL all go in one round trip
    (libpq's pipeline): the first that fails raises, and those after it do not run. ``fence``
    is told the first statement's row count before an error of those after it is raised (a
    lease's check: what raises ``LeaseLost`` comes first)."""
    if (session := _session(connection)) is None:
        counts = []
        for statement, params in statements:
            counts.append(execute(connection, statement, params))
            if fence is not None and len(counts) == 1:
                fence(counts[0])
        return counts, [fetch_all(connection, statement, params) for statement, params in then]
    runs = [*statements, *then]
    prepared = [_prepare(connection, statement, frozenset(params)) for statement, params in runs]
    bound = [(made.sql, made.positional(run[1])) for made, run in zip(prepared, runs, strict=True)]
    results, failed = session.pipeline(bound)
    if fence is not None and statements and results[0] is not failed:
        fence(results[0].command_tuples or 0)
    if failed is not None:
        session.checked(failed)
    counts = [result.command_tuples or 0 for result in results[: len(statements)]]
    queries = zip(prepared[len(statements) :], results[len(statements) :], strict=True)
    return counts, [_decoded(made, session.rows(result)) for made, result in queries]


def execute_many(
    connection: sa.Connection, statement: Any, rows: Sequence[Mapping[str, Any]]
) -> None:
    """Run one statement for each of ``rows`` (which share their keys); a single row runs as
    ``execute`` (the driver's ``executemany`` costs more for one)."""
    if len(rows) == 1:
        execute(connection, statement, rows[0])
        return
    if not rows:
        return
    prepared = _prepare(connection, statement, frozenset(rows[0]))
    cursor = _cursor(connection)
    try:
        cursor.executemany(prepared.sql, [prepared.arguments(row) for row in rows])
    finally:
        cursor.close()


def fetch_all(
    connection: sa.Connection, statement: Any, params: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """Rows of a SELECT as dicts, JSON columns decoded."""
    prepared = _prepare(connection, statement, frozenset(params))
    return _decoded(prepared, _rows(connection, prepared, params))


def _decoded(prepared: _Prepared, rows: list[dict[str, object]]) -> list[dict[str, object]]:
    """``rows`` with the JSON columns of ``prepared``'s results decoded."""
    for row in rows:
        for name in prepared.json_results:
            if isinstance(text := row.get(name), str):
                row[name] = json.loads(text)
    return rows


def _rows(
    connection: sa.Connection, prepared: _Prepared, params: Mapping[str, Any]
) -> list[dict[str, object]]:
    """The rows ``prepared`` returns, as dicts in the order of its columns."""
    if (session := _session(connection)) is not None:
        return session.rows(session.run(prepared.sql, prepared.positional(params)))
    cursor = _cursor(connection)
    try:
        cursor.execute(prepared.sql, prepared.arguments(params))
        names = [column[0] for column in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    finally:
        cursor.close()


def commit(connection: sa.Connection) -> None:
    """Commit the connection's transaction on PostgreSQL's client library, if the fast path
    runs there: SQLAlchemy's commit then finds nothing left to do. Elsewhere, nothing."""
    if (session := _session(connection)) is not None:
        session.commit()


def _session(connection: sa.Connection) -> Session | None:
    return _sessions()(connection) if connection.dialect.name == "postgresql" else None


@cache
def _sessions() -> Callable[[sa.Connection], Session | None]:
    """``_pq.session``, imported once the first PostgreSQL statement runs (with psycopg)."""
    from loopengine.store._pq import session

    return session


def fetch_one(
    connection: sa.Connection, statement: Any, params: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The first row of a SELECT, or None."""
    rows = fetch_all(connection, statement, params)
    return rows[0] if rows else None


_SIZES = (64, 32, 16, 8, 4, 2, 1)
"""How many rows a statement of ``insert_new`` writes: the most of these the rows left fill, so
that few statements are built (once each) and few run."""
_INSERTS_NEW: dict[tuple[str, str, tuple[str, ...], int], tuple[Any, tuple[str, ...]]] = {}


def _insert_new_statement(
    connection: sa.Connection, table: sa.Table, keys: tuple[str, ...], count: int
) -> tuple[Any, tuple[str, ...]]:
    """``count`` rows of ``keys`` into ``table`` but those a unique key holds, returning the
    primary keys of those written, and its parameters' names, row after row; built once per
    database, table, keys and count, and kept (``_prepare`` caches by identity)."""
    cache_key = (connection.dialect.name, table.name, keys, count)
    built = _INSERTS_NEW.get(cache_key)
    if built is None:
        names = tuple(f"{key}_{n}" for n in range(count) for key in keys)
        rows = [
            {key: sa.bindparam(f"{key}_{n}", type_=table.c[key].type) for key in keys}
            for n in range(count)
        ]
        inserted = dialect_insert(connection, table).values(rows).on_conflict_do_nothing()
        statement = inserted.returning(*table.primary_key.columns)
        built = _INSERTS_NEW[cache_key] = (statement, names)
    return built


def insert_new(
    connection: sa.Connection, table: sa.Table, rows: Sequence[Mapping[str, Any]]
) -> list[tuple[Any, ...]]:
    """Insert ``rows`` (which share their keys) but those a unique key already holds, up to 64
    a statement; the primary keys of the rows inserted (read from ``RETURNING``: PostgreSQL's
    driver gives no row count for ``ON CONFLICT DO NOTHING``)."""
    keys = tuple(rows[0]) if rows else ()
    won: list[tuple[Any, ...]] = []
    start = 0
    while start < len(rows):
        count = next(size for size in _SIZES if size <= len(rows) - start)
        statement, names = _insert_new_statement(connection, table, keys, count)
        values = (row[key] for row in rows[start : start + count] for key in keys)
        prepared = _prepare(connection, statement, frozenset())
        bound = dict(zip(names, values, strict=True))
        won += [tuple(row.values()) for row in _rows(connection, prepared, bound)]
        start += count
    return won
