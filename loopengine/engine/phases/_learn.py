"""Phase 6, learn: score the execution, then move learned values by a bounded step."""

from __future__ import annotations

from typing import Any

from loopengine.contract import FeedbackType, Learn
from loopengine.engine._learning import Signal, gate, score, step
from loopengine.engine._run import Run
from loopengine.engine._services import Services
from loopengine.engine.phases._base import PhaseOutput
from loopengine.store import Metric, PutState, QueueReview, RecordMetrics, signals

__all__ = ["run_learn"]


async def _signal_value(
    kind: FeedbackType, name: str, run: Run, services: Services
) -> float | None:
    if kind is FeedbackType.OUTCOME:
        return 1.0 if (run.data.get("validate") or {}).get("passed", True) else 0.0
    points = await services.store.read(signals.metric_points, name, None, limit=1)
    return float(points[0].value) if points else None


def _clamped(value: float, low: float | None, high: float | None) -> float:
    if low is not None:
        value = max(low, value)
    if high is not None:
        value = min(high, value)
    return value


def _adjust(
    spec: Learn, run: Run, values: dict[str, Any], execution_score: float
) -> dict[str, Any]:
    config = spec.learning_config
    moved: dict[str, Any] = {}
    current = values.get("score")
    values["score"] = (
        execution_score
        if current is None
        else step(float(current), execution_score, config.rate, config.max_adjustment)
    )
    moved["score"] = {"from": current, "to": values["score"]}
    for adjustment in spec.adjust:
        target = adjustment.target.evaluate(run.data)
        if not isinstance(target, int | float) or isinstance(target, bool):
            moved[adjustment.name] = {"skipped": f"target is {target!r}, not a number"}
            continue
        before = float(values.get(adjustment.name, adjustment.initial))
        after = _clamped(
            step(before, float(target), config.rate, config.max_adjustment),
            adjustment.min,
            adjustment.max,
        )
        values[adjustment.name] = after
        moved[adjustment.name] = {"from": before, "to": after, "target": target}
    return moved


def _recorded(spec: Learn, run: Run, services: Services, now: float) -> list[dict[str, Any]]:
    points = []
    for record in spec.record:
        value = record.value.evaluate(run.data)
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        labels = record.labels.render(run.data, services.environ) or {}
        points.append({"name": record.metric, "value": float(value), "labels": labels})
    return points


async def run_learn(run: Run, services: Services) -> PhaseOutput:
    spec = run.loop.spec.learn
    assert spec is not None
    now = services.clock()
    points = _recorded(spec, run, services, now)
    feedback = [
        Signal(f.name, await _signal_value(f.type, f.name, run, services), f.weight)
        for f in spec.feedback_sources
    ]
    execution_score = score(feedback)
    if execution_score is None:
        execution_score = await _signal_value(FeedbackType.OUTCOME, "outcome", run, services) or 0.0
    output = PhaseOutput(
        data={"score": execution_score, "signals": {s.name: s.value for s in feedback}}
    )
    run.data["learn"] = {"score": execution_score}
    if points:
        output.data["recorded"] = points
        recorded = tuple(Metric(p["name"], p["value"], p["labels"]) for p in points)
        output.effects.append(RecordMetrics(recorded, now))
    loop_id, execution_id = run.loop.id, run.execution_id
    confidence = float(run.data.get("confidence", 1.0))
    guard = spec.anti_hallucination
    if guard.enabled and confidence < guard.human_review_threshold:
        reason = (
            f"confidence {confidence} below the review threshold {guard.human_review_threshold}"
        )
        output.effects.append(QueueReview(execution_id, loop_id, reason, now))
        output.data["review_queued"] = reason
    if guard.enabled and confidence < guard.confidence_floor:
        output.data["not_learned"] = (
            f"confidence {confidence} below the floor {guard.confidence_floor}"
        )
        return output
    run.samples += 1
    values: dict[str, Any] = dict(run.data.get("state") or {})
    config = spec.learning_config
    why_not = gate(
        samples=run.samples,
        min_samples=config.min_samples,
        last_adjusted_at=run.last_adjusted_at,
        cooldown_hours=config.cooldown_hours,
        now=now,
    )
    if why_not is None:
        output.data["update"] = _adjust(spec, run, values, execution_score)
        run.last_adjusted_at = now
        run.data["state"] = values
    else:
        output.data["not_learned"] = why_not
    samples, adjusted = run.samples, run.last_adjusted_at
    output.data["samples"] = samples
    output.effects.append(PutState(loop_id, values, samples, adjusted, now))
    run.learned = True
    return output
