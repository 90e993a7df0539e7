"""What the API's endpoints share: the daemon's parts they use, and the one error shape."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fastapi.responses import JSONResponse
from pydantic import BaseModel

from loopengine.contract import Loop
from loopengine.daemon._hooks import HookRoute
from loopengine.daemon._log import DaemonLog
from loopengine.daemon._metrics import DaemonMetrics
from loopengine.runtime import Runtime
from loopengine.store import Store

__all__ = ["ERRORS", "ApiContext", "ErrorBody", "error_response"]

_CODES = {
    400: "bad_request",
    401: "unauthorized",
    404: "not_found",
    405: "method_not_allowed",
    408: "timeout",
    409: "conflict",
    412: "precondition_failed",
    413: "too_large",
    422: "invalid",
    428: "precondition_required",
    429: "too_many_requests",
    502: "bad_gateway",
    503: "unavailable",
}


class ErrorDetail(BaseModel):
    code: str
    """A short name of the status (``not_found``, ``conflict``…), stable for programs."""
    message: str
    """One line for a person: what is wrong and how to fix it."""


class ErrorBody(BaseModel):
    """Every error the API answers."""

    error: ErrorDetail


ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorBody, "description": code.replace("_", " ")}
    for status, code in {**_CODES, 500: "internal"}.items()
}
"""The error answers every endpoint may give, for the OpenAPI document."""


@dataclass(frozen=True, slots=True)
class ApiContext:
    """What the endpoints use: the store, this daemon's name, its lease, the token, which loops
    an event fires, how to wake the dispatcher, and which loop a webhook fires."""

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
    runtime: Runtime
    """The daemon's composed runtime: its engine runs what the API starts (chat, approvals)."""
    log: DaemonLog
    hook: Callable[[str], HookRoute | None]
    """The webhook route serving a path under ``/hooks/``, or None."""
    metrics: DaemonMetrics


def error_response(
    status_code: int, message: str, headers: dict[str, str] | None = None
) -> JSONResponse:
    """The API's one error shape: ``{"error": {"code", "message"}}``."""
    code = _CODES.get(status_code, "error")
    body = {"error": {"code": code, "message": message}}
    return JSONResponse(body, status_code=status_code, headers=headers)
