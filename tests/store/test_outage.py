"""A database that goes away for a while (a PostgreSQL restart) is waited out: what the store
was handed runs once it is back, for up to ``outage_s``; past that, or with no patience at all,
the operation fails with ``StoreUnavailable`` and the next one reconnects."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import anyio
import pytest
import sqlalchemy as sa

from loopengine.errors import StoreUnavailable
from loopengine.store import Pending, Store, create_engine, impatient, migrate, queue
from loopengine.store._database import IDLE_IN_TRANSACTION_MS, translated
from tests.postgres import PostgresServer, postgres_cluster
from tests.store.test_queue_races import _job
from tests.waiting import wait_until


@pytest.fixture(scope="module")
def server() -> Iterator[PostgresServer]:
    with postgres_cluster() as started:
        yield started


def _after(seconds: float, action: object) -> threading.Thread:
    def later() -> None:
        time.sleep(seconds)
        action()  # type: ignore[operator]

    thread = threading.Thread(target=later)
    thread.start()
    return thread


def _end_idle_transactions_sooner(
    connection: sa.Connection, *, within_transaction: bool = False
) -> int:
    """Lower the session's ``idle_in_transaction_session_timeout`` from what ``create_engine``
    sets (checked first) to 0.5 s, not to wait 10 s for it; the session's process id."""
    shown = connection.exec_driver_sql("SHOW idle_in_transaction_session_timeout").scalar_one()
    assert shown == f"{IDLE_IN_TRANSACTION_MS // 1000}s"
    scope = "LOCAL " if within_transaction else ""
    connection.exec_driver_sql(f"SET {scope}idle_in_transaction_session_timeout = 500")
    pid = int(connection.exec_driver_sql("SELECT pg_backend_pid()").scalar_one())
    if not within_transaction:
        connection.commit()
    return pid


def _running(server: PostgresServer, pid: int) -> bool:
    engine = sa.create_engine(server.url)
    try:
        with engine.connect() as connection:
            query = sa.text("SELECT count(*) FROM pg_stat_activity WHERE pid = :pid")
            return bool(connection.execute(query, {"pid": pid}).scalar_one())
    finally:
        engine.dispose()


def _jobs(connection: sa.Connection) -> int:
    return int(connection.execute(sa.text("SELECT count(*) FROM jobs")).scalar_one())


def test_a_write_handed_over_during_a_restart_commits_once_the_database_is_back(
    server: PostgresServer,
) -> None:
    told: list[str | None] = []

    async def main() -> tuple[int, bool, int]:
        async with Store.open(server.url) as store:
            store.outage_s = 120.0
            store.on_outage = lambda error: told.append(None if error is None else str(error))
            before = await store.read(_jobs)
            server.stop()
            starting = _after(1.0, server.start)
            won = await store.write(lambda c: queue.insert_job(c, _job("during-restart")))
            starting.join()
            return before, won, await store.read(_jobs)

    before, won, after = anyio.run(main)
    assert won is True
    assert after == before + 1
    assert [text is None for text in told] == [False, True]
    assert str(told[0]).startswith("the database is unavailable")


def test_without_patience_an_outage_fails_at_once_and_the_next_write_reconnects(
    server: PostgresServer,
) -> None:
    async def main() -> tuple[str, bool]:
        async with Store.open(server.url) as store:
            server.stop()
            try:
                await store.write(lambda c: queue.insert_job(c, _job("refused")))
            except StoreUnavailable as exc:
                refused = str(exc)
            finally:
                server.start()
            won = await store.write(lambda c: queue.insert_job(c, _job("after")))
            return refused, won

    message, won = anyio.run(main)
    assert message.startswith("the database is unavailable: ")
    assert "\n" not in message
    assert won is True


def test_a_request_queued_behind_a_waiting_write_fails_without_waiting_for_it(
    server: PostgresServer,
) -> None:
    async def main() -> tuple[bool, bool]:
        async with Store.open(server.url) as store:
            store.outage_s = 120.0
            server.stop()
            patient = store.submit(lambda c: queue.insert_job(c, _job("patient")))
            with impatient():
                hurried = store.submit(lambda c: queue.insert_job(c, _job("hurried")))
            try:
                with pytest.raises(StoreUnavailable):
                    await hurried.wait()
                waiting = patient.error is None and not _settled(patient)
            finally:
                server.start()
            return waiting, await patient.wait()

    waiting, won = anyio.run(main)
    assert waiting
    assert won is True


def _settled(pending: Pending[bool]) -> bool:
    return pending.settled


def test_a_session_paused_inside_a_transaction_lets_its_row_locks_go(
    server: PostgresServer,
) -> None:
    """A daemon paused (SIGSTOP, a VM pause) while its transaction holds a job's row must not
    keep other daemons from taking the job over: PostgreSQL ends the idle transaction."""
    engine = create_engine(server.url)
    try:
        with engine.begin() as connection:
            migrate(connection)
            held = _job("held")
            queue.insert_job(connection, held)
        paused = engine.connect()
        _end_idle_transactions_sooner(paused)
        paused.begin()
        lock = sa.text("SELECT id FROM jobs WHERE id = :id FOR UPDATE")
        job_id = paused.execute(lock, {"id": held.id}).scalar_one()

        def claimable() -> bool:
            with engine.begin() as other:
                found = queue.claim_next(other, {"tick": 10}, "other", lambda: 1e12, 30.0)
                return found is not None and found[0].id == job_id

        assert not claimable()
        wait_until(claimable, "the paused session kept its row lock")
        with pytest.raises(sa.exc.DBAPIError) as ended:
            paused.execute(sa.text("SELECT 1"))
        assert isinstance(translated(ended.value), StoreUnavailable)
        paused.invalidate()
        paused.close()
    finally:
        engine.dispose()


def test_a_store_whose_transaction_was_ended_while_paused_carries_on(
    server: PostgresServer,
) -> None:
    """The store's own session, ended for idling in a transaction (its process was paused), is
    replaced: the operation runs again on a new session."""
    paused: list[bool] = []

    def insert_after_a_pause(connection: sa.Connection) -> bool:
        if not paused:
            paused.append(True)
            pid = _end_idle_transactions_sooner(connection, within_transaction=True)
            wait_until(lambda: not _running(server, pid), "the idle transaction was not ended")
        return queue.insert_job(connection, _job("after-a-pause"))

    async def main() -> bool:
        async with Store.open(server.url) as store:
            store.outage_s = 60.0
            return await store.write(insert_after_a_pause)

    assert anyio.run(main) is True
