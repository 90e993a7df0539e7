"""How an execution reaches the store: per phase (durable, default) or once at the end (faster)."""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Sequence
from typing import Any

import sqlalchemy as sa

from loopengine.contract.enums import Durability
from loopengine.engine.records import PhaseRecord
from loopengine.engine.redact import redact
from loopengine.engine.run import Run
from loopengine.store import Store, executions, jobs
from loopengine.store import approvals as approval_rows

__all__ = ["OWNER", "CommitListener", "Recorder", "Write", "snapshot"]

Write = Callable[[sa.Connection], None]
CommitListener = Callable[[str, str], None]
"""Told ``(execution_id, what)`` once a commit is durable: started, a phase, waiting, finished."""
OWNER = f"{socket.gethostname()}:{os.getpid()}"


def snapshot(run: Run) -> dict[str, Any]:
    """What a resumed execution needs besides its phase rows."""
    return {
        "data": run.data,
        "rollbacks": [
            {"action_id": r.action_id, "skill": r.skill, "extra": r.extra, "key": r.key}
            for r in run.rollbacks
        ],
        "act_attempts": run.act_attempts,
        "samples": run.samples,
        "last_adjusted_at": run.last_adjusted_at,
    }


def _phase_row(run: Run, seq: int, record: PhaseRecord) -> dict[str, Any]:
    return {
        "execution_id": run.execution_id,
        "seq": seq,
        "phase": record.phase,
        "started_at": record.started_at,
        "completed_at": record.completed_at,
        "success": record.success,
        "outcome": record.outcome,
        "data": redact(record.data, run.secrets),
        "errors": redact(list(record.errors), run.secrets),
    }


def _execution_row(run: Run, status: str) -> dict[str, Any]:
    return {
        "id": run.execution_id,
        "loop_id": run.loop.id,
        "loop_version": run.loop.version,
        "loop_file": run.loop.file,
        "status": status,
        "outcome": None,
        "job_id": run.envelope.job_id,
        "trigger_type": run.trigger_type,
        "durability": run.loop.spec.durability.value,
        "dry_run": run.dry_run,
        "started_at": run.started_at,
        "owner": OWNER,
        "context": redact(snapshot(run), run.secrets),
        "usage": run.usage.as_dict(),
    }


def _progress(run: Run) -> dict[str, Any]:
    return {
        "last_phase": run.phases[-1].phase if run.phases else None,
        "context": redact(snapshot(run), run.secrets),
        "usage": run.usage.as_dict(),
    }


class Recorder:
    """Commits an execution's rows; with ``durability: execution`` everything waits for the end."""

    def __init__(
        self,
        store: Store | None,
        durability: Durability,
        *,
        resumed: bool = False,
        on_commit: CommitListener | None = None,
    ) -> None:
        self.store = store
        self.on_commit = on_commit
        self.per_phase = durability is Durability.PHASE
        self.pending: list[Write] = []
        self.inserted = resumed
        self.seq = 0

    async def _commit(self, run: Run, what: str, writes: Sequence[Write]) -> None:
        assert self.store is not None
        batch = [*self.pending, *writes]
        self.pending = []

        def apply(connection: sa.Connection) -> None:
            for write in batch:
                write(connection)

        await self.store.write(apply)
        if self.on_commit is not None:
            self.on_commit(run.execution_id, what)

    async def _flush_or_hold(self, run: Run, what: str, writes: Sequence[Write]) -> None:
        if self.store is None:
            return
        if self.per_phase:
            await self._commit(run, what, writes)
        else:
            self.pending.extend(writes)

    def _start_writes(self, run: Run, status: str) -> list[Write]:
        if self.inserted:
            return []
        self.inserted = True
        envelope = {
            **run.envelope.as_dict(),
            "execution_id": run.execution_id,
            "created_at": run.started_at,
        }
        row = _execution_row(run, status)
        return [
            lambda c: jobs.insert_envelope(c, envelope),
            lambda c: executions.insert_execution(c, row),
        ]

    async def started(self, run: Run) -> None:
        """Acknowledge the start: committed now with per-phase durability."""
        await self._flush_or_hold(run, "started", self._start_writes(run, "running"))

    def resume_at(self, seq: int) -> None:
        self.seq = seq

    def hold(self, run: Run, record: PhaseRecord) -> None:
        """Queue a skipped phase's row for the next commit (keeps rows in phase order)."""
        if self.store is None:
            return
        self.seq += 1
        row = _phase_row(run, self.seq, record)
        self.pending.append(lambda c: executions.insert_phases(c, [row]))

    async def phase(self, run: Run, record: PhaseRecord, writes: Sequence[Write]) -> None:
        """Record one finished phase with the context it left (for resume)."""
        if self.store is None:
            return
        self.seq += 1
        row = _phase_row(run, self.seq, record)
        execution_id = run.execution_id
        progress = _progress(run) if self.per_phase else {}
        batch: list[Write] = [lambda c: executions.insert_phases(c, [row]), *writes]
        if self.per_phase:
            batch.append(lambda c: executions.update_execution(c, execution_id, **progress))
        await self._flush_or_hold(run, record.phase, batch)

    async def suspended(self, run: Run, approval: dict[str, Any]) -> None:
        """Persist everything and wait for a human: status ``waiting``."""
        if self.store is None:
            return
        execution_id = run.execution_id
        progress = _progress(run)
        await self._commit(
            run,
            "waiting",
            [
                *self._start_writes(run, "waiting"),
                lambda c: approval_rows.insert_approval(c, approval),
                lambda c: executions.update_execution(
                    c, execution_id, status="waiting", outcome="awaiting_approval", **progress
                ),
            ],
        )

    async def finished(
        self,
        run: Run,
        skipped: Sequence[PhaseRecord],
        outcome: str,
        completed_at: float,
        writes: Sequence[Write],
        error: str | None,
    ) -> None:
        """The last commit: remaining phase rows, the outcome, and the store phase's writes."""
        if self.store is None:
            return
        for record in skipped:
            self.hold(run, record)
        execution_id = run.execution_id
        final = {
            **_progress(run),
            "status": "finished",
            "outcome": outcome,
            "completed_at": completed_at,
            "error": redact(error, run.secrets),
        }
        await self._commit(
            run,
            "finished",
            [
                *self._start_writes(run, "running"),
                *writes,
                lambda c: executions.update_execution(c, execution_id, **final),
            ],
        )
