"""Chat-thread rows: sessions with a version (ETag), messages in order, applied operations.

What a batch may contain and when it applies is decided by ``loopengine.llm``; these are the
reads and writes it is made of, on the hot path's prebuilt statements.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NotRequired, TypedDict

import sqlalchemy as sa

import loopengine.store._fastpath as fastpath
from loopengine._json import JSONObject
from loopengine.errors import ThreadError
from loopengine.store._tables import chat_messages, chat_operations, chat_sessions

__all__ = [
    "META_COLUMNS",
    "Batch",
    "BatchResult",
    "BatchState",
    "CalledFunction",
    "ChatMessage",
    "Message",
    "MessageToolCall",
    "Role",
    "SessionRow",
    "Thread",
    "advance",
    "answered",
    "append_batch",
    "applied",
    "apply_batch",
    "batch_state",
    "calls_of",
    "extend_thread",
    "hold",
    "insert_messages",
    "load_thread",
    "operation_messages",
    "read_thread",
    "recent_sessions",
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
_RECENT = (
    sa.select(chat_sessions)
    .order_by(chat_sessions.c.updated_at.desc(), chat_sessions.c.id)
    .limit(sa.bindparam("limit"))
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


def calls_of(connection: sa.Connection, session_id: str) -> dict[str, str]:
    """The tool each call the session's thread makes names, by call id."""
    rows = fastpath.fetch_all(connection, _CALLS, {"sid": session_id})
    return {
        str(call["id"]): str((call.get("function") or {}).get("name"))
        for row in rows
        for call in row["tool_calls"] or ()
        if isinstance(call, Mapping) and call.get("id")
    }


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


def load_thread(connection: sa.Connection, session_id: str) -> list[Message]:
    """The session's messages in order (nothing from another session)."""
    rows = fastpath.fetch_all(connection, _THREAD, {"sid": session_id})
    return [Message.from_row(row) for row in rows]


def operation_messages(
    connection: sa.Connection, session_id: str, operation_id: str
) -> list[Message]:
    """The messages ``operation_id`` put in the session's thread, in order: none when it was
    never applied or all its results were there already."""
    params = {"sid": session_id, "op": operation_id}
    return [Message.from_row(row) for row in fastpath.fetch_all(connection, _OPERATION, params)]


Role = Literal["system", "user", "assistant", "tool"]
"""Who says a message (the roles a thread admits)."""


class CalledFunction(TypedDict):
    name: str
    arguments: str | JSONObject
    """A JSON object as text, as OpenAI sends it; a thread's batch may send the object itself."""


class MessageToolCall(TypedDict):
    """A tool call an assistant message makes, in OpenAI shape."""

    id: str
    type: str
    function: CalledFunction


class ChatMessage(TypedDict):
    """A message in OpenAI shape; a thread's read with ``meta`` adds what it said of a tool's run
    (``META_COLUMNS``), which no model is sent."""

    role: Role
    content: str | None
    name: NotRequired[str]
    tool_call_id: NotRequired[str]
    tool_calls: NotRequired[list[MessageToolCall]]
    timestamp: NotRequired[str]
    relance_index: NotRequired[int]
    success: NotRequired[bool]
    error: NotRequired[str]
    duration_ms: NotRequired[float]


@dataclass(frozen=True, slots=True)
class Message:
    """One message of a thread as stored, with what it said of a tool's run (``META_COLUMNS``)."""

    role: Role
    content: str | None
    name: str | None
    tool_call_id: str | None
    tool_calls: list[MessageToolCall] | None
    sent_at: str | None
    relance_index: int | None
    success: bool | None
    error: str | None
    duration_ms: float | None

    @classmethod
    def from_row(cls, row: Mapping[Any, Any]) -> Message:
        success = row["success"]
        values = {name: row[name] for name in cls.__dataclass_fields__}
        return cls(**{**values, "success": None if success is None else bool(success)})

    def as_json(self, *, meta: bool = False) -> ChatMessage:
        """The message in OpenAI shape, with what it said of a tool's run when ``meta`` (a model
        is sent none of it)."""
        message = ChatMessage(role=self.role, content=self.content)
        if self.name is not None:
            message["name"] = self.name
        if self.tool_call_id is not None:
            message["tool_call_id"] = self.tool_call_id
        if self.tool_calls is not None:
            message["tool_calls"] = self.tool_calls
        if meta:
            if self.sent_at is not None:
                message["timestamp"] = self.sent_at
            if self.relance_index is not None:
                message["relance_index"] = self.relance_index
            if self.success is not None:
                message["success"] = self.success
            if self.error is not None:
                message["error"] = self.error
            if self.duration_ms is not None:
                message["duration_ms"] = self.duration_ms
        return message


@dataclass(frozen=True, slots=True)
class Thread:
    """A session's messages at its version (its ETag)."""

    version: int
    messages: list[Message]

    def as_json(self, *, meta: bool = False) -> list[ChatMessage]:
        return [message.as_json(meta=meta) for message in self.messages]


def read_thread(connection: sa.Connection, session_id: str) -> Thread:
    """The session's thread and its version, read together."""
    return Thread(thread_version(connection, session_id), load_thread(connection, session_id))


@dataclass(frozen=True, slots=True)
class SessionRow:
    """A session: its version (ETag) and when its thread began and last grew."""

    id: str
    version: int
    created_at: float
    updated_at: float


def recent_sessions(connection: sa.Connection, limit: int) -> list[SessionRow]:
    """The ``limit`` sessions whose threads grew last, newest first."""
    rows = fastpath.fetch_all(connection, _RECENT, {"limit": limit})
    return [SessionRow(r["id"], r["version"], r["created_at"], r["updated_at"]) for r in rows]


@dataclass(frozen=True, slots=True)
class BatchState:
    """What a batch's rules read of its thread, in the transaction that appends it."""

    applied: str | None
    """The body hash the batch's operation was applied with; None when it was not."""
    version: int
    calls: Mapping[str, str]
    """The tool each earlier call names, by id (read only when the batch answers a call it does
    not make)."""


@dataclass(frozen=True, slots=True)
class Batch:
    """A round of messages appended as one operation, with the rules that admit it: ``admit``
    raises ``ThreadError`` for a batch refused, and says False for a replay (nothing written)."""

    session_id: str
    operation_id: str
    body_hash: str
    messages: Sequence[Mapping[str, Any]]
    answers: frozenset[str]
    """The calls its tool messages answer."""
    answers_earlier: bool
    """Whether one of them answers a call the batch does not make."""
    admit: Callable[[BatchState], bool]
    now: float


@dataclass(frozen=True, slots=True)
class BatchResult:
    applied: bool
    version: int
    stored: int


def append_batch(connection: sa.Connection, batch: Batch) -> BatchResult:
    """Append the batch's messages as one operation, each result of a call answered already left
    out, if its rules admit it; the version moves by one (``applied=False`` for a replay)."""
    session_id = batch.session_id
    hold(connection, session_id)
    applied, version, start = batch_state(connection, session_id, batch.operation_id)
    earlier = calls_of(connection, session_id) if batch.answers_earlier else {}
    if not batch.admit(BatchState(applied, version, earlier)):
        return BatchResult(False, version, 0)
    done = answered(connection, session_id, set(batch.answers))
    fresh = [m for m in batch.messages if m.get("role") != "tool" or m["tool_call_id"] not in done]
    rows = [_row(batch, start + offset, message) for offset, message in enumerate(fresh, 1)]
    insert_messages(connection, rows)
    if not advance(connection, session_id, version, batch.now):
        raise ThreadError(409, "conflict", "the thread changed meanwhile: reload it and retry")
    new_version = version + 1
    record_operation(
        connection, session_id, batch.operation_id, batch.body_hash, new_version, batch.now
    )
    return BatchResult(True, new_version, len(rows))


def _row(batch: Batch, seq: int, message: Mapping[str, Any]) -> dict[str, Any]:
    content = message.get("content")
    return {
        "session_id": batch.session_id,
        "seq": seq,
        "role": message["role"],
        "content": content if isinstance(content, str | None) else json.dumps(content),
        "name": message.get("name"),
        "tool_call_id": message.get("tool_call_id"),
        "tool_calls": message.get("tool_calls"),
        "operation_id": batch.operation_id,
        "created_at": batch.now,
        **{column: message.get(key) for key, column in META_COLUMNS.items()},
    }


def apply_batch(connection: sa.Connection, batch: Batch) -> tuple[BatchResult, list[Message]]:
    """Append the batch, and read the messages its operation put in the thread (a replay's: those
    it put when first applied)."""
    result = append_batch(connection, batch)
    return result, operation_messages(connection, batch.session_id, batch.operation_id)


def extend_thread(connection: sa.Connection, batch: Batch, version: int) -> Thread | None:
    """Append a round to a thread the caller holds at ``version``: None when the thread is now
    that one plus the batch, else the thread as stored (another writer came in between, or the
    round was there already), since every applied batch moves the version by one."""
    result = append_batch(connection, batch)
    if result.applied and result.version == version + 1 and result.stored == len(batch.messages):
        return None
    return read_thread(connection, batch.session_id)


def applied(connection: sa.Connection, session_id: str, operation_id: str) -> bool:
    """Whether the session's thread holds the batch of ``operation_id`` already."""
    row = fastpath.fetch_one(connection, _STATE, {"sid": session_id, "op": operation_id})
    return row is not None and row["applied"] is not None
