"""The firings of concurrent requests share one write of the store, each decided as its own
write would decide it."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any
from unittest import mock

import anyio

from loopengine.api._context import IntakeWrites
from loopengine.errors import StoreUnavailable
from loopengine.store import impatient, intake
from loopengine.testing import memory_store
from tests.store.test_intake import arrival, bounded


def concurrently(firings: list[intake.Arrival]) -> tuple[list[Any], int]:
    """What each firing became, sent at once through ``IntakeWrites``, and how many writes of
    the store they took (``intake.enqueue_keyed_all`` runs once a write)."""

    async def main() -> tuple[list[Any], int]:
        async with memory_store() as store:
            writes, done = IntakeWrites(store), [None] * len(firings)

            async def send(place: int, fired: intake.Arrival) -> None:
                with impatient():
                    done[place] = await writes.keyed(fired, 1.0)

            async with anyio.create_task_group() as group:
                for place, fired in enumerate(firings):
                    group.start_soon(send, place, fired)
            return done

    written = mock.patch.object(intake, "enqueue_keyed_all", wraps=intake.enqueue_keyed_all)
    with written as counted:
        done = asyncio.run(main())
    return done, counted.call_count


def test_firings_sent_while_a_write_waits_share_it() -> None:
    done, writes = concurrently([arrival(f"k{n}") for n in range(10)])
    assert [taken.status for taken, _ in done] == ["queued"] * 10
    assert writes == 1


def test_firings_sharing_a_write_are_decided_in_the_order_sent() -> None:
    done, _ = concurrently([bounded(f"k{n}", 3) for n in range(5)])
    assert [taken.status for taken, _ in done] == ["queued"] * 3 + ["skipped"] * 2


def test_a_shared_write_that_fails_is_written_again_alone_for_each_firing() -> None:
    async def main() -> list[str]:
        async with memory_store() as store:
            writes = IntakeWrites(store)
            fired = arrival("faulty")
            unbindable = dataclasses.replace(fired.job, created_at=object())
            faulty = intake.Arrival(unbindable, fired.trigger_id, fired.admit)
            outcomes: list[str] = []

            async def send(fired: intake.Arrival) -> None:
                try:
                    taken, _ = await writes.keyed(fired, 1.0)
                    outcomes.append(taken.status)
                except Exception as exc:  # the faulty firing's own error
                    outcomes.append(type(exc).__name__)

            async with anyio.create_task_group() as group:
                for fired in (arrival("a"), faulty, arrival("b")):
                    group.start_soon(send, fired)
            return sorted(outcomes)

    assert asyncio.run(main()) == ["StorageError", "queued", "queued"]


def test_a_store_out_of_reach_fails_every_firing_at_once() -> None:
    async def main() -> list[str]:
        async with memory_store() as store:
            store.outage = StoreUnavailable("the database is restarting")
            writes, outcomes = IntakeWrites(store), []
            with impatient():
                for fired in (arrival("a"), arrival("b")):
                    try:
                        await writes.keyed(fired, 1.0)
                    except StoreUnavailable as exc:
                        outcomes.append(str(exc))
            return outcomes

    assert asyncio.run(main()) == ["the database is restarting"] * 2
