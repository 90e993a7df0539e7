"""What the API's endpoints share: the daemon's parts they use, and the one error shape."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fastapi.responses import JSONResponse

from loopengine.contract import Loop
from loopengine.daemon._log import DaemonLog
from loopengine.runtime import Runtime
from loopengine.store import Store

__all__ = ["ApiContext", "error_response"]

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
    runtime: Runtime
    """The daemon's composed runtime: its engine runs what the API starts (chat, approvals)."""
    log: DaemonLog


def error_response(
    status_code: int, message: str, headers: dict[str, str] | None = None
) -> JSONResponse:
    """The API's one error shape: ``{"error": {"code", "message"}}``."""
    code = _CODES.get(status_code, "error")
    body = {"error": {"code": code, "message": message}}
    return JSONResponse(body, status_code=status_code, headers=headers)
