"""The daemon's intake tasks in process: what a bad event, an old metric history or a renamed
loop file does to them."""

from __future__ import annotations

import asyncio
import gc
import io
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from anyio import wait_all_tasks_blocked

from loopengine.builtins import builtin_registry
from loopengine.contract import Config, Loop, LoopLoader
from loopengine.contract.checks import Env
from loopengine.daemon import DaemonLog, LoopFolder
from loopengine.daemon._dispatcher import Dispatcher
from loopengine.daemon._thresholds import ThresholdWatcher
from loopengine.store import Store, queue, signals
from loopengine.testing import memory_store
from tests.waiting import DEADLINE_S

DECIDE = "decide: {decision_tree: [], fallback_action: log_only}\n"


def loader() -> LoopLoader:
    return LoopLoader(Env(builtin_registry(), frozenset(Config().storage)))


def loop(text: str) -> Loop:
    report = loader().load_text(text + DECIDE, "x.yaml")
    assert report.loop is not None, report.diagnostics
    return report.loop


def in_store(steps: Any) -> Any:
    async def main() -> Any:
        async with memory_store() as store:
            return await steps(store)

    return asyncio.run(main())


def test_an_event_whose_scope_cannot_bound_a_job_is_logged_and_passed() -> None:
    bounded = loop(
        "id: pages\ntrigger: {type: event, config: "
        "{event_pattern: 'page.*', scope: '{limit: data.n}'}}\n"
    )
    log = io.StringIO()

    async def steps(store: Store) -> tuple[int, dict[str, int]]:
        dispatcher = Dispatcher(store, DaemonLog(log), lambda: None, poll_s=0.01)
        dispatcher.update([bounded], [])
        for n in (0, 5):
            await store.write(lambda c, n=n: signals.insert_event(c, "page.x", "t", {"n": n}, 1.0))
        batch = await store.read(lambda c: queue.events_after(c, 0, 10))
        await dispatcher._dispatch(batch, 2)
        position = await store.read(lambda c: queue.cursor(c, "events"))
        return position, await store.read(queue.queue_depth)

    position, depth = in_store(steps)
    assert position == 2
    assert depth["queued"] == 1
    assert "job scope limit must be a whole number" in log.getvalue()


def test_a_new_threshold_trigger_ignores_points_recorded_before_it() -> None:
    hot = loop(
        "id: hot\ntrigger: {type: threshold, config: "
        "{metric: cpu, operator: '>', value: 0.8, clear_value: 0.5}}\n"
    )

    async def steps(store: Store) -> dict[str, int]:
        for at, value in ((1.0, 0.9), (2.0, 0.1), (3.0, 0.95)):
            await store.write(
                lambda c, at=at, value=value: signals.insert_metric(c, "cpu", value, at, {})
            )
        watcher = ThresholdWatcher(store, DaemonLog(io.StringIO()), lambda: None, 0.01)
        await watcher.update([hot], [])
        await watcher._new_points(0)
        return await store.read(queue.queue_depth)

    assert in_store(steps)["queued"] == 0


def test_a_renamed_loop_file_stays_scheduled(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("id: kept\ntrigger: {type: manual}\n" + DECIDE)
    folder = LoopFolder(tmp_path, loader(), DaemonLog(io.StringIO()))
    assert [found.id for found in folder.scan().loaded] == ["kept"]
    (tmp_path / "a.yaml").rename(tmp_path / "b.yaml")
    changes = folder.scan()
    assert ([found.id for found in changes.loaded], changes.removed) == (["kept"], ())
    assert list(folder.loops) == ["kept"]


def test_a_point_recorded_here_is_evaluated_at_once_not_at_the_next_poll() -> None:
    hot = loop(
        "id: hot\ntrigger: {type: threshold, config: {metric: cpu, operator: '>', value: 0.8}}\n"
    )

    async def steps(store: Store) -> dict[str, int]:
        watcher = ThresholdWatcher(
            store, DaemonLog(io.StringIO()), lambda: None, 0.01, period=lambda: 600.0
        )
        store.on_notified = lambda topic: watcher.nudge()
        await watcher.update([hot], [])
        async with anyio.create_task_group() as group:
            group.start_soon(watcher.run)
            await wait_all_tasks_blocked()
            await store.write(signals.insert_metric, "cpu", 0.9, time.time(), {})
            with anyio.fail_after(DEADLINE_S):
                while not (depth := await store.read(queue.queue_depth))["queued"]:
                    await anyio.sleep(0.01)
            group.cancel_scope.cancel()
        return depth

    assert in_store(steps)["queued"] == 1


def test_a_watcher_without_threshold_triggers_waits_for_points() -> None:
    async def steps(store: Store) -> bool:
        watcher = ThresholdWatcher(store, DaemonLog(io.StringIO()), lambda: None, 0.01)
        async with anyio.create_task_group() as group:
            group.start_soon(watcher.run)
            await wait_all_tasks_blocked()
            watcher.nudge()
            await wait_all_tasks_blocked()
            group.cancel_scope.cancel()
        return True

    assert in_store(steps)


MOST_BYTES_A_TRIGGER = 2_000
"""What the dispatcher or the threshold watcher may keep of one trigger: its loop id, config,
overlap policy and state, not its loop's definition (3.8 KB an event trigger kept it)."""


async def _kept_a_trigger(kind: str, config: str, update: Callable[[list[Loop]], Any]) -> float:
    """The bytes ``update`` keeps of each of 200 loops of one ``kind`` of trigger (loaded once
    beforehand, so the loader's caches are warm)."""

    def loops(count: int) -> list[Loop]:
        body = f"trigger: {{type: {kind}, config: {config}}}\n"
        return [loop(f"id: l{n}\n{body}") for n in range(count)]

    loops(1)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        await update(loops(200))
        gc.collect()
        return (tracemalloc.get_traced_memory()[0] - before) / 200
    finally:
        tracemalloc.stop()


def test_an_event_trigger_keeps_its_route_not_its_loop() -> None:
    async def steps(store: Store) -> float:
        dispatcher = Dispatcher(store, DaemonLog(io.StringIO()), lambda: None, poll_s=1.0)

        async def update(loops: list[Loop]) -> None:
            dispatcher.update(loops, [])

        return await _kept_a_trigger("event", "{event_pattern: 'page.*'}", update)

    assert in_store(steps) <= MOST_BYTES_A_TRIGGER


def test_a_threshold_trigger_keeps_its_watch_not_its_loop() -> None:
    async def steps(store: Store) -> float:
        watcher = ThresholdWatcher(store, DaemonLog(io.StringIO()), lambda: None, poll_s=1.0)
        config = "{metric: depth, operator: '>', value: 1}"
        return await _kept_a_trigger("threshold", config, lambda loops: watcher.update(loops, []))

    assert in_store(steps) <= MOST_BYTES_A_TRIGGER
