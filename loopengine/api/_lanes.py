"""``POST /events`` and ``POST /loops/{id}/trigger``, the endpoints programs call in bulk, served
without FastAPI's routing and dependency injection when the request is plain: a JSON body that
pydantic-core reads and validates at once (``model_validate_json``) and bounded headers (read in
one pass); the answer encoded once by its model's serializer and sent as is. Any other request
(a body that does not validate, may hold a non-finite number, or is not JSON; a header over its
bound) goes on to the app, its body replayed, which answers it as before: its errors are
FastAPI's. The middlewares around (token, bounds, faults, the request log) serve both alike.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping
from typing import TypeVar

from pydantic import BaseModel, ValidationError
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from loopengine.api._context import ApiContext, refused
from loopengine.api._loops import EventIn, TriggerIn, append_event, trigger_job
from loopengine.errors import NotFound

__all__ = ["FastLanes"]

_TRIGGER = re.compile(r"/loops/([^/]+)/trigger")
_MAYBE_NON_FINITE = re.compile(rb"NaN|Infinity|[0-9][eE]|[0-9]{309}")
"""What a number no float holds needs (a constant, an exponent, 309 digits): a body with none
is finite throughout, one with any is checked by the app (``_FiniteRequest``)."""
_MAX_KEY = 200
"""The ``Idempotency-Key`` header's bound, as the trigger endpoint declares it."""

_READ = (b"content-type", b"idempotency-key", b"traceparent")
"""The headers a lane reads."""

Headers = Mapping[bytes, str]
"""The headers of ``_READ`` a request has, each by its first value."""
Answer = Callable[[Headers, bytes], Awaitable[tuple[BaseModel, int] | None]]
"""A lane: the answer to a request's headers and body and its status, or None for the app."""


def _read(scope: Scope) -> Headers:
    """The headers of ``_READ`` the request has, each its first value (as the app reads it)."""
    found: dict[bytes, str] = {}
    for name, value in scope["headers"]:
        if name in _READ and name not in found:
            found[name] = value.decode("latin-1")
    return found


def _is_json(headers: Headers) -> bool:
    """Whether a body is sent as JSON: no ``Content-Type``, or ``application/json``."""
    given = headers.get(b"content-type")
    return given is None or given.split(";", 1)[0].strip().lower() == "application/json"


class FastLanes:
    """Serves the plain requests of the two endpoints (see the module), hands the others on."""

    def __init__(self, app: ASGIApp, context: ApiContext) -> None:
        self.app, self.context = app, context

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        lane = self._lane(scope)
        if lane is None:
            await self.app(scope, receive, send)
            return
        try:
            received = await _received(receive)
            headers = _read(scope)
            body = b"".join(message.get("body", b"") for message in received)
            plain = received[-1]["type"] == "http.request" and body and _is_json(headers)
            answer = await lane(headers, body) if plain else None
        except (HTTPException, NotFound) as exc:
            await refused(exc)(scope, receive, send)
            return
        if answer is None:
            await self.app(scope, _replayed(received, receive), send)
            return
        model, status = answer
        encoded = model.__pydantic_serializer__.to_json(model)
        length = str(len(encoded)).encode()
        head = [(b"content-length", length), (b"content-type", b"application/json")]
        await send({"type": "http.response.start", "status": status, "headers": head})
        await send({"type": "http.response.body", "body": encoded})

    def _lane(self, scope: Scope) -> Answer | None:
        if scope["type"] != "http" or scope["method"] != "POST":
            return None
        path = scope["path"]
        if path == "/events":
            return self._event
        if (matched := _TRIGGER.fullmatch(path)) is None:
            return None

        async def trigger(headers: Headers, body: bytes) -> tuple[BaseModel, int] | None:
            return await self._trigger(matched[1], headers, body)

        return trigger

    async def _event(self, headers: Headers, body: bytes) -> tuple[BaseModel, int] | None:
        event = _valid(EventIn, body)
        if event is None:
            return None
        return await append_event(self.context, event, headers.get(b"traceparent")), 202

    async def _trigger(
        self, loop_id: str, headers: Headers, body: bytes
    ) -> tuple[BaseModel, int] | None:
        request = _valid(TriggerIn, body)
        key = headers.get(b"idempotency-key")
        if request is None or (key is not None and len(key) > _MAX_KEY):
            return None
        traceparent = headers.get(b"traceparent")
        accepted = await trigger_job(self.context, loop_id, request, key, traceparent)
        return accepted, 200 if accepted.status == "duplicate" else 202


M = TypeVar("M", bound=BaseModel)


def _valid(model: type[M], body: bytes) -> M | None:
    """``body`` as ``model`` when it validates and is finite throughout; else None."""
    if _MAYBE_NON_FINITE.search(body):
        return None
    try:
        return model.model_validate_json(body)
    except ValidationError:
        return None


async def _received(receive: Receive) -> list[Message]:
    """The request's messages up to its whole body (or the client's disconnection)."""
    received = [await receive()]
    while received[-1]["type"] == "http.request" and received[-1].get("more_body"):
        received.append(await receive())
    return received


def _replayed(received: list[Message], receive: Receive) -> Receive:
    """``receive`` giving ``received`` again first."""
    waiting = list(received)

    async def replay() -> Message:
        return waiting.pop(0) if waiting else await receive()

    return replay
