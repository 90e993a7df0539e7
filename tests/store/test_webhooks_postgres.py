"""Webhook bodies on PostgreSQL with two daemons receiving one body at once: the second waits for
the first's transaction and is told the first holds it."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from loopengine.store import webhooks
from tests.postgres import PostgresServer, migrated_engine


@pytest.fixture(scope="module")
def engine(shared_postgres: PostgresServer) -> Iterator[sa.Engine]:
    with migrated_engine(shared_postgres) as built:
        yield built


def test_a_body_received_twice_at_once_is_held_by_the_first(engine: sa.Engine) -> None:
    found: dict[str, str] = {}
    with engine.connect() as first:
        with first.begin():
            found["first"] = webhooks.hold_body(first, "body", "a", 0.0, 300.0)

            def second() -> None:
                with engine.begin() as connection:
                    found["second"] = webhooks.hold_body(connection, "body", "b", 1.0, 301.0)

            racing = threading.Thread(target=second)
            racing.start()
            racing.join(timeout=1.0)  # waits on the first writer's row
        racing.join(timeout=30)
    assert found == {"first": "a", "second": "a"}
