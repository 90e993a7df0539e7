"""Phase 1, detect: skip_if, sources read in parallel, then the conditions."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

from loopengine._concurrency import run_all
from loopengine.contract import Condition, Detect, Outcome, Source, SourceType
from loopengine.engine._context import publish, set_path
from loopengine.engine._run import Run
from loopengine.engine._services import Services
from loopengine.engine.phases._base import PhaseOutput
from loopengine.expr import truthy

__all__ = ["run_detect"]


@dataclass(frozen=True, slots=True)
class _Found:
    """What a source read: its result, what lands in the context, and its newest datum's time."""

    result: Any
    published: Any
    latest_at: float | None


async def _read(source: Source, run: Run, services: Services, max_retries: int) -> _Found:
    step = source.as_ or source.name
    if source.type is None:
        assert source.skill is not None
        called = await services.call(
            run, "detect", step, source.skill, source.params, max_retries=max_retries
        )
        return _Found(called.data if called.data is not None else {}, called.data, None)
    called = await services.call(
        run,
        "detect",
        step,
        source.type.skill,
        source.reader_params,
        max_retries=max_retries,
    )
    result = dict(called.data or {})
    published = result.get("value") if source.type is SourceType.METRIC else result
    return _Found(result, published, result.get("latest_at"))


def local_name(name: str, domain: str | None) -> str:
    """``__seo_pages`` → ``pages`` and ``seo.violations.count`` → ``violations.count`` in SEO."""
    text = name.lstrip("_")
    if domain:
        for separator in (".", "_"):
            prefix = f"{domain.lower()}{separator}"
            if text.lower().startswith(prefix):
                return text[len(prefix) :]
    return text


def _with_path(data: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of ``data`` with ``path`` set, copying only the mappings along the path."""
    head, _, rest = path.partition(".")
    copy = dict(data)
    if rest:
        child = copy.get(head)
        copy[head] = _with_path(child if isinstance(child, dict) else {}, rest, value)
    else:
        copy[head] = value
    return copy


def _holds(condition: Condition, run: Run, aggregated: dict[str, dict[str, Any]]) -> bool:
    data = run.data
    if condition.aggregation is not None:
        for path, result in aggregated.items():
            data = _with_path(data, path, result.get(condition.aggregation.value))
    value = condition.expression.evaluate(data)
    if (
        condition.threshold is not None
        and isinstance(value, int | float)
        and not isinstance(value, bool)
    ):
        return value >= condition.threshold
    return truthy(value)


def _skip(spec: Detect, run: Run) -> str | None:
    return next((s.expression.source for s in spec.skip_if if s.expression.holds(run.data)), None)


async def run_detect(run: Run, services: Services) -> PhaseOutput:
    spec = run.loop.spec.detect
    assert spec is not None
    output = PhaseOutput()
    if skipped := _skip(spec, run):
        output.data["skipped_by"] = skipped
        output.stop = Outcome.SKIPPED
        return output
    results: dict[int, _Found] = {}

    async def read(index: int, source: Source) -> None:
        results[index] = await _read(source, run, services, spec.max_retries)

    await run_all([partial(read, index, source) for index, source in enumerate(spec.sources)])
    now = services.clock()
    stale: list[str] = []
    aggregated: dict[str, dict[str, Any]] = {}
    namespace: dict[str, Any] = run.data.setdefault("detect", {})
    for index, source in enumerate(spec.sources):
        found = results[index]
        key = source.as_ or source.name
        namespace[key] = found.result
        if source.freshness_hours is not None and (
            found.latest_at is None or now - found.latest_at > source.freshness_hours * 3600
        ):
            stale.append(key)
            found.result["stale"] = True
        if source.as_:
            run.data[source.as_] = found.published
        elif source.type is None:
            publish(run.data, found.published)
        else:
            path = local_name(source.name, run.loop.spec.domain)
            set_path(run.data, path, found.published)
            aggregated[path] = found.result
    output.data["sources"] = {key: _summary(value) for key, value in namespace.items()}
    if stale:
        output.data["stale"] = stale
    if skipped := _skip(spec, run):
        output.data["skipped_by"] = skipped
        output.stop = Outcome.SKIPPED
        return output
    failing = [c.expression.source for c in spec.conditions if not _holds(c, run, aggregated)]
    if failing:
        output.data["conditions_failed"] = failing
        output.stop = Outcome.NOTHING_DETECTED
    return output


def _summary(result: Any) -> Any:
    if isinstance(result, dict):
        return {k: v for k, v in result.items() if k not in ("rows", "lines", "events", "values")}
    return result
