"""What users ask of loopengine, each written once for every face: the CLI, the HTTP API.

An operation of the store alone is a generator of ``Step``s (as httpx's ``auth_flow`` yields
requests): it checks, yields each store function it needs and returns a typed record, so the
same code runs on the commands' read-only ``Reader`` (no event loop: ``read_now``), on one
write of a command that only feeds the store (``write_now``) and on the daemon's async
``Store`` (``perform``). Operations that run loops (``answer``, ``resume``) take the runtime.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import (
    TYPE_CHECKING,
    Any,
    Concatenate,
    Literal,
    ParamSpec,
    Protocol,
    TypeAlias,
    TypeVar,
)
from zoneinfo import ZoneInfo

import loopengine._tracing as tracing
from loopengine._json import JSONObject
from loopengine.errors import ContractError, NotFound, NotResumable
from loopengine.store import (
    ExecutionRecord,
    ExecutionRow,
    Reader,
    approvals,
    autolearn,
    executions,
    flags,
    iso,
    knowledge,
    logs,
    memory,
    queue,
    signals,
    status,
    threads,
    write_once,
)

if TYPE_CHECKING:
    from loopengine.app._runtime import Runtime
    from loopengine.contract import Config, Loop, LoopLoader, Outcome
    from loopengine.engine import ExecutionDone
    from loopengine.store import Store

__all__ = [
    "MAX_FIRES",
    "MAX_LISTED",
    "MAX_LOG_LINES",
    "MIN_PREFIX",
    "NAMED",
    "NEXT_FIRES",
    "KnowledgeBase",
    "LoopSource",
    "Operation",
    "Paused",
    "Queued",
    "Step",
    "answer",
    "daemon_status",
    "daemons_alive",
    "emit",
    "events",
    "execution",
    "execution_log",
    "execution_named",
    "finished_job",
    "history",
    "knowledge_bases",
    "latest",
    "learned",
    "learning_history",
    "list_flags",
    "loop_plan",
    "loop_source",
    "metric_points",
    "metric_series",
    "named",
    "pause",
    "perform",
    "read_now",
    "recent_sessions",
    "record_metric",
    "record_of",
    "remembered",
    "resume",
    "scores_over_time",
    "served_loop",
    "served_loops",
    "set_flag",
    "thread",
    "trigger",
    "waiting_approvals",
    "write_now",
]

T = TypeVar("T")
P = ParamSpec("P")

MAX_LISTED = 10_000
"""Most executions one listing returns (``history --limit``, ``GET /executions?limit=``)."""
MAX_LOG_LINES = 1_000
"""Most log lines one read returns (``logs --limit``, ``GET /executions/{id}/logs?limit=``)."""
_MAX_CURSOR = 2**53
"""Past any line's id (JSON's safest integer), and what SQLite and PostgreSQL bind."""
MIN_PREFIX = 4
"""Shortest prefix of an execution id a command accepts."""
NAMED = 6
"""Most ids read for a prefix: more than one is an ambiguous prefix, and five are listed."""


@dataclass(frozen=True, slots=True)
class Step:
    """One store function an operation needs, run in a transaction of its own."""

    function: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: Mapping[str, Any]
    writes: bool


Operation: TypeAlias = Generator[Step, Any, T]
"""An operation of the store alone: the steps it yields are sent back their results."""


def _read(
    function: Callable[Concatenate[Any, P], T], *args: P.args, **kwargs: P.kwargs
) -> Operation[T]:
    found: T = yield Step(function, args, kwargs, writes=False)
    return found


def _write(
    function: Callable[Concatenate[Any, P], T], *args: P.args, **kwargs: P.kwargs
) -> Operation[T]:
    done: T = yield Step(function, args, kwargs, writes=True)
    return done


def _drive(operation: Operation[T], run: Callable[[Step], Any]) -> T:
    sent: Any = None
    try:
        while True:
            sent = run(operation.send(sent))
    except StopIteration as stop:
        result: T = stop.value
        return result


def read_now(reader: Reader, operation: Operation[T]) -> T:
    """``operation`` run on ``reader``, without an event loop; it may only read."""

    def run(step: Step) -> Any:
        assert not step.writes, f"{step.function.__name__} writes: a reader cannot"
        return reader.read(step.function, *step.args, **step.kwargs)

    return _drive(operation, run)


def write_now(url: str, operation: Operation[T]) -> T:
    """``operation`` run on the store at ``url`` (created or migrated first) without an event
    loop, each step in one transaction of its own (``write_once``)."""
    return _drive(operation, lambda step: write_once(url, step.function, *step.args, **step.kwargs))


class AsyncStore(Protocol):
    """What ``perform`` runs steps on: the async ``Store``, or one standing in for it."""

    async def read(
        self, operation: Callable[Concatenate[Any, P], T], *args: P.args, **kwargs: P.kwargs
    ) -> T: ...

    async def write(
        self, operation: Callable[Concatenate[Any, P], T], *args: P.args, **kwargs: P.kwargs
    ) -> T: ...


async def perform(store: Store | AsyncStore, operation: Operation[T]) -> T:
    """``operation`` run on the async ``store``, each step in one transaction of its own."""
    sent: Any = None
    try:
        while True:
            step = operation.send(sent)
            run = store.write if step.writes else store.read
            sent = await run(step.function, *step.args, **step.kwargs)
    except StopIteration as stop:
        result: T = stop.value
        return result


def execution_named(given: str, found: Sequence[str]) -> str:
    """The execution id ``given`` names, whole or as a unique prefix (like git's short hashes),
    of the ids ``found`` for it (``executions.ids_named``); ``NotResumable`` when none or several
    match, listing them."""
    if len(found) == 1:
        return found[0]
    if found:
        shown = ", ".join(found[:5]) + (", …" if len(found) > 5 else "")
        raise NotResumable(f"{given!r} names several executions ({shown}): give more of it")
    raise NotResumable(f"no execution {given!r} (see `loopengine history`)")


def named(given: str) -> Operation[str]:
    """The id of the execution ``given`` names, whole or as a unique prefix."""
    return execution_named(
        given, (yield from _read(executions.ids_named, given, MIN_PREFIX, NAMED))
    )


def execution(execution_id: str) -> Operation[ExecutionRecord]:
    """Everything stored about one execution; ``NotFound`` when there is none."""
    record = yield from _read(executions.read_record, execution_id)
    if record is None:
        raise NotFound(f"no execution {execution_id!r}")
    return record


def execution_log(execution_id: str, after: int = 0, limit: int = 200) -> Operation[logs.LogPage]:
    """The lines the execution's skills logged after the cursor ``after`` (0: from the first),
    oldest first; ``NotFound`` when there is no such execution."""
    if not 1 <= limit <= MAX_LOG_LINES:
        raise ContractError(f"limit {limit}: write a whole number from 1 to {MAX_LOG_LINES}")
    if not 0 <= after <= _MAX_CURSOR:
        raise ContractError(f"after {after}: write the cursor a page gave, or 0 for the first")
    page = yield from _read(logs.lines_of, execution_id, after, limit)
    if page.status is None:
        raise NotFound(f"no execution {execution_id!r}")
    return page


def history(
    loop_id: str | None = None,
    outcome: Outcome | None = None,
    limit: int = 20,
    cursor: str | None = None,
    narrowed: executions.Narrowed | None = None,
) -> Operation[executions.Page]:
    """The newest executions first (of one loop, with one outcome, as ``narrowed``, when
    given), after ``cursor``; ``ContractError`` when ``cursor`` is not one a page gave."""
    if not 1 <= limit <= MAX_LISTED:
        raise ContractError(f"limit {limit}: write a whole number from 1 to {MAX_LISTED}")
    wanted = None if outcome is None else outcome.value
    return (
        yield from _read(
            executions.page_of_executions,
            loop_id=loop_id,
            outcome=wanted,
            limit=limit,
            cursor=cursor,
            narrowed=narrowed,
        )
    )


def latest(loop_ids: Sequence[str], count: int) -> Operation[dict[str, list[ExecutionRow]]]:
    """The newest ``count`` executions of each loop, newest first (the console's strip of
    outcomes), in one read."""
    if not 1 <= count <= MAX_LISTED:
        raise ContractError(f"count {count}: write a whole number from 1 to {MAX_LISTED}")
    return (yield from _read(executions.newest_of_each, list(loop_ids), count))


def daemon_status(lease_s: float) -> Operation[status.View]:
    """The daemons whose lease of ``lease_s`` still runs, their loops, what runs and waits."""
    return (yield from _read(status.view, time.time() - lease_s))


def served_loop(loop_id: str, lease_s: float) -> Operation[status.ServedLoop]:
    """The loop ``loop_id`` as a daemon alive serves it; ``NotFound`` when none does."""
    for loop in (yield from _read(status.served, time.time() - lease_s)):
        if loop.loop_id == loop_id:
            return loop
    raise NotFound(f"no loop {loop_id!r} is served (see GET /loops)")


def served_loops(lease_s: float) -> Operation[list[status.ServedLoop]]:
    """The loops the daemons alive serve, each with its triggers' next fires and pause state."""
    return (yield from _read(status.served, time.time() - lease_s))


def daemons_alive(lease_s: float) -> Operation[bool]:
    """Whether a daemon whose lease of ``lease_s`` still runs serves this store."""
    return bool((yield from _read(queue.active_daemons, time.time() - lease_s)))


@dataclass(frozen=True, slots=True)
class Paused:
    """A loop's triggers stopped (``paused``) or running (``active``), and whether this asked
    for a change."""

    loop_id: str
    state: Literal["paused", "active"]
    changed: bool


def pause(loop_id: str, paused: bool) -> Operation[Paused]:
    """Stop (``paused``) or restart a loop's triggers, persisted (no catch-up on unpause)."""
    if paused:
        changed = yield from _write(queue.pause, loop_id, time.time())
    else:
        changed = yield from _write(queue.unpause, loop_id)
    return Paused(loop_id, "paused" if paused else "active", changed)


@dataclass(frozen=True, slots=True)
class Queued:
    """A manual job queued (``queued``), or the first one its idempotency key queued
    (``duplicate``)."""

    job_id: str
    loop_id: str
    status: str


def trigger(
    loop: Loop,
    inputs: Mapping[str, Any],
    source: Literal["cli", "api", "console"],
    *,
    idempotency_key: str | None = None,
    dry_run: bool = False,
    traceparent: str | None = None,
) -> Operation[Queued]:
    """Queue a manual job of ``loop`` with ``inputs`` (checked already); a repeated
    ``idempotency_key`` of the loop answers with its first job. ``ContractError`` with the
    reason when the loop does not take it (paused, overlap). Its execution continues the trace
    ``traceparent`` names, if any."""
    from loopengine.app._intake import Firing
    from loopengine.store import intake, new_id

    if idempotency_key:
        named_key = f"{loop.id}\n{idempotency_key}".encode()
        key = f"{source}:{hashlib.sha256(named_key).hexdigest()}"
    else:
        key = f"manual:{new_id()}"
    constraints = {"dry_run": True} if dry_run else None
    trigger = {"type": "manual", "id": source, **tracing.carried(traceparent)}
    firing = Firing(loop, trigger, key, inputs, constraints=constraints)
    now = time.time()
    taken, job = yield from _write(intake.enqueue_keyed, firing.arrival(now), now)
    if job is None or taken.status not in (queue.QUEUED, intake.DUPLICATE):
        reason = taken.reason or (job.reason if job else taken.status)
        raise ContractError(f"loop {loop.id!r} did not queue the job: {reason}")
    return Queued(job.id, loop.id, taken.status)


def finished_job(job_id: str) -> Operation[queue.Job | None]:
    """The job ``job_id`` once it ended (done or skipped); None while it waits or runs."""
    job = yield from _read(queue.get_job, job_id)
    return job if job is not None and job.status in (queue.DONE, queue.SKIPPED) else None


def emit(
    name: str, data: Any, source: str, traceparent: str | None = None
) -> Operation[signals.Event]:
    """Append an event to the log (a daemon fires the loops whose patterns match it, in the
    trace ``traceparent`` names, if any); ``ContractError`` when ``name`` is not an event name.
    ``data`` is bounded already."""
    from loopengine.triggers import event_problem

    if problem := event_problem(name):
        raise ContractError(problem)
    now = time.time()
    event_id = yield from _write(signals.insert_event, name, source, data, now, None, traceparent)
    return signals.Event(event_id, name, source, data, None, now, traceparent)


def events(
    wanted: Callable[[str], bool],
    limit: int,
    since: float | None = None,
    until: float | None = None,
) -> Operation[list[signals.Event]]:
    """The newest events first whose names are ``wanted``, at most ``limit``, appended from
    ``since`` and before ``until`` when given."""
    return (yield from _read(signals.list_events, wanted, limit, since=since, until=until))


def record_metric(name: str, value: float, labels: Mapping[str, str]) -> Operation[signals.Sample]:
    """Add a point to the metric series ``name`` (what sources and threshold triggers read)."""
    now = time.time()
    yield from _write(signals.insert_metric, name, value, now, dict(labels))
    return signals.Sample(value, dict(labels), now)


def metric_series(wanted: Callable[[str], bool], limit: int) -> Operation[list[signals.Series]]:
    """The metric series whose names are ``wanted``, with their latest points, at most
    ``limit``."""
    return (yield from _read(signals.metric_series, wanted, limit))


def metric_points(name: str, limit: int) -> Operation[list[signals.Sample]]:
    """The newest ``limit`` points of the metric series ``name``, newest first."""
    return (yield from _read(signals.metric_points, name, None, limit))


def waiting_approvals(limit: int) -> Operation[list[approvals.WaitingApproval]]:
    """What waits for approval, oldest first, with the time left before it escalates."""
    return (yield from _read(approvals.waiting, time.time(), limit))


def set_flag(name: str, enabled: bool) -> Operation[flags.Flag]:
    """Turn the feature flag ``name`` on or off."""
    now = time.time()
    yield from _write(flags.set_flag, name, enabled, now)
    return flags.Flag(name, enabled, now)


def list_flags() -> Operation[list[flags.Flag]]:
    """Every feature flag, with its state."""
    return (yield from _read(flags.list_flags))


def learned(window: int) -> Operation[autolearn.Learned]:
    """What the autolearn loops learned in the last ``window`` samples, and their last runs."""
    from loopengine.autolearn import AUTOLEARN_LOOPS

    return (yield from _read(autolearn.learned, window, AUTOLEARN_LOOPS))


def learning_history() -> Operation[list[autolearn.HistoryEntry]]:
    """Every routing and instructions change autolearn made, newest first."""
    return (yield from _read(autolearn.history))


def remembered(user: str | None) -> Operation[list[memory.UserMemory]]:
    """What the chat remembers of ``user``, or of the users seen most recently."""
    return (yield from _read(memory.remembered, user))


def recent_sessions(limit: int) -> Operation[list[threads.SessionRow]]:
    """The ``limit`` chat sessions whose threads grew last, newest first."""
    return (yield from _read(threads.recent_sessions, limit))


def thread(session_id: str) -> Operation[threads.Thread]:
    """A chat session's messages in order (an empty thread for a session never written)."""
    return (yield from _read(threads.read_thread, session_id))


def scores_over_time() -> Operation[list[autolearn.ScorePoint]]:
    """Each node × category's score at every cycle autotune kept, oldest first."""
    return (yield from _read(autolearn.score_points))


@dataclass(frozen=True, slots=True)
class KnowledgeBase:
    """A collection of the config and what the store holds of it (nothing until it is
    indexed)."""

    name: str
    sources: tuple[str, ...]
    embeddings: str | None
    """The node and model its vectors are made with (``node/model``); None: keywords only."""
    files: int
    chunks: int
    vectors: int
    indexed_at: float | None

    def as_json(self) -> JSONObject:
        """The collection as ``knowledge list --json`` and ``GET /knowledge`` show it."""
        return {
            "name": self.name,
            "sources": list(self.sources),
            "embeddings": self.embeddings,
            "files": self.files,
            "chunks": self.chunks,
            "vectors": self.vectors,
            "indexed_at": iso(self.indexed_at),
        }


def knowledge_bases(config: Config) -> Operation[list[KnowledgeBase]]:
    """The config's knowledge collections, in its order, each with its files, chunks and
    vectors in the store and when it was last indexed."""
    stored = {row.name: row for row in (yield from _read(knowledge.summaries))}
    found = []
    for name, collection in config.knowledge.items():
        row = stored.get(name)
        counts = (row.files, row.chunks, row.vectors) if row else (0, 0, 0)
        when = row.indexed_at if row else None
        found.append(
            KnowledgeBase(
                name, tuple(collection.sources), collection.embedding_model, *counts, when
            )
        )
    return found


NEXT_FIRES = 10
"""Fires a plan lists when it is given no end."""
MAX_FIRES = 10_000
"""Most fires one plan lists."""


def _instant(text: str | None, zone: str, default: float | None) -> float | None:
    """An ISO time as epoch seconds; without an offset it is read in the trigger's zone."""
    if text is None:
        return default
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ContractError(
            f"time {text!r}: write ISO 8601, e.g. 2027-03-28T00:00 or 2027-03-28T00:00+01:00"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=ZoneInfo(zone))
    return moment.timestamp()


def _catchup_text(config: Any) -> str:
    window = f"{config.catchup_window:g} s" if config.catchup_window else "one period"
    policy = str(config.catchup)
    if policy == "skip":
        what = "missed fires are recorded as missed, none runs"
    elif policy == "latest":
        what = "the latest missed fire runs, older ones are recorded as coalesced"
    else:
        what = f"up to {config.max_catchup} missed fires run, older ones are recorded as coalesced"
    return (
        f"catchup {policy}: after downtime {what}; fires older than {window} are recorded as missed"
    )


def _trigger_plan(
    trigger_id: str, config: Any, start: str | None, end: str | None, count: int | None
) -> JSONObject:
    from loopengine.triggers import CronSchedule

    schedule = CronSchedule.parse(config.expression, config.timezone)
    begin = _instant(start, config.timezone, time.time())
    assert begin is not None
    finish = _instant(end, config.timezone, None)
    limit = count if count is not None else (MAX_FIRES if finish is not None else NEXT_FIRES)
    if not 1 <= limit <= MAX_FIRES:
        raise ContractError(f"--count {limit}: write a whole number from 1 to {MAX_FIRES}")
    if finish is not None:
        fires = schedule.fires(begin, finish, limit)
    else:
        fires, after = [], begin
        while len(fires) < limit:
            fire = schedule.next_fire(after)
            fires.append(fire)
            after = fire.at
    return {
        "trigger_id": trigger_id,
        "expression": config.expression,
        "timezone": config.timezone,
        "dst": "fixed-time: a skipped local time fires once right after the gap, a repeated one "
        "once"
        if schedule.fixed_time
        else "sub-hourly: follows elapsed time (nothing in a gap, both passes of a repeated hour)",
        "catchup": _catchup_text(config),
        "jitter_s": config.jitter_s,
        "fires": [
            {
                "local": fire.local.isoformat(),
                "utc": datetime.fromtimestamp(fire.at, UTC).isoformat(),
                "note": fire.note,
            }
            for fire in fires
        ],
    }


def loop_plan(
    loop: Loop, start: str | None = None, end: str | None = None, count: int | None = None
) -> dict[str, Any]:
    """A loop's cron fires from ``start`` (now) to ``end`` or ``count`` of them (``NEXT_FIRES``),
    local and UTC, each daylight-saving decision and the catch-up policy spelled out; its other
    triggers named: what ``loopengine plan --json`` prints. ``ContractError`` for a bad time or
    count."""
    from loopengine.app._intake import triggers_of

    found = triggers_of(loop)
    return {
        "loop_id": loop.id,
        "cron": [
            _trigger_plan(trigger_id, trigger.config, start, end, count)
            for trigger_id, trigger in found
            if trigger.type == "cron"
        ],
        "other_triggers": [f"{t.type}:{trigger_id}" for trigger_id, t in found if t.type != "cron"],
    }


@dataclass(frozen=True, slots=True)
class LoopSource:
    """A served loop's file as it reads now: its text (None when it cannot be read), whether it
    is the version served, and what a check of it finds (each formatted as ``validate`` prints
    it)."""

    text: str | None
    served: bool
    errors: tuple[str, ...]
    warnings: tuple[str, ...]


def loop_source(loop: Loop, loader: LoopLoader) -> LoopSource:
    """The file of ``loop`` read again and checked by ``loader`` as the daemon loads it."""
    from loopengine.contract import read_source

    try:
        text = read_source(Path(loop.file), name=loop.file)
    except ContractError as exc:
        return LoopSource(None, False, tuple(d.format() for d in exc.diagnostics), ())
    found = loader.serving().load_text(text, loop.file).diagnostics
    return LoopSource(
        text,
        hashlib.sha256(text.encode()).hexdigest() == loop.version,
        tuple(d.format() for d in found if d.is_error),
        tuple(d.format() for d in found if not d.is_error),
    )


async def answer(
    runtime: Runtime, execution_id: str, approve: bool, note: str | None
) -> ExecutionRecord:
    """Approve (the gated action runs now) or reject an execution waiting for approval; its
    record afterwards, with its approval, read from the store. ``NotFound`` when there is no
    such execution, ``NotResumable`` when it does not wait (or its window closed)."""
    from loopengine.engine import answer_approval

    if await runtime.store.read(executions.get_execution, execution_id) is None:
        raise NotFound(f"no execution {execution_id!r}")
    await answer_approval(runtime.engine, runtime.load_loop, execution_id, approve, note)
    return await perform(runtime.store, execution(execution_id))


async def resume(runtime: Runtime, execution_id: str) -> ExecutionRecord:
    """Run an interrupted execution on from its last committed phase; its record afterwards."""
    from loopengine.engine import resume as resume_execution

    await resume_execution(runtime.engine, runtime.load_loop, execution_id)
    return await perform(runtime.store, execution(execution_id))


async def record_of(runtime: Runtime, done: ExecutionDone) -> ExecutionRecord:
    """The record of the execution the engine just ran, read back only when another process
    ran it."""
    record = done.record
    if record is None:
        record = await perform(runtime.store, execution(done.execution_id))
    return record
