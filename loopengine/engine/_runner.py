"""The engine: one execution goes detect → analyze → decide → act → validate → learn → store.

Phases a loop leaves out, and phases after an early end, are recorded as skipped. Learn runs once
act ran, except in a dry run (it teaches nothing); store (artifacts and the audit record) runs for
every execution that ends. A dry run ends as ``dry_run`` where the real run would complete.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from typing import Any

import anyio

import loopengine._tracing as tracing
from loopengine.contract import Act, BuiltinAction, Loop, Outcome, Phase
from loopengine.engine._logs import ExecutionLog
from loopengine.engine._persistence import (
    EXISTING_POLL_S,
    EXISTING_WAIT_S,
    CommitListener,
    Journal,
    LeaseHeld,
    LeftListener,
    Recorder,
    owner_died,
    record_of,
)
from loopengine.engine._rollback import roll_back
from loopengine.engine._run import Run
from loopengine.engine._services import Services
from loopengine.engine.phases import (
    PhaseOutput,
    defaults,
    ended,
    run_act,
    run_analyze,
    run_decide,
    run_detect,
    run_learn,
    run_store,
    run_validate,
)
from loopengine.errors import BudgetExceeded, LoopEngineError, NotResumable
from loopengine.store import (
    AppendEvent,
    Effect,
    ExecutionRecord,
    JobEnvelope,
    LastRun,
    LearnedState,
    PhaseResult,
    RequestApproval,
    StartingPoint,
    executions,
    iso,
    new_envelope,
    new_id,
    queue,
)

__all__ = ["ORDER", "Engine", "ExecutionDone", "PhaseListener"]

PhaseFn = Callable[[Run, Services], Awaitable[PhaseOutput]]
PhaseListener = Callable[[str, PhaseResult], None]
"""Told each phase an execution records, with its loop's id (live displays, metrics)."""
ORDER: tuple[tuple[Phase, PhaseFn], ...] = (
    (Phase.DETECT, run_detect),
    (Phase.ANALYZE, run_analyze),
    (Phase.DECIDE, run_decide),
    (Phase.ACT, run_act),
    (Phase.VALIDATE, run_validate),
    (Phase.LEARN, run_learn),
)
_AFTER_ACT = frozenset({Phase.LEARN})
_BUILTIN_ACTIONS = frozenset(BuiltinAction)


def _execution_span(run: Run) -> tuple[str, dict[str, tracing.AttributeValue], str | None]:
    """The name, attributes and remote parent (the trigger's ``traceparent``) of an execution's
    span."""
    attributes: dict[str, tracing.AttributeValue] = {
        "loopengine.loop.id": run.loop.id,
        "loopengine.execution.id": run.execution_id,
        "loopengine.job.id": run.envelope.job_id,
        "loopengine.trigger.type": run.trigger_type,
        "loopengine.dry_run": run.dry_run,
    }
    return f"execution {run.loop.id}", attributes, run.data["trigger"].get(tracing.TRACEPARENT)


def _ended(span: tracing.Span, done: ExecutionDone) -> None:
    span.set("loopengine.outcome", done.outcome.value)
    if not done.outcome.succeeded and done.outcome is not Outcome.AWAITING_APPROVAL:
        span.fail(done.error or done.outcome.value)


class ExecutionDone:
    """How an execution ended (or that it waits for approval); one this engine ran to its end
    also hands back the data it ended with and the tokens it spent, so no caller reads back
    what the engine just wrote."""

    __slots__ = ("_recorded", "data", "ended_job", "error", "execution_id", "outcome", "tokens")

    def __init__(
        self,
        execution_id: str,
        outcome: Outcome,
        error: str | None = None,
        data: Mapping[str, Any] | None = None,
        tokens: int = 0,
        recorded: Callable[[], ExecutionRecord] | None = None,
        ended_job: bool = False,
    ) -> None:
        self.execution_id = execution_id
        self.outcome = outcome
        self.error = error
        self.data = data
        self.tokens = tokens
        self._recorded = recorded
        self.ended_job = ended_job
        """Whether its last commit ended the job of the lease it ran under."""

    @property
    def record(self) -> ExecutionRecord | None:
        """The execution as this process's last commit of it wrote it (None when another
        process ran it: read it from the store)."""
        return None if self._recorded is None else self._recorded()


class Engine:
    """Runs loops against a registry, recording each execution in the store (unless ``record``
    is False: then nothing is kept nor read back; skills still read the store)."""

    def __init__(
        self,
        services: Services,
        listener: PhaseListener | None = None,
        on_commit: CommitListener | None = None,
        *,
        record: bool = True,
    ) -> None:
        self.services = services
        self.listener = listener
        self.on_commit = on_commit
        self.record = record
        self.lease_held: LeaseHeld | None = None
        """Set by the daemon whose workers renew leases: fences pass at once while it holds."""
        self.on_left: LeftListener | None = None
        """Told what each commit that ended a run or wrote a learned state left the loop's next
        execution, right after it (the daemon's workers: what a job claimed starts from)."""
        self.abandoning = False
        self._abandoned_jobs: set[str] = set()

    def abandon(self, job_id: str | None = None) -> None:
        """Leave cancelled executions as they are, to be resumed from their last committed phase,
        instead of recording them as ``cancelled``: every one from now on (a daemon shutting
        down), or the one running ``job_id`` (its lease passed to another daemon)."""
        if job_id is None:
            self.abandoning = True
        else:
            self._abandoned_jobs.add(job_id)

    def _abandoned(self, run: Run) -> bool:
        return self.abandoning or run.envelope.job_id in self._abandoned_jobs

    def recorder(
        self, loop: Loop, *, resumed: bool = False, lease: queue.Lease | None = None
    ) -> Journal:
        """How this engine keeps executions of ``loop`` (for the job ``lease`` holds, if any)."""
        if not self.record:
            return Journal()
        return Recorder(
            self.services.store,
            loop.spec.durability,
            resumed=resumed,
            on_commit=self.on_commit,
            lease=lease,
            lease_held=self.lease_held,
            on_left=self.on_left,
        )

    def _spec_of(self, run: Run, phase: Phase) -> Any:
        """The phase's section of the loop; act runs a decided built-in action (``log_only``,
        ``notify``…) even in a loop without an ``act:`` section."""
        spec = run.loop.spec
        if phase is Phase.VALIDATE:
            return spec.validate_
        if phase is Phase.ACT and spec.act is None:
            decided = (run.data.get("decision") or {}).get("action")
            return defaults(Act) if decided in _BUILTIN_ACTIONS else None
        return getattr(spec, phase)

    @staticmethod
    def prelude(run: Run, last: LastRun | None, state: LearnedState | None) -> None:
        """Give a starting ``run`` what it starts from: the loop's last finished execution
        (``last_run``, ``since_last_run``) and its learned state."""
        if last is not None:
            run.data["last_run"] = {"outcome": last.outcome, "completed_at": iso(last.completed_at)}
            run.data["since_last_run"] = run.started_at - (last.completed_at or last.started_at)
        if state is not None:
            run.data["state"] = dict(state.values)
            run.samples = state.samples
            run.last_adjusted_at = state.last_adjusted_at

    def new_run(
        self,
        loop: Loop,
        envelope: JobEnvelope,
        trigger: dict[str, Any],
        dry_run: bool,
        execution_id: str | None = None,
    ) -> Run:
        now = self.services.clock()
        inputs = {
            name: fragment["default"]
            for name, fragment in loop.spec.params.items()
            if "default" in fragment
        }
        inputs.update(envelope.payload)
        data: dict[str, Any] = {
            "loop": {"id": loop.id, "name": loop.spec.name, "domain": loop.spec.domain},
            "trigger": {"fired_at": now, **trigger},
            "job": envelope.as_dict(),
            "input": inputs,
            "last_run": None,
            "since_last_run": None,
            "state": {},
            "now": now,
        }
        return Run(
            execution_id=execution_id or new_id(),
            loop=loop,
            envelope=envelope,
            data=data,
            started_at=now,
            trigger_type=str(trigger.get("type", "manual")),
            dry_run=dry_run,
            log=ExecutionLog(self.services.clock),
        )

    async def run(
        self,
        loop: Loop,
        *,
        inputs: dict[str, Any] | None = None,
        envelope: JobEnvelope | None = None,
        trigger: dict[str, Any] | None = None,
        dry_run: bool = False,
        lease: queue.Lease | None = None,
        start: StartingPoint | None = None,
    ) -> ExecutionDone:
        """Start and drive one execution; an already-accepted idempotency key returns the first.
        A job whose envelope's constraints say ``dry_run: true`` is a dry run. With a job's
        ``lease``, it stops (``LeaseLost``) once another daemon took the job; its claim may
        have read what it ``start``s from. A job's execution takes the job's id: run again
        after its daemon died before its first commit, its skills get the same idempotency
        keys."""
        envelope = envelope or new_envelope(loop.id, inputs)
        dry_run = dry_run or envelope.constraints.get("dry_run") is True
        ran_for = lease.job_id if lease is not None else None
        run = self.new_run(loop, envelope, trigger or {"type": "manual"}, dry_run, ran_for)
        recorder = self.recorder(loop, lease=lease)
        existing, last, state = await recorder.begin(run, start)
        if existing is not None:
            return await self._existing(existing)
        self.prelude(run, last, state)
        await recorder.started(run)
        return await self.drive(run, recorder, 0)

    async def _existing(self, execution_id: str) -> ExecutionDone:
        """How the execution that took the idempotency key ended, once it has: another process
        may still be running it."""
        store = self.services.store
        owner: str | None = None
        with anyio.move_on_after(EXISTING_WAIT_S):
            while True:
                row = await store.read(executions.get_execution, execution_id)
                assert row is not None
                if row.status != "running" or owner_died(row.owner):
                    outcome = Outcome(row.outcome or "interrupted")
                    return ExecutionDone(execution_id, outcome, row.error)
                owner = row.owner
                await anyio.sleep(EXISTING_POLL_S)
        raise NotResumable(
            f"execution {execution_id}, which took this idempotency key, still runs after "
            f"{EXISTING_WAIT_S:g} s (owner {owner}): look at it with `loopengine show`"
        )

    async def _phase(
        self, run: Run, phase: Phase, fn: PhaseFn, spec: Any
    ) -> tuple[PhaseResult, PhaseOutput]:
        clock = self.services.clock
        started = clock()
        run.calls, run.written = [], []
        timeout_ms = spec.timeout_ms if spec is not None else None
        with tracing.span(f"phase {phase}", {"loopengine.phase": str(phase)}) as span:
            output = await self._within(run, phase, fn, timeout_ms)
            if output.errors:
                span.fail("; ".join(output.errors))
        if run.calls:
            output.data["calls"] = run.calls
        output.effects.extend(run.written)
        record = PhaseResult(
            phase,
            started,
            clock(),
            not output.errors,
            output.data,
            tuple(output.errors),
            output.stop,
        )
        run.phases.append(record)
        if self.listener is not None:
            self.listener(run.loop.id, record)
        return record, output

    async def _within(
        self, run: Run, phase: Phase, fn: PhaseFn, timeout_ms: int | None
    ) -> PhaseOutput:
        """What the phase gives within its deadline; a timeout, a spent budget or an error of
        the tree ends the execution with its outcome."""
        try:
            if timeout_ms is None:
                return await fn(run, self.services)
            with anyio.fail_after(timeout_ms / 1000):
                return await fn(run, self.services)
        except TimeoutError:
            return PhaseOutput(stop=Outcome.TIMED_OUT, errors=[f"{phase} exceeded {timeout_ms} ms"])
        except BudgetExceeded as exc:
            return PhaseOutput(stop=Outcome.BUDGET_EXCEEDED, errors=[str(exc)])
        except LoopEngineError as exc:
            return PhaseOutput(stop=Outcome.FAILED, errors=[str(exc)])

    async def _failed_act(self, run: Run, output: PhaseOutput) -> None:
        """An act that failed part-way is undone when the loop enables auto-rollback."""
        rollback = run.loop.spec.validate_.auto_rollback if run.loop.spec.validate_ else None
        if output.stop is Outcome.FAILED and run.rollbacks and rollback and rollback.enabled:
            run.written = []
            result = await roll_back(run, self.services, rollback.max_rollback_time_ms)
            output.effects.extend(run.written)
            output.data["rollback"] = result
            output.errors.extend(result["errors"])
            if result["complete"]:
                output.stop = Outcome.ROLLED_BACK

    def skipped(self, run: Run, phase: Phase, reason: str) -> PhaseResult:
        """Record ``phase`` as not run, with why."""
        now = self.services.clock()
        record = PhaseResult(phase, now, now, True, {"skipped": reason})
        run.phases.append(record)
        if self.listener is not None:
            self.listener(run.loop.id, record)
        return record

    async def drive(self, run: Run, recorder: Journal, start: int) -> ExecutionDone:
        """Run the phases from ``start``; returns once the execution ends or waits for approval.

        A cancelled execution (Ctrl-C) is still recorded, as ``cancelled``, unless the engine is
        abandoning (a daemon shutting down, see ``abandon``); one already
        finishing is not finished twice (its last commit completes; cut short before it, the
        execution is found ``interrupted`` later and resumes).
        """
        with tracing.span(*_execution_span(run)) as span:
            try:
                done = await self._drive(run, recorder, start)
            except anyio.get_cancelled_exc_class():
                if not run.finishing and not self._abandoned(run):
                    with anyio.CancelScope(shield=True):
                        cancelled = Outcome.CANCELLED
                        _ended(span, await self.finish(run, recorder, cancelled, [], "cancelled"))
                raise
            finally:
                self._abandoned_jobs.discard(run.envelope.job_id)
            _ended(span, done)
            return done

    def _not_run(
        self, run: Run, phase: Phase, spec: Any, outcome: Outcome | None, acted: bool
    ) -> str | None:
        """Why ``phase`` does not run now, or None when it does."""
        if outcome is not None and not (phase in _AFTER_ACT and acted):
            return f"execution ended: {outcome}"
        if spec is None:
            return "not in the loop"
        if phase is Phase.LEARN and run.dry_run:
            return "a dry run feeds no learn score"
        return None

    async def _drive(self, run: Run, recorder: Journal, start: int) -> ExecutionDone:
        outcome: Outcome | None = None
        acted = any(r.phase == Phase.ACT and "skipped" not in r.data for r in run.phases)
        error: str | None = None
        for phase, fn in ORDER[start:]:
            spec = self._spec_of(run, phase)
            if (reason := self._not_run(run, phase, spec, outcome, acted)) is not None:
                recorder.hold(run, self.skipped(run, phase, reason))
                continue
            if phase is Phase.ACT:
                await recorder.fence()
            record, output = await self._phase(run, phase, fn, spec)
            if phase is Phase.ACT:
                acted = True
                await self._failed_act(run, output)
            if output.stop is not None and outcome is None:
                outcome = output.stop
                error = "; ".join(output.errors) or None
            if output.stop is Outcome.AWAITING_APPROVAL:
                await recorder.phase(run, record, output.effects)
                gate = await self._suspend(run, recorder)
                waiting = Outcome.AWAITING_APPROVAL
                recorded = partial(record_of, run, [gate], status="waiting", outcome=waiting.value)
                return ExecutionDone(
                    run.execution_id,
                    waiting,
                    None,
                    recorded=recorded,
                    ended_job=recorder.ended_job,
                )
            await recorder.phase(run, record, output.effects)
        ended = Outcome.DRY_RUN if run.dry_run else Outcome.COMPLETED
        return await self.finish(run, recorder, outcome or ended, [], error)

    async def finish(
        self,
        run: Run,
        recorder: Journal,
        outcome: Outcome,
        skipped: list[PhaseResult],
        error: str | None,
        extra: list[Effect] | None = None,
    ) -> ExecutionDone:
        """Run the store phase and make the outcome durable. A job's lease is checked first:
        the phase's artifacts are written where those of a daemon that took the job over go
        (its execution has the job's id), before the commit that would refuse them."""
        run.finishing = True
        await recorder.fence()
        store_fn = self._store_for(outcome)
        record, output = await self._phase(run, Phase.STORE, store_fn, run.loop.spec.store)
        final = Outcome(ended(outcome, output.errors))
        if final is not outcome:
            error = "; ".join(output.errors)
        effects = [*output.effects, *self._emits(run, final), *(extra or [])]
        completed_at = self.services.clock()
        await recorder.finished(run, [*skipped, record], final, completed_at, effects, error)
        end = {"outcome": final.value, "completed_at": completed_at, "error": error}
        recorded = partial(record_of, run, effects, status="finished", **end)
        return ExecutionDone(
            run.execution_id,
            final,
            error,
            run.data,
            run.usage.tokens,
            recorded=recorded,
            ended_job=recorder.ended_job,
        )

    def _store_for(self, outcome: Outcome) -> PhaseFn:
        async def store(run: Run, services: Services) -> PhaseOutput:
            return await run_store(run, services, outcome)

        return store

    def _emits(self, run: Run, outcome: Outcome) -> list[AppendEvent]:
        """The events the loop emits on ``outcome``."""
        events: list[tuple[str, dict[str, Any]]] = []
        for emit in run.loop.spec.emit:
            if outcome in emit.on:
                data = emit.data.render(run.data, self.services.environ) or {}
                data.update(execution_id=run.execution_id, outcome=outcome)
                events.append((emit.event, data))
        if not events:
            return []
        now = self.services.clock()
        trace = tracing.current()
        return [
            AppendEvent(name, run.loop.id, data, now, run.execution_id, trace)
            for name, data in events
        ]

    async def _suspend(self, run: Run, recorder: Journal) -> RequestApproval:
        """Wait for a person's answer; the gate requested."""
        decision = run.data.get("decision") or {}
        gate = run.loop.spec.decide.human_approval if run.loop.spec.decide else None
        assert gate is not None
        now = self.services.clock()
        request = RequestApproval(
            run.execution_id,
            run.loop.id,
            decision["action"],
            now,
            now + gate.timeout_hours * 3600,
        )
        await recorder.suspended(run, request)
        return request
