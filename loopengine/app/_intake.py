"""A trigger firing, as every trigger kind makes one, and what the queue takes of it: its job
and its loop's overlap policy (``store.intake`` decides by it in the transaction that writes the
job, so two daemons, or a daemon and ``loopengine trigger``, agree).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import loopengine._tracing as tracing
from loopengine.contract import Loop
from loopengine.store import new_envelope, queue
from loopengine.store.intake import Arrival
from loopengine.triggers import OverlapDecision, on_overlap

__all__ = ["Firing", "triggers_of"]


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
        idempotency key, under its loop's overlap policy; the envelope's trace id is the
        trigger's ``traceparent``'s, when it has one."""
        envelope = new_envelope(
            self.loop.id,
            self.payload,
            scope=self.scope,
            constraints=self.constraints,
            idempotency_key=self.idempotency_key,
            trace_id=tracing.trace_id(self.trigger.get(tracing.TRACEPARENT)),
        )
        job = queue.Job(
            id=envelope.job_id,
            loop_id=self.loop.id,
            trigger=dict(self.trigger),
            envelope=envelope.as_dict(),
            idempotency_key=envelope.idempotency_key,
            status=queue.QUEUED,
            not_before=self.not_before or now,
            created_at=now,
        )
        trigger_id = str(self.trigger.get("id") or self.trigger["type"])
        return Arrival(job, trigger_id, partial(_admit, self.loop), self.slot)


def _admit(loop: Loop, running: int, queued: int) -> OverlapDecision:
    """``loop``'s overlap policy, for ``Arrival.admit``."""
    concurrency = loop.spec.concurrency
    return on_overlap(
        concurrency.on_overlap,
        running=running,
        queued=queued,
        max_running=concurrency.max,
        max_queue=concurrency.max_queue,
    )
