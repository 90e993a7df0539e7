"""Execution records as users see them (``show``, ``run --json``, the HTTP API)."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from loopengine.engine._records import iso
from loopengine.store import approvals, executions, jobs, records

__all__ = ["execution_view", "history_view", "read_execution"]


def _duration_ms(row: dict[str, Any]) -> float | None:
    if row["completed_at"] is None:
        return None
    return round((float(row["completed_at"]) - float(row["started_at"])) * 1000, 3)


def history_view(row: dict[str, Any]) -> dict[str, Any]:
    """One line of ``history``."""
    return {
        "execution_id": row["id"],
        "loop_id": row["loop_id"],
        "status": row["status"],
        "outcome": row["outcome"],
        "started_at": iso(row["started_at"]),
        "completed_at": iso(row["completed_at"]),
        "duration_ms": _duration_ms(row),
        "trigger_type": row["trigger_type"],
    }


def _phase(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "phase": row["phase"],
        "started_at": iso(row["started_at"]),
        "completed_at": iso(row["completed_at"]),
        "duration_ms": round((row["completed_at"] - row["started_at"]) * 1000, 3),
        "success": row["success"],
        "outcome": row["outcome"],
        "data": row["data"],
        "errors": row["errors"],
    }


def execution_view(
    row: dict[str, Any],
    phases: list[dict[str, Any]],
    envelope: dict[str, Any] | None,
    approval: dict[str, Any] | None,
    stored: list[dict[str, Any]],
) -> dict[str, Any]:
    """The full record of one execution."""
    data = row["context"].get("data", {})
    view = {
        **history_view(row),
        "loop_version": row["loop_version"],
        "loop_file": row["loop_file"],
        "dry_run": row["dry_run"],
        "durability": row["durability"],
        "job": {
            k: v for k, v in (envelope or {}).items() if k not in ("execution_id", "created_at")
        },
        "decision": data.get("decision"),
        "validate": data.get("validate"),
        "learn": data.get("learn"),
        "phases": [_phase(p) for p in phases],
        "artifacts": [
            {
                "name": a["name"],
                "type": a["type"],
                "storage": a["storage"],
                "location": a["location"],
            }
            for a in stored
        ],
        "usage": row["usage"],
        "error": row["error"],
    }
    if approval is not None:
        view["approval"] = {
            "action": approval["action"],
            "status": approval["status"],
            "requested_at": iso(approval["requested_at"]),
            "deadline": iso(approval["deadline"]),
            "decided_at": iso(approval["decided_at"]),
            "note": approval["note"],
        }
    return view


def read_execution(connection: sa.Connection, execution_id: str) -> dict[str, Any] | None:
    """The full record of one execution, read in one transaction; None when unknown."""
    row = executions.get_execution(connection, execution_id)
    if row is None:
        return None
    stored = records.artifacts_of(connection, execution_id)
    return execution_view(
        row,
        executions.phases_of(connection, execution_id),
        jobs.get_envelope(connection, row["job_id"]),
        approvals.get_approval(connection, execution_id),
        stored,
    )
