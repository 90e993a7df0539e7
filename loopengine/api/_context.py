"""What the API's endpoints share: the daemon's parts they use, and the one error shape."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Concatenate, ParamSpec, TypeVar, cast

from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException

from loopengine.api._prometheus import DaemonMetrics
from loopengine.app import Changes, Firing, Operation, Queued, Runtime, perform
from loopengine.contract import Loop
from loopengine.daemon import DaemonLog, HookRoute
from loopengine.errors import ContractError, NotFound, StoreUnavailable
from loopengine.store import Pending, Store, intake, queue

__all__ = [
    "ERRORS",
    "SESSION_ID",
    "ApiContext",
    "ErrorBody",
    "IntakeWrites",
    "error_response",
    "queue_firing",
    "queue_manual",
    "queued_job",
    "refused",
]

SESSION_ID = r"^[^\s/]+$"
"""A chat session's id, wherever the API takes one (``/chat``, ``/v1``'s ``user`` and
``X-Session-ID``, ``/sessions/{id}``): visible characters but ``/``, at most
``MAX_SESSION_ID``, so that every session a chat names can be read back."""
MAX_SESSION_ID = 200
"""The store's column."""

_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    408: "timeout",
    409: "conflict",
    412: "precondition_failed",
    413: "too_large",
    421: "misdirected",
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


T = TypeVar("T")
P = ParamSpec("P")
Keyed = tuple[intake.Intake, queue.Job | None]


class IntakeWrites:
    """The store as the API's operations use it, but the firings of concurrent requests
    (``intake.enqueue_keyed``) share one write: a firing joins the write of the one before it
    while that write waits, last, in the store's queue (so the order of submission holds), and
    each is decided as its own write would decide it (``intake.enqueue_keyed_all``). Should
    the shared write fail, each firing is written again alone, so only a faulty one fails. Every
    request's writes are ``impatient`` alike, so a firing never joins a write of another
    patience."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._waiting: Pending[list[Keyed]] | None = None
        self._firings: list[tuple[intake.Arrival, float]] = []

    async def read(
        self,
        operation: Callable[Concatenate[Any, P], T],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T:
        return await self.store.read(operation, *args, **kwargs)

    async def write(
        self,
        operation: Callable[Concatenate[Any, P], T],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T:
        if operation is not intake.enqueue_keyed:
            return await self.store.write(operation, *args, **kwargs)
        arrival, now = cast(tuple[intake.Arrival, float], args)
        return cast(T, await self.keyed(arrival, now))

    async def keyed(self, arrival: intake.Arrival, now: float) -> Keyed:
        """``intake.enqueue_keyed(arrival, now)``, in the write of the firings queued with it."""
        waiting = self._waiting
        if waiting is None or not self.store.is_last(waiting):
            self._firings = []
            waiting = self._waiting = self.store.submit(intake.enqueue_keyed_all, self._firings)
        firings = self._firings
        firings.append((arrival, now))
        place = len(firings) - 1
        try:
            return (await waiting.wait())[place]
        except StoreUnavailable:
            raise
        except Exception:
            if len(firings) == 1:
                raise
        return await self.store.write(intake.enqueue_keyed, arrival, now)


@dataclass(frozen=True, slots=True)
class ApiContext:
    """What the endpoints use: the store (whose commits wake the daemon's workers and
    dispatcher), this daemon's name, its lease, the token, which loops an event fires, and which
    loop a webhook fires."""

    store: Store
    owner: str
    lease_s: float
    token: str | None
    matching: Callable[[queue.Event], list[str]]
    loop: Callable[[str], Loop | None]
    """The loop the daemon serves under an id."""
    runtime: Runtime
    """The daemon's composed runtime: its engine runs what the API starts (chat, approvals)."""
    log: DaemonLog
    hook: Callable[[str], HookRoute | None]
    """The webhook route serving a path under ``/hooks/``, or None."""
    metrics: DaemonMetrics
    changes: Changes = field(default_factory=Changes)
    """The executions' changes, told as they commit (the console's live pages follow them)."""
    intake: IntakeWrites = field(init=False)
    """The store as the endpoints that queue firings use it (``IntakeWrites``)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "intake", IntakeWrites(self.store))


async def queue_firing(
    context: ApiContext, firing: Firing
) -> tuple[intake.Intake, queue.Job | None]:
    """Queue a client's firing (``intake.enqueue_keyed``): what became of it, and its job (the
    first one, for a ``duplicate``)."""
    now = time.time()
    return await context.intake.keyed(firing.arrival(now), now)


def queued_job(firing: Firing, taken: intake.Intake, job: queue.Job | None) -> dict[str, Any]:
    """The job a client's firing queued (the first one, for a ``duplicate``), as its row; 409
    with the reason when it does not run."""
    if job is None or taken.status not in (queue.QUEUED, "duplicate"):
        reason = taken.reason or (job.reason if job else taken.status)
        raise HTTPException(409, f"loop {firing.loop.id!r} did not queue the job: {reason}")
    return job.row()


async def queue_manual(context: ApiContext, operation: Operation[Queued]) -> Queued:
    """Queue a manual job (``trigger``: the store wakes the workers as it commits); 409 with the
    reason when the loop does not take it."""
    try:
        return await perform(context.intake, operation)
    except ContractError as exc:
        raise HTTPException(409, str(exc)) from None


def refused(exc: HTTPException | NotFound) -> JSONResponse:
    """The answer to a request an endpoint refused (``HTTPException``), or whose record is not
    found (404)."""
    if isinstance(exc, NotFound):
        return error_response(404, str(exc))
    return error_response(exc.status_code, str(exc.detail), dict(exc.headers or {}))


def error_response(
    status_code: int, message: str, headers: dict[str, str] | None = None
) -> JSONResponse:
    """The API's one error shape: ``{"error": {"code", "message"}}``."""
    code = _CODES.get(status_code, "error")
    body = {"error": {"code": code, "message": message}}
    return JSONResponse(body, status_code=status_code, headers=headers)
