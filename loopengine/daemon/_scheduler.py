"""Cron triggers: one heap of next fires for every loop; catch-up after downtime.

Each slot is written once, with its job or with the reason it did not run, so a restart, a late
wake-up or a second daemon never runs it twice, and slots missed while no daemon ran are decided
by the trigger's catch-up policy when it is next due.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import anyio
import sqlalchemy as sa

from loopengine.contract import Loop
from loopengine.daemon._intake import Firing, enqueue, record_slot
from loopengine.daemon._log import DaemonLog
from loopengine.daemon._loops import triggers_of
from loopengine.store import Store, iso, queue
from loopengine.triggers import CronSchedule, catch_up, jittered

__all__ = ["MAX_SLOTS", "Scheduler"]

MAX_SLOTS = 10_000
"""Most missed slots recorded one by one after downtime; older ones share one summary row."""


@dataclass(slots=True)
class _Entry:
    loop: Loop
    trigger_id: str
    config: Any
    schedule: CronSchedule
    last: float
    """The latest slot decided (run or not): catch-up starts after it."""
    slot: float
    due: float
    since: float
    """When this daemon began to schedule the trigger: earlier slots came due while none did."""

    @property
    def key(self) -> tuple[str, str]:
        return self.loop.id, self.trigger_id


class Scheduler:
    """Owns the cron heap; ``update`` swaps loops in and out while ``run`` sleeps."""

    def __init__(
        self,
        store: Store,
        log: DaemonLog,
        on_queued: Callable[[], None],
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.log = log
        self.on_queued = on_queued
        self.clock = clock
        self.entries: dict[tuple[str, str], _Entry] = {}
        self._heap: list[tuple[float, int, tuple[str, str]]] = []
        self._pushes = 0
        self._changed = anyio.Event()

    async def update(self, loaded: Iterable[Loop], removed: Iterable[str]) -> None:
        """Schedule the cron triggers of ``loaded`` (replacing older versions), drop ``removed``."""
        loaded = list(loaded)
        gone = {*removed, *(loop.id for loop in loaded)}
        self.entries = {key: e for key, e in self.entries.items() if key[0] not in gone}
        wanted = [
            (loop, trigger_id, trigger.config)
            for loop in loaded
            for trigger_id, trigger in triggers_of(loop)
            if trigger.type == "cron"
        ]
        if wanted:
            lasts = await self.store.read(
                lambda c: {
                    (loop.id, tid): queue.last_tick(c, loop.id, tid) for loop, tid, _ in wanted
                }
            )
            now = self.clock()
            for loop, trigger_id, config in wanted:
                schedule = CronSchedule.parse(config.expression, config.timezone)
                last = lasts[(loop.id, trigger_id)]
                entry = _Entry(
                    loop, trigger_id, config, schedule, now if last is None else last, 0, 0, now
                )
                self._plan_next(entry, entry.last)
                self.entries[entry.key] = entry
        self._heap = [(e.due, self._count(), key) for key, e in self.entries.items()]
        heapq.heapify(self._heap)
        self._changed.set()

    def next_fires(self) -> dict[tuple[str, str], float]:
        """The next slot of every cron trigger (what ``status`` shows)."""
        return {key: entry.slot for key, entry in self.entries.items()}

    async def run(self) -> None:
        while True:
            self._changed = anyio.Event()
            delay = self._heap[0][0] - self.clock() if self._heap else 3600.0
            if delay > 0:
                with anyio.move_on_after(delay):
                    await self._changed.wait()
                continue
            due, _, key = heapq.heappop(self._heap)
            entry = self.entries.get(key)
            if entry is None or entry.due != due:
                continue
            await self._fire(entry)
            self._plan_next(entry, max(entry.last, entry.slot))
            heapq.heappush(self._heap, (entry.due, self._count(), key))

    def _count(self) -> int:
        self._pushes += 1
        return self._pushes

    def _plan_next(self, entry: _Entry, after: float) -> None:
        entry.slot = entry.schedule.next_fire(after).at
        key = f"{entry.loop.id}/{entry.trigger_id}/{entry.slot}"
        entry.due = jittered(entry.slot, entry.config.jitter_s, key)

    def _firing(self, entry: _Entry, slot: float) -> Firing:
        trigger = {"type": "cron", "id": entry.trigger_id, "scheduled_for": iso(slot)}
        return Firing(
            entry.loop,
            trigger,
            f"cron:{entry.loop.id}:{entry.trigger_id}:{slot!r}",
            slot=slot,
        )

    async def _fire(self, entry: _Entry) -> None:
        """Decide every slot since the last decided one: normally just the one now due."""
        now = self.clock()
        config = entry.config
        window = config.catchup_window or entry.schedule.period(entry.last)
        cutoff = max(entry.last, now - window)
        older = entry.schedule.fires(entry.last, cutoff, MAX_SLOTS) if cutoff > entry.last else []
        recent = [f.at for f in entry.schedule.fires(cutoff, now, MAX_SLOTS)]
        on_time = len(recent) == 1 and recent[0] >= entry.since
        if on_time and not older:
            decided_run: tuple[float, ...] = (recent[0],)
            not_run: list[tuple[float, str]] = []
        else:
            decision = catch_up(
                recent,
                policy=config.catchup,
                window=window,
                max_catchup=config.max_catchup,
                now=now,
            )
            decided_run, not_run = decision.run, list(decision.not_run)
            reason = "missed: older than the catch-up window"
            if len(older) == MAX_SLOTS:
                reason += f" ({MAX_SLOTS}+ slots up to {iso(cutoff)}, recorded as one)"
                older = older[:1]
            not_run = [(f.at, reason) for f in older] + not_run
        if not (decided_run or not_run):
            return
        firings: list[tuple[Firing, str | None]] = [
            (self._firing(entry, slot), None) for slot in decided_run
        ]
        firings += [(self._firing(entry, slot), why) for slot, why in not_run]

        def write(connection: sa.Connection) -> list[tuple[Firing, str, str | None, str | None]]:
            paused = entry.loop.id in queue.paused(connection)
            results = []
            for firing, why in firings:
                if why is not None:
                    status = why.split(":", 1)[0]
                    intake = record_slot(connection, firing, status, why, now)
                else:
                    intake = enqueue(connection, firing, now, paused=paused)
                results.append((firing, intake.status, intake.job_id, intake.reason or why))
            return results

        results = await self.store.write(write)
        entry.last = max([entry.last, *decided_run, *(slot for slot, _ in not_run)])
        for firing, status, job_id, why in results:
            slot = iso(firing.slot)
            if status == queue.QUEUED:
                self.log.line(
                    "fire", loop=entry.loop.id, trigger=entry.trigger_id, slot=slot, job=job_id
                )
            elif status != "duplicate":
                self.log.line(
                    "skip",
                    why or status,
                    loop=entry.loop.id,
                    trigger=entry.trigger_id,
                    slot=slot,
                    status=status,
                )
        if any(status == queue.QUEUED for _, status, _, _ in results):
            self.on_queued()
