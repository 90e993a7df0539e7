"""Queue workers: claim a job under a lease, run it through the engine, record how it ended.

A job found running under an expired lease belonged to a daemon that died: its execution is
resumed from its last committed phase (or, never started, started now). Leases are renewed by one
heartbeat for all of a daemon's jobs; a renewal that finds ``cancel_requested`` (``on_overlap:
replace``) cancels that job's execution, which is then recorded as ``cancelled``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

import anyio
import sqlalchemy as sa

from loopengine.contract import Loop
from loopengine.daemon._log import DaemonLog
from loopengine.engine import Engine, resume
from loopengine.errors import LoopEngineError
from loopengine.store import JobEnvelope, Store, executions, jobs, queue

__all__ = ["Workers"]


class Workers:
    """``count`` workers sharing one wake-up event, and the heartbeat that renews their leases."""

    def __init__(
        self,
        engine: Engine,
        loops: Mapping[str, Loop],
        load_loop: Callable[[str], Loop],
        log: DaemonLog,
        *,
        owner: str,
        count: int,
        lease_s: float,
        poll_s: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.engine = engine
        self.store: Store = engine.services.store
        self.loops = loops
        self.load_loop = load_loop
        self.log = log
        self.owner = owner
        self.count = count
        self.lease_s = lease_s
        self.poll_s = poll_s
        self.clock = clock
        self.running: dict[str, anyio.CancelScope] = {}
        self.lost: set[str] = set()
        """Jobs whose lease expired and passed to another daemon: cancelled, not recorded."""
        self.accepting = True
        self._wake = anyio.Event()
        self._idle = anyio.Event()

    def wake(self) -> None:
        """Tell idle workers a job was queued (by this process: others are found by polling)."""
        self._wake.set()

    async def run(self) -> None:
        async with anyio.create_task_group() as group:
            for _ in range(self.count):
                group.start_soon(self._work)
            group.start_soon(self._heartbeat)

    async def drain(self, grace_s: float, hurry: anyio.Event) -> bool:
        """Stop claiming; wait up to ``grace_s`` (or until ``hurry`` is set) for running jobs;
        whether all finished."""
        self.accepting = False
        self._wake.set()

        async def finished() -> None:
            while self.running:
                self._idle = anyio.Event()
                await self._idle.wait()

        async with anyio.create_task_group() as group:

            async def hurried() -> None:
                await hurry.wait()
                group.cancel_scope.cancel()

            group.start_soon(hurried)
            with anyio.move_on_after(grace_s):
                await finished()
            group.cancel_scope.cancel()
        return not self.running

    async def _work(self) -> None:
        while self.accepting:
            try:
                job = await self.store.write(self._claim)
            except LoopEngineError as exc:
                self.log.line("error", f"cannot claim a job: {exc}; retrying in 1 s")
                await anyio.sleep(1.0)
                continue
            if job is None:
                self._wake = anyio.Event()
                with anyio.move_on_after(self.poll_s):
                    await self._wake.wait()
                continue
            await self._execute(job)

    def _claim(self, connection: sa.Connection) -> dict[str, Any] | None:
        """The oldest job this daemon may run now: of a loop it serves, below that loop's
        ``concurrency.max`` (a job whose daemon died holds its slot already)."""
        now = self.clock()
        running = queue.running_by_loop(connection)
        free: list[str] = []
        busy: list[str] = []
        for loop_id, loop in self.loops.items():
            at_max = running.get(loop_id, 0) >= loop.spec.concurrency.max
            (busy if at_max else free).append(loop_id)
        found = queue.claimable(connection, now, 1, owner=self.owner, loop_ids=free)
        found = found or queue.claimable(
            connection, now, 1, owner=self.owner, loop_ids=busy, stale_only=True
        )
        if not found:
            return None
        queue.claim_job(connection, found[0], self.owner, now + self.lease_s)
        return found[0]

    async def _execute(self, job: dict[str, Any]) -> None:
        loop = self.loops[job["loop_id"]]
        envelope = JobEnvelope.from_row(job["envelope"])
        late = round(max(0.0, self.clock() - job["not_before"]), 3)
        trigger = job["trigger"].get("type")
        self.log.line("start", loop=loop.id, job=job["id"], trigger=trigger, late_s=late)
        scope = anyio.CancelScope()
        self.running[job["id"]] = scope
        outcome, execution_id, error = "cancelled", None, None
        try:
            with scope:
                outcome, execution_id, error = await self._run(job, loop, envelope)
        except LoopEngineError as exc:
            outcome, error = "failed", str(exc)
        finally:
            self.running.pop(job["id"], None)
            self._idle.set()
        now = self.clock()
        fields = {"loop": loop.id, "job": job["id"], "execution": execution_id}
        if job["id"] in self.lost:
            self.lost.discard(job["id"])
            self.log.line("lost", "the lease passed to another daemon", **fields)
            return
        finish = partial(
            queue.finish_job,
            job_id=job["id"],
            owner=self.owner,
            outcome=outcome,
            execution_id=execution_id,
            now=now,
            reason=error,
        )
        if await self.store.write(finish):
            self.log.line("end", error or "", **fields, outcome=outcome)
        else:
            self.log.line("lost", "the lease passed to another daemon", **fields)

    async def _run(
        self, job: dict[str, Any], loop: Loop, envelope: JobEnvelope
    ) -> tuple[str, str | None, str | None]:
        """Run the job's execution, or resume it when a dead daemon left it part-way."""
        known = await self.store.read(lambda c: jobs.execution_of_key(c, envelope.idempotency_key))
        if known is None:
            done = await self.engine.run(loop, envelope=envelope, trigger=dict(job["trigger"]))
            return done.outcome.value, done.execution_id, done.error
        row = await self.store.read(lambda c: executions.get_execution(c, known))
        assert row is not None
        if row.status not in ("running", "interrupted"):
            return row.outcome or row.status, known, row.error
        if row.status == "running":
            await self.store.write(
                lambda c: executions.update_execution(c, known, status="interrupted")
            )
        self.log.line("resume", loop=loop.id, job=job["id"], execution=known, after=row.last_phase)
        done = await resume(self.engine, self.load_loop, known)
        return done.outcome.value, done.execution_id, done.error

    async def _heartbeat(self) -> None:
        while True:
            await anyio.sleep(self.lease_s / 3)
            if not self.running:
                continue
            until = self.clock() + self.lease_s
            ids = list(self.running)
            cancel, lost = await self.store.write(
                partial(queue.renew_leases, owner=self.owner, job_ids=ids, lease_until=until)
            )
            for job_id in lost:
                self.lost.add(job_id)
                self.engine.abandon(job_id)
            for job_id in cancel | lost:
                if (scope := self.running.get(job_id)) is not None:
                    scope.cancel()
