"""``event.emit`` and ``metrics.record``: a loop's event or metric point, handed to the store as
a typed write of the step's commit, so it is kept exactly when the step is (a crashed step
emits nothing; its resumed run emits once)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, FiniteFloat, StringConstraints

import loopengine._tracing as tracing
from loopengine.errors import SkillError
from loopengine.skills import SkillContext, SkillOutput, skill

__all__ = ["emit_event", "record_metric"]


def _event_name(name: str) -> str:
    from loopengine.triggers import event_problem

    if problem := event_problem(name):
        raise ValueError(problem)
    return name


EventName = Annotated[str, AfterValidator(_event_name)]
"""An event name (``seo.page.updated``): checked at ``validate`` when written as is, and when the
step runs once rendered."""
MetricName = Annotated[str, StringConstraints(min_length=1, max_length=200)]
MAX_LABELS = 32
MAX_LABEL_KEY = 100
MAX_LABEL_VALUE = 1000


def _labels(labels: dict[str, str] | None) -> dict[str, str] | None:
    if labels is None:
        return None
    if len(labels) > MAX_LABELS:
        raise ValueError(f"{len(labels)} labels: a point takes at most {MAX_LABELS}")
    for key, value in labels.items():
        if not 0 < len(key) <= MAX_LABEL_KEY:
            raise ValueError(
                f"label {key[:MAX_LABEL_KEY]!r}: write 1 to {MAX_LABEL_KEY} characters"
            )
        if len(value) > MAX_LABEL_VALUE:
            raise ValueError(f"label {key!r} is over {MAX_LABEL_VALUE} characters")
    return labels


Labels = Annotated[dict[str, str] | None, AfterValidator(_labels)]
"""At most 32 labels, keys of 1 to 100 characters, values of at most 1000."""


def _bounded(data: Any) -> Any:
    """``data`` when it is within the bounds of every event's data (``loopengine emit``'s)."""
    from loopengine.triggers import event_data_problem

    if problem := event_data_problem(data):
        raise SkillError(f"event.emit: {problem.message}")
    return data


@skill(
    "event.emit",
    description="Append an event (`name`, `data`) to the event log with the step's commit: the "
    "loops whose event triggers match it run (same bounds as `loopengine emit`).",
)
async def emit_event(
    ctx: SkillContext, name: EventName, data: Any = None, dry_run: bool = False
) -> SkillOutput:
    """Args:
    name: The event's name, e.g. `disk.cleaned`.
    data: The event's data (JSON, at most 64 KiB, nested at most 32 levels).
    """
    from loopengine.store.effects import AppendEvent

    payload = _bounded({} if data is None else data)
    skipped = dry_run or ctx.dry_run
    event = {"name": name, "data": payload, "emitted": not skipped}
    if skipped:
        return SkillOutput(data={"event": event})
    trace = tracing.current()
    appended = AppendEvent(name, ctx.loop_id, payload, ctx.clock(), ctx.execution_id, trace)
    return SkillOutput(data={"event": event}, effects=(appended,))


@skill(
    "metrics.record",
    description="Add a point (`name`, `value`, `labels`) to a metric series with the step's "
    "commit: what threshold triggers and `loopengine metrics` read.",
)
async def record_metric(
    ctx: SkillContext,
    name: MetricName,
    value: FiniteFloat,
    labels: Labels = None,
    dry_run: bool = False,
) -> SkillOutput:
    """Args:
    name: The metric series, e.g. `disk.freed_bytes`.
    value: The point's value (a finite number).
    labels: Labels of the point (at most 32, text values).
    """
    from loopengine.store.effects import Metric, RecordMetrics

    given = dict(labels or {})
    skipped = dry_run or ctx.dry_run
    point = {"name": name, "value": value, "labels": given, "recorded": not skipped}
    if skipped:
        return SkillOutput(data={"metric": point})
    recorded = RecordMetrics((Metric(name, value, given),), ctx.clock())
    return SkillOutput(data={"metric": point}, effects=(recorded,))
