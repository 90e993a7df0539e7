"""Engines by URL: SQLite (WAL, ``BEGIN IMMEDIATE`` for writes, FULL sync) by default.

A SQLite URL may choose the sync level: ``sqlite:///path.db?synchronous=normal`` (off, normal,
full or extra; full when absent). In WAL mode ``normal`` skips the fsync of every commit (only
checkpoints sync): commits survive a crashed process but the last ones may be lost on power loss.
Reads of a SQLite store never wait for the disk, nor do commits at ``off``/``normal`` (or in
memory): the store runs those in the event loop, where they cost less than a thread hop, and
hands them to a thread only when another process holds the lock they need (the busy timeout is 0
but for that thread).
"""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.pool import StaticPool

from loopengine._json import dumps as compact
from loopengine._secrets import redact
from loopengine.errors import StorageError, StoreUnavailable

__all__ = [
    "BUSY_TIMEOUT_MS",
    "WRITER",
    "MaskedText",
    "create_engine",
    "dumps",
    "is_inline",
    "masked",
    "session_options",
    "transaction_set",
    "translated",
]

WRITER = "loopengine_writer"
CONNECT_TIMEOUT_S = 10
"""How long a PostgreSQL connection may take to open (a host that drops packets hangs for minutes
without it)."""
IDLE_IN_TRANSACTION_MS = 10_000
"""PostgreSQL ends a session idle inside a transaction this long: a process paused mid-transaction
(a VM paused, a SIGSTOP) releases its row locks, so another daemon can take its jobs over (the
store never waits inside a transaction: each runs whole in one thread hop)."""
_PG_UNAVAILABLE = ("08", "25P03", "53", "57P01", "57P02", "57P03")
"""PostgreSQL's SQLSTATE prefixes that say "not now": connection exceptions, a session ended for
idling in a transaction, insufficient resources (disk full, out of memory, too many
connections), shutdowns and a server starting."""
BUSY_TIMEOUT_MS = 10_000
_SYNCHRONOUS = ("off", "normal", "full", "extra")
_INLINE = frozenset({"OFF", "NORMAL"})
_SQLITE_TRANSIENT = frozenset({5, 6, 10, 13, 14})
"""SQLite's primary result codes that say "not now": BUSY, LOCKED, IOERR, FULL, CANTOPEN."""
_SQLITE_BUSY = frozenset({5, 6})


def transaction_set(connection: sa.Connection, key: str) -> set[Any]:
    """The set kept in ``connection.info`` under ``key`` for the transaction under way: a new,
    empty one once another transaction has begun (what this transaction did, remembered once)."""
    transaction = connection.get_transaction()
    kept: tuple[object, set[Any]] | None = connection.info.get(key)
    if kept is None or kept[0] is not transaction:
        kept = connection.info[key] = (transaction, set())
    return kept[1]


def masked(text: str | None) -> str | None:
    """``text`` with every known secret masked (``_secrets``), as the store writes free text."""
    return None if text is None else str(redact(text))


def _unknown(value: Any) -> str | None:
    return masked(str(value))


def dumps(value: Any) -> str:
    """Compact JSON for JSON columns (anything unknown as its text), every known secret masked
    (``_secrets``): one encoder for every JSON column, whatever path writes it."""
    return compact(redact(value), _unknown)


class MaskedText(sa.types.TypeDecorator[str]):
    """A text column that may hold what someone sent (a note, a message, a model's reply, an
    error quoting either): every known secret is masked as it is written, as ``dumps`` does."""

    impl = sa.Text
    cache_ok = True

    def process_bind_param(self, value: str | None, dialect: sa.Dialect) -> str | None:
        return masked(value)


def _synchronous(url: sa.URL) -> tuple[sa.URL, str]:
    """``url`` without its ``synchronous`` parameter, and the level it asks for (FULL if none)."""
    level = url.query.get("synchronous", "full")
    if not isinstance(level, str) or level.lower() not in _SYNCHRONOUS:
        raise StorageError(
            f"invalid synchronous={level!r} in the database URL: use one of "
            + ", ".join(_SYNCHRONOUS)
        )
    return url.difference_update_query(["synchronous"]), level.upper()


def _parsed(url: str) -> sa.URL:
    try:
        return sa.make_url(url)
    except sa.exc.ArgumentError as exc:
        raise StorageError(f"invalid database URL {url!r}: {exc}") from None


def _is_memory(url: sa.URL) -> bool:
    return url.database in (None, "", ":memory:")


def is_inline(url: str) -> bool:
    """Whether the store may run this database's write transactions in the event loop: SQLite
    in memory, or whose commits do not wait for the disk (``synchronous`` off or normal)."""
    parsed = _parsed(url)
    if parsed.get_backend_name() != "sqlite":
        return False
    return _is_memory(parsed) or _synchronous(parsed)[1] in _INLINE


def sqlite_file(url: sa.URL) -> Path | None:
    """The file a SQLite URL names; None for a server or a database in memory."""
    if url.get_backend_name() != "sqlite" or _is_memory(url):
        return None
    return Path(str(url.database)).expanduser()


def _sqlite_engine(url: sa.URL, read_only: bool) -> sa.Engine:
    url, synchronous = _synchronous(url)
    memory = _is_memory(url)
    if read_only and not memory:
        path = quote(str(Path(str(url.database)).expanduser()))
        url = url.set(database=f"file:{path}?mode=ro").update_query_dict({"uri": "true"})
    elif not memory:
        Path(str(url.database)).expanduser().parent.mkdir(parents=True, exist_ok=True)
    engine = sa.create_engine(
        url,
        json_serializer=dumps,
        connect_args={"check_same_thread": False},
        poolclass=StaticPool if memory else None,
    )

    @event.listens_for(engine, "connect")
    def _on_connect(connection: Any, _record: Any) -> None:
        connection.isolation_level = None
        cursor = connection.cursor()
        if read_only:
            cursor.execute("PRAGMA query_only=ON")
        elif not memory:
            _use_wal(cursor)
        cursor.execute(f"PRAGMA synchronous={synchronous}")
        cursor.execute("PRAGMA busy_timeout=0")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: sa.Connection) -> None:
        driver = connection.connection.driver_connection
        assert driver is not None
        driver.execute("BEGIN IMMEDIATE" if connection.info.get(WRITER) else "BEGIN")

    return engine


def _use_wal(cursor: sqlite3.Cursor) -> None:
    """Switch the database to WAL, which its file then keeps. Connections opened at once on a new
    database race for the switch, and SQLite answers the losers "busy" at once (its busy handler is
    skipped there to avoid a deadlock), so a busy switch is retried until ``BUSY_TIMEOUT_MS``."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode & 0xFF not in _SQLITE_BUSY or time.monotonic() > deadline:
                raise
        time.sleep(0.005)


def create_engine(url: str, *, read_only: bool = False) -> sa.Engine:
    """An engine for ``url``; SQLite gets WAL, immediate write transactions and the sync level of
    its ``synchronous`` parameter. ``read_only`` sessions cannot write, and opening one changes
    nothing (no folder made, the journal mode left as it is). psycopg prepares no statement of
    its own: the fast path's (``_pq``) would go with its ``DEALLOCATE ALL`` after a rollback."""
    parsed = _parsed(url)
    if parsed.get_backend_name() == "sqlite":
        return _sqlite_engine(parsed.set(drivername="sqlite"), read_only)
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    options: dict[str, object] = {
        "connect_timeout": CONNECT_TIMEOUT_S,
        "options": session_options(parsed, read_only=read_only),
        "prepare_threshold": None,
    }
    try:
        return sa.create_engine(
            parsed, json_serializer=dumps, pool_pre_ping=True, connect_args=options
        )
    except (sa.exc.ArgumentError, ImportError) as exc:
        raise StorageError(f"cannot use database {parsed.render_as_string()}: {exc}") from None


def session_options(url: sa.URL, *, read_only: bool = False) -> str:
    """libpq's ``options`` for a session of ``url``: the user's settings (each ``options`` of the
    URL, where libpq keeps the last; else ``$PGOPTIONS``), then loopengine's, which so hold."""
    given = url.query.get("options", os.environ.get("PGOPTIONS", ""))
    settings = [given] if isinstance(given, str) else list(given)
    settings.append(f"-c idle_in_transaction_session_timeout={IDLE_IN_TRANSACTION_MS}")
    if read_only:
        settings.append("-c default_transaction_read_only=on")
    return " ".join(setting for setting in settings if setting)


def translated(
    exc: BaseException, driver_error: type[BaseException] = sqlite3.Error
) -> BaseException:
    """A database failure as ``StorageError``: SQLAlchemy's, or the driver's own (statements on
    the hot path run on the driver's cursor); ``StoreUnavailable`` when the database is out of
    reach or out of space, which passes."""
    if not isinstance(exc, sa.exc.SQLAlchemyError | driver_error):
        return exc
    cause = getattr(exc, "orig", None) or exc
    if _is_unavailable(exc, cause):
        return StoreUnavailable(f"the database is unavailable: {_first_line(cause)}")
    return StorageError(f"database error: {cause}")


def _is_unavailable(exc: BaseException, cause: BaseException) -> bool:
    """Whether the database failed for a while rather than for this statement: the connection
    dropped (or never opened: no SQLSTATE), PostgreSQL's ``_PG_UNAVAILABLE`` states, SQLite
    busy, locked, out of space or failing to read or write its files."""
    if isinstance(exc, sa.exc.DBAPIError) and exc.connection_invalidated:
        return True
    code = getattr(cause, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF in _SQLITE_TRANSIENT
    kind = type(cause)
    if not kind.__module__.startswith("psycopg"):
        return False
    state = getattr(cause, "sqlstate", None)
    if state is None:
        return any(base.__name__ == "OperationalError" for base in kind.__mro__)
    return str(state).startswith(_PG_UNAVAILABLE)


def _first_line(cause: BaseException) -> str:
    text = str(cause).strip()
    return text.splitlines()[0] if text else type(cause).__name__
