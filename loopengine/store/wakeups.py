"""Wake-ups: a write that gives a daemon work (a job queued, an event appended, a metric point
recorded) names it on its transaction (``notify``). Once the transaction commits, the store tells
this process (``Store.on_notified``), and on PostgreSQL every daemon listening (``listen``) is
told too: the ``NOTIFY`` is sent in the same transaction, so it is delivered at commit, never
before the row can be read, and once per topic however many rows the transaction wrote. A
notification lost (the listening connection down) is covered by the daemons' polls, and every
topic is told again after a reconnection.

The repositories that notify are imported by commands that only feed the store (``emit``): the
listening side imports its async machinery when it runs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

import sqlalchemy as sa

from loopengine._faults import next_pause
from loopengine.store._database import CONNECT_TIMEOUT_S, session_options, transaction_set

__all__ = [
    "CHANNEL",
    "EVENT",
    "JOB",
    "METRIC",
    "TOPICS",
    "connector",
    "listen",
    "notified",
    "notify",
]

CHANNEL = "loopengine"
JOB = "job"
"""A job became claimable: queued, queued again, or its lease ended."""
EVENT = "event"
"""An event was appended to the log."""
METRIC = "metric"
"""A metric point was recorded."""
TOPICS = (JOB, EVENT, METRIC)
_TOLD = "loopengine_notified"
CHECK_S = 30.0
"""How long the listening connection may stay silent before it is checked (a server gone
without closing it)."""


def notify(connection: sa.Connection, topic: str) -> None:
    """Tell the daemons ``topic`` once this transaction commits."""
    told = transaction_set(connection, _TOLD)
    if topic in told:
        return
    told.add(topic)
    if connection.dialect.name == "postgresql":
        connection.exec_driver_sql(
            "SELECT pg_notify(%(channel)s, %(topic)s)", {"channel": CHANNEL, "topic": topic}
        )


def notified(connection: sa.Connection) -> set[str]:
    """The topics told in the connection's last transaction (forgotten here: call it once the
    transaction ended, and before the next begins)."""
    kept: tuple[object, set[str]] | None = connection.info.pop(_TOLD, None)
    return kept[1] if kept is not None else set()


def connector(engine: sa.Engine) -> Callable[[], Awaitable[Any]] | None:
    """How to open a connection of its own to ``engine``'s database to listen on; None when
    the database sends no notifications (SQLite: other processes' writes are polled for)."""
    if engine.dialect.name != "postgresql":
        return None
    import psycopg

    args, options = engine.dialect.create_connect_args(engine.url)
    options.update(connect_timeout=CONNECT_TIMEOUT_S, options=session_options(engine.url))
    return partial(psycopg.AsyncConnection.connect, *args, autocommit=True, **options)


async def listen(
    connect: Callable[[], Awaitable[Any]],
    on_topic: Callable[[str], None],
    on_listening: Callable[[BaseException | None], None],
    own: Callable[[], int | None] = lambda: None,
) -> None:
    """Follow the channel on the connection ``connect`` opens (psycopg's ``AsyncConnection``,
    in autocommit), telling ``on_topic`` each topic, for ever: a lost connection is opened
    again (after 1 s, then up to ``BACKOFF_MAX_S`` while it keeps failing), and once it listens
    every topic is told, for what was missed meanwhile. ``on_listening`` hears None once
    notifications can arrive, and the error when they no longer can. Those sent by the server
    process ``own()`` names (this process's store, which tells its own) are left out."""
    import anyio
    import psycopg

    pause: float | None = None
    while True:
        try:
            connection = await connect()
            try:
                await connection.execute(f"LISTEN {CHANNEL}")
                on_listening(None)
                pause = None
                for topic in TOPICS:
                    on_topic(topic)
                await _follow(connection, on_topic, own)
            finally:
                with anyio.CancelScope(shield=True):
                    await connection.close()
        except (psycopg.Error, OSError, TimeoutError) as exc:
            on_listening(exc)
        pause = next_pause(pause)
        await anyio.sleep(pause)


async def _follow(
    connection: Any, on_topic: Callable[[str], None], own: Callable[[], int | None]
) -> None:
    """Tell each notification's topic once its connection has data to read (psycopg's own wait
    for one wakes ten times a second); after ``CHECK_S`` of silence, ask the server whether it
    is still there (raising when it is not)."""
    import anyio

    while True:
        with anyio.move_on_after(CHECK_S) as silent:
            await anyio.wait_readable(connection.fileno())
        if silent.cancelled_caught:
            with anyio.fail_after(CHECK_S):
                await connection.execute("SELECT 1")
            continue
        async for notification in connection.notifies(timeout=CHECK_S, stop_after=1):
            if notification.pid != own():
                on_topic(notification.payload)
