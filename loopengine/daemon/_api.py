"""The daemon's HTTP API (FastAPI): JSON in and out; every error is
``{"error": {"code", "message"}}`` with a fitting status, never a stack trace; a bearer token on
every endpoint but ``/health`` and ``/hooks/*`` when one is set (``_access``).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import version
from typing import Annotated, Any

import sqlalchemy as sa
from fastapi import FastAPI, Header, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException
from starlette.middleware.base import RequestResponseEndpoint
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from loopengine.contract import Loop, Outcome, input_problems
from loopengine.daemon._access import is_open, token_accepted
from loopengine.store import Store, executions, new_id, queue, signals, status
from loopengine.triggers import MAX_EVENT_BYTES, MAX_EVENT_DEPTH, event_problem, nesting

__all__ = ["MAX_BODY", "MAX_LISTED", "ApiContext", "create_app"]

MAX_BODY = 1_048_576
"""Most bytes of a request body (a webhook's payload included)."""

MAX_LISTED = 10_000
"""Most executions one listing returns (as ``history --limit``)."""

_LOG = logging.getLogger("loopengine.api")
_CODES = {
    400: "bad_request",
    401: "unauthorized",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    412: "precondition_failed",
    413: "too_large",
    422: "invalid",
    429: "too_many_requests",
    503: "unavailable",
}


@dataclass(frozen=True, slots=True)
class ApiContext:
    """What the endpoints use: the store, this daemon's name, its lease, the token, which loops
    an event fires, and how to wake the dispatcher."""

    store: Store
    owner: str
    lease_s: float
    token: str | None
    matching: Callable[[dict[str, Any]], list[str]]
    wake: Callable[[], None]
    loop: Callable[[str], Loop | None]
    """The loop the daemon serves under an id."""
    queued: Callable[[], None]
    """Wakes the workers: a job was queued."""


class TriggerIn(BaseModel):
    """A manual run: the loop's inputs, checked against its ``params``."""

    inputs: dict[str, Any] = Field(default_factory=dict, examples=[{"limit": 10}])


class TriggerAccepted(BaseModel):
    job_id: str
    loop_id: str
    status: str
    """``queued``, or ``duplicate`` when the Idempotency-Key was used before (the first job)."""


class EventIn(BaseModel):
    """An event to append to the log: what ``loopengine emit NAME --data JSON`` sends."""

    name: str = Field(max_length=200, examples=["seo.page.updated"])
    data: dict[str, Any] = Field(default_factory=dict, examples=[{"page": 3}])


class EventAccepted(BaseModel):
    id: int
    name: str
    matched: list[str]
    """The loops it fires (the dispatcher queues their jobs)."""


class _BodyLimit:
    """Refuses a request body over ``limit`` bytes with 413 before reading it whole: at once by
    its Content-Length, else (a chunked body) as soon as the chunks pass the limit."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None:
            if not length.isdigit() or int(length) > self.limit:
                await self._refuse(scope, receive, send)
                return
            await self.app(scope, receive, send)
            return
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > self.limit:
                await self._refuse(scope, receive, send)
                return
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        message = f"the request body is over {self.limit} bytes"
        await _error(413, message, {"Connection": "close"})(scope, receive, send)


class Health(BaseModel):
    status: str
    daemon: str
    version: str


def _error(status_code: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    code = _CODES.get(status_code, "error")
    body = {"error": {"code": code, "message": message}}
    return JSONResponse(body, status_code=status_code, headers=headers)


def create_app(context: ApiContext) -> FastAPI:
    """The app serving ``context``; OpenAPI at ``/openapi.json``."""
    release = version("loopengine")
    app = FastAPI(title="loopengine", version=release, docs_url=None, redoc_url=None)
    app.add_middleware(_BodyLimit, limit=MAX_BODY)

    @app.middleware("http")
    async def access(request: Request, call_next: RequestResponseEndpoint) -> Response:
        path = request.url.path
        if not is_open(path) and not token_accepted(
            context.token, request.headers.get("authorization")
        ):
            message = "this endpoint needs the daemon's token: Authorization: Bearer <token>"
            return _error(401, message, {"WWW-Authenticate": "Bearer"})
        return await call_next(request)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        return _error(exc.status_code, str(exc.detail), dict(exc.headers or {}))

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {"loc": (), "msg": "invalid request"}
        where = ".".join(str(part) for part in first.get("loc", ()))
        return _error(422, f"{where}: {first.get('msg')}" if where else str(first.get("msg")))

    @app.exception_handler(Exception)
    async def failed(request: Request, exc: Exception) -> JSONResponse:
        _LOG.error(
            "%s %s failed: %s: %s", request.method, request.url.path, type(exc).__name__, exc
        )
        return JSONResponse(
            {"error": {"code": "internal", "message": f"internal error: {type(exc).__name__}"}},
            status_code=500,
        )

    _add_reads(app, context, release)
    _add_controls(app, context)
    return app


def _add_reads(app: FastAPI, context: ApiContext, release: str) -> None:
    """The endpoints that only read."""

    @app.get("/health")
    async def health() -> Health:
        """Whether the daemon answers; open without a token."""
        return Health(status="ok", daemon=context.owner, version=release)

    @app.get("/status")
    async def daemon_status() -> dict[str, Any]:
        """Daemons alive, loops with their next fires and pause state, running executions,
        queue depth: what ``loopengine status --json`` prints."""
        since = time.time() - context.lease_s
        view: dict[str, Any] = await context.store.read(lambda c: status.view(c, since))
        return view

    @app.get("/loops")
    async def loops() -> dict[str, Any]:
        """The loops the running daemons serve, each with its triggers' next fires and pause
        state."""
        return {"loops": await _loops(context)}

    @app.get("/loops/{loop_id}")
    async def loop(loop_id: str) -> dict[str, Any]:
        """One served loop."""
        found: dict[str, Any] = await _served(context, loop_id)
        return found

    @app.get("/executions")
    async def execution_list(
        loop_id: str | None = None,
        outcome: Outcome | None = None,
        limit: Annotated[int, Query(ge=1, le=MAX_LISTED)] = 20,
    ) -> dict[str, Any]:
        """The newest executions first, of one loop and with one outcome when given: what
        ``loopengine history --json`` prints."""
        wanted = outcome.value if outcome is not None else None
        rows = await context.store.read(
            lambda c: executions.list_executions(c, loop_id=loop_id, outcome=wanted, limit=limit)
        )
        return {"executions": [row.summary() for row in rows]}

    @app.get("/executions/{execution_id}")
    async def execution(execution_id: str) -> dict[str, Any]:
        """One execution's record: what ``loopengine show --json`` prints."""
        record = await context.store.read(lambda c: executions.read_record(c, execution_id))
        if record is None:
            raise HTTPException(404, f"no execution {execution_id!r}")
        view: dict[str, Any] = record.view()
        return view


def _add_controls(app: FastAPI, context: ApiContext) -> None:
    """The endpoints that change something: pause, trigger, events."""

    @app.post("/loops/{loop_id}/pause")
    async def pause(loop_id: str) -> dict[str, Any]:
        """Stop the loop's triggers (persisted; no catch-up on unpause): as ``loopengine
        pause``."""
        await _served(context, loop_id)
        now = time.time()
        changed = await context.store.write(lambda c: queue.pause(c, loop_id, now))
        return {"loop_id": loop_id, "state": "paused", "changed": changed}

    @app.post("/loops/{loop_id}/unpause")
    async def unpause(loop_id: str) -> dict[str, Any]:
        """Restart the loop's triggers: as ``loopengine unpause``."""
        await _served(context, loop_id)
        changed = await context.store.write(lambda c: queue.unpause(c, loop_id))
        return {"loop_id": loop_id, "state": "active", "changed": changed}

    @app.post("/loops/{loop_id}/trigger", status_code=202)
    async def trigger(
        loop_id: str,
        request: TriggerIn,
        response: Response,
        idempotency_key: Annotated[str | None, Header(max_length=200)] = None,
    ) -> TriggerAccepted:
        """Queue a manual job, as ``loopengine trigger`` does; a repeated ``Idempotency-Key``
        answers with the first job (200) instead of queueing another."""
        from loopengine.daemon._intake import Firing, enqueue

        loop = context.loop(loop_id)
        if loop is None:
            raise HTTPException(404, f"no loop {loop_id!r} is served (see GET /loops)")
        if problems := input_problems(loop.spec.params or {}, request.inputs):
            raise HTTPException(422, "; ".join(problems))
        key = f"api:{idempotency_key}" if idempotency_key else f"manual:{new_id()}"
        firing = Firing(loop, {"type": "manual", "id": "api"}, key, request.inputs)
        now = time.time()

        def write(connection: sa.Connection) -> tuple[str, dict[str, Any] | None]:
            paused = loop_id in queue.paused(connection)
            intake = enqueue(connection, firing, now, paused=paused)
            return intake.status, queue.job_keyed(connection, key)

        status_name, job = await context.store.write(write)
        if job is None or status_name not in (queue.QUEUED, "duplicate"):
            reason = job["reason"] if job else status_name
            raise HTTPException(409, f"loop {loop_id!r} did not queue the job: {reason}")
        if status_name == "duplicate":
            response.status_code = 200
        else:
            context.queued()
        return TriggerAccepted(job_id=job["id"], loop_id=loop_id, status=status_name)

    @app.post("/events", status_code=202)
    async def post_event(event: EventIn) -> EventAccepted:
        """Append an event to the log, as ``loopengine emit`` does; the loops it fires are
        queued by the dispatcher."""
        if problem := event_problem(event.name):
            raise HTTPException(422, problem)
        if nesting(event.data) > MAX_EVENT_DEPTH:
            raise HTTPException(422, f"data is nested more than {MAX_EVENT_DEPTH} levels")
        if len(json.dumps(event.data, separators=(",", ":"), default=str)) > MAX_EVENT_BYTES:
            raise HTTPException(413, f"data is over {MAX_EVENT_BYTES} bytes as JSON")
        now = time.time()
        event_id = await context.store.write(
            lambda c: signals.insert_event(c, event.name, "api", event.data, now)
        )
        context.wake()
        seen = {"id": event_id, "name": event.name, "source": "api", "data": event.data}
        return EventAccepted(
            id=event_id, name=event.name, matched=context.matching({**seen, "created_at": now})
        )


async def _loops(context: ApiContext) -> list[dict[str, Any]]:
    since = time.time() - context.lease_s
    return await context.store.read(lambda c: status.served(c, since))


async def _served(context: ApiContext, loop_id: str) -> dict[str, Any]:
    """The served loop ``loop_id`` as ``/loops`` lists it; 404 when no daemon serves it."""
    for loop in await _loops(context):
        if loop["loop_id"] == loop_id:
            return loop
    raise HTTPException(404, f"no loop {loop_id!r} is served (see GET /loops)")
