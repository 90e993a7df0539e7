"""How an execution reaches the store: per phase (durable, default) or once at the end (faster)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial
from typing import Any

import anyio

from loopengine.contract import Durability, Outcome, Phase
from loopengine.engine._run import Run
from loopengine.errors import StorageError
from loopengine.store import (
    AppendLogs,
    Effect,
    Encoded,
    ExecutionCommit,
    ExecutionRecord,
    ExecutionRow,
    IndexArtifacts,
    JobEnd,
    LastRun,
    LearnedState,
    Pending,
    PhaseResult,
    RequestApproval,
    Start,
    StartingPoint,
    Store,
    effects,
    executions,
    jobs,
    queue,
)

__all__ = [
    "EXISTING_POLL_S",
    "EXISTING_WAIT_S",
    "OWNER",
    "SHOWN_AFTER_S",
    "CommitListener",
    "Journal",
    "LeaseHeld",
    "LeftListener",
    "Recorder",
    "owner_died",
    "record_of",
]

CommitListener = Callable[[str, str], None]
"""Told ``(execution_id, what)`` once a commit is durable: started, a phase, waiting, finished."""
LeaseHeld = Callable[[queue.Lease], bool]
"""Whether a job's lease is known to hold for a while yet without asking the store (its daemon
renewed it lately): a fence then passes at once."""
OWNER = f"{socket.gethostname()}:{os.getpid()}"
SHOWN_AFTER_S = 0.05
"""How long a skill call runs before the phases held ahead of it are handed to the store."""
EXISTING_POLL_S = 0.2
"""How often an execution that found its idempotency key taken looks whether the first ended."""
EXISTING_WAIT_S = 3600.0
"""How long it waits for that first execution (its owner may be on another host)."""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def owner_died(owner: str | None) -> bool:
    """Whether ``owner`` (``host:pid``, optionally ``:suffix``) names another process of this
    host that no longer runs. Owners on other hosts are judged by their lease, not here."""
    host, pid, *_ = [*str(owner or "").split(":"), "", ""]
    return (
        host == socket.gethostname()
        and pid.isdigit()
        and int(pid) != os.getpid()
        and not _alive(int(pid))
    )


_KEPT_ELSEWHERE = frozenset({"job", "trigger"})


def snapshot(run: Run) -> dict[str, Any]:
    """What a resumed execution needs besides its phases, its row and its envelope
    (``data.job`` is the envelope and ``data.trigger`` the row's trigger: each is kept once)."""
    return {
        "data": {name: value for name, value in run.data.items() if name not in _KEPT_ELSEWHERE},
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
        trigger={k: v for k, v in run.data["trigger"].items() if k not in ("type", "fired_at")},
        durability=run.loop.spec.durability.value,
        dry_run=run.dry_run,
        started_at=run.started_at,
        owner=OWNER,
    )


def record_of(run: Run, effects: Sequence[Effect], **end: Any) -> ExecutionRecord:
    """The execution as its last commit wrote it (``end``: its status, outcome, end time,
    error), from the run and that commit's ``effects``: a report needs no read back."""
    row = _execution_row(run)
    last = run.phases[-1].phase if run.phases else None
    usage = run.usage.as_dict()
    ended = replace(row, last_phase=last, context=snapshot(run), usage=usage, **end)
    gates = [effect.approval() for effect in effects if isinstance(effect, RequestApproval)]
    written = [e.artifacts for e in effects if isinstance(e, IndexArtifacts)]
    artifacts = tuple(artifact for batch in written for artifact in batch)
    return ExecutionRecord(
        ended, tuple(run.phases), run.envelope, next(iter(gates), None), artifacts
    )


LeftListener = Callable[[str, "executions.Left"], None]
"""Told, right after a commit that ended a run of a loop or wrote its learned state (in the
order of commits), the loop and what that commit left its next execution."""


class _Commit:
    """One transaction of an execution's rows, open to the next phases until the store takes it.

    Phases that end while their commit still waits in the store's queue join it, so the
    execution row and its phases row are written once per transaction rather than once per
    phase (written ahead of what was queued behind it: an execution's own writes are commits,
    or waited for). What a phase hands over is encoded at once: the run goes on changing, the
    record must not.
    """

    __slots__ = ("done", "learned", "left", "memo", "record", "run")

    def __init__(self, run: Run, fresh: bool, lease: queue.Lease | None) -> None:
        self.run = run
        first = (run.envelope, _execution_row(run)) if fresh else None
        self.record = ExecutionCommit(run.execution_id, lease, first)
        self.done: list[str] = []
        self.memo: tuple[Any, Any] | None = None
        self.left: executions.Left = (None, None)
        """What it leaves the loop's next execution: the run it ends (not a dry run), the
        learned state it writes."""
        self.learned = False
        """Whether this transaction writes the loop's learned state."""

    def add(
        self,
        held: list[tuple[int, PhaseResult]],
        effects: list[Effect],
        told: list[str],
        **end: Any,
    ) -> None:
        """Take ``held`` phases, ``effects`` and the run as it is now (``end``: the outcome);
        the listener is told ``told`` once it commits."""
        run = self.run
        try:
            values = {
                "last_phase": run.phases[-1].phase if run.phases else None,
                "context": Encoded.of(snapshot(run)),
                "usage": run.usage.as_dict(),
                **end,
            }
            done = [result for _, result in held]
            rows = executions.PhaseRows.of(held[-1][0], done) if held else None
        except (TypeError, ValueError) as exc:
            raise StorageError(f"cannot record {told[-1]} of {run.execution_id}: {exc}") from None
        record = self.record
        record.values.update(values)
        if rows is not None:
            record.phases = rows if record.phases is None else record.phases.then(rows)
        record.effects.extend(effects)
        self.done.extend(told)


class Journal:
    """Where an execution's progress goes; this one keeps nothing (an engine that only runs
    loops: tests, benchmarks, experiments), ``Recorder`` commits it to the store."""

    ended_job = False
    """Whether the execution's last commit ended the job its lease holds (its daemon has no
    end of its own to record)."""

    async def begin(self, run: Run, start: StartingPoint | None = None) -> Start:
        """What the execution starts from: ``start`` when its job's claim read it, else
        nothing (this journal keeps no key to check)."""
        return None, *(start or (None, None))

    async def starting_point(self, loop_id: str) -> StartingPoint:
        """The loop's last finished execution and its learned state, read now."""
        return None, None

    def resume_at(self, seq: int) -> None:
        return None

    async def fence(self) -> None:
        """Raise ``LeaseLost`` when the job this execution runs for passed to another daemon."""

    def hold(self, run: Run, record: PhaseResult) -> None:
        return None

    async def started(self, run: Run) -> None:
        return None

    async def phase(self, run: Run, record: PhaseResult, effects: Sequence[Effect]) -> None:
        return None

    async def suspended(self, run: Run, approval: RequestApproval) -> None:
        return None

    async def finished(
        self,
        run: Run,
        skipped: Sequence[PhaseResult],
        outcome: str,
        completed_at: float,
        effects: Sequence[Effect],
        error: str | None,
    ) -> None:
        return None


def _learned(run: Run) -> LearnedState:
    """The learned state the run's learn phase writes."""
    return LearnedState(dict(run.data.get("state") or {}), run.samples, run.last_adjusted_at)


class Recorder(Journal):
    """Commits an execution's rows; with ``durability: execution`` everything waits for the end.

    Each commit is one transaction in one store hop: the execution row (inserted the first time,
    updated after), the phases it records in one row, and the phases' effects. With
    ``durability: phase``, a phase that called no skill and handed over no effect (and the
    start) waits for the next commit: resumed, it is computed again as it was, while a phase
    that called a skill is committed as it ends, so a resumed execution does not call it again.
    """

    def __init__(
        self,
        store: Store,
        durability: Durability,
        *,
        resumed: bool = False,
        on_commit: CommitListener | None = None,
        lease: queue.Lease | None = None,
        lease_held: LeaseHeld | None = None,
        on_left: LeftListener | None = None,
    ) -> None:
        self.store = store
        self.on_commit = on_commit
        self.on_left = on_left
        self.lease = lease
        """The job's lease when a daemon's worker runs it: every commit checks it still holds,
        and the last one ends the job."""
        self.lease_held = lease_held
        self.per_phase = durability is Durability.PHASE
        self.resumed = resumed
        self.inserted = resumed
        self.holds_state = False
        self.seq = 0
        self.held: list[tuple[int, PhaseResult]] = []
        self.told: list[str] = []
        """What the listener is told with the next commit, besides what makes it."""
        self.effects: list[Effect] = []
        self.open: tuple[_Commit, Pending[None]] | None = None
        self.inflight: list[Pending[None]] = []
        self.failed: Exception | None = None
        """Why handing held phases over failed, as a skill call lasted (``_flush``)."""

    async def begin(self, run: Run, start: StartingPoint | None = None) -> Start:
        """The idempotency check and what the execution starts from, in one read; none at all
        when the store still holds what this process wrote at the loop's last finish, or for a
        daemon's job (its claim read ``start``; its first commit takes its envelope)."""
        key, loop_id = run.envelope.idempotency_key, run.loop.id
        if self.lease is not None:
            return None, *(start or await self.starting_point(loop_id))
        fresh_key = key == run.envelope.job_id
        known = self.store.recall(("start", loop_id)) if fresh_key else None
        if known is not None:
            last, state = known
            return None, last, state
        if fresh_key:
            return None, *await self.starting_point(loop_id)
        try:
            keyed = await self.store.write(executions.claim_key, run.envelope, _execution_row(run))
        except StorageError:  # PostgreSQL: another process inserted the key meanwhile
            taken = await self.store.read(jobs.execution_of_key, key)
            if taken is None:
                raise
            return taken, None, None
        self.inserted = keyed[0] is None
        return keyed

    async def starting_point(self, loop_id: str) -> StartingPoint:
        return await self.store.read(executions.starting_point, loop_id)

    def resume_at(self, seq: int) -> None:
        self.seq = seq

    async def fence(self) -> None:
        """Asks the store unless the lease is known to hold (``LeaseHeld``)."""
        lease = self.lease
        if lease is not None and not (self.lease_held is not None and self.lease_held(lease)):
            await self.store.write(queue.check_lease, lease)

    def hold(self, run: Run, record: PhaseResult) -> None:
        """Queue a phase for the next commit (phases stay in order)."""
        self.seq += 1
        self.held.append((self.seq, record))
        if self.per_phase and run.on_call is None:
            run.on_call = partial(self._flush_later, run)

    async def _commit(
        self, run: Run, what: str, *, wait: bool = True, ends: JobEnd | None = None, **end: Any
    ) -> None:
        """Hand the held rows and effects to the store, joining the commit still queued if any;
        with ``ends``, it ends the lease's job too.

        Commits of phases are not waited for (the store groups them); the last one is, and it
        raises the first failure among them and itself (a commit after a failed one that
        inserted the execution's row fails as well: it finds no row to update).
        """
        if (failed := self.failed) is not None:
            raise failed
        pending = self._hand(run, [what], ends, **end)
        if wait:
            inflight, self.inflight = self.inflight, []
            self.open = None
            with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
                await pending.wait()
            for handed in (*inflight, pending):
                if handed.error is not None:
                    raise handed.error
            self.ended_job = ends is not None

    def _flush_later(self, run: Run) -> Callable[[], None]:
        """A skill call starts: what is held is handed over should it last ``SHOWN_AFTER_S``,
        so a live view shows the phases before it while it runs (a quick call leaves them to
        the commit after it); what cancels that, as the call ends."""
        return asyncio.get_running_loop().call_later(SHOWN_AFTER_S, self._flush, run).cancel

    def _flush(self, run: Run) -> None:
        """Outside the execution's task: what fails is raised by its next commit."""
        if self.told:
            try:
                self._hand(run, [])
            except Exception as exc:
                self.failed = exc

    def _hand(
        self, run: Run, told: list[str], ends: JobEnd | None = None, **end: Any
    ) -> Pending[None]:
        """Hand the held rows, effects and ``told`` (with what was held) to the store."""
        rows, handed, told = self.held, self.effects, [*self.told, *told]
        self.held, self.effects, self.told = [], [], []
        if lines := run.log.take():
            handed.append(AppendLogs(run.execution_id, lines))
        if self.open is not None and self.store.is_queued(self.open[1]):
            commit, pending = self.open
        else:
            commit, pending = _Commit(run, not self.inserted, self.lease), None
        commit.add(rows, handed, told, **end)
        if ends is not None:
            commit.record.ends = ends
        commit.learned |= self.holds_state
        self.holds_state = False
        last, state = commit.left
        if commit.learned:
            state = _learned(run)
        if end.get("status") == "finished" and not run.dry_run:
            last = LastRun(str(end["outcome"]), end["completed_at"], run.started_at)
        commit.left = last, state
        if last is not None and state is not None and not self.resumed:
            commit.memo = (("start", run.loop.id), (last, state))
        if pending is None:
            pending = self.store.submit(effects.write_commit, commit.record)
            pending.on_done = partial(self._committed, commit)
            self.open = (commit, pending)
            self.inflight.append(pending)
        self.inserted = True
        return pending

    def _committed(self, commit: _Commit, error: BaseException | None) -> None:
        """Right after the commit's transaction, before the store runs anything else: tell the
        listener, and let the store remember what the loop's next execution starts from."""
        if error is not None:
            return
        if commit.memo is not None:
            self.store.remember(*commit.memo)
        if self.on_commit is not None:
            for what in commit.done:
                self.on_commit(commit.run.execution_id, what)
        if commit.left != (None, None) and self.on_left is not None:
            self.on_left(commit.run.loop.id, commit.left)

    async def started(self, run: Run) -> None:
        """Acknowledge the start (per-phase durability): committed now when it inserts the
        execution's row, so history shows it running while its first phase does; else with
        the next commit (a resumed execution that none committed starts over), as for a
        daemon's job, which its queue shows running (an execution whose daemon died before its
        first commit is started again)."""
        if not self.per_phase:
            return
        if self.inserted or self.lease is not None:
            self.told.append("started")
        else:
            await self._commit(run, "started", wait=False)

    async def phase(self, run: Run, record: PhaseResult, effects: Sequence[Effect]) -> None:
        """Record one finished phase with the context it left (for resume): committed now
        (per-phase durability) when it called a skill or handed over an effect."""
        self.hold(run, record)
        self.effects.extend(effects)
        self.holds_state |= record.phase == Phase.LEARN and run.learned
        if not self.per_phase:
            return
        if run.calls or effects:
            await self._commit(run, record.phase, wait=False)
        else:
            self.told.append(record.phase)

    async def suspended(self, run: Run, approval: RequestApproval) -> None:
        """Persist everything and wait for a human: status ``waiting``."""
        self.effects.append(approval)
        waiting = Outcome.AWAITING_APPROVAL.value
        ends = self._ends(waiting, None, approval.requested_at)
        await self._commit(run, "waiting", ends=ends, status="waiting", outcome=waiting)

    async def finished(
        self,
        run: Run,
        skipped: Sequence[PhaseResult],
        outcome: str,
        completed_at: float,
        effects: Sequence[Effect],
        error: str | None,
    ) -> None:
        """The last commit: the phases left, the outcome, and the store phase's effects."""
        for record in skipped:
            self.hold(run, record)
        self.effects.extend(effects)
        ends = self._ends(outcome, error, completed_at)
        await self._commit(
            run,
            "finished",
            ends=ends,
            status="finished",
            outcome=outcome,
            completed_at=completed_at,
            error=error,
        )

    def _ends(self, outcome: str, error: str | None, at: float) -> JobEnd | None:
        """The job's end the last commit writes: none without a lease, nor for a cancelled
        execution (its worker ends the job, or gives it back when the daemon stops)."""
        if self.lease is None or outcome == Outcome.CANCELLED:
            return None
        return JobEnd(str(outcome), error, at)
