"""The daemon's HTTP API (FastAPI): JSON in and out; every error is
``{"error": {"code", "message"}}`` with a fitting status, never a stack trace; a bearer token on
every endpoint but ``/health`` and ``/hooks/*`` when one is set (``_access``).
"""

from __future__ import annotations

import re
import time
from importlib.metadata import version

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from loopengine.daemon._access import is_open, token_accepted
from loopengine.daemon._api_context import ApiContext, error_response
from loopengine.daemon._api_loops import add_loop_routes
from loopengine.store import new_id

__all__ = ["MAX_BODY", "create_app"]

MAX_BODY = 1_048_576
"""Most bytes of a request body (a webhook's payload included)."""

_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")
_QUIET = ("/health", "/metrics")
"""Paths polled by probes and scrapers: not logged per request."""
_ROUTES = (add_loop_routes,)
"""Each adds one group of endpoints."""


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
        await error_response(413, message, {"Connection": "close"})(scope, receive, send)


class _Access:
    """Gives each request an id (the client's ``X-Request-ID`` when well formed), answers 401
    without the token where one is needed, and logs one ``http`` line per request with its id,
    status and duration (probes and scrapes of ``_QUIET`` paths excepted)."""

    def __init__(self, app: ASGIApp, context: ApiContext) -> None:
        self.app, self.context = app, context

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        given = headers.get(b"x-request-id", b"").decode("latin-1")
        request_id = given if _REQUEST_ID.fullmatch(given) else new_id()
        scope.setdefault("state", {})["request_id"] = request_id
        started = time.perf_counter()
        answered = 0

        async def send_with_id(message: Message) -> None:
            nonlocal answered
            if message["type"] == "http.response.start":
                answered = message["status"]
                message["headers"] = [
                    *message.get("headers", []),
                    (b"x-request-id", request_id.encode()),
                ]
            await send(message)

        path = scope["path"]
        authorization = headers.get(b"authorization", b"").decode("latin-1") or None
        try:
            if is_open(path) or token_accepted(self.context.token, authorization):
                await self.app(scope, receive, send_with_id)
            else:
                message = "this endpoint needs the daemon's token: Authorization: Bearer <token>"
                refusal = error_response(401, message, {"WWW-Authenticate": "Bearer"})
                await refusal(scope, receive, send_with_id)
        finally:
            if path not in _QUIET:
                self.context.log.line(
                    "http",
                    request_id=request_id,
                    method=scope["method"],
                    path=path,
                    status=answered or 499,
                    ms=round((time.perf_counter() - started) * 1000, 1),
                )


def create_app(context: ApiContext) -> FastAPI:
    """The app serving ``context``; OpenAPI at ``/openapi.json``."""
    release = version("loopengine")
    app = FastAPI(title="loopengine", version=release, docs_url=None, redoc_url=None)
    app.add_middleware(_BodyLimit, limit=MAX_BODY)
    app.add_middleware(_Access, context=context)

    @app.exception_handler(HTTPException)
    async def httperror_response(request: Request, exc: HTTPException) -> JSONResponse:
        return error_response(exc.status_code, str(exc.detail), dict(exc.headers or {}))

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {"loc": (), "msg": "invalid request"}
        where = ".".join(str(part) for part in first.get("loc", ()))
        return error_response(
            422, f"{where}: {first.get('msg')}" if where else str(first.get("msg"))
        )

    @app.exception_handler(Exception)
    async def failed(request: Request, exc: Exception) -> JSONResponse:
        request_id = request.scope.get("state", {}).get("request_id")
        context.log.line(
            "error",
            f"{request.method} {request.url.path} failed: {type(exc).__name__}: {exc}",
            request_id=request_id,
        )
        message = f"internal error: {type(exc).__name__} (request {request_id})"
        return JSONResponse({"error": {"code": "internal", "message": message}}, status_code=500)

    for add_routes in _ROUTES:
        add_routes(app, context)
    return app
