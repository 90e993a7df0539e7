"""A trigger firing, as every trigger kind makes one, and what the queue takes of it: its job
and its loop's overlap policy (``store.intake`` decides by it in the transaction that writes the
job, so two daemons, or a daemon and ``loopengine trigger``, agree).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import loopengine._tracing as tracing
from loopengine.contract import Concurrency, Loop
from loopengine.store import new_envelope, queue
from loopengine.store.intake import Admission, Arrival
from loopengine.triggers import OverlapDecision, on_overlap

__all__ = ["Firing", "admission", "new_arrival", "triggers_of"]


def triggers_of(loop: Loop) -> list[tuple[str, Any]]:
    """``(trigger_id, trigger)`` for each trigger of ``loop``; an unnamed one is named by type."""
    spec = loop.spec
    found = [spec.trigger] if spec.trigger is not None else list(spec.triggers or [])
    return [(trigger.id or trigger.type, trigger) for trigger in found]


@dataclass(frozen=True, slots=True)
class Firing:
    """One trigger firing: which loop, how (``trigger`` is what ``history`` shows), with what."""

    loop: Loop
    trigger: Mapping[str, Any]
    idempotency_key: str
    payload: Mapping[str, Any] = field(default_factory=dict)
    scope: Mapping[str, Any] | None = None
    constraints: Mapping[str, Any] | None = None
    """The envelope's constraints (``{"dry_run": true}`` asks for a dry run)."""
    not_before: float = 0.0
    slot: float | None = None
    """A cron slot's scheduled instant: recorded uniquely with the job."""

    def arrival(self, now: float) -> Arrival:
        """The firing as the queue takes it: a job with a new envelope, keyed by the firing's
        idempotency key, under its loop's overlap policy."""
        return new_arrival(
            self.loop.id,
            admission(self.loop.spec.concurrency),
            self.trigger,
            self.idempotency_key,
            now,
            payload=self.payload,
            scope=self.scope,
            constraints=self.constraints,
            not_before=self.not_before,
            slot=self.slot,
        )


def new_arrival(
    loop_id: str,
    admit: Callable[[int, int], Admission],
    trigger: Mapping[str, Any],
    idempotency_key: str,
    now: float,
    *,
    payload: Mapping[str, Any] | None = None,
    scope: Mapping[str, Any] | None = None,
    constraints: Mapping[str, Any] | None = None,
    not_before: float = 0.0,
    slot: float | None = None,
) -> Arrival:
    """A firing of ``loop_id`` as the queue takes it (``Firing.arrival``), from its overlap
    policy alone (``admission``): the scheduler keeps no loop's definition. The envelope's trace
    id is the trigger's ``traceparent``'s, when it has one."""
    envelope = new_envelope(
        loop_id,
        payload or {},
        scope=scope,
        constraints=constraints,
        idempotency_key=idempotency_key,
        trace_id=tracing.trace_id(trigger.get(tracing.TRACEPARENT)),
    )
    job = queue.Job(
        id=envelope.job_id,
        loop_id=loop_id,
        trigger=dict(trigger),
        envelope=envelope.as_dict(),
        idempotency_key=envelope.idempotency_key,
        status=queue.QUEUED,
        not_before=not_before or now,
        created_at=now,
    )
    trigger_id = str(trigger.get("id") or trigger["type"])
    return Arrival(job, trigger_id, admit, slot)


@functools.lru_cache(maxsize=256)
def admission(concurrency: Concurrency) -> Callable[[int, int], OverlapDecision]:
    """``concurrency``'s overlap policy, for ``Arrival.admit`` (loops with equal ones share it)."""
    return partial(_admit, concurrency)


def _admit(concurrency: Concurrency, running: int, queued: int) -> OverlapDecision:
    return on_overlap(
        concurrency.on_overlap,
        running=running,
        queued=queued,
        max_running=concurrency.max,
        max_queue=concurrency.max_queue,
    )
