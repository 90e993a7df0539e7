"""Idle workers wait together: one polls the store each period, the others are woken one per
job, and a wake-up that finds nobody waiting is kept for the next worker to rest."""

from __future__ import annotations

import anyio
import pytest
from anyio import wait_all_tasks_blocked

from loopengine.daemon._workers import _Idle

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


async def test_a_job_queued_here_wakes_one_waiting_worker() -> None:
    idle, woken = _Idle(lambda: 60), []
    async with anyio.create_task_group() as group:
        for number in range(3):
            group.start_soon(_rest, idle, number, woken)
        await wait_all_tasks_blocked()
        idle.wake_one()
        await wait_all_tasks_blocked()
        assert (len(woken), len(idle.waiting)) == (1, 2)
        idle.wake_all()
    assert sorted(woken) == [0, 1, 2]


async def test_a_wake_up_with_nobody_waiting_is_kept_for_the_next_to_rest() -> None:
    idle = _Idle(lambda: 60)
    idle.wake_one()
    with anyio.fail_after(10):
        await idle.rest()
    assert not idle.woken
