"""Cron slots after downtime: each one decided once by the trigger's catch-up policy, with the
reason of every slot that does not run; a long downtime costs a bounded number of rows."""

from __future__ import annotations

import asyncio
import contextlib
import io
from typing import Any

import pytest

from loopengine.builtins import builtin_registry
from loopengine.contract import Config, LoopLoader
from loopengine.contract.checks import Env
from loopengine.daemon import DaemonLog
from loopengine.daemon._scheduler import MAX_SHOWN, MAX_SLOTS, Scheduler
from loopengine.errors import StorageError
from loopengine.store import Store
from loopengine.testing import memory_store

T0 = 1_800_000_000.0
"""A whole minute, in 2027."""


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
    loop = (
        LoopLoader(Env(builtin_registry(), frozenset(Config().storage))).load_text(text, "x").loop
    )
    assert loop is not None

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
    text = (
        'id: tick\ntrigger: {type: cron, config: {expression: "*/2 * * * * *"}}\n'
        "decide: {decision_tree: [], fallback_action: log_only}\n"
    )
    loop = (
        LoopLoader(Env(builtin_registry(), frozenset(Config().storage))).load_text(text, "x").loop
    )
    assert loop is not None

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


class _FailingOnce:
    """The store, but the first write of slots fails (as a database error would)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.failed = False

    async def read(self, *call: Any) -> Any:
        return await self.store.read(*call)

    def submit(self, operation: Any, *args: Any) -> Any:
        if not self.failed:
            self.failed = True
            return self.store.submit(_fail, *args)
        return self.store.submit(operation, *args)


def _fail(connection: Any, *args: Any) -> None:
    raise StorageError("the database refused the slots")


def test_slots_whose_write_failed_are_decided_again() -> None:
    text = (
        'id: tick\ntrigger: {type: cron, config: {expression: "*/2 * * * * *"}}\n'
        "decide: {decision_tree: [], fallback_action: log_only}\n"
    )
    loop = (
        LoopLoader(Env(builtin_registry(), frozenset(Config().storage))).load_text(text, "x").loop
    )
    assert loop is not None
    now = [T0]

    async def main() -> list[tuple[Any, ...]]:
        async with memory_store() as store:
            failing = _FailingOnce(store)
            scheduler = Scheduler(failing, DaemonLog(io.StringIO()), lambda: None, lambda: now[0])
            await scheduler.update([loop], [])
            now[0] = T0 + 2.5
            entry = scheduler.entries[("tick", "cron")]
            for _ in range(2):
                submitted = scheduler._submit([entry])
                assert submitted is not None
                with contextlib.suppress(StorageError):
                    await scheduler._settle(*submitted)
            rows = await store.read(
                lambda c: c.exec_driver_sql("SELECT scheduled_for - ?, status FROM ticks", (T0,))
            )
            return [tuple(row) for row in rows]

    assert asyncio.run(main()) == [(2.0, "queued")]
