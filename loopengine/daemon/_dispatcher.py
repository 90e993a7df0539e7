"""Event triggers: follow the store's event log by id and queue a job per matching trigger.

Ids come from a sequence before commit on PostgreSQL, so an event may commit after later ones
were read: a ``LogFollower`` waits for such gaps (``GAP_WAIT_S``) and reads them again until
they fill, and the saved cursor stays below the oldest.

Patterns match through a precompiled index; the trigger's ``filter`` and ``scope`` are
expressions evaluated on the event alone (no I/O in a trigger). The cursor moves in the
transaction that queues the jobs, and each job's idempotency key names the event, so a crash or a
second daemon never queues one twice and an event emitted while no daemon ran is not lost.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import anyio

import loopengine._tracing as tracing
from loopengine._json import JSONObject
from loopengine.app import admission, new_arrival
from loopengine.contract import Loop
from loopengine.daemon._log import DaemonLog, log_intake
from loopengine.daemon._loops import triggers_of
from loopengine.errors import ContractError, LoopEngineError
from loopengine.store import Store, intake, iso, new_envelope, queue
from loopengine.store.intake import Admission, Arrival
from loopengine.triggers import LogFollower, PatternIndex

__all__ = ["BATCH", "CURSOR", "GAP_WAIT_S", "Dispatcher"]

CURSOR = "events"
BATCH = 500
GAP_WAIT_S = 300.0
"""How long an id missing below later ones is waited for: its insert may still be open."""
GAPS_READ = 1000
"""Most gaps read again at each poll (the oldest)."""


@dataclass(frozen=True, slots=True)
class _Route:
    """What an event trigger fires on: its config and its loop's overlap policy, not the loop's
    definition (built again when the job runs)."""

    loop_id: str
    trigger_id: str
    config: Any
    admit: Callable[[int, int], Admission]


def _subject(event: queue.Event) -> JSONObject:
    """What an event trigger's filter and scope read of ``event``."""
    return {"id": event.id, "name": event.name, "source": event.source, "data": event.data}


def _scope_problem(loop_id: str, scope: Any) -> str | None:
    """Why the scope an event trigger computed cannot bound a job, or None."""
    if scope is None:
        return None
    if not isinstance(scope, dict):
        return f"the trigger's scope must give an object, got {type(scope).__name__}"
    try:
        new_envelope(loop_id, scope=scope)
    except ContractError as exc:
        return f"the trigger's scope: {exc}"
    return None


class Dispatcher:
    """Matches new events against every event trigger; ``update`` swaps the index."""

    def __init__(
        self,
        store: Store,
        log: DaemonLog,
        on_queued: Callable[[], None],
        poll_s: float,
        clock: Callable[[], float] = time.time,
        period: Callable[[], float] | None = None,
    ) -> None:
        """The log is read when nudged, or once a ``period()`` (``poll_s`` when not given)."""
        self.store = store
        self.log = log
        self.on_queued = on_queued
        self.period = period or (lambda: poll_s)
        self.clock = clock
        self.routes: dict[tuple[str, str], _Route] = {}
        self.index: PatternIndex[_Route] = PatternIndex([])
        self.wake = anyio.Event()

    def update(self, loaded: Iterable[Loop], removed: Iterable[str]) -> None:
        loaded = list(loaded)
        gone = {*removed, *(loop.id for loop in loaded)}
        routes = {key: r for key, r in self.routes.items() if key[0] not in gone}
        for loop in loaded:
            for trigger_id, trigger in triggers_of(loop):
                if trigger.type == "event":
                    admit = admission(loop.spec.concurrency)
                    routes[(loop.id, trigger_id)] = _Route(
                        loop.id, trigger_id, trigger.config, admit
                    )
        self.routes = routes
        self.index = PatternIndex((r.config.event_pattern, r) for r in routes.values())

    async def run(self) -> None:
        start = await self.store.read(queue.cursor, CURSOR)
        follower = LogFollower(start, GAP_WAIT_S)
        while True:
            self.wake = anyio.Event()
            high, saved = follower.high, follower.position
            gaps = sorted(follower.gaps)[:GAPS_READ]
            batch = await self.store.read(queue.events_after, high, BATCH, gaps)
            fresh = set(follower.take((event.id for event in batch), self.clock()))
            if fresh or follower.position != saved:
                await self._dispatch([e for e in batch if e.id in fresh], follower.position)
            if sum(1 for event in batch if event.id > high) == BATCH:
                continue
            with anyio.move_on_after(self.period()):
                await self.wake.wait()

    def nudge(self) -> None:
        """Read the log now rather than at the next poll (an event was just appended)."""
        self.wake.set()

    def matching(self, event: queue.Event) -> list[str]:
        """The loops ``event`` fires: their pattern matches its name and their filter holds."""
        return sorted({route.loop_id for route, _ in self._matches(event)})

    def _matches(self, event: queue.Event) -> list[tuple[_Route, Any]]:
        """The triggers ``event`` fires, each with the scope it computed."""
        subject = _subject(event)
        matched = []
        for route in self.index.match(event.name):
            config = route.config
            try:
                if config.filter is not None and not config.filter.holds(subject):
                    continue
                scope = config.scope.evaluate(subject) if config.scope is not None else None
            except LoopEngineError as exc:
                self.log.line("error", str(exc), loop=route.loop_id, event=event.id)
                continue
            problem = _scope_problem(route.loop_id, scope)
            if problem is not None:
                self.log.line("error", problem, loop=route.loop_id, event=event.id)
                continue
            matched.append((route, scope))
        return matched

    def _arrivals(self, event: queue.Event, now: float) -> list[Arrival]:
        arrivals = []
        for route, scope in self._matches(event):
            trigger = {
                "type": "event",
                "id": route.trigger_id,
                "event": {**_subject(event), "created_at": iso(event.created_at)},
                **tracing.carried(event.traceparent),
            }
            key = f"event:{event.id}:{route.loop_id}:{route.trigger_id}"
            arrivals.append(new_arrival(route.loop_id, route.admit, trigger, key, now, scope=scope))
        return arrivals

    async def _dispatch(self, batch: list[queue.Event], position: int) -> None:
        """Queue what the events of ``batch`` fire, and save ``position`` in the same
        transaction."""
        now = self.clock()
        arrivals = [arrival for event in batch for arrival in self._arrivals(event, now)]
        intakes = await self.store.write(intake.enqueue_all, arrivals, now, (CURSOR, position))
        queued = False
        for arrival, taken in zip(arrivals, intakes, strict=True):
            event = arrival.job.trigger["event"]
            fields = {
                "loop": arrival.loop_id,
                "trigger": arrival.trigger_id,
                "event": event["name"],
            }
            queued = log_intake(self.log, taken, **fields) or queued
        if queued:
            self.on_queued()
