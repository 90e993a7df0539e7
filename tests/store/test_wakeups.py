"""A write that gives a daemon work tells this process once it commits: once per topic and
transaction, and never for a write rolled back; on PostgreSQL a listener hears the other
connections' writes, its own store's being told already."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import anyio
import psycopg
import pytest
import sqlalchemy as sa

from loopengine.errors import StorageError
from loopengine.store import Store, create_engine, migrate, queue, signals
from loopengine.store.wakeups import connector, listen
from loopengine.testing import memory_store
from tests.postgres import PostgresServer
from tests.store.test_queue import job
from tests.waiting import DEADLINE_S

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


@pytest.fixture(scope="module")
def postgres_url(shared_postgres: PostgresServer) -> Iterator[str]:
    with shared_postgres.database() as url:
        yield url


async def test_a_listener_hears_other_connections_writes_not_its_own_stores(
    postgres_url: str,
) -> None:
    heard: list[str] = []
    listening = anyio.Event()

    def on_listening(error: BaseException | None) -> None:
        if error is None:
            listening.set()

    async with Store.open(postgres_url) as store, anyio.create_task_group() as group:
        connect = connector(store.engine)
        assert connect is not None
        group.start_soon(listen, connect, heard.append, on_listening, lambda: store.backend_pid)
        with anyio.fail_after(DEADLINE_S):
            await listening.wait()
            heard.clear()
            await store.write(queue.insert_job, job("own"))
            other = sa.create_engine(postgres_url)
            with other.begin() as connection:
                signals.insert_event(connection, "page.updated", "test", {}, 0.0)
            other.dispose()
            while not heard:
                await anyio.sleep(0.01)
        group.cancel_scope.cancel()
    assert heard == ["event"]


def test_each_transaction_of_a_connection_notifies_its_own_writes(postgres_url: str) -> None:
    engine = create_engine(postgres_url)
    with engine.begin() as connection:
        migrate(connection)
    listener = psycopg.connect(postgres_url.replace("+psycopg", ""), autocommit=True)
    try:
        listener.execute("LISTEN loopengine")
        with engine.connect() as connection:
            for _ in range(2):
                with connection.begin():
                    signals.insert_event(connection, "page.updated", "test", {}, 0.0)
        heard = [n.payload for n in listener.notifies(timeout=DEADLINE_S, stop_after=2)]
    finally:
        listener.close()
        engine.dispose()
    assert heard == ["event", "event"]
