"""Idle workers wait together: one polls the store each period, the others are woken one per
job, and a wake-up that finds nobody waiting is kept for the next worker to rest. The period is
long while notifications arrive (on SQLite, another connection's commit), and jittered so that
daemons do not poll in step."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path

import anyio
import pytest
import sqlalchemy as sa
from anyio import wait_all_tasks_blocked

from loopengine.daemon import DaemonLog
from loopengine.daemon._wakeups import Wakeups, jittered
from loopengine.daemon._workers import _Idle
from loopengine.store import Store, create_engine
from loopengine.testing import memory_store
from tests.waiting import DEADLINE_S

pytestmark = pytest.mark.anyio


async def _rest(idle: _Idle, number: int, done: list[int]) -> None:
    await idle.rest()
    done.append(number)


async def test_of_three_idle_workers_only_one_polls() -> None:
    idle, polled = _Idle(lambda: 0.01), []
    async with anyio.create_task_group() as group:
        for number in range(3):
            group.start_soon(_rest, idle, number, polled)
        with anyio.fail_after(10):
            while not polled:
                await anyio.sleep(0.01)
        await anyio.sleep(0.1)
        assert (polled, len(idle.waiting)) == ([0], 2)
        idle.wake_all()


@asynccontextmanager
async def _resting(count: int) -> AsyncIterator[tuple[_Idle, list[int]]]:
    """``count`` workers resting (the numbers of those woken, in order), all woken at the end."""
    idle, woken = _Idle(lambda: 60), []
    async with anyio.create_task_group() as group:
        for number in range(count):
            group.start_soon(_rest, idle, number, woken)
        await wait_all_tasks_blocked()
        yield idle, woken
        idle.wake_all()


async def test_a_job_queued_here_wakes_one_waiting_worker() -> None:
    async with _resting(3) as (idle, woken):
        idle.wake()
        await wait_all_tasks_blocked()
        assert (len(woken), len(idle.waiting)) == (1, 2)
    assert sorted(woken) == [0, 1, 2]


async def test_three_jobs_claimed_wake_three_waiting_workers_counting_one_already_woken() -> None:
    async with _resting(4) as (idle, woken):
        idle.wake()
        idle.wake(3)
        await wait_all_tasks_blocked()
        assert (len(woken), len(idle.waiting)) == (3, 1)


async def test_a_wake_up_with_nobody_waiting_is_kept_for_the_next_to_rest() -> None:
    idle = _Idle(lambda: 60)
    idle.wake()
    with anyio.fail_after(10):
        await idle.rest()
    assert not idle.woken


def test_a_wait_is_made_up_to_a_fifth_longer_or_shorter() -> None:
    shortest, longest = jittered(5.0, lambda low, high: low), jittered(5.0, lambda low, high: high)
    assert (shortest, longest) == (4.0, 6.0)


async def test_idle_parts_poll_every_5_s_while_notifications_arrive_else_every_poll_s() -> None:
    async with memory_store() as store:
        wakeups = Wakeups(store, DaemonLog(io.StringIO()), poll_s=0.2)
        polling = wakeups.period()
        wakeups.listening = True
        assert 0.16 <= polling <= 0.24
        assert 4.0 <= wakeups.period() <= 6.0


async def test_on_sqlite_a_commit_of_another_connection_wakes_every_idle_part(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    told: list[str] = []
    async with Store.open(url) as store, anyio.create_task_group() as group:
        wakeups = Wakeups(store, DaemonLog(io.StringIO()), poll_s=0.01)
        wakeups.handlers = {topic: partial(told.append, topic) for topic in ("job", "event")}
        group.start_soon(wakeups.run)
        await wait_all_tasks_blocked()
        other = create_engine(url)
        with other.begin() as connection:
            connection.execute(sa.text("CREATE TABLE elsewhere (n INTEGER)"))
        other.dispose()
        with anyio.fail_after(DEADLINE_S):
            while not told:
                await anyio.sleep(0.01)
        group.cancel_scope.cancel()
    assert told == ["job", "event"]


async def test_wake_ups_told_before_the_woken_worker_claims_wake_no_other() -> None:
    idle, woken = _Idle(lambda: 60), []
    async with anyio.create_task_group() as group:
        for number in range(3):
            group.start_soon(_rest, idle, number, woken)
        await wait_all_tasks_blocked()
        idle.wake()
        idle.wake()
        await wait_all_tasks_blocked()
        assert (len(woken), len(idle.waiting)) == (1, 2)
        idle.wake()
        await wait_all_tasks_blocked()
        assert (len(woken), len(idle.waiting)) == (2, 1)
        idle.wake_all()
