"""What the autolearn loops keep, on PostgreSQL with writers in two transactions at once (two
daemons): grading claims skip the rows another cycle holds, a user's first exchanges upsert
their row, and a prompt version another writer took first is lost without an error."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa

from loopengine.store import autolearn, memory, prompts
from tests.postgres import PostgresServer, migrated_engine
from tests.store.test_autolearn import _sample
from tests.waiting import wait_until_blocked


@pytest.fixture(scope="module")
def engine(shared_postgres: PostgresServer) -> Iterator[sa.Engine]:
    with migrated_engine(shared_postgres) as built:
        yield built


def test_a_second_cycle_claims_only_what_the_first_does_not_hold(engine: sa.Engine) -> None:
    with engine.begin() as connection:
        autolearn.insert_samples(connection, [_sample("OL1")] * 3)
    with engine.connect() as first, engine.connect() as second, first.begin():
        held = autolearn.claim_ungraded(first, 2, now=1.0, until=100.0)
        with second.begin():
            rest = autolearn.claim_ungraded(second, 2, now=2.0, until=100.0)
    assert len(held) == 2
    assert [row.id for row in rest] == [min(row.id for row in held) - 1]


def test_a_users_exchanges_are_counted_on_one_row(engine: sa.Engine) -> None:
    exchange = {"session_id": "s", "category": "code", "message": "hi", "reply": "hello"}
    for now in (1.0, 2.0):
        with engine.begin() as connection:
            memory.add_exchange(connection, "ada", exchange, keep=50, now=now)
    with engine.connect() as connection:
        row = memory.profile(connection, "ada")
    assert row is not None
    assert row.exchanges == 2


def test_a_version_another_writer_took_first_is_lost_without_an_error(engine: sa.Engine) -> None:
    def add(connection: sa.Connection, text: str) -> int | None:
        return prompts.add_version(
            connection, "race", text, parent=0, baseline=None, reason="r", execution_id=None,
            now=0.0,
        )  # fmt: skip

    found: dict[str, Any] = {}
    with engine.connect() as first:
        with first.begin():
            found["first"] = add(first, "Be brief.")

            def second() -> None:
                with engine.begin() as connection:
                    found["second"] = add(connection, "Show code.")

            racing = threading.Thread(target=second)
            racing.start()
            wait_until_blocked(engine, racing)
        racing.join(timeout=30)
    assert (found["first"], found["second"]) == (1, None)
    with engine.connect() as connection:
        assert prompts.active(connection, "race")["race"].text == "Be brief."
