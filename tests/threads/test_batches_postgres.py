"""Batches of one thread written by two daemons on one PostgreSQL at once: the second waits for
the first and is told its ``If-Match`` is stale (412), as on SQLite, never a database error."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from loopengine.errors import ThreadError
from loopengine.store import threads
from loopengine.threads import new_batch
from tests.postgres import PostgresServer, migrated_engine
from tests.waiting import wait_until_blocked


@pytest.fixture(scope="module")
def engine(shared_postgres: PostgresServer) -> Iterator[sa.Engine]:
    with migrated_engine(shared_postgres) as built:
        yield built


def _say(connection: sa.Connection, session: str, text: str, version: int) -> int:
    message = [{"role": "user", "content": text}]
    batch = new_batch(session, message, operation_id=text, now=1.0, if_match=version)
    result = threads.append_batch(connection, batch)
    return result.version


@pytest.mark.parametrize("earlier", [[], ["hello"]], ids=["new thread", "thread with messages"])
def test_a_batch_racing_another_on_the_same_version_is_412(
    engine: sa.Engine, earlier: list[str]
) -> None:
    session = f"race-{len(earlier)}"
    version = 0
    for text in earlier:
        with engine.begin() as connection:
            version = _say(connection, session, text, version)
    outcome: dict[str, object] = {}

    def second() -> None:
        try:
            with engine.begin() as connection:
                outcome["second"] = _say(connection, session, "second", version)
        except Exception as exc:
            outcome["second"] = exc

    with engine.connect() as first:
        with first.begin():
            _say(first, session, "first", version)
            racing = threading.Thread(target=second)
            racing.start()
            wait_until_blocked(engine, racing)
        racing.join(timeout=30)
    refused = outcome["second"]
    assert isinstance(refused, ThreadError), refused
    assert refused.status == 412
    with engine.connect() as connection:
        assert [m.content for m in threads.load_thread(connection, session)] == [*earlier, "first"]
