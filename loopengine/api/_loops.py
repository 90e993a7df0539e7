"""The API's loops, executions and events: what ``status``, ``history``, ``show``,
``trigger``, ``pause`` and ``emit`` do on the command line."""

from __future__ import annotations

from importlib.metadata import version
from typing import Annotated, Any, Literal

from fastapi import FastAPI, Header, Query
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException
from starlette.responses import Response

import loopengine._tracing as tracing
from loopengine.api._context import ApiContext, queue_manual
from loopengine.app import (
    MAX_LISTED,
    MAX_LOG_LINES,
    Paused,
    emit,
    execution_log,
    history,
    perform,
    served_loop,
    served_loops,
    waiting_approvals,
)
from loopengine.app import answer as answer_gate
from loopengine.app import daemon_status as status_of
from loopengine.app import execution as execution_of
from loopengine.app import pause as pause_loop
from loopengine.app import trigger as manual_job
from loopengine.contract import Outcome, input_problems
from loopengine.errors import ContractError, LoopEngineError, NotFound, StoreUnavailable
from loopengine.store import approvals, executions
from loopengine.triggers import event_data_problem

__all__ = ["MAX_LISTED", "EventIn", "TriggerIn", "add_loop_routes", "append_event", "trigger_job"]

_SHOWN_PROBLEMS = 5
"""Most input problems one answer lists (a body of 20,000 unknown names is not echoed)."""


class TriggerIn(BaseModel):
    """A manual run: the loop's inputs, checked against its ``params``; ``dry_run`` runs its
    actions with ``dry_run: true`` only (outcome ``dry_run``)."""

    inputs: dict[str, Any] = Field(default_factory=dict, examples=[{"limit": 10}])
    dry_run: bool = False


class TriggerAccepted(BaseModel):
    job_id: str
    loop_id: str
    status: str
    """``queued``, or ``duplicate`` when the Idempotency-Key was used before (the first job)."""


class ExecutionPage(BaseModel):
    executions: list[dict[str, Any]]
    next_cursor: str | None
    """Pass it as ``cursor`` for the next page; null on the last one."""


class AnswerIn(BaseModel):
    """A person's answer to an execution waiting for approval: what ``loopengine approve`` and
    ``reject`` send."""

    decision: Literal["approve", "reject"]
    note: str | None = Field(None, max_length=2000, examples=["checked with the SEO team"])


class EventIn(BaseModel):
    """An event to append to the log: what ``loopengine emit NAME --data JSON`` sends."""

    name: str = Field(max_length=200, examples=["seo.page.updated"])
    data: dict[str, Any] = Field(default_factory=dict, examples=[{"page": 3}])


class EventAccepted(BaseModel):
    id: int
    name: str
    matched: list[str]
    """The loops it fires (the dispatcher queues their jobs)."""


class LogLineOut(BaseModel):
    at: str
    """When, in ISO 8601 UTC."""
    level: str
    phase: str
    step: str
    message: str


class LogPageOut(BaseModel):
    """What ``loopengine logs --json`` prints: lines after a cursor and the next cursor."""

    execution_id: str
    status: str
    """The execution's now: while ``running``, more lines may come."""
    lines: list[LogLineOut]
    after: int
    """Pass it as ``after`` for the lines that follow."""


class Health(BaseModel):
    status: str
    daemon: str
    version: str


def add_loop_routes(app: FastAPI, context: ApiContext) -> None:
    """Loops, executions, events."""
    _add_reads(app, context, version("loopengine"))
    _add_controls(app, context)
    _add_approvals(app, context)


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
        return (await perform(context.store, status_of(context.lease_s))).as_json()

    @app.get("/loops")
    async def loops() -> dict[str, Any]:
        """The loops the running daemons serve, each with its triggers' next fires and pause
        state."""
        found = await perform(context.store, served_loops(context.lease_s))
        return {"loops": [served.as_json() for served in found]}

    @app.get("/loops/{loop_id}")
    async def loop(loop_id: str) -> dict[str, Any]:
        """One served loop."""
        return (await perform(context.store, served_loop(loop_id, context.lease_s))).as_json()

    @app.get("/executions")
    async def execution_list(
        loop_id: str | None = None,
        outcome: Outcome | None = None,
        limit: Annotated[int, Query(ge=1, le=MAX_LISTED)] = 20,
        cursor: Annotated[str | None, Query(max_length=executions.MAX_CURSOR)] = None,
    ) -> ExecutionPage:
        """The newest executions first, of one loop and with one outcome when given: what
        ``loopengine history --json`` prints. ``next_cursor`` asks for the following page."""
        try:
            page = await perform(context.store, history(loop_id, outcome, limit, cursor))
        except ContractError as exc:
            raise HTTPException(422, f"cursor: {exc}") from None
        listed = [row.summary() for row in page.rows]
        return ExecutionPage(executions=listed, next_cursor=page.next_cursor)

    @app.get("/executions/{execution_id}")
    async def execution(execution_id: str) -> dict[str, Any]:
        """One execution's record: what ``loopengine show --json`` prints."""
        view: dict[str, Any] = (await perform(context.store, execution_of(execution_id))).view()
        return view

    @app.get("/executions/{execution_id}/logs")
    async def execution_logs(
        execution_id: str,
        after: int = 0,
        limit: Annotated[int, Query(ge=1, le=MAX_LOG_LINES)] = 200,
    ) -> LogPageOut:
        """What the execution's skills logged, oldest first, after the cursor ``after``: what
        ``loopengine logs --json`` prints. Ask again with the ``after`` it answers to follow a
        running execution (its ``status``)."""
        try:
            page = await perform(context.store, execution_log(execution_id, after, limit))
        except ContractError as exc:
            raise HTTPException(422, str(exc)) from None
        return LogPageOut.model_validate(page.view(execution_id))


def _add_controls(app: FastAPI, context: ApiContext) -> None:
    """The endpoints that change something: pause, trigger, events."""

    @app.post("/loops/{loop_id}/pause")
    async def pause(loop_id: str) -> Paused:
        """Stop the loop's triggers (persisted; no catch-up on unpause): as ``loopengine
        pause``."""
        await perform(context.store, served_loop(loop_id, context.lease_s))
        return await perform(context.store, pause_loop(loop_id, True))

    @app.post("/loops/{loop_id}/unpause")
    async def unpause(loop_id: str) -> Paused:
        """Restart the loop's triggers: as ``loopengine unpause``."""
        await perform(context.store, served_loop(loop_id, context.lease_s))
        return await perform(context.store, pause_loop(loop_id, False))

    @app.post("/loops/{loop_id}/trigger", status_code=202)
    async def trigger(
        loop_id: str,
        request: TriggerIn,
        response: Response,
        idempotency_key: Annotated[str | None, Header(max_length=200)] = None,
        traceparent: Annotated[str | None, Header()] = None,
    ) -> TriggerAccepted:
        """Queue a manual job, as ``loopengine trigger`` does; a repeated ``Idempotency-Key``
        (per loop) answers with the first job (200) instead of queueing another. Its execution
        continues the trace of a W3C ``traceparent`` (one malformed is ignored)."""
        accepted = await trigger_job(context, loop_id, request, idempotency_key, traceparent)
        if accepted.status == "duplicate":
            response.status_code = 200
        return accepted

    @app.post("/events", status_code=202)
    async def post_event(
        event: EventIn, traceparent: Annotated[str | None, Header()] = None
    ) -> EventAccepted:
        """Append an event to the log, as ``loopengine emit`` does; the loops it fires are
        queued by the dispatcher, their executions in the trace of a W3C ``traceparent`` (one
        malformed is ignored)."""
        return await append_event(context, event, traceparent)


async def trigger_job(
    context: ApiContext,
    loop_id: str,
    request: TriggerIn,
    idempotency_key: str | None,
    traceparent: str | None,
) -> TriggerAccepted:
    """What ``POST /loops/{loop_id}/trigger`` answers (its status ``duplicate`` for a repeated
    key); ``HTTPException`` for what it refuses."""
    loop = context.loop(loop_id)
    if loop is None:
        raise HTTPException(404, f"no loop {loop_id!r} is served (see GET /loops)")
    if problems := input_problems(loop.spec.params or {}, request.inputs):
        shown = "; ".join(problems[:_SHOWN_PROBLEMS])
        more = len(problems) - _SHOWN_PROBLEMS
        raise HTTPException(422, shown + (f"; and {more} more" if more > 0 else ""))
    queued = await queue_manual(
        context,
        manual_job(
            loop,
            request.inputs,
            "api",
            idempotency_key=idempotency_key,
            dry_run=request.dry_run,
            traceparent=tracing.traceparent(traceparent),
        ),
    )
    return TriggerAccepted(job_id=queued.job_id, loop_id=loop_id, status=queued.status)


async def append_event(
    context: ApiContext, event: EventIn, traceparent: str | None
) -> EventAccepted:
    """What ``POST /events`` answers; ``HTTPException`` for what it refuses."""
    if problem := event_data_problem(event.data):
        raise HTTPException(413 if problem.too_large else 422, problem.message)
    try:
        carried = tracing.traceparent(traceparent)
        appended = await perform(context.store, emit(event.name, event.data, "api", carried))
    except ContractError as exc:
        raise HTTPException(422, str(exc)) from None
    return EventAccepted(id=appended.id, name=event.name, matched=context.matching(appended))


class Waiting(BaseModel):
    approvals: list[dict[str, Any]]
    """Oldest first: each execution's decision, its plan (params, affected items) and the time
    left before it escalates."""


def _add_approvals(app: FastAPI, context: ApiContext) -> None:
    """What waits for a person, and a person's answer to it."""

    @app.get("/approvals")
    async def waiting(
        limit: Annotated[int, Query(ge=1, le=approvals.MAX_WAITING)] = 100,
    ) -> Waiting:
        """What waits for approval, oldest first, each with its decision, the plan it would
        run and the time left before it escalates: what ``loopengine approvals --json``
        prints."""
        found = await perform(context.store, waiting_approvals(limit))
        return Waiting(approvals=[gate.as_json() for gate in found])

    @app.post("/approvals/{execution_id}")
    async def answer(execution_id: str, answer: AnswerIn) -> dict[str, Any]:
        """Approve (the gated action runs now, in the daemon) or reject an execution waiting
        for approval, as ``loopengine approve`` / ``reject`` do; its record afterwards (409
        when it is not waiting, or its window closed)."""
        approve = answer.decision == "approve"
        try:
            record = await answer_gate(context.runtime, execution_id, approve, answer.note)
        except (StoreUnavailable, NotFound):
            raise
        except LoopEngineError as exc:
            raise HTTPException(409, str(exc)) from None
        view: dict[str, Any] = record.view()
        return view
