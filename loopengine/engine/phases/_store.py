"""Phase 7, store: write the artifacts where their storage points and append the audit record."""

from __future__ import annotations

from typing import Any

import anyio.to_thread

from loopengine.contract import ArtifactType, AuditField, Outcome, Store
from loopengine.engine._run import Run
from loopengine.engine._services import Services
from loopengine.engine.phases._base import PhaseOutput, declared
from loopengine.errors import StorageError
from loopengine.store import Artifact, AuditEntry, IndexArtifacts, iso

__all__ = ["audit_record", "ended", "run_store"]

_WOULD_END_WELL = frozenset({Outcome.COMPLETED, Outcome.DRY_RUN})


def _actions_taken(run: Run) -> list[str]:
    taken: list[str] = []
    for record in run.phases:
        if record.phase == "act":
            taken += [
                a["action_id"] for a in record.data.get("actions", ()) if not a.get("dry_run")
            ]
            if "builtin" in record.data:
                taken.append(record.data["builtin"])
    return list(dict.fromkeys(taken))


def audit_record(run: Run, fields: list[AuditField], outcome: str, now: float) -> dict[str, Any]:
    """The audit record with exactly ``fields``."""
    decision = run.data.get("decision") or {}
    values: dict[AuditField, Any] = {
        AuditField.TIMESTAMP: iso(now),
        AuditField.LOOP_ID: run.loop.id,
        AuditField.LOOP_VERSION: run.loop.version,
        AuditField.EXECUTION_ID: run.execution_id,
        AuditField.JOB_ID: run.envelope.job_id,
        AuditField.TRACE_ID: run.envelope.trace_id,
        AuditField.TRIGGER_TYPE: run.trigger_type,
        AuditField.DECISION_MADE: decision.get("action"),
        AuditField.ACTIONS_TAKEN: _actions_taken(run),
        AuditField.OUTCOME: outcome,
        AuditField.CONFIDENCE: run.data.get("confidence"),
        AuditField.DURATION_MS: round((now - run.started_at) * 1000, 3),
    }
    return {field: values[field] for field in fields}


def _content(kind: ArtifactType, run: Run, outcome: str, now: float) -> Any:
    if kind is ArtifactType.DECISION:
        return run.data.get("decision")
    if kind is ArtifactType.OUTCOME:
        return {
            "outcome": outcome,
            "validate": run.data.get("validate"),
            "learn": run.data.get("learn"),
        }
    if kind is ArtifactType.METRIC:
        durations = {r.phase: r.duration_ms for r in run.phases}
        return {"usage": run.usage.as_dict(), "phase_ms": durations, "metrics": dict(run.metrics)}
    if kind is ArtifactType.LOG:
        return [r.view() for r in run.phases]
    return audit_record(run, list(AuditField), outcome, now)


def ended(outcome: str, errors: list[str]) -> str:
    """What an execution ends as once its store phase ran: a run that would have completed
    (a dry run included) fails when its store phase did."""
    return Outcome.FAILED if errors and outcome in _WOULD_END_WELL else outcome


async def run_store(run: Run, services: Services, outcome: str) -> PhaseOutput:
    """Write artifacts and the audit record for an execution that ends with ``outcome``."""
    spec = declared(run.loop.spec.store, Store)
    now = services.clock()
    output = PhaseOutput()
    written: list[Artifact] = []
    for artifact in spec.artifacts:
        record = {
            "loop_id": run.loop.id,
            "execution_id": run.execution_id,
            "name": artifact.name,
            "type": artifact.type.value,
            "content": _content(artifact.type, run, outcome, now),
        }
        kept_s = artifact.retention_days * 86400 if artifact.retention_days is not None else None
        try:
            location = await anyio.to_thread.run_sync(
                services.artifacts.write, artifact.storage, record, kept_s
            )
        except StorageError as exc:
            output.errors.append(f"artifact '{artifact.name}': {exc}")
            continue
        expires = now + kept_s if kept_s is not None else None
        written.append(
            Artifact(
                run.execution_id,
                run.loop.id,
                artifact.name,
                artifact.type.value,
                artifact.storage,
                location,
                artifact.indexed,
                now,
                expires,
            )
        )
    if written:
        output.effects.append(IndexArtifacts(tuple(written)))
    run.artifacts.extend(written)
    output.data["artifacts"] = [
        {"name": a.name, "storage": a.storage, "location": a.location} for a in written
    ]
    final = ended(outcome, output.errors)
    if spec.audit_trail.enabled:
        entry = audit_record(run, spec.audit_trail.fields, final, now)
        output.effects.append(AuditEntry(run.execution_id, run.loop.id, entry, now))
        output.data["audit"] = entry
    return output
