"""What ``status`` shows of a daemon's row: the next fire after now, however long ago the row was
written (the daemon writes its upcoming slots every third of a lease)."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from loopengine.store import iso, queue, status
from loopengine.store.status import next_fire
from loopengine.testing import memory_store


def test_the_next_fire_is_the_first_upcoming_slot_after_now() -> None:
    assert next_fire([100.0, 102.0, 104.0], now=103.0) == 104.0


def test_a_slot_at_now_has_passed() -> None:
    assert next_fire([100.0, 102.0], now=100.0) == 102.0


def test_a_late_daemon_shows_its_last_slot() -> None:
    assert next_fire([100.0, 102.0], now=110.0) == 102.0


def test_a_trigger_without_slots_has_no_next_fire() -> None:
    assert next_fire([], now=110.0) is None


def test_the_view_as_json_is_what_status_and_the_api_show() -> None:
    far = 4_000_000_000.0
    served = (
        queue.Served("b", "b.yaml", (queue.Slots("c", "cron", (far,)),)),
        queue.Served("a", "a.yaml"),
    )

    async def main() -> dict[str, Any]:
        async with memory_store() as store:
            await store.write(queue.save_daemon, queue.Daemon("d", "h", 7, 0.0, far, None, served))
            await store.write(queue.pause, "b", 1.0)
            return (await store.read(status.view, 0.0)).as_json()

    assert asyncio.run(main()) == {
        "daemons": [
            {
                "id": "d",
                "host": "h",
                "pid": 7,
                "started_at": "1970-01-01T00:00:00.000+00:00",
                "heartbeat_at": iso(far),
            }
        ],
        "loops": [
            {"loop_id": "a", "file": "a.yaml", "triggers": [], "paused": False, "paused_at": None},
            {
                "loop_id": "b",
                "file": "b.yaml",
                "triggers": [{"id": "c", "type": "cron", "next_fire": iso(far)}],
                "paused": True,
                "paused_at": "1970-01-01T00:00:01.000+00:00",
            },
        ],
        "running": [],
        "queue": {"queued": 0, "running": 0},
    }


def test_a_beat_refreshes_the_heartbeat_and_keeps_the_loops_saved() -> None:
    served = (queue.Served("b", "b.yaml", (queue.Slots("c", "cron", (5.0, 6.0)),)),)
    saved = queue.Daemon("d", "h", 7, 0.0, 1.0, None, served)

    async def main() -> list[queue.Daemon]:
        async with memory_store() as store:
            await store.write(queue.save_daemon, saved)
            await store.write(queue.beat, "d", 2.0)
            return await store.read(queue.active_daemons, 0.0)

    assert asyncio.run(main()) == [dataclasses.replace(saved, heartbeat_at=2.0)]
