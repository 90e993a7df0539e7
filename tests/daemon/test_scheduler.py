"""Cron slots after downtime: each one decided once by the trigger's catch-up policy, with the
reason of every slot that does not run; a long downtime costs a bounded number of rows."""

from __future__ import annotations

import asyncio
import gc
import io
import tracemalloc
from collections.abc import Callable
from typing import Any

import anyio
import pytest

from loopengine._concurrency import first_error
from loopengine.builtins import builtin_registry
from loopengine.contract import Config, Loop, LoopLoader
from loopengine.contract.checks import Env
from loopengine.daemon import DaemonLog
from loopengine.daemon._scheduler import MAX_SHOWN, MAX_SLOTS, Scheduler
from loopengine.errors import StorageError
from loopengine.store import Store
from loopengine.testing import memory_store
from tests.waiting import DEADLINE_S

T0 = 1_800_000_000.0
"""A whole minute, in 2027."""


def _loaded(text: str) -> Loop:
    loop = (
        LoopLoader(Env(builtin_registry(), frozenset(Config().storage))).load_text(text, "x").loop
    )
    assert loop is not None
    return loop


def _cron_loop(loop_id: str, expression: str, overlap: str = "skip") -> Loop:
    return _loaded(
        f'id: {loop_id}\ntrigger: {{type: cron, config: {{expression: "{expression}"}}}}\n'
        f"concurrency: {{on_overlap: {overlap}}}\n"
        "decide: {decision_tree: [], fallback_action: log_only}\n"
    )


def after_downtime(
    catchup: str, down_s: float, extra: str = "", overlap: str = "skip"
) -> list[tuple[Any, ...]]:
    """Slots recorded when a ``*/2 * * * * *`` loop, last decided at ``T0``, is scheduled again
    ``down_s`` seconds later."""
    text = (
        "id: tick\n"
        "trigger: {type: cron, config: "
        f'{{expression: "*/2 * * * * *", catchup: {catchup}{extra}}}}}\n'
        f"concurrency: {{on_overlap: {overlap}}}\n"
        "decide: {decision_tree: [], fallback_action: log_only}\n"
    )
    loop = _loaded(text)

    async def main() -> list[tuple[Any, ...]]:
        async with memory_store() as store:
            await store.write(
                lambda c: c.exec_driver_sql(
                    "INSERT INTO ticks VALUES ('tick', 'cron', ?, 'queued', NULL, NULL, ?)",
                    (T0, T0),
                )
            )
            scheduler = Scheduler(
                store, DaemonLog(io.StringIO()), lambda: None, lambda: T0 + down_s
            )
            await scheduler.update([loop], [])
            submitted = scheduler._submit([scheduler.entries[("tick", "cron")]])
            assert submitted is not None
            await scheduler._settle(*submitted)
            rows = await store.read(
                lambda c: c.exec_driver_sql(
                    "SELECT scheduled_for - ?, status, reason FROM ticks "
                    "WHERE scheduled_for > ? ORDER BY scheduled_for",
                    (T0, T0),
                ).all()
            )
            return [tuple(row) for row in rows]

    return asyncio.run(main())


def statuses(rows: list[tuple[Any, ...]]) -> list[tuple[float, str]]:
    return [(offset, status) for offset, status, _ in rows]


def test_skip_records_every_missed_slot_and_runs_none() -> None:
    rows = after_downtime("skip", 7)
    assert statuses(rows) == [(2, "missed"), (4, "missed"), (6, "missed")]
    assert all(reason for _, _, reason in rows)


def test_latest_runs_the_newest_slot_within_the_window() -> None:
    rows = after_downtime("latest", 7, ", catchup_window: 5s")
    assert statuses(rows) == [(2, "missed"), (4, "coalesced"), (6, "queued")]


def test_all_runs_at_most_max_catchup_slots() -> None:
    rows = after_downtime("all", 9, ", catchup_window: 10s, max_catchup: 2", overlap="queue")
    assert statuses(rows) == [(2, "coalesced"), (4, "coalesced"), (6, "queued"), (8, "queued")]


def test_catch_up_obeys_the_overlap_policy() -> None:
    rows = after_downtime("all", 9, ", catchup_window: 10s, max_catchup: 2", overlap="skip")
    assert statuses(rows)[2:] == [(6, "queued"), (8, "skipped")]


@pytest.mark.parametrize("catchup", ["skip", "latest", "all"])
def test_a_week_of_downtime_costs_a_bounded_number_of_rows(catchup: str) -> None:
    rows = after_downtime(catchup, 7 * 86_400)
    assert len(rows) <= MAX_SLOTS + 1
    assert "recorded as one" in rows[0][2]
    offsets = [offset for offset, _, _ in rows]
    assert offsets == sorted(set(offsets))


def _planned(until: float) -> list[float]:
    """The slots ``next_fires(until)`` gives a ``*/2 * * * * *`` loop scheduled at ``T0``, as
    offsets from ``T0``."""
    loop = _cron_loop("tick", "*/2 * * * * *")

    async def main() -> list[float]:
        async with memory_store() as store:
            scheduler = Scheduler(store, DaemonLog(io.StringIO()), lambda: None, lambda: T0)
            await scheduler.update([loop], [])
            return [slot - T0 for slot in scheduler.next_fires(until)[("tick", "cron")]]

    return asyncio.run(main())


def test_the_status_row_holds_every_slot_until_it_is_written_again() -> None:
    assert _planned(T0 + 7) == [2, 4, 6, 8]
    assert _planned(T0) == [2]


def test_the_status_row_holds_a_bounded_number_of_slots() -> None:
    assert len(_planned(T0 + 86_400)) == MAX_SHOWN


class _Outage:
    """The store, but while ``down`` each write of slots waits until told to fail (as writes
    queued during a database outage do)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.down = True
        self.held: list[_Held] = []

    async def read(self, *call: Any) -> Any:
        return await self.store.read(*call)

    def submit(self, operation: Any, *args: Any) -> Any:
        if not self.down:
            return self.store.submit(operation, *args)
        self.held.append(_Held())
        return self.held[-1]


class _Held:
    def __init__(self) -> None:
        self.failing = anyio.Event()

    async def wait(self) -> None:
        await self.failing.wait()
        raise StorageError("the database is down")


async def _until(condition: Callable[[], bool]) -> None:
    with anyio.fail_after(DEADLINE_S):
        while not condition():
            await anyio.sleep(0.01)


async def _until_held(outage: _Outage, count: int) -> None:
    await _until(lambda: len(outage.held) >= count)


async def _run_until_the_first_write_fails(
    scheduler: Scheduler, outage: _Outage, now: list[float], offsets: list[float]
) -> None:
    """Run ``scheduler`` with its clock ``now`` at each of ``offsets`` from ``T0`` in turn, until
    one write more is in flight, then fail the first write (its error ends ``run``)."""

    async def fail_the_first() -> None:
        for count, offset in enumerate(offsets, 1):
            now[0] = T0 + offset
            await _until_held(outage, count)
        outage.held[0].failing.set()

    now[0] = T0 + offsets[0]
    with first_error():
        async with anyio.create_task_group() as group:
            group.start_soon(fail_the_first)
            await scheduler.run()


def test_slots_of_every_write_that_did_not_commit_are_decided_again() -> None:
    even, odd = _cron_loop("even", "*/2 * * * * *"), _cron_loop("odd", "1-59/2 * * * * *")
    now = [T0]

    async def main() -> list[tuple[Any, ...]]:
        async with memory_store() as store:
            outage = _Outage(store)
            scheduler = Scheduler(outage, DaemonLog(io.StringIO()), lambda: None, lambda: now[0])
            await scheduler.update([even, odd], [])
            with pytest.raises(StorageError):
                await _run_until_the_first_write_fails(scheduler, outage, now, [1.9, 2.5])
            outage.down = False
            submitted = scheduler._submit(list(scheduler.entries.values()))
            assert submitted is not None
            await scheduler._settle(*submitted)
            rows = await store.read(
                lambda c: c.exec_driver_sql(
                    "SELECT loop_id, scheduled_for - ?, status FROM ticks ORDER BY scheduled_for",
                    (T0,),
                )
            )
            return [tuple(row) for row in rows]

    assert anyio.run(main) == [("odd", 1.0, "queued"), ("even", 2.0, "queued")]


def test_a_trigger_decided_again_after_a_failed_write_keeps_its_next_slots() -> None:
    loop = _cron_loop("tick", "*/2 * * * * *", overlap="queue")
    now = [T0]

    async def main() -> list[float]:
        async with memory_store() as store:
            outage = _Outage(store)
            queued: list[None] = []
            scheduler = Scheduler(
                outage, DaemonLog(io.StringIO()), lambda: queued.append(None), lambda: now[0]
            )
            await scheduler.update([loop], [])
            with pytest.raises(StorageError):
                await _run_until_the_first_write_fails(scheduler, outage, now, [2.5])
            outage.down = False
            now[0] = T0 + 3.9
            async with anyio.create_task_group() as group:
                group.start_soon(scheduler.run)
                await _until(lambda: len(queued) == 1)
                now[0] = T0 + 4.5
                await _until(lambda: len(queued) == 2)
                group.cancel_scope.cancel()
            return [slot - T0 for slot in scheduler.next_fires(T0)[("tick", "cron")]]

    assert anyio.run(main) == [6.0]


MOST_BYTES_A_TRIGGER = 256
"""What the scheduler may keep of one cron trigger: its entry, its key and its next slot (the
entry in the heap as it is, with no tuple and counter around it; the rule is shared)."""


def test_a_cron_trigger_costs_the_scheduler_its_entry_and_key_alone() -> None:
    """Loops scheduled a hundred at a time, as a folder's scan hands them over."""
    loops = [_cron_loop(f"l{index}", "*/2 * * * * *") for index in range(2_000)]

    async def main() -> int:
        async with memory_store() as store:
            scheduler = Scheduler(store, DaemonLog(io.StringIO()), lambda: None, lambda: T0)
            await scheduler.update(loops[:1], [])
            gc.collect()
            tracemalloc.start()
            try:
                before = tracemalloc.get_traced_memory()[0]
                for start in range(1, len(loops), 100):
                    await scheduler.update(loops[start : start + 100], [])
                gc.collect()
                return tracemalloc.get_traced_memory()[0] - before
            finally:
                tracemalloc.stop()

    assert anyio.run(main) / (len(loops) - 1) <= MOST_BYTES_A_TRIGGER
