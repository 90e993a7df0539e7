"""Events and metrics: the event log filtered by name pattern and time with a form to emit one
(held to the API's bounds), and each metric series with its latest value and a sparkline."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from loopengine._json import JSONObject, NonFiniteNumber, loads
from loopengine.app import emit, events, metric_points, metric_series, perform
from loopengine.console._drawing import HEIGHT, WIDTH, polyline
from loopengine.console._executions import instant
from loopengine.console._pages import PREFIX, Pages, redirect
from loopengine.errors import ContractError
from loopengine.store.signals import Event, Sample, Series
from loopengine.triggers import (
    MAX_EVENT_BYTES,
    EventDataProblem,
    event_data_problem,
    matches,
    pattern_problem,
)

__all__ = [
    "EVENTS",
    "POINTS",
    "SERIES",
    "SHOWN_DATA",
    "Refused",
    "Spark",
    "event_data",
    "names_wanted",
    "signal_routes",
    "spark",
]

EVENTS = 100
"""Events the log shows."""
SERIES = 50
"""Metric series the page shows."""
POINTS = 60
"""Newest points a sparkline draws."""
SHOWN_DATA = 2000
"""Characters of an event's data the log shows."""
_MAX_PATTERN = 200


def names_wanted(given: str) -> Callable[[str], bool]:
    """Whether a name matches a filter's pattern (the syntax of an event trigger's
    ``event_pattern``; any name for none); 422 when it is not one."""
    if not given:
        return lambda name: True
    problem = pattern_problem(given) if len(given) <= _MAX_PATTERN else "the pattern is too long"
    if problem:
        raise HTTPException(422, f"name: {problem}")
    return lambda name: matches(given, name)


@dataclass(frozen=True, slots=True)
class Refused:
    """Why a form's field is refused, and the status saying so."""

    message: str
    status_code: int = 422


def event_data(text: str) -> JSONObject | Refused:
    """An emit form's data read as a JSON object (``{}`` when empty) and held to every event's
    bounds (``event_data_problem``, as ``POST /events``); why not otherwise (413 too large)."""
    if not text.strip():
        return {}
    if len(text.encode()) > MAX_EVENT_BYTES:
        return Refused(EventDataProblem.too_big("data").message, 413)
    try:
        data = loads(text, root="data")
    except RecursionError:
        return Refused(EventDataProblem.too_deep("data").message)
    except NonFiniteNumber as exc:
        return Refused(str(exc))
    except ValueError as exc:
        return Refused(f'data is not JSON ({exc}): write e.g. {{"page": 1}}')
    if not isinstance(data, dict):
        return Refused('data is not a JSON object: write e.g. {"page": 1}')
    if problem := event_data_problem(data):
        return Refused(problem.message, 413 if problem.too_large else 422)
    return data


def _shown(data: Any) -> str:
    text = json.dumps(data, indent=2, ensure_ascii=False, default=str)
    return text if len(text) <= SHOWN_DATA else text[: SHOWN_DATA - 1] + "…"


@dataclass(frozen=True, slots=True)
class Spark:
    """A metric series as the page shows it: its latest point's labels and its newest points
    as a polyline (oldest first)."""

    series: Series
    labels: Mapping[str, Any]
    points: str
    low: float
    high: float


def spark(series: Series, samples: list[Sample]) -> Spark:
    """``series`` drawn from ``samples`` (newest first, as ``metric_points`` reads them)."""
    values = [sample.value for sample in reversed(samples)]
    labels = samples[0].labels if samples else {}
    return Spark(series, labels, polyline(values), min(values, default=0), max(values, default=0))


def signal_routes(pages: Pages) -> list[BaseRoute]:
    """``/console/events`` (and its emit form), ``/console/metrics``."""
    context = pages.context

    async def render_events(
        request: Request, status_code: int = 200, failed: Mapping[str, object] | None = None
    ) -> Response:
        query = request.query_params
        chosen = {name: query.get(name, "")[:_MAX_PATTERN] for name in ("name", "since", "until")}
        listed = events(
            names_wanted(chosen["name"]),
            EVENTS,
            since=instant("since", chosen["since"]),
            until=instant("until", chosen["until"]),
        )
        found: list[Event] = await perform(context.store, listed)
        return pages.render(
            request,
            "events.html",
            status_code,
            rows=[(event, _shown(event.data)) for event in found],
            chosen=chosen,
            shown=EVENTS,
            failed=failed,
            emitted=query.get("emitted", "")[:20],
        )

    async def listing(request: Request) -> Response:
        return await render_events(request)

    async def emitted(request: Request) -> Response:
        fields = await pages.posted(request)
        name, text = fields.get("name", ""), fields.get("data", "")
        data = event_data(text)
        if isinstance(data, Refused):
            failed = {"name": name, "data": text, "field": "data", "message": data.message}
            return await render_events(request, data.status_code, failed)
        try:
            appended = await perform(context.store, emit(name, data, "console"))
        except ContractError as exc:
            failed = {"name": name, "data": text, "field": "name", "message": str(exc)}
            return await render_events(request, 422, failed)
        return redirect(f"{PREFIX}events?{urlencode({'emitted': appended.id})}")

    async def series(request: Request) -> Response:
        chosen = request.query_params.get("name", "")[:_MAX_PATTERN]
        found = await perform(context.store, metric_series(names_wanted(chosen), SERIES))
        sparks = [
            spark(one, await perform(context.store, metric_points(one.name, POINTS)))
            for one in found
        ]
        return pages.render(
            request,
            "metrics.html",
            sparks=sparks,
            chosen=chosen,
            shown=SERIES,
            width=WIDTH,
            height=HEIGHT,
        )

    return [
        Route(PREFIX + "events", listing, methods=["GET"]),
        Route(PREFIX + "events", emitted, methods=["POST"]),
        Route(PREFIX + "metrics", series, methods=["GET"]),
    ]
