"""Cron triggers: one heap of next fires for every loop; catch-up after downtime.

Each slot is written once, with its job or with the reason it did not run, so a restart, a late
wake-up or a second daemon never runs it twice, and slots missed while no daemon ran are decided
by the trigger's catch-up policy when it is next due.

The scheduler keeps a compact record of each cron trigger (what its slots are decided on), not
its loop's definition, and hands the slots due together to the store as one write without
waiting for it to commit: the next slots are decided while it commits, and what became of each
is logged once it has.
"""

from __future__ import annotations

import functools
import heapq
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import anyio
import anyio.abc

from loopengine._concurrency import first_error
from loopengine.app import admission, new_arrival
from loopengine.contract import Concurrency, CronConfig, Loop
from loopengine.daemon._log import DaemonLog, log_intake
from loopengine.daemon._loops import triggers_of
from loopengine.store import Pending, Store, intake, iso, queue
from loopengine.store.intake import Admission, Intake
from loopengine.triggers import CronSchedule, catch_up, jittered

__all__ = ["MAX_SHOWN", "MAX_SLOTS", "CronRule", "Scheduler"]

MAX_SLOTS = 1_000
"""Most missed slots decided one by one after downtime; older ones share one summary row."""
MAX_SHOWN = 100
"""Most upcoming slots of a trigger the daemon's status row holds."""


@dataclass(frozen=True, slots=True)
class CronRule:
    """What a cron trigger's slots are decided on: its config and schedule, and its loop's
    overlap policy."""

    config: CronConfig
    schedule: CronSchedule
    admit: Callable[[int, int], Admission]


@functools.lru_cache(maxsize=4096)
def rule_of(config: CronConfig, concurrency: Concurrency) -> CronRule:
    """The rule of a cron trigger's ``config`` under its loop's ``concurrency``: triggers with
    equal ones share it and its parsed schedule, which is most of what one costs in memory."""
    schedule = CronSchedule.parse(config.expression, config.timezone)
    return CronRule(config, schedule, admission(concurrency))


@dataclass(slots=True)
class _Entry:
    loop_id: str
    trigger_id: str
    rule: CronRule
    last: float
    """The latest slot decided (run or not): catch-up starts after it."""
    committed: float
    """The latest slot whose write committed: ``last`` goes back to it when ``run`` ends."""
    slot: float
    due: float
    since: float
    """When this daemon began to schedule the trigger: earlier slots came due while none did."""

    @property
    def key(self) -> tuple[str, str]:
        return self.loop_id, self.trigger_id

    def __lt__(self, other: _Entry) -> bool:
        """The heap's order: the earlier ``due`` first, then by loop and trigger id."""
        if self.due != other.due:
            return self.due < other.due
        return self.key < other.key


Decided = list[tuple[_Entry, float, str | None]]
"""Slots handed to the store together: each with its trigger, and why it does not run (None
when it runs)."""


class Scheduler:
    """Owns the cron heap; ``update`` swaps loops in and out while ``run`` sleeps. The heap
    holds each entry once, by its next slot (which does not change while it is there: an entry
    is planned again once popped, or the heap is built again), and entries since replaced or
    removed until they come up (then skipped) or outnumber the entries (then the heap is built
    again)."""

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
        self._heap: list[_Entry] = []
        self._changed = anyio.Event()

    async def update(self, loaded: Iterable[Loop], removed: Iterable[str]) -> None:
        """Schedule the cron triggers of ``loaded`` (replacing older versions), drop ``removed``."""
        loaded = list(loaded)
        gone = {*removed, *(loop.id for loop in loaded)}
        for key in [key for key in self.entries if key[0] in gone]:
            del self.entries[key]
        wanted = [
            (loop.id, trigger_id, rule_of(trigger.config, loop.spec.concurrency))
            for loop in loaded
            for trigger_id, trigger in triggers_of(loop)
            if trigger.type == "cron"
        ]
        if wanted:
            lasts = await self.store.read(
                queue.last_ticks, [(loop_id, trigger_id) for loop_id, trigger_id, _ in wanted]
            )
            now = self.clock()
            for loop_id, trigger_id, rule in wanted:
                last = lasts[(loop_id, trigger_id)]
                start = now if last is None else last
                entry = _Entry(loop_id, trigger_id, rule, start, start, 0, 0, now)
                self._plan_next(entry, entry.last)
                self.entries[entry.key] = entry
                heapq.heappush(self._heap, entry)
        if len(self._heap) > 2 * len(self.entries) + 64:
            self._rebuild()
        self._changed.set()

    def next_fires(self, until: float) -> dict[tuple[str, str], list[float]]:
        """The slots of every cron trigger from its next one through the first at or after
        ``until`` (at most ``MAX_SHOWN``): the daemon's status row holds them, so that whenever
        it is read before the next row, ``status`` shows the next fire after now."""
        found = {}
        for key, entry in self.entries.items():
            slots = [entry.slot]
            while slots[-1] < until and len(slots) < MAX_SHOWN:
                slots.append(entry.rule.schedule.next_fire(slots[-1]).at)
            found[key] = slots
        return found

    async def run(self) -> None:
        """Decide slots as they come due, until cancelled; a write that fails ends it. However it
        ends, the slots of every write that did not commit (failed, or cut short while in flight)
        are decided again when it runs again; one that committed after all is recorded once."""
        try:
            with first_error():
                async with anyio.create_task_group() as settling:
                    await self._schedule(settling)
        finally:
            self._rewind()

    async def _schedule(self, settling: anyio.abc.TaskGroup) -> None:
        while True:
            self._changed = anyio.Event()
            now = self.clock()
            delay = self._heap[0].due - now if self._heap else 3600.0
            if delay > 0:
                with anyio.move_on_after(delay):
                    await self._changed.wait()
                continue
            due = []
            while self._heap and self._heap[0].due <= now:
                entry = heapq.heappop(self._heap)
                if self.entries.get(entry.key) is entry:
                    due.append(entry)
            submitted = self._submit(due)
            if submitted is not None:
                settling.start_soon(self._settle, *submitted)

    def _rewind(self) -> None:
        for entry in self.entries.values():
            if entry.committed < entry.last:
                entry.last = entry.committed
                self._plan_next(entry, entry.last)
        self._rebuild()

    def _rebuild(self) -> None:
        """The heap of the entries alone, each by its ``due`` as it now is."""
        self._heap = list(self.entries.values())
        heapq.heapify(self._heap)

    def _plan_next(self, entry: _Entry, after: float) -> None:
        entry.slot = entry.rule.schedule.next_fire(after).at
        jitter_s = entry.rule.config.jitter_s
        key = f"{entry.loop_id}/{entry.trigger_id}/{entry.slot}"
        entry.due = jittered(entry.slot, jitter_s, key) if jitter_s else entry.slot

    def _decide(
        self, entry: _Entry, now: float
    ) -> tuple[tuple[float, ...], list[tuple[float, str]]]:
        """The slots since the last decided one to run now, and the others with why not.

        Normally just the one now due. After downtime (slots due before this daemon began), the
        trigger's catch-up policy decides over the window; slots older than it are missed. The
        window is capped at ``MAX_SLOTS`` periods and, beyond that many, older slots share one row,
        so neither the time nor the rows spent grow with the length of the downtime.
        """
        config, schedule = entry.rule.config, entry.rule.schedule
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

    def _submit(self, entries: list[_Entry]) -> tuple[Pending[list[Intake]], Decided] | None:
        """Decide every slot since the last decided one of each entry now due, hand them all to
        the store as one write, run or not (many loops often share an instant), and plan each
        entry's next slot (the entries, popped from the heap, go back to it by that slot). The
        write and the slots it decides (for ``_settle``); None when no slot was decided."""
        now = self.clock()
        decided: Decided = []
        for entry in entries:
            run, not_run = self._decide(entry, now)
            decided += [(entry, slot, None) for slot in run]
            decided += [(entry, slot, why) for slot, why in not_run]
            entry.last = max([entry.last, *run, *(slot for slot, _ in not_run)])
            self._plan_next(entry, max(entry.last, entry.slot))
            heapq.heappush(self._heap, entry)
        if not decided:
            return None
        slots = [(self._arrival(entry, slot, now), why) for entry, slot, why in decided]
        return self.store.submit(intake.record_slots, slots, now), decided

    def _arrival(self, entry: _Entry, slot: float, now: float) -> intake.Arrival:
        trigger = {"type": "cron", "id": entry.trigger_id, "scheduled_for": iso(slot)}
        key = f"cron:{entry.loop_id}:{entry.trigger_id}:{slot!r}"
        return new_arrival(entry.loop_id, entry.rule.admit, trigger, key, now, slot=slot)

    async def _settle(self, written: Pending[list[Intake]], decided: Decided) -> None:
        """Log what became of each slot once the write that decides them committed (should it
        fail, the error ends ``run``)."""
        intakes = await written.wait()
        queued = False
        for (entry, slot, _), taken in zip(decided, intakes, strict=True):
            entry.committed = max(entry.committed, slot)
            fields = {"loop": entry.loop_id, "trigger": entry.trigger_id, "slot": iso(slot)}
            queued = log_intake(self.log, taken, **fields) or queued
        if queued:
            self.on_queued()
