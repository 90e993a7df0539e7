"""Chat-thread rows: sessions with a version (ETag), messages in order, applied operations.

What a batch may contain and when it applies is decided by ``loopengine.llm``; these are the
reads and writes it is made of, on the hot path's prebuilt statements.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa

import loopengine.store._fastpath as fastpath
from loopengine.store._tables import chat_messages, chat_operations, chat_sessions

__all__ = [
    "META_COLUMNS",
    "advance",
    "answered",
    "batch_state",
    "calls_of",
    "hold",
    "insert_messages",
    "load_thread",
    "operation_messages",
    "record_operation",
    "thread_version",
]

META_COLUMNS = {
    "timestamp": "sent_at",
    "relance_index": "relance_index",
    "success": "success",
    "error": "error",
    "duration_ms": "duration_ms",
}
"""What a message may say of a tool's run (seed 002), and the column that keeps each."""
_SID: sa.BindParameter[Any] = sa.bindparam("sid")
_VERSION = sa.select(chat_sessions.c.version).where(chat_sessions.c.id == _SID)
_CALLS = sa.select(chat_messages.c.tool_calls).where(
    chat_messages.c.session_id == _SID, chat_messages.c.tool_calls.is_not(None)
)
_ANSWERED = sa.select(chat_messages.c.tool_call_id).where(
    chat_messages.c.session_id == _SID, chat_messages.c.tool_call_id == sa.bindparam("call")
)
_STATE = sa.select(
    sa.select(chat_operations.c.body_hash)
    .where(
        chat_operations.c.session_id == _SID,
        chat_operations.c.operation_id == sa.bindparam("op"),
    )
    .scalar_subquery()
    .label("applied"),
    sa.func.coalesce(_VERSION.scalar_subquery(), 0).label("version"),
    sa.func.coalesce(
        sa.select(sa.func.max(chat_messages.c.seq))
        .where(chat_messages.c.session_id == _SID)
        .scalar_subquery(),
        0,
    ).label("seq"),
)
_INSERT_MESSAGES = chat_messages.insert()
_INSERT_SESSION = chat_sessions.insert()
_BUMP = chat_sessions.update().where(
    chat_sessions.c.id == sa.bindparam("_sid"), chat_sessions.c.version == sa.bindparam("_version")
)
_INSERT_OPERATION = chat_operations.insert()
_THREAD = (
    sa.select(chat_messages).where(chat_messages.c.session_id == _SID).order_by(chat_messages.c.seq)
)
_OPERATION = _THREAD.where(chat_messages.c.operation_id == sa.bindparam("op"))


_THREAD_LOCKS = 0x7468  # the key space of thread locks among PostgreSQL's advisory locks


def hold(connection: sa.Connection, session_id: str) -> None:
    """Make the other writers of the session's thread wait until this transaction ends, so
    that they read what it wrote: PostgreSQL runs write transactions side by side (SQLite's
    writes take turns already). The lock is a hash of the session id: two sessions that share
    one wait for each other, no more."""
    if connection.dialect.name == "postgresql":
        connection.exec_driver_sql(
            "SELECT pg_advisory_xact_lock(%(space)s, hashtext(%(sid)s))",
            {"space": _THREAD_LOCKS, "sid": session_id},
        )


def thread_version(connection: sa.Connection, session_id: str) -> int:
    """The session's version (its ETag); 0 for a session with no message yet."""
    row = fastpath.fetch_one(connection, _VERSION, {"sid": session_id})
    return int(row["version"]) if row else 0


def batch_state(
    connection: sa.Connection, session_id: str, operation_id: str
) -> tuple[str | None, int, int]:
    """In one statement: the body hash ``operation_id`` was applied with (None if it was not),
    the session's version and its last message number."""
    row = fastpath.fetch_one(connection, _STATE, {"sid": session_id, "op": operation_id})
    if row is None:
        return None, 0, 0
    return row["applied"], int(row["version"]), int(row["seq"])


def calls_of(connection: sa.Connection, session_id: str) -> list[dict[str, Any]]:
    """The session's messages that make tool calls (their ``tool_calls`` only)."""
    return fastpath.fetch_all(connection, _CALLS, {"sid": session_id})


def answered(connection: sa.Connection, session_id: str, call_ids: set[str]) -> set[str]:
    """The calls of ``call_ids`` the thread has a result for (one indexed lookup each)."""
    return {
        call_id
        for call_id in call_ids
        if fastpath.fetch_one(connection, _ANSWERED, {"sid": session_id, "call": call_id})
    }


def insert_messages(connection: sa.Connection, rows: Sequence[Mapping[str, Any]]) -> None:
    if rows:
        fastpath.execute_many(connection, _INSERT_MESSAGES, rows)


def advance(connection: sa.Connection, session_id: str, version: int, now: float) -> bool:
    """Move the session from ``version`` to the next (creating it at 0); False when another
    writer moved it first."""
    if version == 0:
        session = {"id": session_id, "version": 1, "created_at": now, "updated_at": now}
        fastpath.execute(connection, _INSERT_SESSION, session)
        return True
    values = {"_sid": session_id, "_version": version, "version": version + 1, "updated_at": now}
    return fastpath.execute(connection, _BUMP, values) == 1


def record_operation(
    connection: sa.Connection,
    session_id: str,
    operation_id: str,
    body_hash: str,
    version: int,
    now: float,
) -> None:
    """Remember that ``operation_id`` was applied (a replay then changes nothing)."""
    operation = {
        "session_id": session_id,
        "operation_id": operation_id,
        "body_hash": body_hash,
        "version": version,
        "applied_at": now,
    }
    fastpath.execute(connection, _INSERT_OPERATION, operation)


def load_thread(
    connection: sa.Connection, session_id: str, *, meta: bool = False
) -> list[dict[str, Any]]:
    """The session's messages in order, in OpenAI shape (nothing from another session), with
    what each said of a tool's run (``META_COLUMNS``) when ``meta``: a model is sent none."""
    rows = fastpath.fetch_all(connection, _THREAD, {"sid": session_id})
    return [_message(row, meta) for row in rows]


def operation_messages(
    connection: sa.Connection, session_id: str, operation_id: str
) -> list[dict[str, Any]]:
    """The messages ``operation_id`` put in the session's thread, in order, as ``load_thread``
    shows them with ``meta``: none when it was never applied or all its results were there
    already."""
    params = {"sid": session_id, "op": operation_id}
    return [_message(row, True) for row in fastpath.fetch_all(connection, _OPERATION, params)]


def _message(row: Mapping[str, Any], meta: bool) -> dict[str, Any]:
    message: dict[str, Any] = {"role": row["role"], "content": row["content"]}
    keys = {"name": "name", "tool_call_id": "tool_call_id", "tool_calls": "tool_calls"}
    for key, column in (keys | META_COLUMNS if meta else keys).items():
        if row[column] is not None:
            message[key] = row[column]
    return message
