"""A write that gives a daemon work tells this process once it commits: once per topic and
transaction, and never for a write rolled back."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
import sqlalchemy as sa

from loopengine.errors import StorageError
from loopengine.store import Store, queue, signals
from loopengine.testing import memory_store
from tests.store.test_queue import job

pytestmark = pytest.mark.anyio


async def _told(write: Any) -> list[str]:
    told: list[str] = []
    async with memory_store() as store:
        store.on_notified = told.append
        with contextlib.suppress(StorageError):
            await write(store)
    return told


def _queue_two(connection: sa.Connection) -> None:
    queue.insert_job(connection, job("first"))
    queue.insert_job(connection, job("second"))


def _queue_and_fail(connection: sa.Connection) -> None:
    queue.insert_job(connection, job("first"))
    raise StorageError("refused after the insert")


async def test_jobs_queued_together_tell_once_at_commit() -> None:
    assert await _told(lambda store: store.write(_queue_two)) == ["job"]


async def test_a_write_rolled_back_tells_nothing() -> None:
    assert await _told(lambda store: store.write(_queue_and_fail)) == []


async def test_an_event_appended_tells_its_topic() -> None:
    async def append(store: Store) -> None:
        await store.write(signals.insert_event, "page.updated", "test", {}, 0.0)

    assert await _told(append) == ["event"]
