"""The daemon's HTTP API (FastAPI): JSON in and out; every error is
``{"error": {"code", "message"}}`` with a fitting status, never a stack trace; a bearer token on
every endpoint but ``/health`` and ``/hooks/*`` when one is set (``_access``). The web console
is served beside it, at ``/`` and the paths it names, behind its own login.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable, Coroutine
from functools import partial
from importlib.metadata import version
from typing import TYPE_CHECKING, Any, cast

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from loopengine._faults import describe
from loopengine._json import NonFiniteNumber, loads
from loopengine.api._access import (
    OPEN_PATHS,
    SAFE_METHODS,
    cross_site,
    is_open,
    loopback_host,
    token_accepted,
)
from loopengine.api._autolearn import add_autolearn_routes
from loopengine.api._chat import add_chat_routes
from loopengine.api._context import ERRORS, ApiContext, error_response, refused
from loopengine.api._hooks import add_hook_routes
from loopengine.api._knowledge import add_knowledge_routes
from loopengine.api._lanes import FastLanes
from loopengine.api._loops import add_loop_routes
from loopengine.api._metrics import add_metrics_routes
from loopengine.api._threads import add_thread_routes
from loopengine.errors import NotFound, StoreUnavailable
from loopengine.store import impatient, new_id

if TYPE_CHECKING:
    from loopengine.console import Console

__all__ = ["BODY_DEADLINE_S", "MAX_BODY", "MAX_IN_FLIGHT", "BodyBounds", "InFlight", "create_app"]

MAX_BODY = 1_048_576
"""Most bytes of a request body (a webhook's payload included)."""
BODY_DEADLINE_S = 30.0
"""Longest a request body may take to arrive whole."""
MAX_IN_FLIGHT = 512
"""Most requests served at once."""
MAX_OPEN_IN_FLIGHT = 64
"""Most of them to the paths served without a token (webhooks)."""

_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")
_QUIET = ("/health", "/metrics")
"""Paths polled by probes and scrapers: not logged per request."""
_ROUTES = (
    add_loop_routes,
    add_hook_routes,
    add_thread_routes,
    add_metrics_routes,
    add_chat_routes,
    add_autolearn_routes,
    add_knowledge_routes,
)
"""Each adds one group of endpoints."""


class BodyBounds:
    """Bounds a request body in size and time without buffering it: over ``limit`` bytes (or
    the smaller limit ``limit_of`` gives the path: a webhook's ``max_body_bytes``) is a 413, at
    once by its Content-Length, else as soon as the chunks read pass it; a body not received
    whole within ``deadline_s`` of the request's start is a 408, so a client trickling its body
    does not hold the server for ever."""

    def __init__(
        self,
        app: ASGIApp,
        limit: int,
        deadline_s: float,
        limit_of: Callable[[str], int | None] = lambda path: None,
    ) -> None:
        self.app, self.limit, self.deadline_s, self.limit_of = app, limit, deadline_s, limit_of

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = min(self.limit, self.limit_of(scope["path"]) or self.limit)
        length = next((v for k, v in scope["headers"] if k == b"content-length"), None)
        if length is not None and not (length.isascii() and length.isdigit()):
            refusal = error_response(400, "Content-Length must be a number of bytes")
        elif length is not None and int(length) > limit:
            refusal = error_response(413, f"the request body is over {limit} bytes")
        else:
            refusal = None
        if refusal is not None:
            refusal.headers["Connection"] = "close"
            await refusal(scope, receive, send)
            return
        body = _Body(receive, limit, self.deadline_s)
        try:
            await self.app(scope, body.read, send)
        finally:
            body.deadline.cancel()


class _Body:
    """A request's body as ``BodyBounds`` lets it be read: a 413 once the chunks read pass
    ``limit``, a 408 once ``deadline_s`` passed before it was whole. One timer keeps the deadline
    (a cancel scope around each read cost more than the rest of the bounds); it interrupts a
    read only."""

    def __init__(self, receive: Receive, limit: int, deadline_s: float) -> None:
        self.receive, self.limit, self.deadline_s = receive, limit, deadline_s
        self.size, self.whole, self.late = 0, False, False
        self.waiting: asyncio.Task[Any] | None = None
        loop = asyncio.get_running_loop()
        self.deadline = loop.call_at(loop.time() + deadline_s, self._expire)

    def _expire(self) -> None:
        self.late = True
        if self.waiting is not None:
            self.waiting.cancel()

    def _refused(self, status: int) -> HTTPException:
        if status == 413:
            message = f"the request body is over {self.limit} bytes"
        else:
            message = f"the request body did not arrive within {self.deadline_s:g} s"
        return HTTPException(status, message, {"Connection": "close"})

    async def read(self) -> Message:
        if self.whole:
            return await self.receive()
        if self.late:
            raise self._refused(408)
        self.waiting = task = cast("asyncio.Task[Any]", asyncio.current_task())
        cancelling = task.cancelling()
        try:
            message = await self.receive()
        except asyncio.CancelledError:
            if self.late and task.uncancel() <= cancelling:
                raise self._refused(408) from None
            raise
        finally:
            self.waiting = None
        self.size += len(message.get("body", b""))
        if self.size > self.limit:
            raise self._refused(413)
        self.whole = message["type"] != "http.request" or not message.get("more_body")
        if self.whole:
            self.deadline.cancel()
        return message


class InFlight:
    """At most ``limit`` requests served at once (a streamed chat counts until it ends), of
    which at most ``open_limit`` to the paths open without a token (``/hooks/*``: their callers
    are unknown and must not take every slot); ``/health`` always answers. One more is a 503 at
    once rather than a queue that grows without bound."""

    def __init__(self, app: ASGIApp, limit: int, open_limit: int) -> None:
        self.app, self.limit, self.open_limit = app, limit, open_limit
        self.serving = self.serving_open = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        opened = is_open(scope["path"])
        if self.serving >= self.limit or (opened and self.serving_open >= self.open_limit):
            served = self.open_limit if opened else self.limit
            message = f"the daemon is serving {served} such requests already; retry shortly"
            await error_response(503, message, {"Retry-After": "1"})(scope, receive, send)
            return
        self.serving += 1
        self.serving_open += opened
        try:
            await self.app(scope, receive, send)
        finally:
            self.serving -= 1
            self.serving_open -= opened


class _Access:
    """Gives each request an id (the client's ``X-Request-ID`` when well formed), answers 401
    without the token where one is needed (not on the console's paths, ``guarded``: it asks
    for its own session), and logs one ``http`` line per request with its id, status and
    duration (probes and scrapes of ``_QUIET`` paths excepted)."""

    def __init__(self, app: ASGIApp, context: ApiContext, guarded: Callable[[str], bool]) -> None:
        self.app, self.context, self.guarded = app, context, guarded

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
            if is_open(path) or self.guarded(path):
                await self.app(scope, receive, send_with_id)
            elif refusal := self._refusal(scope, headers, authorization):
                await refusal(scope, receive, send_with_id)
            else:
                await self.app(scope, receive, send_with_id)
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

    def _refusal(
        self, scope: Scope, headers: dict[bytes, bytes], authorization: str | None
    ) -> JSONResponse | None:
        """Why a request of a guarded path is not served: no token, or (none set) a host name
        that is not loopback's or a change a page of another site asks."""
        token = self.context.token
        if not token_accepted(token, authorization):
            message = "this endpoint needs the daemon's token: Authorization: Bearer <token>"
            return error_response(401, message, {"WWW-Authenticate": "Bearer"})
        if token is not None:
            return None
        host = headers.get(b"host", b"").decode("latin-1")
        if not loopback_host(host):
            message = "without a token the API answers requests to 127.0.0.1 or localhost only"
            return error_response(421, f"{message}: set daemon.token to serve {host!r}")
        origin = headers.get(b"origin", b"").decode("latin-1") or None
        if scope["method"] not in SAFE_METHODS and cross_site(origin, host):
            message = "a change asked by a page of another site is refused (no token is set)"
            return error_response(403, message)
        return None


class _Faults:
    """Answers a request whatever fails while serving it, and never lets the error reach the
    server (which would print a traceback): a store out of reach or out of space is a 503 with
    ``Retry-After`` (at once while the store is known to be out, without touching it, but on
    the console's paths, ``guarded``: its pages check the session first and say it in HTML),
    anything else a 500 naming the request; one log line each."""

    def __init__(self, app: ASGIApp, context: ApiContext, guarded: Callable[[str], bool]) -> None:
        self.app, self.context, self.guarded = app, context, guarded

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        outage = self.context.store.outage
        if outage is not None and not self.guarded(scope["path"]):
            await _unavailable(outage)(scope, receive, send)
            return
        answered = False

        async def tracked(message: Message) -> None:
            nonlocal answered
            answered |= message["type"] == "http.response.start"
            await send(message)

        try:
            with impatient():
                await self.app(scope, receive, tracked)
        except Exception as exc:
            request_id = scope.get("state", {}).get("request_id")
            where = f"{scope['method']} {scope['path']}"
            self.context.log.line(
                "error", f"{where} failed: {describe(exc)}", request_id=request_id
            )
            if answered:
                return
            if (outage := _outage_in(exc)) is not None:
                await _unavailable(outage)(scope, receive, send)
                return
            message = f"internal error: {type(exc).__name__} (request {request_id})"
            body = {"error": {"code": "internal", "message": message}}
            await JSONResponse(body, status_code=500)(scope, receive, send)


def _outage_in(exc: BaseException) -> StoreUnavailable | None:
    """``exc`` when the store was unavailable, also from inside a task group's exception group
    (every error of which is an outage)."""
    if isinstance(exc, StoreUnavailable):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        found = [_outage_in(inner) for inner in exc.exceptions]
        if found and all(found):
            return found[0]
    return None


def _unavailable(exc: StoreUnavailable) -> JSONResponse:
    retry_after = f"{max(1, round(exc.retry_after or 1))}"
    return error_response(503, f"{exc}: retry later", {"Retry-After": retry_after})


class _FiniteRequest(Request):
    """A request whose JSON body holds finite numbers only: ``NaN``, ``Infinity`` or ``1e999``
    anywhere in it is a 422 naming where, before any endpoint sees it."""

    async def json(self) -> Any:
        try:
            return loads(await self.body(), root="body")
        except NonFiniteNumber as exc:
            raise HTTPException(422, str(exc)) from None


class _FiniteRoute(APIRoute):
    """Every endpoint reads its JSON body through ``_FiniteRequest``."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def finite(request: Request) -> Response:
            return await handler(_FiniteRequest(request.scope, request.receive))

        return finite


class _Console:
    """Hands the console's paths to the console, the others to the API."""

    def __init__(self, app: ASGIApp, console: Console) -> None:
        self.app, self.console = app, console

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self.console.serves(scope["path"]):
            await self.console.app(scope, receive, send)
            return
        await self.app(scope, receive, send)


def _hook_limit(context: ApiContext, path: str) -> int | None:
    """The ``max_body_bytes`` of the webhook served at ``path``, if one is."""
    route = context.hook(path.removeprefix("/hooks/")) if path.startswith("/hooks/") else None
    return route.trigger.config.max_body_bytes if route is not None else None


def create_app(context: ApiContext) -> ASGIApp:
    """The app serving ``context``, the console beside it; OpenAPI at ``/openapi.json``. The
    middlewares (in-flight bound, access, faults, body bounds, the bulk endpoints' lanes) wrap
    the FastAPI app rather than sit inside it, so that what the lanes answer does not pass
    FastAPI's own layers too; an error escaping the FastAPI app goes on to ``_Faults``."""
    from loopengine.console import create_console  # Jinja2: the daemon's only

    release = version("loopengine")
    console = create_console(context)
    app = FastAPI(
        title="loopengine",
        version=release,
        docs_url=None,
        redoc_url=None,
        responses=ERRORS,
    )
    app.router.route_class = _FiniteRoute
    app.add_middleware(_Console, console=console)

    @app.exception_handler(Exception)
    async def passed_on(request: Request, exc: Exception) -> Response:
        """On to ``_Faults``, around the app (FastAPI would answer a plain-text 500 first)."""
        raise exc

    @app.exception_handler(HTTPException)
    async def httperror_response(request: Request, exc: HTTPException) -> JSONResponse:
        return refused(exc)

    @app.exception_handler(NotFound)
    async def not_found(request: Request, exc: NotFound) -> JSONResponse:
        return refused(exc)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {"loc": (), "msg": "invalid request"}
        where = ".".join(str(part) for part in first.get("loc", ()))
        return error_response(
            422, f"{where}: {first.get('msg')}" if where else str(first.get("msg"))
        )

    for add_routes in _ROUTES:
        add_routes(app, context)
    bounded = BodyBounds(
        FastLanes(app, context),
        limit=MAX_BODY,
        deadline_s=BODY_DEADLINE_S,
        limit_of=partial(_hook_limit, context),
    )
    guarded = console.serves
    served = _Access(_Faults(bounded, context, guarded), context, guarded)
    return InFlight(served, limit=MAX_IN_FLIGHT, open_limit=MAX_OPEN_IN_FLIGHT)
