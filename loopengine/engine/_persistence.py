"""How an execution reaches the store: per phase (durable, default) or once at the end (faster)."""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import sqlalchemy as sa

from loopengine.contract import Durability
from loopengine.engine._redact import redact
from loopengine.engine._run import Run
from loopengine.store import ExecutionRow, Pending, PhaseResult, Store, executions, jobs
from loopengine.store import approvals as approval_rows

__all__ = ["OWNER", "CommitListener", "Recorder", "Write", "snapshot"]

Write = Callable[[sa.Connection], None]
CommitListener = Callable[[str, str], None]
"""Told ``(execution_id, what)`` once a commit is durable: started, a phase, waiting, finished."""
OWNER = f"{socket.gethostname()}:{os.getpid()}"


def snapshot(run: Run) -> dict[str, Any]:
    """What a resumed execution needs besides its phase rows and envelope."""
    return {
        "data": run.data,
        "rollbacks": [
            {"action_id": r.action_id, "skill": r.skill, "extra": r.extra, "key": r.key}
            for r in run.rollbacks
        ],
        "act_attempts": run.act_attempts,
        "samples": run.samples,
        "last_adjusted_at": run.last_adjusted_at,
        "loop_parts": dict(run.loop.parts),
    }


def _execution_row(run: Run) -> ExecutionRow:
    return ExecutionRow(
        id=run.execution_id,
        loop_id=run.loop.id,
        loop_version=run.loop.version,
        loop_file=run.loop.file,
        status="running",
        job_id=run.envelope.job_id,
        trigger_type=run.trigger_type,
        durability=run.loop.spec.durability.value,
        dry_run=run.dry_run,
        started_at=run.started_at,
        owner=OWNER,
        context=redact(snapshot(run), run.secrets),
        usage=run.usage.as_dict(),
    )


def _progress(run: Run) -> dict[str, Any]:
    return {
        "last_phase": run.phases[-1].phase if run.phases else None,
        "context": redact(snapshot(run), run.secrets),
        "usage": run.usage.as_dict(),
    }


class Recorder:
    """Commits an execution's rows; with ``durability: execution`` everything waits for the end.

    Each commit is one transaction in one thread hop: the execution row (inserted the first time,
    updated after), every pending phase row in one ``executemany``, and the phases' own writes.
    """

    def __init__(
        self,
        store: Store,
        durability: Durability,
        *,
        resumed: bool = False,
        on_commit: CommitListener | None = None,
    ) -> None:
        self.store = store
        self.on_commit = on_commit
        self.per_phase = durability is Durability.PHASE
        self.rows: list[dict[str, Any]] = []
        self.writes: list[Write] = []
        self.inserted = resumed
        self.seq = 0
        self.inflight: list[Pending[None]] = []

    def resume_at(self, seq: int) -> None:
        self.seq = seq

    def hold(self, run: Run, record: PhaseResult) -> None:
        """Queue a phase row for the next commit (rows stay in phase order)."""
        self.seq += 1
        redacted = PhaseResult(
            record.phase,
            record.started_at,
            record.completed_at,
            record.success,
            redact(record.data, run.secrets),
            tuple(redact(list(record.errors), run.secrets)),
            record.outcome,
        )
        self.rows.append(redacted.row(run.execution_id, self.seq))

    async def _commit(
        self, run: Run, what: str, values: dict[str, Any], *, wait: bool = True
    ) -> None:
        """One transaction: the execution row with ``values``, pending rows and writes.

        Commits of phases are not waited for (the store groups them); the last one is, and it
        surfaces any failure of those before it.
        """
        rows, writes = self.rows, self.writes
        self.rows, self.writes = [], []
        execution_id = run.execution_id
        fresh = None if self.inserted else replace(_execution_row(run), **values)
        self.inserted = True
        envelope, created_at = run.envelope, run.started_at

        def apply(connection: sa.Connection) -> None:
            if fresh is not None:
                jobs.insert_envelope(connection, envelope, execution_id, created_at)
                executions.insert_execution(connection, fresh)
            elif values:
                executions.update_execution(connection, execution_id, **values)
            executions.insert_phases(connection, rows)
            for write in writes:
                write(connection)

        pending = self.store.submit(apply)
        if self.on_commit is not None:
            listener = self.on_commit
            pending.on_done = lambda error: listener(execution_id, what) if error is None else None
        self.inflight.append(pending)
        if wait:
            inflight, self.inflight = self.inflight, []
            await pending.wait()
            for earlier in inflight:
                if earlier.error is not None:
                    raise earlier.error

    async def started(self, run: Run) -> None:
        """Acknowledge the start: committed now with per-phase durability."""
        if self.per_phase:
            await self._commit(run, "started", {}, wait=False)

    async def phase(self, run: Run, record: PhaseResult, writes: Sequence[Write]) -> None:
        """Record one finished phase with the context it left (for resume)."""
        self.hold(run, record)
        self.writes.extend(writes)
        if self.per_phase:
            await self._commit(run, record.phase, _progress(run), wait=False)

    async def suspended(self, run: Run, approval: dict[str, Any]) -> None:
        """Persist everything and wait for a human: status ``waiting``."""
        self.writes.append(lambda c: approval_rows.insert_approval(c, approval))
        values = {**_progress(run), "status": "waiting", "outcome": "awaiting_approval"}
        await self._commit(run, "waiting", values)

    async def finished(
        self,
        run: Run,
        skipped: Sequence[PhaseResult],
        outcome: str,
        completed_at: float,
        writes: Sequence[Write],
        error: str | None,
    ) -> None:
        """The last commit: remaining phase rows, the outcome, and the store phase's writes."""
        for record in skipped:
            self.hold(run, record)
        self.writes.extend(writes)
        values = {
            **_progress(run),
            "status": "finished",
            "outcome": outcome,
            "completed_at": completed_at,
            "error": redact(error, run.secrets),
        }
        await self._commit(run, "finished", values)
