"""Executions: the list (filtered, paged by cursor as ``GET /executions``) and one execution
(its phases on a timeline, their results, its approval answered, run again)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from loopengine.app import MAX_LOG_LINES, answer, execution, execution_log, history, perform, resume
from loopengine.console._approvals import APPROVALS
from loopengine.console._overview import queue_run
from loopengine.console._pages import PREFIX, Pages, redirect
from loopengine.contract import Outcome, TriggerType, input_problems
from loopengine.errors import ContractError, LoopEngineError, NotFound, StoreUnavailable
from loopengine.store import ExecutionRecord, PhaseResult
from loopengine.store.executions import MAX_CURSOR, Narrowed

__all__ = ["PAGE", "RUNNING", "Bar", "execution_routes", "instant", "listing_of", "timeline"]

PAGE = 50
"""Executions a page of the list shows."""
_MAX_NOTE = 2000
_FILTERS = ("loop_id", "outcome", "trigger", "since", "until")
_MAX_FILTER = 200
"""Longest filter value read."""
_MIN_WIDTH = 0.5
"""Narrowest bar, in percent of the execution: a phase of a millisecond stays visible."""


@dataclass(frozen=True, slots=True)
class Bar:
    """A phase on the timeline: where it starts and how long it lasts, in percent of the
    execution's span."""

    phase: PhaseResult
    offset: float
    width: float


def timeline(phases: Sequence[PhaseResult]) -> list[Bar]:
    """Each phase as a bar across the span from the first phase's start to the last one's
    end."""
    if not phases:
        return []
    start = min(p.started_at for p in phases)
    span = max(max(p.completed_at for p in phases) - start, 1e-9)
    bars = []
    for phase in phases:
        offset = min(max((phase.started_at - start) / span * 100, 0.0), 100 - _MIN_WIDTH)
        width = max((phase.completed_at - phase.started_at) / span * 100, _MIN_WIDTH)
        bars.append(Bar(phase, round(offset, 3), round(min(width, 100 - offset), 3)))
    return bars


RUNNING = "running"
"""The state an execution has before it has an outcome."""


def _outcome(given: str | None) -> Outcome | None:
    if not given or given == RUNNING:
        return None
    try:
        return Outcome(given)
    except ValueError:
        raise HTTPException(422, f"outcome {given!r} is none of the outcomes listed") from None


def _trigger_type(given: str | None) -> str | None:
    if given and given not in set(TriggerType):
        raise HTTPException(422, f"trigger {given!r} is none of the trigger types listed")
    return given or None


def instant(name: str, given: str | None) -> float | None:
    """A filter's date and time (UTC unless it names its offset) as epoch seconds; 422 for
    text that is none."""
    if not given:
        return None
    try:
        moment = datetime.fromisoformat(given)
    except ValueError:
        raise HTTPException(
            422, f"{name}: write a date and time such as 2026-11-26T20:00 (UTC)"
        ) from None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def listing_of(query: Mapping[str, str]) -> tuple[dict[str, str], Outcome | None, Narrowed]:
    """What the filters of the list ask: the fields to keep in its links, the outcome, the
    rest (``running``, trigger type, start times)."""
    kept = {name: query.get(name, "")[:_MAX_FILTER] for name in _FILTERS}
    narrowed = Narrowed(
        status=RUNNING if kept["outcome"] == RUNNING else None,
        trigger_type=_trigger_type(kept["trigger"]),
        since=instant("since", kept["since"]),
        until=instant("until", kept["until"]),
    )
    return kept, _outcome(kept["outcome"]), narrowed


def execution_routes(pages: Pages) -> list[BaseRoute]:
    """``/console/executions``, one execution, and the forms it posts."""
    context = pages.context

    async def listing(request: Request) -> Response:
        kept, outcome, narrowed = listing_of(request.query_params)
        cursor = request.query_params.get("cursor") or None
        if cursor is not None and len(cursor) > MAX_CURSOR:
            raise HTTPException(422, "that cursor is not one a page gave")
        listed = history(kept["loop_id"] or None, outcome, PAGE, cursor, narrowed)
        since = context.changes.seq
        try:
            page = await perform(context.store, listed)
        except ContractError as exc:
            raise HTTPException(422, f"cursor: {exc}") from None
        following = None
        if page.next_cursor is not None:
            following = "?" + urlencode({**kept, "cursor": page.next_cursor})
        return pages.render(
            request,
            "executions.html",
            rows=page.rows,
            outcomes=[RUNNING, *(o.value for o in Outcome)],
            triggers=[t.value for t in TriggerType],
            chosen=kept,
            following=following,
            stream=None if cursor else f"{PREFIX}live?since={since}",
        )

    async def one(request: Request) -> Response:
        since = context.changes.seq
        record = await perform(context.store, execution(request.path_params["execution_id"]))
        return await _show(pages, request, record, since=since)

    async def answered(request: Request) -> Response:
        fields = await pages.posted(request)
        execution_id = request.path_params["execution_id"]
        note = fields.get("note", "").strip() or None
        approve = fields.get("decision") == "approve"
        if fields.get("decision") not in ("approve", "reject"):
            raise HTTPException(422, "decision: approve or reject")
        if note is not None and len(note) > _MAX_NOTE:
            raise HTTPException(422, f"note: at most {_MAX_NOTE} characters")
        try:
            await answer(context.runtime, execution_id, approve, note)
        except (StoreUnavailable, NotFound):
            raise
        except LoopEngineError as exc:
            record = await perform(context.store, execution(execution_id))
            return await _show(pages, request, record, 409, error=str(exc))
        if fields.get("back") == "approvals":
            return redirect(APPROVALS)
        return redirect(f"{PREFIX}executions/{execution_id}")

    async def again(request: Request) -> Response:
        await pages.posted(request)
        record = await perform(context.store, execution(request.path_params["execution_id"]))
        loop = context.loop(record.execution.loop_id)
        if record.execution.trigger_type != "manual" or record.envelope is None:
            return await _show(pages, request, record, 409, error="only a manual run runs again")
        if loop is None:
            return await _show(
                pages, request, record, 409, error="this daemon does not serve the loop"
            )
        inputs = dict(record.envelope.payload)
        if problems := input_problems(loop.spec.params or {}, inputs):
            return await _show(pages, request, record, 422, error="; ".join(problems))
        dry_run = bool(record.envelope.constraints.get("dry_run"))
        queued = await queue_run(context, loop, inputs, dry_run)
        if isinstance(queued, str):
            return await _show(pages, request, record, 409, error=queued)
        return queued

    return [
        Route(PREFIX + "executions", listing, methods=["GET"]),
        Route(PREFIX + "executions/{execution_id}", one, methods=["GET"]),
        Route(PREFIX + "executions/{execution_id}/answer", answered, methods=["POST"]),
        Route(PREFIX + "executions/{execution_id}/again", again, methods=["POST"]),
        _resume_route(pages),
    ]


def _resume_route(pages: Pages) -> Route:
    """The form that runs an interrupted execution on, as ``loopengine resume`` does; why it
    does not shown on the execution's page."""

    async def resumed(request: Request) -> Response:
        await pages.posted(request)
        execution_id = request.path_params["execution_id"]
        try:
            await resume(pages.context.runtime, execution_id)
        except StoreUnavailable:
            raise
        except LoopEngineError as exc:
            record = await perform(pages.context.store, execution(execution_id))
            return await _show(pages, request, record, 409, error=str(exc))
        return redirect(f"{PREFIX}executions/{execution_id}")

    return Route(PREFIX + "executions/{execution_id}/resume", resumed, methods=["POST"])


def _calls(phases: Sequence[PhaseResult]) -> list[Mapping[str, object]]:
    """The skill calls the act phase recorded (each with its step, result and duration)."""
    for phase in phases:
        if phase.phase == "act" and isinstance(calls := phase.data.get("calls"), list):
            return [call for call in calls if isinstance(call, dict)]
    return []


async def _show(
    pages: Pages,
    request: Request,
    record: ExecutionRecord,
    status_code: int = 200,
    *,
    since: int | None = None,
    **more: Any,
) -> Response:
    """The page of ``record``, followed live from the change ``since`` (the one known before
    it was read) until it finishes."""
    row = record.execution
    log = await perform(pages.context.store, execution_log(row.id, 0, MAX_LOG_LINES))
    waiting = record.approval is not None and record.approval.status == "pending"
    since = pages.context.changes.seq if since is None else since
    live = f"{PREFIX}live?" + urlencode({"execution": row.id, "since": since})
    return pages.render(
        request,
        "execution.html",
        status_code,
        record=record,
        row=row,
        bars=timeline(record.phases),
        data=row.context.get("data", {}),
        calls=_calls(record.phases),
        log=log,
        log_shown=MAX_LOG_LINES,
        waiting=waiting,
        again=row.trigger_type == "manual" and pages.context.loop(row.loop_id) is not None,
        error=more.get("error"),
        stream=None if row.status == "finished" else live,
    )
