"""Threshold triggers: metric points drive each trigger's ok → pending → firing state machine.

Every new point is evaluated in recording order (two points above the value: one fire), and every
trigger is evaluated again each ``every`` so that ``for`` and ``keep_firing_for`` elapse without
new points. The state is saved with the job it fires, so a restart neither fires again nor
forgets a pending ``for``; the ``alert`` detect source reads the same rows.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import anyio

from loopengine._json import JSONObject
from loopengine.app import admission, new_arrival
from loopengine.contract import Loop
from loopengine.daemon._log import DaemonLog, log_intake
from loopengine.daemon._loops import triggers_of
from loopengine.store import Store, intake, iso, queue
from loopengine.store.intake import Admission
from loopengine.triggers import ThresholdRule, ThresholdState, evaluate

__all__ = ["CURSOR", "STALE_AFTER_S", "ThresholdWatcher"]

CURSOR = "metrics"
STALE_AFTER_S = 300.0
"""A metric whose latest point is older than this (or than two ``every``) counts as missing."""


@dataclass(slots=True)
class _Watch:
    """A threshold trigger as it is watched: its loop's id and overlap policy, not the loop's
    definition (built again when the job runs)."""

    loop_id: str
    admit: Callable[[int, int], Admission]
    trigger_id: str
    metric: str
    every: float
    rule: ThresholdRule
    state: ThresholdState | None
    next_check: float
    horizon: float
    """Points recorded before this are history: the trigger's last evaluation, or when the
    daemon began to watch a trigger that never was."""

    @property
    def key(self) -> tuple[str, str]:
        return self.loop_id, self.trigger_id


def _rule(config: Any) -> ThresholdRule:
    return ThresholdRule(
        operator=str(config.operator),
        value=config.value,
        for_s=config.for_,
        keep_firing_for_s=config.keep_firing_for,
        clear_value=config.clear_value,
        fire_on_start=config.fire_on_start,
        on_missing=str(config.on_missing),
    )


def _saved(watch: _Watch, state: ThresholdState, now: float) -> queue.TriggerState:
    return queue.TriggerState(
        loop_id=watch.loop_id,
        trigger_id=watch.trigger_id,
        metric=watch.metric,
        **state.as_dict(),
        evaluated_at=now,
    )


class ThresholdWatcher:
    def __init__(
        self,
        store: Store,
        log: DaemonLog,
        on_queued: Callable[[], None],
        poll_s: float,
        clock: Callable[[], float] = time.time,
        period: Callable[[], float] | None = None,
    ) -> None:
        """New points are read when nudged, or once a ``period()`` (``poll_s`` when not
        given); each trigger is evaluated when its ``every`` is due."""
        self.store = store
        self.log = log
        self.on_queued = on_queued
        self.period = period or (lambda: poll_s)
        self.clock = clock
        self.watches: dict[tuple[str, str], _Watch] = {}
        self.woken = anyio.Event()

    async def update(self, loaded: Iterable[Loop], removed: Iterable[str]) -> None:
        loaded = list(loaded)
        gone = {*removed, *(loop.id for loop in loaded)}
        self.watches = {key: w for key, w in self.watches.items() if key[0] not in gone}
        if not any(t.type == "threshold" for loop in loaded for _, t in triggers_of(loop)):
            return
        saved = await self.store.read(queue.load_trigger_states)
        now = self.clock()
        for loop in loaded:
            for trigger_id, trigger in triggers_of(loop):
                if trigger.type != "threshold":
                    continue
                config = trigger.config
                row = saved.get((loop.id, trigger_id))
                state = ThresholdState.from_dict(row.row()) if row else None
                horizon = row.evaluated_at if row else now
                watch = _Watch(
                    loop.id,
                    admission(loop.spec.concurrency),
                    trigger_id,
                    config.metric,
                    config.every,
                    _rule(config),
                    state,
                    now,
                    horizon,
                )
                self.watches[watch.key] = watch

    async def run(self) -> None:
        position = await self.store.read(queue.cursor, CURSOR)
        while True:
            self.woken = anyio.Event()
            position = await self._new_points(position)
            await self._periodic()
            due = [watch.next_check - self.clock() for watch in self.watches.values()]
            with anyio.move_on_after(min([self.period(), *due])):
                await self.woken.wait()

    def nudge(self) -> None:
        """Read the new points now rather than at the next poll (one was just recorded)."""
        self.woken.set()

    async def _new_points(self, position: int) -> int:
        if not self.watches:
            return position
        by_metric: dict[str, list[_Watch]] = {}
        for watch in self.watches.values():
            by_metric.setdefault(watch.metric, []).append(watch)
        points = await self.store.read(queue.metric_points_after, position, by_metric, 1000)
        if not points:
            return position
        steps: list[tuple[_Watch, float | None, float]] = []
        for point in points:
            for watch in by_metric.get(point.name, ()):
                if point.recorded_at >= watch.horizon:
                    steps.append((watch, point.value, point.recorded_at))
        last = points[-1].id
        await self._apply(steps, last)
        return last

    async def _periodic(self) -> None:
        now = self.clock()
        due = [w for w in self.watches.values() if w.next_check <= now]
        if not due:
            return
        points = await self.store.read(queue.latest_points, {w.metric for w in due})
        steps: list[tuple[_Watch, float | None, float]] = []
        for watch in due:
            watch.next_check = now + watch.every
            point = points.get(watch.metric)
            fresh = point is not None and now - point.recorded_at <= max(
                STALE_AFTER_S, 2 * watch.every
            )
            steps.append((watch, point.value if fresh and point else None, now))
        await self._apply(steps, None)

    async def _apply(
        self, steps: list[tuple[_Watch, float | None, float]], position: int | None
    ) -> None:
        """Evaluate each step in order; save changed states, queue fires, move the cursor, all in
        one transaction."""
        changed: dict[tuple[str, str], queue.TriggerState] = {}
        fired_by: list[tuple[_Watch, JSONObject, str]] = []
        for watch, value, at in steps:
            before = watch.state
            state, fired = evaluate(watch.rule, before, value, at)
            if state != before:
                changed[watch.key] = _saved(watch, state, at)
            watch.state = state
            if fired:
                trigger: JSONObject = {
                    "type": "threshold",
                    "id": watch.trigger_id,
                    "metric": {"name": watch.metric, "value": value, "at": iso(at)},
                }
                episode = before.since if before and before.state == "pending" else state.since
                key = f"threshold:{watch.loop_id}:{watch.trigger_id}:{episode!r}"
                fired_by.append((watch, trigger, key))
        if not changed and not fired_by and position is None:
            return
        now = self.clock()
        cursor = None if position is None else (CURSOR, position)
        arrivals = [new_arrival(w.loop_id, w.admit, t, key, now) for w, t, key in fired_by]
        done = await self.store.write(
            intake.fire_thresholds, list(changed.values()), arrivals, now, cursor
        )
        for arrival, taken in done:
            metric = arrival.job.trigger["metric"]
            fields = {
                "loop": arrival.loop_id,
                "trigger": arrival.trigger_id,
                "metric": metric["name"],
            }
            if log_intake(self.log, taken, **fields, value=metric["value"]):
                self.on_queued()
