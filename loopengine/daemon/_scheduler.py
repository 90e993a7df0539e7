"""Cron triggers: one heap of next fires for every loop; catch-up after downtime.

Each slot is written once, with its job or with the reason it did not run, so a restart, a late
wake-up or a second daemon never runs it twice, and slots missed while no daemon ran are decided
by the trigger's catch-up policy when it is next due.
"""

from __future__ import annotations

import functools
import heapq
import itertools
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import anyio

from loopengine.app import Firing
from loopengine.contract import Loop
from loopengine.daemon._log import DaemonLog, log_intake
from loopengine.daemon._loops import triggers_of
from loopengine.store import Store, intake, iso, queue
from loopengine.triggers import CronSchedule, catch_up, jittered

__all__ = ["MAX_SHOWN", "MAX_SLOTS", "Scheduler"]

MAX_SLOTS = 1_000
"""Most missed slots decided one by one after downtime; older ones share one summary row."""
MAX_SHOWN = 100
"""Most upcoming slots of a trigger the daemon's status row holds."""


@functools.lru_cache(maxsize=4096)
def _schedule(expression: str, timezone: str) -> CronSchedule:
    """Loops that share a schedule share its parsed form (immutable), which is most of what a
    cron trigger costs in memory."""
    return CronSchedule.parse(expression, timezone)


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
        self._order = itertools.count()
        """Ties in the heap break by push order (entries do not compare)."""
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
                queue.last_ticks, [(loop.id, trigger_id) for loop, trigger_id, _ in wanted]
            )
            now = self.clock()
            for loop, trigger_id, config in wanted:
                schedule = _schedule(config.expression, config.timezone)
                last = lasts[(loop.id, trigger_id)]
                entry = _Entry(
                    loop, trigger_id, config, schedule, now if last is None else last, 0, 0, now
                )
                self._plan_next(entry, entry.last)
                self.entries[entry.key] = entry
        self._heap = [(e.due, next(self._order), key) for key, e in self.entries.items()]
        heapq.heapify(self._heap)
        self._changed.set()

    def next_fires(self, until: float) -> dict[tuple[str, str], list[float]]:
        """The slots of every cron trigger from its next one through the first at or after
        ``until`` (at most ``MAX_SHOWN``): the daemon's status row holds them, so that whenever
        it is read before the next row, ``status`` shows the next fire after now."""
        found = {}
        for key, entry in self.entries.items():
            slots = [entry.slot]
            while slots[-1] < until and len(slots) < MAX_SHOWN:
                slots.append(entry.schedule.next_fire(slots[-1]).at)
            found[key] = slots
        return found

    async def run(self) -> None:
        while True:
            self._changed = anyio.Event()
            now = self.clock()
            delay = self._heap[0][0] - now if self._heap else 3600.0
            if delay > 0:
                with anyio.move_on_after(delay):
                    await self._changed.wait()
                continue
            due: list[_Entry] = []
            while self._heap and self._heap[0][0] <= now:
                at, _, key = heapq.heappop(self._heap)
                entry = self.entries.get(key)
                if entry is not None and entry.due == at:
                    due.append(entry)
            try:
                await self._fire(due)
            except BaseException:
                for entry in due:  # decided again on the next run
                    heapq.heappush(self._heap, (entry.due, next(self._order), entry.key))
                raise
            for entry in due:
                self._plan_next(entry, max(entry.last, entry.slot))
                heapq.heappush(self._heap, (entry.due, next(self._order), entry.key))

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

    def _decide(
        self, entry: _Entry, now: float
    ) -> tuple[tuple[float, ...], list[tuple[float, str]]]:
        """The slots since the last decided one to run now, and the others with why not.

        Normally just the one now due. After downtime (slots due before this daemon began), the
        trigger's catch-up policy decides over the window; slots older than it are missed. The
        window is capped at ``MAX_SLOTS`` periods and, beyond that many, older slots share one row,
        so neither the time nor the rows spent grow with the length of the downtime.
        """
        config, schedule = entry.config, entry.schedule
        period = schedule.period(entry.last)
        window = min(config.catchup_window or period, MAX_SLOTS * period)
        horizon = max(entry.last, now - window - config.jitter_s)
        old = schedule.fires(entry.last, horizon, MAX_SLOTS + 1) if horizon > entry.last else []
        recent = [fire.at for fire in schedule.fires(horizon, now, MAX_SLOTS)]
        if not old and len(recent) == 1 and recent[0] >= entry.since:
            return (recent[0],), []
        decision = catch_up(
            recent,
            policy=config.catchup,
            window=now - horizon,
            max_catchup=config.max_catchup,
            now=now,
        )
        reason = "missed: older than the catch-up window"
        if len(old) > MAX_SLOTS:
            reason = (
                f"missed: more than {MAX_SLOTS} slots from {iso(old[0].at)} to {iso(horizon)}, "
                "older than the catch-up window (recorded as one)"
            )
            old = old[:1]
        return decision.run, [(fire.at, reason) for fire in old] + list(decision.not_run)

    async def _fire(self, entries: list[_Entry]) -> None:
        """Decide every slot since the last decided one of each entry now due, and write them
        all in one transaction, run or not (many loops often share an instant)."""
        now = self.clock()
        firings: list[tuple[_Entry, Firing, str | None]] = []
        lasts = {}
        for entry in entries:
            decided_run, not_run = self._decide(entry, now)
            firings += [(entry, self._firing(entry, slot), None) for slot in decided_run]
            firings += [(entry, self._firing(entry, slot), why) for slot, why in not_run]
            lasts[entry.key] = max([entry.last, *decided_run, *(slot for slot, _ in not_run)])
        if not firings:
            return
        slots = [(firing.arrival(now), why) for _, firing, why in firings]
        intakes = await self.store.write(intake.record_slots, slots, now)
        for entry in entries:
            entry.last = lasts[entry.key]
        queued = False
        for (entry, firing, _), taken in zip(firings, intakes, strict=True):
            fields = {"loop": entry.loop.id, "trigger": entry.trigger_id, "slot": iso(firing.slot)}
            queued = log_intake(self.log, taken, **fields) or queued
        if queued:
            self.on_queued()
