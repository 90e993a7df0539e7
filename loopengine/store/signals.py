"""Events and metric points: what detect sources read and loops emit."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

import loopengine.store._fastpath as fastpath
from loopengine.store._record import Record, new_id
from loopengine.store._tables import events, metrics, trigger_states, webhook_bodies
from loopengine.store.wakeups import EVENT, METRIC, notify
from loopengine.store.webhooks import hold_body

__all__ = [
    "Event",
    "Sample",
    "Series",
    "TriggerState",
    "firing_alerts",
    "insert_event",
    "insert_events_once",
    "insert_metric",
    "insert_metrics",
    "list_events",
    "metric_points",
    "metric_series",
    "recent_events",
]


@dataclass(frozen=True, slots=True)
class Event(Record):
    """One event of the log, ``id`` its place in it; ``execution_id`` names the execution that
    emitted it, if one did."""

    id: int
    name: str
    source: str
    data: Any
    execution_id: str | None
    created_at: float
    traceparent: str | None = None
    """The W3C traceparent it was appended under, if any."""


@dataclass(frozen=True, slots=True)
class Sample(Record):
    """One point of a metric series."""

    value: float
    labels: dict[str, Any]
    recorded_at: float


@dataclass(frozen=True, slots=True)
class TriggerState(Record):
    """A threshold trigger's saved state (``ThresholdState``) and when it was last evaluated."""

    loop_id: str
    trigger_id: str
    metric: str
    state: str
    value: float | None
    since: float
    armed: bool
    cleared_at: float | None
    evaluated_at: float


@dataclass(frozen=True, slots=True)
class Series(Record):
    """A metric series: its name, latest value and when, and how many points it holds."""

    name: str
    points: int
    recorded_at: float
    value: float


_INSERT_EVENT = events.insert().returning(events.c.id)
"""The event log's append, run on the fast path (one per ``emit``, one per ``POST /events``)."""


def insert_event(
    connection: sa.Connection,
    name: str,
    source: str,
    data: Any,
    at: float,
    execution_id: str | None = None,
    traceparent: str | None = None,
) -> int:
    """Append an event to the log (secret values masked), under the trace ``traceparent``
    names, if any; its id (the log's order)."""
    values = {
        "name": name,
        "source": source,
        "data": data,
        "created_at": at,
        "execution_id": execution_id,
        "traceparent": traceparent,
    }
    inserted = fastpath.fetch_one(connection, _INSERT_EVENT, values)
    assert inserted is not None
    notify(connection, EVENT)
    return int(inserted["id"])


def insert_events_once(
    connection: sa.Connection,
    keyed: Sequence[tuple[str, str, Any]],
    source: str,
    at: float,
    until: float,
    released: Sequence[str] = (),
    released_until: float = 0.0,
) -> int:
    """Append each ``(key, name, data)`` whose key no earlier call holds (a redelivered stream
    entry's), holding it until ``until``; how many were appended. The keys of ``released`` (the
    source acknowledged them) are held only until ``released_until`` from now on, so that a
    delivery already under way when they were acknowledged still appends nothing."""
    if released:
        shorter = webhook_bodies.update().where(
            webhook_bodies.c.key.in_(released), webhook_bodies.c.expires_at > released_until
        )
        connection.execute(shorter.values(expires_at=released_until))
    token = new_id()
    appended = 0
    for key, name, data in keyed:
        if hold_body(connection, key, token, at, until) == token:
            insert_event(connection, name, source, data, at)
            appended += 1
    return appended


def recent_events(connection: sa.Connection, since: float, limit: int = 1000) -> list[Event]:
    query = (
        sa.select(events)
        .where(events.c.created_at >= since)
        .order_by(events.c.created_at.desc())
        .limit(limit)
    )
    return [Event.from_row(row) for row in connection.execute(query).mappings()]


def list_events(
    connection: sa.Connection,
    wanted: Callable[[str], bool],
    limit: int,
    *,
    since: float | None = None,
    until: float | None = None,
) -> list[Event]:
    """The newest ``limit`` events whose name ``wanted`` accepts (appended from ``since`` and
    before ``until`` when given), newest first; rows are read one by one, so memory stays
    bounded."""
    query = sa.select(events).order_by(events.c.id.desc())
    if since is not None:
        query = query.where(events.c.created_at >= since)
    if until is not None:
        query = query.where(events.c.created_at < until)
    found = []
    for row in connection.execute(query).mappings():
        if wanted(row["name"]):
            found.append(Event.from_row(row))
            if len(found) == limit:
                break
    return found


def insert_metric(
    connection: sa.Connection, name: str, value: float, at: float, labels: dict[str, Any]
) -> None:
    connection.execute(
        metrics.insert().values(name=name, value=value, labels=labels, recorded_at=at)
    )
    notify(connection, METRIC)


_INSERT_METRIC = metrics.insert()


def insert_metrics(
    connection: sa.Connection, points: Sequence[tuple[str, float, Any]], at: float
) -> None:
    """``(name, value, labels)`` points recorded at ``at``, in one ``executemany``; labels may
    come encoded already (``Encoded``)."""
    rows = [{"name": n, "value": v, "labels": labels, "recorded_at": at} for n, v, labels in points]
    fastpath.execute_many(connection, _INSERT_METRIC, rows)
    notify(connection, METRIC)


def metric_points(
    connection: sa.Connection, name: str, since: float | None, limit: int = 10_000
) -> list[Sample]:
    query = (
        sa.select(metrics.c.value, metrics.c.labels, metrics.c.recorded_at)
        .where(metrics.c.name == name)
        .order_by(metrics.c.recorded_at.desc())
        .limit(limit)
    )
    if since is not None:
        query = query.where(metrics.c.recorded_at >= since)
    return [Sample.from_row(row) for row in connection.execute(query).mappings()]


def firing_alerts(connection: sa.Connection) -> list[TriggerState]:
    """Threshold triggers now in the ``firing`` state."""
    query = sa.select(trigger_states).where(trigger_states.c.state == "firing")
    return [TriggerState.from_row(row) for row in connection.execute(query).mappings()]


def metric_series(
    connection: sa.Connection, wanted: Callable[[str], bool], limit: int
) -> list[Series]:
    """The first ``limit`` metric series by name that ``wanted`` accepts: name, latest value,
    number of points and last time. Rows are read one by one, so memory stays bounded."""
    series = (
        sa.select(
            metrics.c.name,
            sa.func.count().label("points"),
            sa.func.max(metrics.c.recorded_at).label("recorded_at"),
        )
        .group_by(metrics.c.name)
        .subquery()
    )
    query = (
        sa.select(series, metrics.c.value)
        .join(
            metrics,
            (metrics.c.name == series.c.name) & (metrics.c.recorded_at == series.c.recorded_at),
        )
        .order_by(series.c.name)
    )
    found: dict[str, Series] = {}
    for row in connection.execute(query).mappings():
        if row["name"] in found or not wanted(row["name"]):
            continue
        if len(found) == limit:
            break
        found[row["name"]] = Series.from_row(row)
    return list(found.values())
