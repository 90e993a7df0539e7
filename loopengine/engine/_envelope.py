"""Job envelopes (seed 004): nothing runs a loop without one, and its scope is always bounded."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from loopengine.errors import ContractError

__all__ = ["DEFAULT_LIMIT", "MAX_LIMIT", "JobEnvelope", "new_envelope", "new_id"]

DEFAULT_LIMIT = 1000
MAX_LIMIT = 100_000


@dataclass(frozen=True, slots=True)
class JobEnvelope:
    """What one execution is asked to do: intent (the loop id), bounded scope, payload."""

    job_id: str
    trace_id: str
    intent: str
    scope: Mapping[str, Any]
    payload: Mapping[str, Any]
    constraints: Mapping[str, Any] = field(default_factory=dict)
    idempotency_key: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "job_id": self.job_id,
            "trace_id": self.trace_id,
            "intent": self.intent,
            "scope": dict(self.scope),
            "payload": dict(self.payload),
            "constraints": dict(self.constraints),
            "idempotency_key": self.idempotency_key,
        }


def new_id() -> str:
    """A random 128-bit id as 32 hex digits (the shape of a UUID4 hex, without its cost)."""
    return os.urandom(16).hex()


def _bounded(scope: Mapping[str, Any] | None) -> dict[str, Any]:
    bounded = dict(scope or {})
    limit = bounded.setdefault("limit", DEFAULT_LIMIT)
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ContractError(f"job scope limit must be a whole number ≥ 1, got {limit!r}")
    if limit > MAX_LIMIT:
        raise ContractError(f"job scope limit {limit} is above the cap of {MAX_LIMIT}")
    return bounded


def new_envelope(
    intent: str,
    payload: Mapping[str, Any] | None = None,
    *,
    scope: Mapping[str, Any] | None = None,
    constraints: Mapping[str, Any] | None = None,
    idempotency_key: str | None = None,
    trace_id: str | None = None,
) -> JobEnvelope:
    """A fresh envelope; the idempotency key defaults to the job id (every start is new)."""
    job_id = new_id()
    return JobEnvelope(
        job_id=job_id,
        trace_id=trace_id or new_id(),
        intent=intent,
        scope=_bounded(scope),
        payload=dict(payload or {}),
        constraints=dict(constraints or {}),
        idempotency_key=idempotency_key or job_id,
    )
