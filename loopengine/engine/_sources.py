"""Built-in detect sources: metric, event, log, alert, database.

Each returns a mapping; ``published`` is what lands in the context at the source's local name
(its name without the loop's domain prefix: ``seo.violations.count`` → ``violations.count``).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio.to_thread
import sqlalchemy as sa

from loopengine.contract._phases import Source
from loopengine.engine._run import Run
from loopengine.engine._services import Services
from loopengine.errors import SkillError, StorageError
from loopengine.store import signals
from loopengine.store._readonly import read_only_query
from loopengine.store._tables import audit, trigger_states
from loopengine.triggers import matches

__all__ = ["SourceResult", "local_name", "read_source"]

_DEFAULT_WINDOW_S = 24 * 3600
_MAX_LINES = 1000


@dataclass(frozen=True, slots=True)
class SourceResult:
    result: dict[str, Any]
    published: Any
    latest_at: float | None


def local_name(name: str, domain: str | None) -> str:
    """``__seo_pages`` → ``pages`` and ``seo.violations.count`` → ``violations.count`` in SEO."""
    text = name.lstrip("_")
    if domain:
        for separator in (".", "_"):
            prefix = f"{domain.lower()}{separator}"
            if text.lower().startswith(prefix):
                return text[len(prefix) :]
    return text


def _window_start(source: Source, now: float, default: float | None) -> float | None:
    if source.freshness_hours is not None:
        return now - source.freshness_hours * 3600
    return None if default is None else now - default


def _store(services: Services) -> Any:
    if services.store is None:
        raise SkillError("this source reads the store, and the engine runs without one")
    return services.store


async def _metric(source: Source, run: Run, services: Services) -> SourceResult:
    since = _window_start(source, services.clock(), None)
    points = await _store(services).read(lambda c: signals.metric_points(c, source.name, since))
    values = [p["value"] for p in reversed(points)]
    latest = points[0]["recorded_at"] if points else None
    result: dict[str, Any] = {
        "name": source.name,
        "value": values[-1] if values else None,
        "values": values,
        "count": len(values),
        "sum": sum(values),
        "avg": statistics.fmean(values) if values else None,
        "min": min(values) if values else None,
        "max": max(values) if values else None,
        "latest_at": latest,
    }
    return SourceResult(result, result["value"], latest)


async def _event(source: Source, run: Run, services: Services) -> SourceResult:
    since = _window_start(source, services.clock(), _DEFAULT_WINDOW_S) or 0.0
    recent = await _store(services).read(lambda c: signals.recent_events(c, since))
    found = [e for e in recent if matches(source.name, e["name"])]
    latest = found[0]["created_at"] if found else None
    result = {"events": found, "count": len(found), "latest_at": latest}
    return SourceResult(result, result, latest)


def _tail(path: Path, needle: str | None) -> list[str]:
    with path.open(encoding="utf-8", errors="replace") as handle:
        lines = [line.rstrip("\n") for line in handle if not needle or needle in line]
    return lines[-_MAX_LINES:]


async def _audit_log(source: Source, run: Run, services: Services) -> SourceResult:
    query = sa.select(audit.c.record, audit.c.created_at).where(audit.c.loop_id == run.loop.id)
    rows = await _store(services).read(
        lambda c: [dict(r) for r in c.execute(query.limit(_MAX_LINES)).mappings()]
    )
    lines = [r for r in rows if not source.filter or source.filter in str(r["record"])]
    latest = max((r["created_at"] for r in lines), default=None)
    result = {"lines": lines, "count": len(lines)}
    return SourceResult(result, result, latest)


async def _log(source: Source, run: Run, services: Services) -> SourceResult:
    if source.name == "audit":
        return await _audit_log(source, run, services)
    path = (services.base / source.name).resolve()
    if not path.is_file():
        raise SkillError(f"log source: no file {path}")
    lines = await anyio.to_thread.run_sync(_tail, path, source.filter)
    result = {"lines": lines, "count": len(lines), "path": str(path)}
    return SourceResult(result, result, path.stat().st_mtime)


async def _alert(source: Source, run: Run, services: Services) -> SourceResult:
    query = sa.select(trigger_states).where(trigger_states.c.state == "firing")
    rows = await _store(services).read(lambda c: [dict(r) for r in c.execute(query).mappings()])
    firing = [r for r in rows if matches(source.name, r["metric"])]
    latest = max((r["since"] for r in firing), default=None)
    result = {"alerts": firing, "count": len(firing), "latest_at": latest}
    return SourceResult(result, result, latest)


def _select(url: str, table: str, where: str | None, limit: int) -> list[dict[str, Any]]:
    if where and ";" in where:
        raise SkillError("database source: the filter must be one WHERE clause (no ';')")

    def statement(dialect: sa.Dialect) -> str:
        quoted = dialect.identifier_preparer.quote(table)
        return f"SELECT * FROM {quoted}" + (f" WHERE {where}" if where else "") + f" LIMIT {limit}"

    try:
        return read_only_query(url, statement, limit)[1]
    except StorageError as exc:
        raise SkillError(f"database source {table!r}: {exc}") from None


async def _database(source: Source, run: Run, services: Services) -> SourceResult:
    name = (
        source.params.source.get("database", "default")
        if isinstance(source.params.source, dict)
        else "default"
    )
    url = services.config.databases.get(name) or services.config.database
    limit = int(run.envelope.scope.get("limit", 1000))
    rows = await anyio.to_thread.run_sync(_select, url, source.name, source.filter, limit)
    result = {"rows": rows, "count": len(rows)}
    return SourceResult(result, result, services.clock())


_READERS: dict[str, Callable[[Source, Run, Services], Coroutine[Any, Any, SourceResult]]] = {
    "metric": _metric,
    "event": _event,
    "log": _log,
    "alert": _alert,
    "database": _database,
}


async def read_source(source: Source, run: Run, services: Services) -> SourceResult:
    """Read one built-in source (``source.type`` is set)."""
    assert source.type is not None
    return await _READERS[source.type.value](source, run, services)
