"""The daemon's HTTP API (FastAPI): JSON in and out; every error is
``{"error": {"code", "message"}}`` with a fitting status, never a stack trace; a bearer token on
every endpoint but ``/health`` and ``/hooks/*`` when one is set (``_access``).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from importlib.metadata import version
from typing import Annotated, Any

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException
from starlette.middleware.base import RequestResponseEndpoint
from starlette.responses import Response

from loopengine.contract import Outcome
from loopengine.daemon._access import is_open, token_accepted
from loopengine.store import Store, executions, queue, status

__all__ = ["MAX_LISTED", "ApiContext", "create_app"]

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
    """What the endpoints read: the store, this daemon's name, its lease, the token."""

    store: Store
    owner: str
    lease_s: float
    token: str | None


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

    @app.get("/health")
    async def health() -> Health:
        """Whether the daemon answers; open without a token."""
        return Health(status="ok", daemon=context.owner, version=release)

    @app.get("/status")
    async def daemon_status() -> dict[str, Any]:
        """Daemons alive, loops with their next fires and pause state, running executions,
        queue depth: what ``loopengine status --json`` prints."""
        return await _status()

    @app.get("/loops")
    async def loops() -> dict[str, Any]:
        """The loops the running daemons serve, each with its triggers' next fires and pause
        state."""
        return {"loops": (await _status())["loops"]}

    @app.get("/loops/{loop_id}")
    async def loop(loop_id: str) -> dict[str, Any]:
        """One served loop."""
        found: dict[str, Any] = await _served(loop_id)
        return found

    @app.post("/loops/{loop_id}/pause")
    async def pause(loop_id: str) -> dict[str, Any]:
        """Stop the loop's triggers (persisted; no catch-up on unpause): as ``loopengine
        pause``."""
        await _served(loop_id)
        now = time.time()
        changed = await context.store.write(lambda c: queue.pause(c, loop_id, now))
        return {"loop_id": loop_id, "state": "paused", "changed": changed}

    @app.post("/loops/{loop_id}/unpause")
    async def unpause(loop_id: str) -> dict[str, Any]:
        """Restart the loop's triggers: as ``loopengine unpause``."""
        await _served(loop_id)
        changed = await context.store.write(lambda c: queue.unpause(c, loop_id))
        return {"loop_id": loop_id, "state": "active", "changed": changed}

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

    async def _status() -> dict[str, Any]:
        since = time.time() - context.lease_s
        view: dict[str, Any] = await context.store.read(lambda c: status.view(c, since))
        return view

    async def _served(loop_id: str) -> dict[str, Any]:
        for served in (await _status())["loops"]:
            if served["loop_id"] == loop_id:
                found: dict[str, Any] = served
                return found
        raise HTTPException(404, f"no loop {loop_id!r} is served (see GET /loops)")

    @app.get("/executions/{execution_id}")
    async def execution(execution_id: str) -> dict[str, Any]:
        """One execution's record: what ``loopengine show --json`` prints."""
        record = await context.store.read(lambda c: executions.read_record(c, execution_id))
        if record is None:
            raise HTTPException(404, f"no execution {execution_id!r}")
        view: dict[str, Any] = record.view()
        return view

    return app
