"""Queue workers: claim a job under a lease, run it through the engine, record how it ended.

A job found running under an expired lease belonged to a daemon that died: its execution is
resumed from its last committed phase (or, never started, started now). Leases are renewed by one
heartbeat for all of a daemon's jobs; a renewal that finds ``cancel_requested`` (``on_overlap:
replace``) cancels that job's execution, which is then recorded as ``cancelled``.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from functools import partial
from typing import Any

import anyio

from loopengine._faults import describe, next_pause
from loopengine.contract import Loop
from loopengine.daemon._log import DaemonLog
from loopengine.daemon._loops import ServedLoops
from loopengine.engine import Engine, resume
from loopengine.errors import LeaseLost, LoopEngineError, StoreUnavailable
from loopengine.store import JobEnvelope, Pending, StartingPoint, Store, executions, queue

__all__ = ["AHEAD", "AHEAD_S", "MAX_CLAIMS", "Workers"]

MAX_CLAIMS = 10
"""A job claimed this many times without an end (its daemon died running it each time: a skill
that crashes the process) fails instead of taking down the next daemon too."""


AHEAD_S = 1.0
"""Jobs are claimed ahead of the workers (``AHEAD`` times as many as there are workers, waiting
to start) while executions take less than this on average and none running has taken longer: a
job claimed behind long ones would wait for them while another daemon could run it (those
claimed before an execution grew long are given back by the heartbeat)."""
AHEAD = 2
"""The workers' worth of jobs claimed ahead, in claims of as many: a claim costs about as much
for eight jobs as for four, and daemons claiming one loop take its lock half as often (three
daemons drained 701 jobs/s with one workers' worth, 832 with two, side by side). A job claimed
ahead holds a slot of its loop's ``concurrency.max``: of a loop allowing fewer than
``(1 + AHEAD)`` workers' worth, one daemon may hold every slot while its executions are short
(the last starts within about ``AHEAD`` × ``AHEAD_S``), and up to a third of ``lease_s`` once
they grew long (the heartbeat gives those back)."""
_WEIGHT = 0.2
"""The weight of the latest execution in the average of their times."""


class _Idle:
    """Where idle workers wait for a job. One of them at a time polls the store once a
    ``period()`` (for what no wake-up told); the others wait to be woken, one per job queued or
    claimed, so a backlog is taken by as many workers as it needs while an idle daemon claims
    once a period, not once per worker. Wake-ups told again before the worker woken claims (the
    store's, a notification's, the intake's for one commit) wake no other: its claim sees what
    they tell."""

    def __init__(self, period: Callable[[], float]) -> None:
        self.period = period
        self.waiting: deque[anyio.Event] = deque()
        self.polling = False
        self.woken = False
        """A wake-up that found no worker waiting: the next to rest claims again at once."""
        self.summoned: set[anyio.Event] = set()
        """The waits of the workers woken that have not yet left ``rest`` to claim."""

    def wake(self, count: int = 1) -> None:
        """Have ``count`` workers on their way to claim: the woken that have not left ``rest``
        count, so repeated wake-ups for one commit wake no more."""
        for _ in range(count - len(self.summoned)):
            if not self.waiting:
                self.woken = True
                return
            event = self.waiting.popleft()
            self.summoned.add(event)
            event.set()

    def wake_all(self) -> None:
        while self.waiting:
            self.waiting.popleft().set()

    async def rest(self) -> None:
        if self.woken:
            self.woken = False
            return
        event = anyio.Event()
        self.waiting.append(event)
        polls = not self.polling
        self.polling = True
        try:
            if polls:
                with anyio.move_on_after(self.period()):
                    await event.wait()
            else:
                await event.wait()
        finally:
            if polls:
                self.polling = False
            if event in self.waiting:
                self.waiting.remove(event)
            self.summoned.discard(event)


class Workers:
    """``count`` workers, the idle ones waiting together (``_Idle``), and the heartbeat that
    renews their leases."""

    def __init__(
        self,
        engine: Engine,
        loops: ServedLoops,
        load_loop: Callable[[str], Loop],
        log: DaemonLog,
        *,
        owner: str,
        count: int,
        lease_s: float,
        poll_s: float,
        period: Callable[[], float] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """Idle workers claim once a ``period()`` (``poll_s`` when not given), or when woken.
        The engine's fences ask them whether a lease holds (``holds``)."""
        self.engine = engine
        engine.lease_held = self.holds
        engine.on_left = self._left
        self.store: Store = engine.services.store
        self.loops = loops
        self.load_loop = load_loop
        self.log = log
        self.owner = owner
        self.count = count
        self.lease_s = lease_s
        self.clock = clock
        self.running: dict[str, anyio.CancelScope] = {}
        self._since: dict[str, float] = {}
        """When (``time.monotonic()``) each running job started."""
        self._until: dict[str, float] = {}
        """The least each lease held here lasts (``clock()``), as claimed or last renewed."""
        self.lost: set[str] = set()
        """Jobs whose lease expired and passed to another daemon: cancelled, not recorded."""
        self.accepting = True
        self._resting = _Idle(period or (lambda: poll_s))
        self._claimed: deque[queue.Claimed] = deque()
        """Jobs claimed ahead, not yet started: each is taken by the first worker free."""
        self._claiming = 0
        """Jobs the claims under way may take."""
        self._pace: float | None = None
        """The average time of the latest executions (exponentially weighted); None before
        the first ends."""
        self._told = False
        """A wake-up came while a claim was under way: its claim may have read the queue before
        the job told of, so a worker claims again once it lands."""
        self._idle = anyio.Event()

    def wake(self) -> None:
        """Tell an idle worker a job may be claimable."""
        if self._claiming:
            self._told = True
        self._resting.wake()

    async def run(self) -> None:
        async with anyio.create_task_group() as group:
            for _ in range(self.count):
                group.start_soon(self._work)
            group.start_soon(self._heartbeat)

    async def drain(self, grace_s: float, hurry: anyio.Event) -> bool:
        """Stop claiming; wait up to ``grace_s`` (or until ``hurry`` is set) for running jobs;
        whether all finished."""
        self.accepting = False
        self._resting.wake_all()

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
        pause: float | None = None
        while self.accepting:
            if self._claimed:
                await self._execute(*self._claimed.popleft())
                continue
            try:
                claim = self._submit_claim()
                if claim is not None:
                    await claim.wait()
            except Exception as exc:
                pause = next_pause(pause)
                self.log.line(
                    "error", f"cannot claim a job: {describe(exc)}; retrying in {pause:g} s"
                )
                await anyio.sleep(pause)
                continue
            pause = None
            if not self._claimed:
                await self._resting.rest()

    def _submit_claim(self) -> Pending[list[queue.Claimed]] | None:
        """Hand the store a claim, in one transaction, of as many jobs as keep the workers busy
        and, while executions are short (``AHEAD_S``), ``AHEAD`` times as many waiting (claimed
        ahead), once that much room is free, or at once when no job waits here and no
        claim is under way; None when it is not time yet, or the workers stop. A claim so takes
        a batch, where one per job ended took a job each. What it claims joins ``_claimed`` as
        it commits, and as many resting workers are woken as it claimed jobs (one more when a
        wake-up came meanwhile). Jobs claimed ahead are renewed by the heartbeat and, as the
        workers stop, released with the daemon's others (``queue.hand_back``)."""
        ahead = AHEAD * self.count if self._short() else 0
        most = self.count + ahead - len(self.running) - len(self._claimed) - self._claiming
        waiting = bool(self._claimed) or self._claiming > 0
        if not self.accepting or most <= 0 or (waiting and most < max(ahead, self.count)):
            return None
        claim = self.store.lead(
            queue.claim_to_start, self.limits(), self.owner, self.clock, self.lease_s, most
        )
        self._claiming += most
        until = self.clock() + self.lease_s

        def landed(error: BaseException | None) -> None:
            self._claiming -= most
            again = self._told and not self._claiming
            self._told = self._told and not again
            taken = [] if error is not None else claim.result
            self._until.update((lease.job_id, until) for _, lease, _ in taken)
            self._claimed.extend(taken)
            self._resting.wake(len(taken) + again)

        claim.on_done = landed
        return claim

    def _left(self, loop_id: str, left: executions.Left) -> None:
        """A commit here (a worker's, an approval's, an escalation's) just ended a run of
        ``loop_id`` or wrote its learned state, leaving ``left``: the jobs of that loop claimed
        before start from what their claim read updated with it, which that read could not
        hold (commits run one after the other: a claim still under way reads after it)."""
        if any(job.loop_id == loop_id and start is not None for job, _, start in self._claimed):
            self._claimed = deque(
                (job, lease, executions.started_after(start, left))
                if job.loop_id == loop_id and start is not None
                else (job, lease, start)
                for job, lease, start in self._claimed
            )

    def _short(self) -> bool:
        """Whether executions are short: under ``AHEAD_S`` on average, and each running now."""
        return self._pace is not None and self._pace < AHEAD_S and not self._long()

    def _long(self) -> bool:
        """Whether an execution running now has taken longer than ``AHEAD_S``."""
        started = time.monotonic() - AHEAD_S
        return any(since <= started for since in self._since.values())

    def holds(self, lease: queue.Lease) -> bool:
        """Whether ``lease`` holds for a third of ``lease_s`` yet, as this daemon claimed or last
        renewed it: no other daemon takes its job before it expires (the clocks of the daemons'
        hosts agree within that third). A paused daemon finds it expired once it wakes."""
        return self.clock() < self._until.get(lease.job_id, 0.0) - self.lease_s / 3

    def limits(self) -> dict[str, int]:
        """The ``concurrency.max`` of each loop this daemon serves: the loops it claims jobs of."""
        return self.loops.limits()

    async def _execute(
        self, job: queue.Job, lease: queue.Lease, start: StartingPoint | None
    ) -> None:
        """Run one claimed job to its end and record it: whatever fails here (a bug, a bad row)
        fails this job alone, with its message; the worker goes on."""
        scope = anyio.CancelScope()
        self.running[lease.job_id] = scope
        started = self._since[lease.job_id] = time.monotonic()
        self.lost.discard(lease.job_id)
        outcome, execution_id, error, ended = "cancelled", None, None, False
        fields: dict[str, Any] = {"loop": job.loop_id, "job": lease.job_id}
        unrecorded: StoreUnavailable | None = None
        try:
            with scope:
                outcome, execution_id, error, ended = await self._run(job, lease, start)
        except LeaseLost:
            self.lost.add(lease.job_id)
        except StoreUnavailable as exc:
            unrecorded = exc
        except LoopEngineError as exc:
            outcome, error = "failed", str(exc)
        except Exception as exc:
            outcome, error = "failed", f"internal error: {describe(exc)}"
            self.log.line("error", error, **fields)
        finally:
            self.running.pop(lease.job_id, None)
            self._since.pop(lease.job_id, None)
            self._until.pop(lease.job_id, None)
            self._idle.set()
            took = time.monotonic() - started
            pace = took if self._pace is None else self._pace
            self._pace = pace + _WEIGHT * (took - pace)
        if unrecorded is not None:
            self.log.line("error", f"{unrecorded}: the job is queued again, to resume", **fields)
            return await self._give_back(lease)
        fields["execution"] = execution_id
        if lease.job_id in self.lost:
            self.lost.discard(lease.job_id)
            self.log.line("lost", "the lease passed to another daemon", **fields)
            return None
        try:
            finished = ended or await self._finish(lease, outcome, execution_id, error)
        except Exception as exc:
            text = f"cannot record the job's end: {describe(exc)}; it is queued again"
            self.log.line("error", text, **fields)
            return await self._give_back(lease)
        if ended:
            self._submit_claim()
        if finished:
            self.log.line("end", error or "", **fields, outcome=outcome)
        else:
            self.log.line("lost", "the lease passed to another daemon", **fields)
        return None

    async def _run(
        self, job: queue.Job, lease: queue.Lease, start: StartingPoint | None
    ) -> tuple[str, str | None, str | None, bool]:
        """Run the job's execution from ``start`` (its claim read it), or resume it when a dead
        daemon left it part-way: its outcome, id, error, and whether its last commit ended the
        job."""
        if lease.generation > MAX_CLAIMS:
            raise LoopEngineError(
                f"claimed {MAX_CLAIMS} times without an end (its daemon died running it each "
                "time): not run again"
            )
        loop = self.loops[job.loop_id]
        envelope = JobEnvelope.from_row(job.envelope)
        late = round(max(0.0, self.clock() - job.not_before), 3)
        trigger = job.trigger.get("type")
        self.log.line("start", loop=loop.id, job=lease.job_id, trigger=trigger, late_s=late)
        known = job.started
        if known is None:
            done = await self.engine.run(
                loop, envelope=envelope, trigger=dict(job.trigger), lease=lease, start=start
            )
            return done.outcome.value, done.execution_id, done.error, done.ended_job
        row = await self.store.read(executions.get_execution, known)
        assert row is not None
        if row.status not in ("running", "interrupted"):
            return row.outcome or row.status, known, row.error, False
        if row.status == "running":
            interrupted = partial(executions.update_execution, status="interrupted")
            await self.store.write(interrupted, known)
        self.log.line(
            "resume", loop=loop.id, job=lease.job_id, execution=known, after=row.last_phase
        )
        done = await resume(self.engine, self.load_loop, known, lease=lease)
        return done.outcome.value, done.execution_id, done.error, done.ended_job

    async def _finish(
        self,
        lease: queue.Lease,
        outcome: str,
        execution_id: str | None,
        error: str | None,
    ) -> bool:
        """Record how the job ended (and end its execution with it, should the execution have
        been left running by a failure); whether the lease still held. The worker's next claim
        is handed over right behind it, leading the next transaction (``Store.lead``). A
        database outage is waited out: an ending is never dropped while the daemon runs."""
        now = self.clock()
        ended = self.store.submit(queue.end_job, lease, outcome, execution_id, error, now)
        self._submit_claim()
        while True:
            try:
                return await ended.wait()
            except StoreUnavailable as exc:
                self.log.line("error", f"{exc}: the job's end is recorded once it is back")
                await anyio.sleep(1.0)
                ended = self.store.submit(queue.end_job, lease, outcome, execution_id, error, now)

    async def _give_back(self, lease: queue.Lease) -> None:
        """Queue a job again whose execution or end could not be recorded: it is claimed again
        (by this daemon too) and its execution resumed from its last commit. Tried until the
        store takes it (or the lease is found lost), as long as the daemon runs."""
        pause: float | None = None
        while True:
            try:
                await self.store.write(queue.requeue, lease, self.clock())
                return
            except Exception as exc:
                pause = next_pause(pause)
                text = f"cannot queue job {lease.job_id} again: {describe(exc)}"
                self.log.line("error", f"{text}; retrying in {pause:g} s")
                await anyio.sleep(pause)

    async def _heartbeat(self) -> None:
        while True:
            await anyio.sleep(self.lease_s / 3)
            if not self.running and not self._claimed:
                continue
            try:
                await self._renew()
            except Exception as exc:
                self.log.line("error", f"cannot renew the leases: {describe(exc)}")

    async def _renew(self) -> None:
        """Renew the leases of the jobs running and of those claimed not yet started: a claimed
        job whose lease was lost, or whose cancellation was requested, is dropped (the latter
        ended as cancelled), and those claimed are given back while every worker runs an
        execution grown long."""
        if self._claimed and len(self.running) >= self.count and self._long():
            given, self._claimed = self._claimed, deque()
            await self.store.write(queue.unclaim, [lease for _, lease, _ in given], self.clock())
            for _, lease, _ in given:
                self._until.pop(lease.job_id, None)
        until = self.clock() + self.lease_s
        ids = [*self.running, *(lease.job_id for _, lease, _ in self._claimed)]
        cancel, lost = await self.store.write(queue.renew_leases, self.owner, ids, until)
        for job_id in ids:
            if job_id in lost:
                self._until.pop(job_id, None)
            elif job_id in self._until:
                self._until[job_id] = until
        dropped = [lease for _, lease, _ in self._claimed if lease.job_id in cancel | lost]
        if dropped:
            self._claimed = deque(c for c in self._claimed if c[1].job_id not in cancel | lost)
            for lease in dropped:
                self._until.pop(lease.job_id, None)
                if lease.job_id in cancel and lease.job_id not in lost:
                    await self._finish(lease, "cancelled", None, None)
        for job_id in lost & set(self.running):
            self.lost.add(job_id)
            self.engine.abandon(job_id)
        for job_id in cancel | lost:
            if (scope := self.running.get(job_id)) is not None:
                scope.cancel()
