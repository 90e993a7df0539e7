"""The execution record, typed: rows to and from the database, and the view users read.

One codec for every reader and writer: the engine persists with it, resume rebuilds from it, and
``history``, ``show``, ``run --json`` and the HTTP API print its views. Times are epoch seconds in
the rows and ISO 8601 UTC in the views.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, ClassVar, TypeVar

from loopengine._json import JSONObject
from loopengine.errors import ContractError

__all__ = [
    "DEFAULT_LIMIT",
    "MAX_LIMIT",
    "ExecutionRow",
    "JobEnvelope",
    "PhaseResult",
    "Record",
    "Usage",
    "iso",
    "new_envelope",
    "new_id",
]

DEFAULT_LIMIT = 1000
MAX_LIMIT = 100_000
R = TypeVar("R", bound="Record")


class Record:
    """Base of a frozen dataclass stored as one row whose columns are named as its fields."""

    __slots__ = ()
    __dataclass_fields__: ClassVar[dict[str, Any]]

    @classmethod
    def from_row(cls: type[R], row: Mapping[Any, Any]) -> R:
        make: Callable[..., R] = cls
        return make(**{name: row[name] for name in cls.__dataclass_fields__})

    def row(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


_SECOND: list[tuple[float, str, str]] = [(-1.0, "", "")]
"""The last whole second ``iso`` wrote: its text before the milliseconds and after them."""


def iso(moment: float | None) -> str | None:
    """An epoch instant as ISO 8601 UTC (millisecond precision), as ``datetime.isoformat``
    writes it; the second's text is kept from the call before (a log line, an audit record and
    a row are written in the same second), its milliseconds put in."""
    if moment is None:
        return None
    fraction, whole = math.modf(moment)
    micros = round(fraction * 1e6)
    if micros >= 1_000_000:
        whole, micros = whole + 1, micros - 1_000_000
    elif micros < 0:
        whole, micros = whole - 1, micros + 1_000_000
    second, before, after = _SECOND[0]
    if whole != second:
        text = datetime.fromtimestamp(whole, UTC).isoformat(timespec="seconds")
        _SECOND[0] = (whole, text[:19], text[19:])
        before, after = text[:19], text[19:]
    return f"{before}.{micros // 1000:03d}{after}"


def _ms(start: float, end: float) -> float:
    return round((end - start) * 1000, 3)


@dataclass(frozen=True, slots=True)
class PhaseResult:
    """The result of one phase; ``outcome`` is set when the phase ended the execution."""

    phase: str
    started_at: float
    completed_at: float
    success: bool
    data: dict[str, Any] = field(default_factory=dict)
    errors: tuple[str, ...] = ()
    outcome: str | None = None

    @property
    def duration_ms(self) -> float:
        return _ms(self.started_at, self.completed_at)

    def stored(self) -> JSONObject:
        """The phase as its commit's row lists it (``phases.results``)."""
        return {
            "phase": self.phase,
            "started_at": self.started_at,
            "completed_at": self.completed_at,
            "success": self.success,
            "outcome": self.outcome,
            "data": self.data,
            "errors": list(self.errors),
        }

    @classmethod
    def from_stored(cls, item: Mapping[str, Any]) -> PhaseResult:
        return cls(
            item["phase"],
            item["started_at"],
            item["completed_at"],
            bool(item["success"]),
            item["data"],
            tuple(item["errors"]),
            item["outcome"],
        )

    def view(self) -> JSONObject:
        return {
            "phase": self.phase,
            "started_at": iso(self.started_at),
            "completed_at": iso(self.completed_at),
            "duration_ms": self.duration_ms,
            "success": self.success,
            "outcome": self.outcome,
            "data": self.data,
            "errors": list(self.errors),
        }


@dataclass(slots=True)
class Usage:
    """LLM tokens and calls an execution consumed (counted as they happen)."""

    tokens: int = 0
    llm_calls: int = 0

    def as_dict(self) -> dict[str, int]:
        return {"tokens": self.tokens, "llm_calls": self.llm_calls}


@dataclass(frozen=True, slots=True)
class JobEnvelope:
    """What one execution is asked to do (seed 004): intent (loop id), bounded scope, payload."""

    job_id: str
    trace_id: str
    intent: str
    scope: Mapping[str, Any]
    payload: Mapping[str, Any]
    constraints: Mapping[str, Any] = field(default_factory=dict)
    idempotency_key: str = ""

    def as_dict(self) -> JSONObject:
        return {
            "job_id": self.job_id,
            "trace_id": self.trace_id,
            "intent": self.intent,
            "scope": dict(self.scope),
            "payload": dict(self.payload),
            "constraints": dict(self.constraints),
            "idempotency_key": self.idempotency_key,
        }

    def row(
        self, execution_id: str, created_at: float, trigger: Mapping[str, Any]
    ) -> Mapping[str, Any]:
        """Its ``envelopes`` row, taken by ``execution_id``, started by ``trigger``."""
        values = {"execution_id": execution_id, "created_at": created_at, "trigger": trigger}
        return {**self.as_dict(), **values}

    @classmethod
    def from_row(cls, row: Mapping[Any, Any]) -> JobEnvelope:
        return cls(
            row["job_id"],
            row["trace_id"],
            row["intent"],
            row["scope"],
            row["payload"],
            row["constraints"],
            row["idempotency_key"],
        )


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


@dataclass(frozen=True, slots=True)
class ExecutionRow(Record):
    """One execution as stored; ``context`` is what a resume needs besides its phases."""

    id: str
    loop_id: str
    loop_version: str
    loop_file: str
    status: str
    job_id: str
    trigger_type: str
    durability: str
    dry_run: bool
    started_at: float
    outcome: str | None = None
    completed_at: float | None = None
    last_phase: str | None = None
    owner: str | None = None
    context: dict[str, Any] = field(default_factory=dict)
    usage: dict[str, int] = field(default_factory=dict)
    error: str | None = None
    trigger: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_row(cls, row: Mapping[Any, Any]) -> ExecutionRow:
        """From its row and its envelope's ``trigger`` (none when it has no envelope)."""
        values = {name: row[name] for name in cls.__dataclass_fields__}
        values["dry_run"] = bool(values["dry_run"])
        values["trigger"] = {k: v for k, v in (row["trigger"] or {}).items() if k != "type"}
        return cls(**values)

    @property
    def started_by(self) -> Mapping[str, Any]:
        """How it was started, as its envelope keeps it (with the trigger's type)."""
        return {"type": self.trigger_type, **self.trigger}

    @property
    def duration_ms(self) -> float | None:
        return None if self.completed_at is None else _ms(self.started_at, self.completed_at)

    def summary(self) -> JSONObject:
        """One line of ``history``."""
        return {
            "execution_id": self.id,
            "loop_id": self.loop_id,
            "status": self.status,
            "outcome": self.outcome,
            "started_at": iso(self.started_at),
            "completed_at": iso(self.completed_at),
            "duration_ms": self.duration_ms,
            "trigger_type": self.trigger_type,
            "trigger": {"type": self.trigger_type, **self.trigger},
        }
