"""Phase 2, analyze: context (cached for its TTL), then the steps in order."""

from __future__ import annotations

from typing import Any

from loopengine.contract import Analyze, ContextRequirement
from loopengine.engine._context import publish
from loopengine.engine._run import Run
from loopengine.engine._services import NO_PARAMS, Services
from loopengine.engine.phases._base import PhaseOutput
from loopengine.store import learning

__all__ = ["run_analyze"]


async def _context(
    requirement: ContextRequirement, run: Run, services: Services, spec: Analyze
) -> tuple[Any, str]:
    key = f"{run.loop.id}:{requirement.context_type}"
    now = services.clock()
    store = services.store
    if requirement.ttl_seconds:
        cached = await store.read(learning.cached_context, key, now)
        if cached is not None:
            return cached, "cache"
    if services.registry.find_skill(requirement.source) is None:
        state = run.data.get("state") or {}
        if requirement.source in state:
            return state[requirement.source], "state"
        return None, "missing"
    called = await services.call(
        run,
        "analyze",
        f"context:{requirement.context_type}",
        requirement.source,
        NO_PARAMS,
        max_retries=spec.max_retries,
    )
    if requirement.ttl_seconds:
        expires = now + requirement.ttl_seconds
        await store.write(learning.put_context, key, called.data, expires)
    return called.data, "skill"


async def run_analyze(run: Run, services: Services) -> PhaseOutput:
    spec = run.loop.spec.analyze
    assert spec is not None
    output = PhaseOutput(data={"strategy": spec.strategy.value})
    loaded: dict[str, str] = {}
    context: dict[str, Any] = run.data.setdefault("context", {})
    for requirement in spec.context_required:
        context[requirement.context_type], loaded[requirement.context_type] = await _context(
            requirement, run, services, spec
        )
    if loaded:
        output.data["context"] = loaded
    namespace: dict[str, Any] = run.data.setdefault("analysis", {})
    confidences: dict[str, float] = {}
    for step in spec.analysis_steps:
        called = await services.call(
            run, "analyze", step.name, step.skill_id, step.params, max_retries=spec.max_retries
        )
        namespace[step.name] = called.data
        publish(run.data, called.data)
        if called.confidence is not None:
            confidences[step.name] = float(called.confidence)
    confidence = min(confidences.values(), default=1.0)
    run.data["confidence"] = confidence
    output.data["steps"] = [step.name for step in spec.analysis_steps]
    output.data["confidence"] = confidence
    if confidences:
        output.data["step_confidence"] = confidences
    return output
