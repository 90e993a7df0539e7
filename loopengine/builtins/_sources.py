"""Built-in detect sources, one skill each (``source.metric`` …), called through the same
middleware as every other skill. Each returns a mapping with ``latest_at`` (the newest datum's
time, for freshness) that detect records under the source's name. The store is imported when a
source is read, so that validating loops does not load the database layer."""

from __future__ import annotations

import statistics
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from loopengine._json import JSONObject
from loopengine.errors import SkillError, StorageError
from loopengine.skills import SkillContext, skill
from loopengine.triggers import matches

if TYPE_CHECKING:
    from loopengine.store import Store

__all__ = ["alert_source", "database_source", "event_source", "log_source", "metric_source"]

_DEFAULT_WINDOW_S = 24 * 3600
_MAX_LINES = 1000


def _store(ctx: SkillContext) -> Store:
    if ctx.store is None:
        raise SkillError(f"{ctx.step}: this source reads the store, and the skill runs without one")
    return ctx.store


def _since(ctx: SkillContext, freshness_hours: float | None, default: float | None) -> float | None:
    if freshness_hours is not None:
        return ctx.clock() - freshness_hours * 3600
    return None if default is None else ctx.clock() - default


@skill("source.metric", description="Points of the metric series `name` from the metrics store.")
async def metric_source(
    ctx: SkillContext, name: str, freshness_hours: float | None = None
) -> JSONObject:
    from loopengine.store import signals

    since = _since(ctx, freshness_hours, None)
    points = await _store(ctx).read(signals.metric_points, name, since)
    values = [p.value for p in reversed(points)]
    return {
        "name": name,
        "value": values[-1] if values else None,
        "values": values,
        "count": len(values),
        "sum": sum(values),
        "avg": statistics.fmean(values) if values else None,
        "min": min(values) if values else None,
        "max": max(values) if values else None,
        "latest_at": points[0].recorded_at if points else None,
    }


@skill("source.event", description="Recent events whose name matches the pattern `name`.")
async def event_source(
    ctx: SkillContext, name: str, freshness_hours: float | None = None
) -> JSONObject:
    from loopengine.store import signals

    since = _since(ctx, freshness_hours, _DEFAULT_WINDOW_S) or 0.0
    recent = await _store(ctx).read(signals.recent_events, since)
    found = [
        {"name": e.name, "source": e.source, "data": e.data, "created_at": e.created_at}
        for e in recent
        if matches(name, e.name)
    ]
    return {
        "events": found,
        "count": len(found),
        "latest_at": found[0]["created_at"] if found else None,
    }


def _tail(path: Path, needle: str | None) -> list[str]:
    with path.open(encoding="utf-8", errors="replace") as handle:
        lines = [line.rstrip("\n") for line in handle if not needle or needle in line]
    return lines[-_MAX_LINES:]


@skill("source.log", description="Lines of the log file `name` (or `audit`), `filter` a substring.")
async def log_source(ctx: SkillContext, name: str, filter: str | None = None) -> JSONObject:
    if name == "audit":
        from loopengine.store import records

        rows = await _store(ctx).read(records.audit_of, ctx.loop_id, _MAX_LINES)
        entries = [asdict(r) for r in rows if not filter or filter in str(r.record)]
        latest = max((r["created_at"] for r in entries), default=None)
        return {"lines": entries, "count": len(entries), "latest_at": latest}
    path = (ctx.base / name).resolve()
    if not path.is_file():
        raise SkillError(f"log source: no file {path}")
    from anyio.to_thread import run_sync  # loaded with the engine; validate never calls it

    lines = await run_sync(_tail, path, filter)
    return {
        "lines": lines,
        "count": len(lines),
        "path": str(path),
        "latest_at": path.stat().st_mtime,
    }


@skill("source.alert", description="Threshold triggers now firing whose metric matches `name`.")
async def alert_source(ctx: SkillContext, name: str) -> JSONObject:
    from loopengine.store import signals

    rows = await _store(ctx).read(signals.firing_alerts)
    firing = [asdict(r) for r in rows if matches(name, r.metric)]
    latest = max((r["since"] for r in firing), default=None)
    return {"alerts": firing, "count": len(firing), "latest_at": latest}


def _select(url: str, table: str, where: str | None, limit: int) -> list[JSONObject]:
    from loopengine.store import select_from

    if where and ";" in where:
        raise SkillError("database source: the filter must be one WHERE clause (no ';')")
    try:
        return select_from(url, table, where, limit)
    except StorageError as exc:
        raise SkillError(f"database source {table!r}: {exc}") from None


@skill(
    "source.database",
    description="Read-only SELECT on table `name` of a configured database, WHERE `filter`.",
)
async def database_source(
    ctx: SkillContext, name: str, filter: str | None = None, database: str = "default"
) -> JSONObject:
    url = ctx.config.databases.get(database) or ctx.config.database
    limit = int(ctx.scope.get("limit", 1000))
    from anyio.to_thread import run_sync

    rows = await run_sync(_select, url, name, filter, limit)
    return {"rows": rows, "count": len(rows), "latest_at": ctx.clock()}
