"""The daemon's HTTP API (FastAPI): JSON in and out; every error is
``{"error": {"code", "message"}}`` with a fitting status, never a stack trace; a bearer token on
every endpoint but ``/health`` and ``/hooks/*`` when one is set (``_access``).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from importlib.metadata import version
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException
from starlette.middleware.base import RequestResponseEndpoint
from starlette.responses import Response

from loopengine.daemon._access import is_open, token_accepted
from loopengine.store import Store, executions, status

__all__ = ["ApiContext", "create_app"]

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
        since = time.time() - context.lease_s
        return await context.store.read(lambda c: status.view(c, since))

    @app.get("/executions/{execution_id}")
    async def execution(execution_id: str) -> dict[str, Any]:
        """One execution's record: what ``loopengine show --json`` prints."""
        record = await context.store.read(lambda c: executions.read_record(c, execution_id))
        if record is None:
            raise HTTPException(404, f"no execution {execution_id!r}")
        view: dict[str, Any] = record.view()
        return view

    return app
