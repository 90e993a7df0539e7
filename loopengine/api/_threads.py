"""The API's chat threads (seed 002): a session's messages read with an ``ETag`` (its version),
and appended one atomic, idempotent batch at a time under ``If-Match``; the rules are
``loopengine.llm``'s, this module only translates HTTP to them."""

from __future__ import annotations

import re
import time
from datetime import datetime
from typing import Annotated, Any, TypeVar

from fastapi import FastAPI, Header, Path
from pydantic import BaseModel, Field, field_validator
from starlette.exceptions import HTTPException
from starlette.responses import Response

from loopengine.api._context import MAX_SESSION_ID, SESSION_ID, ApiContext
from loopengine.errors import ThreadError
from loopengine.store import threads
from loopengine.threads import new_batch
from loopengine.triggers import nesting

__all__ = [
    "MAX_ARGUMENT_DEPTH",
    "MAX_BATCH",
    "MAX_CALLS",
    "MAX_CONTENT",
    "MAX_DURATION_MS",
    "MAX_RELANCE",
    "add_thread_routes",
]

MAX_BATCH = 256
"""Most messages one batch appends."""
MAX_CONTENT = 262_144
"""Most characters of one message's content (a tool call's arguments as text likewise)."""
MAX_CALLS = 64
"""Most tool calls one message makes."""
MAX_ARGUMENT_DEPTH = 32
"""Most levels a tool call's arguments nest when sent as an object."""
MAX_RELANCE = 10_000
"""Highest relance index (seed 002 relaunches a round at most 10 times)."""
MAX_DURATION_MS = 86_400_000.0
"""Longest a tool's run may say it took: a day."""
_NAME = 200
"""Most characters of a session id, an operation id, a name or a call id (their columns)."""
T = TypeVar("T")
SessionId = Annotated[
    str,
    Path(max_length=MAX_SESSION_ID, pattern=SESSION_ID, description="Visible characters but '/'."),
]
_KEY = Header(min_length=1, max_length=_NAME)
_ETAG = re.compile(r'"([0-9]{1,18})"')


class FunctionIn(BaseModel):
    name: str = Field(max_length=_NAME)
    arguments: Annotated[str, Field(max_length=MAX_CONTENT)] | dict[str, Any] = "{}"

    @field_validator("arguments")
    @classmethod
    def _shallow(cls, value: str | dict[str, Any]) -> str | dict[str, Any]:
        if nesting(value) > MAX_ARGUMENT_DEPTH:
            raise ValueError(f"nested more than {MAX_ARGUMENT_DEPTH} levels")
        return value


class ToolCallIn(BaseModel):
    id: str = Field(max_length=_NAME)
    type: str = Field(default="function", max_length=32)
    function: FunctionIn


class MessageIn(BaseModel):
    """One message in OpenAI shape, with what it says of a tool's run (seed 002: ``timestamp``,
    ``relance_index``, ``success``, ``error``, ``duration_ms``), kept as sent. What ``role``,
    ``tool_call_id``, ``name`` and ``content`` must hold is the thread's rule (422)."""

    role: str = Field(max_length=16)
    content: str | None = Field(default=None, max_length=MAX_CONTENT)
    name: str | None = Field(default=None, max_length=_NAME)
    tool_call_id: str | None = Field(default=None, max_length=_NAME)
    tool_calls: list[ToolCallIn] | None = Field(default=None, max_length=MAX_CALLS)
    session_id: str | None = Field(default=None, max_length=_NAME)
    """The session the message says it belongs to: another than the path's is a 409."""
    timestamp: str | None = Field(default=None, max_length=64, examples=["2026-11-23T18:50:02Z"])
    relance_index: int | None = Field(default=None, ge=0, le=MAX_RELANCE)
    """The relance the message belongs to; a tool message without one keeps the batch's."""
    success: bool | None = None
    error: str | None = Field(default=None, max_length=MAX_CONTENT)
    duration_ms: float | None = Field(default=None, ge=0, le=MAX_DURATION_MS)

    @field_validator("timestamp")
    @classmethod
    def _iso(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                datetime.fromisoformat(value)
            except ValueError:
                raise ValueError("not an ISO 8601 time, e.g. 2026-11-23T18:50:02Z") from None
        return value


class BatchIn(BaseModel):
    """A round's messages; ``operation_id`` and ``relance_index``, when sent, say what the
    headers ``Idempotency-Key`` and ``X-Relance-Index`` do."""

    messages: list[MessageIn] = Field(min_length=1, max_length=MAX_BATCH)
    operation_id: str | None = Field(default=None, min_length=1, max_length=_NAME)
    relance_index: int | None = Field(default=None, ge=0, le=MAX_RELANCE)


class SessionOut(BaseModel):
    id: str
    version: int
    """The thread's ETag, unquoted."""


class ThreadOut(BaseModel):
    session: SessionOut
    messages: list[dict[str, Any]]


class BatchData(ThreadOut):
    """``messages``: those this operation put in the thread (for a replay, when first applied)."""

    operation_id: str
    relance_index: int


class BatchOut(BaseModel):
    success: bool
    applied: bool
    """False for a replay: the operation was applied before and nothing changed now."""
    data: BatchData


def add_thread_routes(app: FastAPI, context: ApiContext) -> None:
    """Chat threads: read (``ETag``, ``If-None-Match``) and batch append (``If-Match``)."""
    _add_reads(app, context)
    _add_batch(app, context)


def _add_reads(app: FastAPI, context: ApiContext) -> None:
    @app.get(
        "/sessions/{session_id}/messages",
        response_model=ThreadOut,
        responses={304: {"description": "If-None-Match names the current version"}},
    )
    async def read_thread(
        session_id: SessionId,
        response: Response,
        if_none_match: Annotated[str | None, Header(max_length=4096)] = None,
    ) -> ThreadOut | Response:
        """The session's messages in order; a session without any is an empty thread at version
        0 (not a 404: its ETag ``"0"`` is the ``If-Match`` of its first batch); 304 when
        ``If-None-Match`` names the current version."""
        if if_none_match is not None:
            version = await context.store.read(threads.thread_version, session_id)
            if _names(if_none_match, _etag(version)):
                return Response(status_code=304, headers={"ETag": _etag(version)})
        thread = await context.store.read(threads.read_thread, session_id)
        response.headers["ETag"] = _etag(thread.version)
        session = SessionOut(id=session_id, version=thread.version)
        return ThreadOut(session=session, messages=thread.as_json(meta=True))

    @app.head("/sessions/{session_id}/messages")
    async def thread_etag(session_id: SessionId) -> Response:
        """The thread's ``ETag`` alone: what a writer refused with 412 reads before retrying."""
        version = await context.store.read(threads.thread_version, session_id)
        return Response(headers={"ETag": _etag(version)}, media_type="application/json")


def _add_batch(app: FastAPI, context: ApiContext) -> None:
    @app.post("/sessions/{session_id}/messages/batch", response_model=BatchOut)
    async def append(
        session_id: SessionId,
        batch: BatchIn,
        response: Response,
        idempotency_key: Annotated[str | None, _KEY] = None,
        x_operation_id: Annotated[str | None, _KEY] = None,
        if_match: Annotated[str | None, Header(max_length=64)] = None,
        x_relance_index: Annotated[int | None, Header(ge=0, le=MAX_RELANCE)] = None,
    ) -> BatchOut:
        """Append ``messages`` atomically under ``If-Match`` (always required: 428 without, 412
        when stale); a replayed operation id answers 200 with ``applied: false``; an invalid
        batch is a 422, a message of another session a 409."""
        operation_id = _operation_id(idempotency_key, x_operation_id, batch.operation_id)
        relance = _one_of("X-Relance-Index and relance_index", x_relance_index, batch.relance_index)
        expected = _version_of(if_match)
        messages = [m.model_dump(exclude_none=True) for m in batch.messages]
        operation = new_batch(
            session_id,
            messages,
            operation_id=operation_id,
            now=time.time(),
            if_match=expected,
            require_if_match=True,
            relance_index=relance or 0,
        )
        try:
            result, stored = await context.store.write(threads.apply_batch, operation)
        except ThreadError as exc:
            raise HTTPException(exc.status, str(exc)) from None
        response.headers["ETag"] = _etag(result.version)
        session = SessionOut(id=session_id, version=result.version)
        data = BatchData(
            session=session,
            messages=[message.as_json(meta=True) for message in stored],
            operation_id=operation_id,
            relance_index=relance or 0,
        )
        return BatchOut(success=True, applied=result.applied, data=data)


def _etag(version: int) -> str:
    """A version as a strong ETag."""
    return f'"{version}"'


def _version_of(if_match: str | None) -> int | None:
    """The version ``If-Match`` names (None when absent); one strong ETag, else 422."""
    if if_match is None:
        return None
    tag = _ETAG.fullmatch(if_match.strip())
    if tag is None:
        raise HTTPException(422, f'If-Match {if_match!r}: send one ETag, e.g. "3"')
    return int(tag[1])


def _names(if_none_match: str, etag: str) -> bool:
    """Whether ``If-None-Match`` names ``etag`` (``*``, or a list compared weakly)."""
    tags = [tag.strip().removeprefix("W/") for tag in if_none_match.split(",")]
    return "*" in tags or etag in tags


def _one_of(names: str, *sent: T | None) -> T | None:
    """The one value the headers and body fields ``names`` give (None when none does); 422
    when they differ."""
    given = {value for value in sent if value is not None}
    if len(given) > 1:
        raise HTTPException(422, f"{names} differ: they say one thing of one batch")
    return given.pop() if given else None


def _operation_id(*sent: str | None) -> str:
    """The one id naming the batch, from ``Idempotency-Key``, ``X-Operation-ID`` or the body's
    ``operation_id``: at least one, and all the same (422 otherwise)."""
    found = _one_of("Idempotency-Key, X-Operation-ID and operation_id", *sent)
    if found is None:
        raise HTTPException(422, "name the batch: send an Idempotency-Key header")
    return found
